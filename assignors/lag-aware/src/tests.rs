//! Unit tests of `lag-aware`: lag balanced over members where partition counts would not be,
//! owners keeping partitions while the balance allows, idle partitions spread by count, topics
//! without lag data assigned by the inner strategy.

use std::collections::BTreeMap;

use assignor_sdk::{AssignRequest, Member, Topic, TopicOffsets, TopicPartitions};

use super::*;

fn member(id: &str, topics: &[&str]) -> Member {
    Member {
        member_id: id.into(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    }
}

/// Members `a`, `b`, `c` on topic `t`, whose partitions have these lags (committed 0).
fn group(lags: &[i64]) -> AssignRequest {
    AssignRequest {
        members: vec![
            member("a", &["t"]),
            member("b", &["t"]),
            member("c", &["t"]),
        ],
        topics: vec![Topic {
            name: "t".into(),
            partition_count: lags.len() as i32,
            partition_racks: vec![],
        }],
        lag: vec![TopicOffsets {
            committed: vec![0; lags.len()],
            end: lags.to_vec(),
        }],
        ..AssignRequest::default()
    }
}

fn loads(request: &AssignRequest, got: &Assignment) -> Vec<i64> {
    let lag = |p: i32| request.lag[0].end[p as usize];
    let ids = request.members.iter().map(|m| m.member_id.as_str());
    ids.map(|id| got.partitions(id, "t").into_iter().map(lag).sum())
        .collect()
}

#[test]
fn one_hot_partition_gets_a_member_of_its_own() {
    // Range would give a: 0, 1 (1000 + 10). Balanced: the hot partition alone.
    let request = group(&[1000, 10, 10, 10, 10, 10]);
    let got = assign(&request).unwrap();
    assert_eq!(got.of("a"), [("t", 0)]);
    assert_eq!(loads(&request, &got), [1000, 30, 20]);
}

#[test]
fn an_owner_keeps_its_partition_while_the_balance_allows() {
    let mut request = group(&[100, 90, 80, 70]);
    // c had 0 and 1 (190): keeping both would put it 190 above the others' 0 + largest 100.
    request.members[2].previous_assignment = vec![TopicPartitions {
        topic: "t".into(),
        partitions: vec![0, 1],
    }];
    let got = assign(&request).unwrap();
    assert_eq!(got.of("c"), [("t", 0)], "keeps the larger one");
    let spread = loads(&request, &got);
    assert!(
        spread.iter().max().unwrap() - spread.iter().min().unwrap() <= 100,
        "{spread:?}"
    );
}

#[test]
fn partitions_without_lag_are_spread_by_count_and_stay_with_their_owner() {
    let mut request = group(&[0, 0, 0, 0, 0, 0]);
    request.members[1].previous_assignment = vec![TopicPartitions {
        topic: "t".into(),
        partitions: vec![4, 5],
    }];
    let got = assign(&request).unwrap();
    assert_eq!(got.of("b"), [("t", 4), ("t", 5)]);
    assert_eq!(got.of("a").len(), 2);
    assert_eq!(got.of("c").len(), 2);
}

#[test]
fn topics_without_lag_data_go_to_the_inner_strategy() {
    let mut request = group(&[50, 50, 50]);
    request.topics.push(Topic {
        name: "u".into(),
        partition_count: 4,
        partition_racks: vec![],
    });
    // Topic u: no end offsets known (standalone mode).
    request.lag.push(TopicOffsets {
        committed: vec![5; 4],
        end: vec![-1; 4],
    });
    for m in &mut request.members {
        m.topics = vec!["t".to_string(), "u".to_string()].into();
    }
    request.params = BTreeMap::from([("inner".to_string(), "roundrobin".to_string())]);
    let got = assign(&request).unwrap();
    // Roundrobin over a, b, c for u: a gets 0 and 3.
    assert_eq!(got.partitions("a", "u"), [0, 3]);
    assert_eq!(got.partitions("b", "u"), [1]);
    assert_eq!(loads(&request, &got), [50, 50, 50]);
}

#[test]
fn unknown_parameters_and_inner_strategies_are_refused() {
    let mut request = group(&[1]);
    request.params.insert("inner".into(), "lag".into());
    assert!(
        assign(&request)
            .unwrap_err()
            .to_string()
            .starts_with("parameter `inner` is `lag`")
    );
    request.params = BTreeMap::from([("iner".to_string(), "range".to_string())]);
    assert_eq!(
        assign(&request).unwrap_err().to_string(),
        "unknown parameter `iner`: lag-aware reads `inner` only"
    );
}
