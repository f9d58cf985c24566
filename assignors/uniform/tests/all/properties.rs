//! Property tests of `uniform` on random groups: static and dynamic members, subscriptions
//! listed in any order and with repeats, unknown topics, topics with fewer partitions than
//! members, and previous assignments that are unbalanced, stale (unsubscribed topics,
//! partitions out of range) or contradictory (a partition listed by two members).
//!
//! - Homogeneous groups must equal a reference written here from Kafka's description of
//!   `UniformHomogeneousAssignmentBuilder`, with strings and ordered maps, sharing no code
//!   with the module.
//! - Every group: each partition of a subscribed topic is assigned exactly once and only to a
//!   subscriber; homogeneous sizes differ by at most one; heterogeneous groups are balanced
//!   as Kafka promises (exactly within groups of identical subscriptions, and otherwise no
//!   partition could move to a subscriber of its topic with two fewer).
//! - Stickiness: a member whose previous share is within its quota keeps all of it, and a
//!   second run on the module's own answer moves nothing.
//! - Determinism: the same group in any request order, and through the wire path, gets the
//!   same answer.

use std::collections::{BTreeMap, BTreeSet};

use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic, TopicPartitions};
use assignor_test_support::{Owners, check_invariants, owners};
use assignor_uniform::assign;
use proptest::prelude::*;

/// Members in Kafka's classic order: static by instance id, then dynamic by member id.
fn kafka_order(request: &AssignRequest) -> Vec<&Member> {
    let mut members: Vec<&Member> = request.members.iter().collect();
    members.sort_by_key(|m| match &m.group_instance_id {
        Some(instance) => (0, instance.clone()),
        None => (1, m.member_id.clone()),
    });
    members
}

fn known(request: &AssignRequest, name: &str) -> Option<i32> {
    request
        .topics
        .iter()
        .find(|t| t.name == name && t.partition_count > 0)
        .map(|t| t.partition_count)
}

/// Each member's previous partitions in the order listed, keeping only known topics,
/// partitions in range, and the first member (in Kafka's order) to list a partition.
fn claims(request: &AssignRequest) -> BTreeMap<String, Vec<(String, i32)>> {
    let mut taken = BTreeSet::new();
    let mut out = BTreeMap::new();
    for m in kafka_order(request) {
        let mut mine = Vec::new();
        for listed in &m.previous_assignment {
            let Some(count) = known(request, &listed.topic) else {
                continue;
            };
            for &p in &listed.partitions {
                if (0..count).contains(&p) && taken.insert((listed.topic.clone(), p)) {
                    mine.push((listed.topic.clone(), p));
                }
            }
        }
        out.insert(m.member_id.clone(), mine);
    }
    out
}

/// Kafka's homogeneous uniform builder (after KAFKA-18688), the plainest way.
fn reference_homogeneous(request: &AssignRequest) -> Owners {
    let mut out: Owners = request
        .members
        .iter()
        .map(|m| (m.member_id.clone(), BTreeSet::new()))
        .collect();
    let order = kafka_order(request);
    let Some(first) = order.first() else {
        return out;
    };
    let topics: BTreeSet<&String> = first
        .topics
        .iter()
        .filter(|t| known(request, t).is_some())
        .collect();
    if topics.is_empty() {
        return out;
    }
    let claims = claims(request);
    let total: i32 = topics.iter().map(|t| known(request, t).unwrap()).sum();
    let n = order.len() as i32;
    let (min, mut extras) = (total / n, total % n);
    let mut revoked = Vec::new();
    let mut short: Vec<(&str, i32)> = Vec::new();
    for m in &order {
        let mut quota = min + i32::from(extras > 0);
        let had_extra = extras > 0;
        for (t, p) in &claims[&m.member_id] {
            if !topics.contains(t) {
                continue;
            }
            if quota > 0 {
                quota -= 1;
                out.get_mut(&m.member_id).unwrap().insert((t.clone(), *p));
            } else {
                revoked.push((t.clone(), *p));
            }
        }
        let claimed_extra = had_extra && quota == 0;
        if had_extra && quota > 0 {
            quota -= 1;
        }
        if claimed_extra {
            extras -= 1;
        }
        if quota > 0 || (extras > 0 && !claimed_extra) {
            short.push((&m.member_id, quota));
        }
    }
    for (_, quota) in short.iter_mut().rev() {
        if extras > 0 {
            extras -= 1;
            *quota += 1;
        }
    }
    let held: BTreeSet<(String, i32)> = claims.values().flatten().cloned().collect();
    let mut pool = topics
        .iter()
        .flat_map(|t| (0..known(request, t).unwrap()).map(|p| (t.to_string(), p)))
        .filter(|tp| !held.contains(tp))
        .chain(revoked);
    for (id, quota) in short {
        for tp in pool.by_ref().take(quota as usize) {
            out.get_mut(id).unwrap().insert(tp);
        }
    }
    assert!(pool.next().is_none(), "the reference left partitions");
    out
}

