//! Property tests of `range` on random groups: mixed static and dynamic members, different
//! subscriptions, topics with fewer partitions than subscribers, unknown topics, members with
//! racks but no partition racks. The assignor must equal a reference implementation written
//! here from Kafka's description, sharing no code with it, and keep the invariants of any
//! range assignment. With partition racks (KIP-881) the exact answer is covered by the ported
//! Kafka cases; here the rack mode is held to the invariants that rack matching must keep.

use std::collections::BTreeSet;

use assignor_range::assign;
use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic};
use assignor_test_support::{Owners, check_invariants, owners};
use proptest::prelude::*;

/// Kafka's range, the plainest way: per topic, subscribers sorted (static by instance id
/// first, then dynamic by member id), `count / n` each and one more for the first `count % n`.
fn reference(request: &AssignRequest) -> Owners {
    let mut out: Owners = request
        .members
        .iter()
        .map(|m| (m.member_id.clone(), BTreeSet::new()))
        .collect();
    for topic in &request.topics {
        let mut subscribers: Vec<&Member> = request
            .members
            .iter()
            .filter(|m| m.topics.contains(&topic.name))
            .collect();
        subscribers.sort_by_key(|m| match &m.group_instance_id {
            Some(instance) => (0, instance.clone()),
            None => (1, m.member_id.clone()),
        });
        if subscribers.is_empty() || topic.partition_count <= 0 {
            continue;
        }
        let n = subscribers.len() as i32;
        let mut next = 0;
        for (i, m) in subscribers.iter().enumerate() {
            let take =
                topic.partition_count / n + i32::from((i as i32) < topic.partition_count % n);
            for p in next..next + take {
                out.get_mut(&m.member_id)
                    .unwrap()
                    .insert((topic.name.clone(), p));
            }
            next += take;
        }
    }
    out
}

/// Per topic, each subscriber gets `count / n` or one more, and exactly `count % n` get more.
fn check_topic_balance(request: &AssignRequest, got: &Owners) -> Result<(), TestCaseError> {
    for topic in request.topics.iter().filter(|t| t.partition_count > 0) {
        let counts: Vec<i32> = request
            .members
            .iter()
            .filter(|m| m.topics.contains(&topic.name))
            .map(|m| {
                got[&m.member_id]
                    .iter()
                    .filter(|(t, _)| *t == topic.name)
                    .count() as i32
            })
            .collect();
        if counts.is_empty() {
            continue;
        }
        let n = counts.len() as i32;
        let (quota, extra) = (topic.partition_count / n, topic.partition_count % n);
        prop_assert!(
            counts.iter().all(|&c| c == quota || c == quota + 1),
            "{}: {:?}",
            topic.name,
            counts
        );
        prop_assert_eq!(
            counts.iter().filter(|&&c| c == quota + 1).count() as i32,
            extra
        );
    }
    Ok(())
}

const RACKS: [&str; 3] = ["a", "b", "c"];

/// A random group: up to 6 topics (some with 0 partitions, i.e. unknown), up to 10 members,
/// each static or dynamic, subscribed to any subset (plus sometimes a topic nobody knows),
/// with or without a rack. `with_partition_racks` adds replica racks to every partition.
fn group(with_partition_racks: bool) -> impl Strategy<Value = AssignRequest> {
    let topics = prop::collection::vec(0i32..9, 1..=6);
    (topics, 1usize..=10).prop_flat_map(move |(counts, n)| {
        let t = counts.len();
        let racks = prop::collection::vec(
            prop::collection::vec(prop::sample::subsequence(RACKS.to_vec(), 0..=3), 9),
            t,
        );
        let members = prop::collection::vec(
            (
                prop::collection::vec(any::<bool>(), t + 1),
                any::<bool>(),
                prop::option::of(prop::sample::select(RACKS.to_vec())),
                0u32..1000,
            ),
            n,
        );
        (Just(counts), racks, members).prop_map(move |(counts, racks, members)| {
            let topics = counts
                .iter()
                .enumerate()
                .map(|(i, &count)| Topic {
                    name: format!("t{i}"),
                    partition_count: count,
                    partition_racks: if with_partition_racks {
                        racks[i][..count as usize]
                            .iter()
                            .map(|r| r.iter().map(|s| s.to_string()).collect())
                            .collect()
                    } else {
                        vec![]
                    },
                })
                .collect::<Vec<_>>();
            let mut members: Vec<Member> = members
                .into_iter()
                .enumerate()
                .map(|(i, (subscribed, is_static, rack, salt))| Member {
                    // The salt shuffles member id order against instance id order.
                    member_id: format!("m{salt:03}-{i}"),
                    group_instance_id: is_static.then(|| format!("i{}", (i * 7) % 10)),
                    rack_id: rack.map(String::from),
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
                })
                .collect();
            members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            AssignRequest {
                abi_version: ABI_VERSION,
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                protocol_name: "range".into(),
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
    fn range_equals_the_reference(request in group(false)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        prop_assert_eq!(got, reference(&request));
    }

    #[test]
    fn rack_aware_range_keeps_every_range_invariant(request in group(true)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        check_topic_balance(&request, &got)?;
    }

    #[test]
    fn the_wire_path_gives_the_same_assignment(request in group(true)) {
        // The ABI v2 bytes the host sends a module reading racks, and the answer's.
        let response = assignor_sdk::glue::call(&request, &[assignor_sdk::Input::Racks], assign).unwrap();
        prop_assert_eq!(response, assign(&request).unwrap().into_response());
    }
}
