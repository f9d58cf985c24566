//! Property tests of `roundrobin` on random groups: mixed static and dynamic members,
//! different subscriptions, topics with fewer partitions than members, unknown topics. The
//! assignor must equal a reference implementation written here from Kafka's description,
//! sharing no code with it, and keep the invariants of any assignment; with identical
//! subscriptions, member counts differ by at most one.

use std::collections::BTreeSet;

use assignor_roundrobin::assign;
use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic};
use assignor_test_support::{Owners, check_invariants, owners};
use proptest::prelude::*;

/// Kafka's round robin, the plainest way: lay out every partition of every subscribed known
/// topic (topics by name), and hand each to the next member in a circle of the members sorted
/// static-first (by instance id) then dynamic (by member id), skipping non-subscribers.
fn reference(request: &AssignRequest) -> Owners {
    let mut members: Vec<&Member> = request.members.iter().collect();
    members.sort_by_key(|m| match &m.group_instance_id {
        Some(instance) => (0, instance.clone()),
        None => (1, m.member_id.clone()),
    });
    let subscribed: BTreeSet<&String> = members.iter().flat_map(|m| m.topics.iter()).collect();
    let mut out: Owners = members
        .iter()
        .map(|m| (m.member_id.clone(), BTreeSet::new()))
        .collect();
    let mut turn = 0usize;
    for name in subscribed {
        let Some(topic) = request.topics.iter().find(|t| &t.name == name) else {
            continue;
        };
        for p in 0..topic.partition_count.max(0) {
            loop {
                let m = members[turn % members.len()];
                turn += 1;
                if m.topics.contains(name) {
                    out.get_mut(&m.member_id).unwrap().insert((name.clone(), p));
                    break;
                }
            }
        }
    }
    out
}

/// A random group: up to 6 topics (some with 0 partitions, i.e. unknown), up to 10 members,
/// each static or dynamic, subscribed to any subset (plus sometimes a topic nobody knows), or
/// all to the same topics when `identical`.
fn group(identical: bool) -> impl Strategy<Value = AssignRequest> {
    let topics = prop::collection::vec(0i32..9, 1..=6);
    (topics, 1usize..=10).prop_flat_map(move |(counts, n)| {
        let t = counts.len();
        let members = prop::collection::vec(
            (
                prop::collection::vec(any::<bool>(), t + 1),
                any::<bool>(),
                0u32..1000,
            ),
            n,
        );
        let shared = prop::collection::vec(any::<bool>(), t + 1);
        (Just(counts), members, shared).prop_map(move |(counts, members, shared)| {
            let topics: Vec<Topic> = counts
                .iter()
                .enumerate()
                .map(|(i, &count)| Topic {
                    name: format!("t{i}"),
                    partition_count: count,
                    partition_racks: vec![],
                })
                .collect();
            let mut members: Vec<Member> = members
                .into_iter()
                .enumerate()
                .map(|(i, (own, is_static, salt))| {
                    let subscribed = if identical { &shared } else { &own };
                    Member {
                        // The salt shuffles member id order against instance id order.
                        member_id: format!("m{salt:03}-{i}"),
                        group_instance_id: is_static.then(|| format!("i{}", (i * 7) % 10)),
                        topics: subscribed
                            .iter()
                            .enumerate()
                            .filter(|(_, s)| **s)
                            .map(|(k, _)| {
                                if k < t {
                                    format!("t{k}")
                                } else {
                                    "ghost".into()
                                }
                            })
                            .collect(),
                        owned_generation: -1,
                        ..Member::default()
                    }
                })
                .collect();
            members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            AssignRequest {
                abi_version: ABI_VERSION,
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                protocol_name: "roundrobin".into(),
                members,
                topics,
                ..AssignRequest::default()
            }
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn roundrobin_equals_the_reference(request in group(false)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        prop_assert_eq!(got, reference(&request));
    }

    #[test]
    fn identical_subscriptions_are_balanced_within_one(request in group(true)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        prop_assert_eq!(&got, &reference(&request));
        if request.members[0].topics.iter().any(|t| t != "ghost") {
            let counts: Vec<usize> = got.values().map(BTreeSet::len).collect();
            let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            prop_assert!(max - min <= 1, "counts {:?}", counts);
        }
    }

    #[test]
    fn the_wire_path_gives_the_same_assignment(request in group(false)) {
        // The ABI v2 bytes the host sends a module reading no optional input, and the answer's.
        let response = assignor_sdk::glue::call(&request, &[], assign).unwrap();
        prop_assert_eq!(response, assign(&request).unwrap().into_response());
    }
}