fn sizes(got: &Owners) -> BTreeMap<&String, usize> {
    got.iter().map(|(id, set)| (id, set.len())).collect()
}

/// Kafka's heterogeneous promise at convergence: no partition of topic `t` sits with a member
/// that has two or more partitions than another subscriber of `t`.
fn check_no_improving_move(request: &AssignRequest, got: &Owners) -> Result<(), TestCaseError> {
    let size = sizes(got);
    for (id, partitions) in got {
        for (t, p) in partitions {
            for other in request.members.iter().filter(|m| m.topics.contains(t)) {
                prop_assert!(
                    size[id] <= size[&other.member_id] + 1,
                    "{}-{} could move from {} ({}) to {} ({})",
                    t,
                    p,
                    id,
                    size[id],
                    other.member_id,
                    size[&other.member_id]
                );
            }
        }
    }
    Ok(())
}

const TOPICS: usize = 6;

fn topic_name(i: usize) -> String {
    if i < TOPICS {
        format!("t{i}")
    } else {
        "ghost".into()
    }
}

/// A random group: up to 6 topics (a count of 0 is a topic the host does not know), 1 to 10
/// members, static or dynamic. `homogeneous`: one subscription for all (each member lists it
/// in its own order, with repeats); otherwise each member picks its own. Previous assignments
/// name any topic (and `ghost`) and partitions from -1 to 9.
fn group(homogeneous: bool) -> impl Strategy<Value = AssignRequest> {
    let counts = prop::collection::vec(0i32..9, 1..=TOPICS);
    let member = (
        prop::collection::vec(any::<bool>(), TOPICS + 1),
        any::<bool>(),
        0u32..1000,
        prop::collection::vec((0..=TOPICS, prop::collection::vec(-1i32..10, 0..4)), 0..4),
        any::<prop::sample::Index>(),
    );
    (
        counts,
        prop::collection::vec(member, 1..=10),
        prop::collection::vec(any::<bool>(), TOPICS + 1),
    )
        .prop_map(move |(counts, members, shared)| {
            let topics: Vec<Topic> = counts
                .iter()
                .enumerate()
                .map(|(i, &count)| Topic {
                    name: topic_name(i),
                    partition_count: count,
                    partition_racks: vec![],
                })
                .collect();
            let mut members: Vec<Member> = members
                .into_iter()
                .enumerate()
                .map(|(i, (own, is_static, salt, previous, shuffle))| {
                    let picks = if homogeneous { &shared } else { &own };
                    let mut subscription: Vec<String> = picks
                        .iter()
                        .enumerate()
                        .filter(|(k, s)| **s && (*k < topics.len() || *k == TOPICS))
                        .map(|(k, _)| topic_name(k))
                        .collect();
                    if !subscription.is_empty() {
                        let k = shuffle.index(subscription.len());
                        subscription.rotate_left(k);
                        subscription.push(subscription[0].clone());
                    }
                    Member {
                        // The salt shuffles member id order against instance id order.
                        member_id: format!("m{salt:03}-{i}"),
                        group_instance_id: is_static.then(|| format!("i{}", (i * 7) % 10)),
                        topics: subscription.into(),
                        owned_generation: -1,
                        previous_assignment: previous
                            .into_iter()
                            .map(|(t, partitions)| TopicPartitions {
                                topic: topic_name(t),
                                partitions,
                            })
                            .collect(),
                        ..Member::default()
                    }
                })
                .collect();
            members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            AssignRequest {
                abi_version: ABI_VERSION,
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                protocol_name: "uniform".into(),
                members,
                topics,
                ..AssignRequest::default()
            }
        })
}

/// A union of independent homogeneous sub-groups, like Kafka's JMH heterogeneous groups:
/// members and topics in buckets, each member subscribed to its bucket's topics.
fn bucketed_group() -> impl Strategy<Value = AssignRequest> {
    (
        1usize..=3,
        prop::collection::vec((1i32..9, 0usize..3), 1..=TOPICS),
        1usize..=10,
    )
        .prop_map(|(buckets, topics, members)| {
            let topics: Vec<Topic> = topics
                .iter()
                .enumerate()
                .map(|(i, &(count, _))| Topic {
                    name: topic_name(i),
                    partition_count: count,
                    partition_racks: vec![],
                })
                .collect();
            let bucket_of_topic: Vec<usize> = (0..topics.len()).map(|i| i % buckets).collect();
            let members = (0..members)
                .map(|i| Member {
                    member_id: format!("m{i:02}"),
                    topics: topics
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| bucket_of_topic[*k] == i % buckets)
                        .map(|(_, t)| t.name.clone())
                        .collect(),
                    owned_generation: -1,
                    ..Member::default()
                })
                .collect();
            AssignRequest {
                abi_version: ABI_VERSION,
                members,
                topics,
                ..AssignRequest::default()
            }
        })
}

