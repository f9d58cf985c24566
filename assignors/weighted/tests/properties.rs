//! Property tests of `weighted` on random groups: random subscriptions over four topics,
//! random weights given by patterns on client ids (some 0), some members with a previous
//! assignment. Promised: every partition of a subscribed topic goes to exactly one member, and
//! only to a subscriber; per topic, each subscriber gets the floor or the ceiling of its exact
//! share `n * w / W` (all subscribers weighing 0 share equally).

use std::collections::{BTreeMap, BTreeSet};

use assignor_sdk::{AssignRequest, Member, Topic, TopicPartitions};
use assignor_test_support::{check_invariants, owners};
use assignor_weighted::assign;
use proptest::prelude::*;

const TOPICS: [&str; 4] = ["a", "b", "c", "d"];
const CLIENTS: [&str; 4] = ["w0", "w1", "w2", "w5"];

/// The weight the pattern `w<d>*` gives: the digit of the client id (`w5` weighs 5).
fn weight_of(client_id: &str) -> u64 {
    client_id[1..2].parse().unwrap()
}

fn group() -> impl Strategy<Value = AssignRequest> {
    (
        prop::collection::vec(
            (
                prop::sample::select(CLIENTS.to_vec()),
                prop::collection::vec(any::<bool>(), TOPICS.len()),
                prop::collection::vec(0..12i32, 0..4),
            ),
            1..8,
        ),
        prop::collection::vec(0..12i32, TOPICS.len()),
    )
        .prop_map(|(members, counts)| {
            let members = members
                .into_iter()
                .enumerate()
                .map(|(i, (client, subscribed, had))| {
                    let topics: Vec<String> = TOPICS
                        .iter()
                        .zip(&subscribed)
                        .filter(|(_, s)| **s)
                        .map(|(t, _)| t.to_string())
                        .collect();
                    let previous_assignment = topics
                        .first()
                        .map(|t| TopicPartitions {
                            topic: t.clone(),
                            partitions: had
                                .into_iter()
                                .collect::<BTreeSet<_>>()
                                .into_iter()
                                .collect(),
                        })
                        .into_iter()
                        .collect();
                    Member {
                        member_id: format!("m{i}"),
                        client_id: client.to_string(),
                        topics: topics.into(),
                        previous_assignment,
                        owned_generation: -1,
                        ..Member::default()
                    }
                })
                .collect();
            AssignRequest {
                members,
                topics: TOPICS
                    .iter()
                    .zip(counts)
                    .map(|(t, n)| Topic {
                        name: t.to_string(),
                        partition_count: n,
                        partition_racks: vec![],
                    })
                    .collect(),
                params: BTreeMap::from([(
                    "weights".to_string(),
                    "w0:0,w1*:1,w2:2,w5:5".to_string(),
                )]),
                ..AssignRequest::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_member_is_within_one_partition_of_its_share_per_topic(request in group()) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        for topic in &request.topics {
            let subscribers: Vec<&Member> = request
                .members
                .iter()
                .filter(|m| m.topics.contains(&topic.name))
                .collect();
            let total: u64 = subscribers.iter().map(|m| weight_of(&m.client_id)).sum();
            let n = topic.partition_count as u64;
            for m in &subscribers {
                let (w, total) = if total == 0 {
                    (1, subscribers.len() as u64)
                } else {
                    (weight_of(&m.client_id), total)
                };
                let count = got[&m.member_id].iter().filter(|(t, _)| *t == topic.name).count() as u64;
                let (floor, ceil) = (n * w / total, (n * w).div_ceil(total));
                prop_assert!(
                    floor <= count && count <= ceil,
                    "{} of weight {} got {} of {}'s {} partitions (total weight {})",
                    m.member_id, w, count, topic.name, n, total
                );
            }
        }
    }
}
