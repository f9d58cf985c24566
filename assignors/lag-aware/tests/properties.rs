//! Property tests of `lag-aware` on random groups: random lags (many zero, a few large),
//! random previous owners, and topics with and without lag data. Promised: a valid assignment
//! (every partition of a subscribed topic exactly once, only to a subscriber), whatever the
//! subscriptions; and with one subscription for everybody and lag data everywhere, each
//! member's total lag within the largest single partition's lag of the ideal (the total over
//! the members).

use assignor_lag_aware::assign;
use assignor_sdk::{AssignRequest, Member, Topic, TopicOffsets, TopicPartitions};
use assignor_test_support::{Owners, check_invariants, owners};
use proptest::prelude::*;

const TOPICS: [&str; 3] = ["a", "b", "c"];

fn lags() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(
        prop_oneof![3 => Just(0i64), 5 => 1..100i64, 1 => 1000..5000i64],
        0..10,
    )
}

/// `homogeneous`: everyone on every topic and every topic measured.
fn group(homogeneous: bool) -> impl Strategy<Value = AssignRequest> {
    (
        prop::collection::vec(
            (
                prop::collection::vec(any::<bool>(), TOPICS.len()),
                prop::collection::vec(0..10i32, 0..5),
            ),
            1..7,
        ),
        prop::collection::vec((lags(), any::<bool>()), TOPICS.len()),
    )
        .prop_map(move |(members, topics)| {
            let members = members
                .into_iter()
                .enumerate()
                .map(|(i, (subscribed, had))| {
                    let names: Vec<String> = TOPICS
                        .iter()
                        .zip(&subscribed)
                        .filter(|(_, s)| homogeneous || **s)
                        .map(|(t, _)| t.to_string())
                        .collect();
                    let mut had: Vec<i32> = had;
                    had.sort_unstable();
                    had.dedup();
                    Member {
                        member_id: format!("m{i}"),
                        previous_assignment: names
                            .first()
                            .map(|t| TopicPartitions {
                                topic: t.clone(),
                                partitions: had,
                            })
                            .into_iter()
                            .collect(),
                        topics: names.into(),
                        owned_generation: -1,
                        ..Member::default()
                    }
                })
                .collect();
            let (topics, lag) = TOPICS
                .iter()
                .zip(topics)
                .map(|(name, (lags, measured))| {
                    let n = lags.len();
                    let topic = Topic {
                        name: name.to_string(),
                        partition_count: n as i32,
                        partition_racks: vec![],
                    };
                    let end = if homogeneous || measured {
                        lags.iter().map(|l| 10 + l).collect()
                    } else {
                        vec![-1; n]
                    };
                    (
                        topic,
                        TopicOffsets {
                            committed: vec![10; n],
                            end,
                        },
                    )
                })
                .unzip();
            AssignRequest {
                members,
                topics,
                lag,
                ..AssignRequest::default()
            }
        })
}

fn load(request: &AssignRequest, got: &Owners, member: &str) -> i64 {
    got[member]
        .iter()
        .map(|(topic, p)| {
            let t = request.topic_index(topic).unwrap();
            request.lag_of(t, *p).unwrap()
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_group_gets_a_valid_assignment(request in group(false)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
    }

    #[test]
    fn each_total_lag_is_within_the_largest_partition_lag_of_the_ideal(request in group(true)) {
        let got = owners(&assign(&request).unwrap());
        check_invariants(&request, &got)?;
        let largest = (0..request.topics.len())
            .flat_map(|t| request.topics[t].partitions().map(move |p| (t, p)))
            .map(|(t, p)| request.lag_of(t, p).unwrap())
            .max()
            .unwrap_or(0);
        let members = request.members.len() as i64;
        let loads: Vec<i64> = request.members.iter().map(|m| load(&request, &got, &m.member_id)).collect();
        let total: i64 = loads.iter().sum();
        for (m, l) in request.members.iter().zip(&loads) {
            // |load - total / members| <= largest, in whole numbers.
            prop_assert!(
                (l * members - total).abs() <= largest * members,
                "{} has lag {} of {} over {} members (largest partition {}): {:?}",
                m.member_id, l, total, members, largest, loads
            );
        }
    }
}