fn next_generation(request: &AssignRequest, got: &Owners) -> AssignRequest {
    let mut next = request.clone();
    for m in &mut next.members {
        let mut by_topic: BTreeMap<&String, Vec<i32>> = BTreeMap::new();
        for (t, p) in &got[&m.member_id] {
            by_topic.entry(t).or_default().push(*p);
        }
        m.previous_assignment = by_topic
            .into_iter()
            .map(|(t, partitions)| TopicPartitions {
                topic: t.clone(),
                partitions,
            })
            .collect();
    }
    next
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn homogeneous_equals_the_reference(request in group(true)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        prop_assert_eq!(got, reference_homogeneous(&request));
    }

    #[test]
    fn homogeneous_sizes_differ_by_at_most_one(request in group(true)) {
        let got = owners(&assign(&request).unwrap());
        let sizes: Vec<usize> = got.values().map(BTreeSet::len).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        prop_assert!(max - min <= 1, "{:?}", sizes);
    }

    #[test]
    fn homogeneous_members_within_quota_keep_what_they_had(request in group(true)) {
        let got = owners(&assign(&request).unwrap());
        let subscribed: BTreeSet<&String> = request.members[0].topics.iter().collect();
        let total: i32 = subscribed.iter().filter_map(|t| known(&request, t)).sum();
        let quota = total as usize / request.members.len();
        for (id, had) in claims(&request) {
            let had: Vec<_> = had.into_iter().filter(|(t, _)| subscribed.contains(t)).collect();
            if had.len() <= quota {
                for tp in &had {
                    prop_assert!(got[&id].contains(tp), "{} lost {:?} with {} <= quota {}", id, tp, had.len(), quota);
                }
            }
        }
    }

    #[test]
    fn heterogeneous_assigns_every_partition_once_to_a_subscriber(request in group(false)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        check_no_improving_move(&request, &got)?;
    }

    #[test]
    fn heterogeneous_members_keep_subscribed_partitions_unless_balancing_moves_them(request in group(false)) {
        // Step 1 keeps everything subscribed; only balancing moves partitions, and only away
        // from members above the least loaded subscriber of the topic plus one.
        let got = owners(&assign(&request).unwrap());
        let size = sizes(&got);
        for (id, had) in claims(&request) {
            let member = request.member(&id).unwrap();
            for (t, p) in had.into_iter().filter(|(t, _)| member.topics.contains(t)) {
                if !got[&id].contains(&(t.clone(), p)) {
                    let holder = got.iter().find(|(_, s)| s.contains(&(t.clone(), p))).unwrap().0;
                    prop_assert!(size[holder] <= size[&id] + 1, "{}-{} moved from {} to {}", t, p, id, holder);
                }
            }
        }
    }

    #[test]
    fn identical_subscription_buckets_are_exactly_balanced(request in bucketed_group()) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        let mut by_subscription: BTreeMap<&[String], Vec<usize>> = BTreeMap::new();
        for m in &request.members {
            by_subscription.entry(&m.topics).or_default().push(got[&m.member_id].len());
        }
        for (subscription, sizes) in by_subscription {
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            prop_assert!(max - min <= 1, "{:?}: {:?}", subscription, sizes);
        }
    }

    #[test]
    fn a_second_run_on_its_own_answer_moves_nothing(request in prop_oneof![group(true), group(false)]) {
        let first = owners(&assign(&request).unwrap());
        let second = owners(&assign(&next_generation(&request, &first)).unwrap());
        prop_assert_eq!(second, first);
    }

    #[test]
    fn request_order_does_not_matter(request in prop_oneof![group(true), group(false)]) {
        let got = owners(&assign(&request).unwrap());
        let mut reversed = request.clone();
        reversed.members.reverse();
        reversed.topics.reverse();
        prop_assert_eq!(owners(&assign(&reversed).unwrap()), got.clone());
        prop_assert_eq!(owners(&assign(&request).unwrap()), got);
    }

    #[test]
    fn the_wire_path_gives_the_same_assignment(request in prop_oneof![group(true), group(false)]) {
        // The ABI v2 bytes the host sends a module reading no optional input, and the answer's.
        let response = assignor_sdk::glue::call(&request, &[], assign).unwrap();
        prop_assert_eq!(response, assign(&request).unwrap().into_response());
    }
}
