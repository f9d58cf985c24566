//! Unit tests of `weighted`: counts in proportion to the weights (1:2:3 and uneven cases),
//! weight 0, the host's weight input as fallback, stickiness, and the rounding spread over
//! topics.

use std::collections::BTreeMap;

use assignor_sdk::{AssignRequest, Member, Topic, TopicPartitions};

use super::*;

fn member(id: &str, client_id: &str, topics: &[&str]) -> Member {
    Member {
        member_id: id.into(),
        client_id: client_id.into(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    }
}

fn group(members: Vec<Member>, topics: &[(&str, i32)], weights: &str) -> AssignRequest {
    AssignRequest {
        members,
        topics: topics
            .iter()
            .map(|(name, n)| Topic {
                name: name.to_string(),
                partition_count: *n,
                partition_racks: vec![],
            })
            .collect(),
        params: BTreeMap::from([("weights".to_string(), weights.to_string())]),
        ..AssignRequest::default()
    }
}

fn three(partitions: i32, weights: &str) -> AssignRequest {
    group(
        vec![
            member("m1", "small", &["t"]),
            member("m2", "medium", &["t"]),
            member("m3", "large", &["t"]),
        ],
        &[("t", partitions)],
        weights,
    )
}

fn counts(request: &AssignRequest, got: &Assignment) -> Vec<usize> {
    let ids = request.members.iter().map(|m| m.member_id.as_str());
    ids.map(|id| got.of(id).len()).collect()
}

#[test]
fn one_two_three_splits_twelve_partitions_two_four_six() {
    let request = three(12, "small:1,medium:2,large:3");
    let got = assign(&request).unwrap();
    assert_eq!(counts(&request, &got), [2, 4, 6]);
    assert_eq!(got.of("m1"), [("t", 0), ("t", 1)]);
}

#[test]
fn uneven_shares_round_to_floor_or_ceiling() {
    // Exact shares 1.67, 3.33, 5: the largest fraction (m1's) is rounded up.
    let request = three(10, "small:1,medium:2,large:3");
    assert_eq!(counts(&request, &assign(&request).unwrap()), [2, 3, 5]);
}

#[test]
fn first_match_wins_and_unmatched_members_weigh_one() {
    let request = three(6, "large:4,l*:100");
    // Weights 1, 1, 4.
    assert_eq!(counts(&request, &assign(&request).unwrap()), [1, 1, 4]);
}

#[test]
fn weight_zero_gets_nothing_unless_every_subscriber_weighs_zero() {
    let request = three(6, "small:0");
    assert_eq!(counts(&request, &assign(&request).unwrap()), [0, 3, 3]);
    let request = three(6, "*:0");
    assert_eq!(counts(&request, &assign(&request).unwrap()), [2, 2, 2]);
}

#[test]
fn the_hosts_weight_input_applies_where_no_pattern_matches() {
    let mut request = three(8, "small:2");
    request.members[2].weight = Some(5);
    request.params.insert("weight.default".into(), "1".into());
    assert_eq!(counts(&request, &assign(&request).unwrap()), [2, 1, 5]);
}

#[test]
fn members_keep_their_partitions_up_to_their_count() {
    let mut request = three(6, "large:4");
    // m3 had 0-3, m1 had 4-5; now m1 may take 1, m2 1, m3 4.
    request.members[2].previous_assignment = vec![TopicPartitions {
        topic: "t".into(),
        partitions: vec![0, 1, 2, 3],
    }];
    request.members[0].previous_assignment = vec![TopicPartitions {
        topic: "t".into(),
        partitions: vec![4, 5],
    }];
    let got = assign(&request).unwrap();
    assert_eq!(got.of("m3"), [("t", 0), ("t", 1), ("t", 2), ("t", 3)]);
    assert_eq!(got.of("m1"), [("t", 4)]);
    assert_eq!(got.of("m2"), [("t", 5)]);
}

#[test]
fn roundings_rotate_over_topics_so_totals_follow_the_weights() {
    // Four one-partition topics over two equal members: per topic one of them gets it; over
    // the four, each gets two (a plain per-topic rounding would give all four to one).
    let members = vec![
        member("a", "a", &["t1", "t2", "t3", "t4"]),
        member("b", "b", &["t1", "t2", "t3", "t4"]),
    ];
    let request = group(
        members,
        &[("t1", 1), ("t2", 1), ("t3", 1), ("t4", 1)],
        "a:1",
    );
    assert_eq!(counts(&request, &assign(&request).unwrap()), [2, 2]);
}

#[test]
fn bad_parameters_fail_the_call_with_a_message() {
    let message = |weights: &str| assign(&three(3, weights)).unwrap_err().to_string();
    assert!(message("large").contains("has no weight"));
    let mut request = three(3, "large:2");
    request.params.insert("wieghts".into(), "x:1".into());
    assert!(
        assign(&request)
            .unwrap_err()
            .to_string()
            .starts_with("unknown parameter `wieghts`")
    );
}
