//! Unit tests of `filtered`: who is admitted by `include` and `exclude`, that the admitted
//! members get what the inner strategy gives them alone, the cooperative hold of an excluded
//! member's partitions, and the messages of bad parameters.

use std::collections::BTreeMap;

use assignor_sdk::{AssignRequest, Member, Topic, TopicPartitions};

use super::*;

fn member(id: &str, client_id: &str, host: &str, instance: Option<&str>) -> Member {
    Member {
        member_id: id.into(),
        client_id: client_id.into(),
        client_host: host.into(),
        group_instance_id: instance.map(Into::into),
        topics: vec!["orders".to_string()].into(),
        owned_generation: -1,
        ..Member::default()
    }
}

/// Four consumers of `orders` (6 partitions): two app instances, a canary, a laptop.
fn group(params: &[(&str, &str)]) -> AssignRequest {
    AssignRequest {
        members: vec![
            member("m1", "orders-app", "/10.0.0.1", None),
            member("m2", "orders-app", "/10.0.0.2", None),
            member("m3", "orders-canary", "/10.0.0.3", Some("canary-1")),
            member("m4", "rdkafka", "/192.168.1.20", None),
        ],
        topics: vec![Topic {
            name: "orders".into(),
            partition_count: 6,
            partition_racks: vec![],
        }],
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..AssignRequest::default()
    }
}

fn counts(request: &AssignRequest, got: &Assignment) -> Vec<usize> {
    request
        .members
        .iter()
        .map(|m| got.of(&m.member_id).len())
        .collect()
}

#[test]
fn without_parameters_it_is_range() {
    let request = group(&[]);
    let got = assign(&request).unwrap();
    let range = Inner::Range.assign(&request).unwrap();
    assert_eq!(got.into_response(), range.into_response());
}

#[test]
fn an_excluded_host_gets_nothing_and_the_rest_share_everything() {
    let request = group(&[("exclude", "192.168.*")]);
    let got = assign(&request).unwrap();
    assert_eq!(counts(&request, &got), [2, 2, 2, 0]);
    assert_eq!(got.member_ids().count(), 4, "m4 stays in the answer");
}

#[test]
fn include_admits_only_matching_members_by_client_id_or_instance_id() {
    let request = group(&[("include", "orders-app")]);
    assert_eq!(counts(&request, &assign(&request).unwrap()), [3, 3, 0, 0]);
    let request = group(&[("include", "canary-?")]);
    assert_eq!(counts(&request, &assign(&request).unwrap()), [0, 0, 6, 0]);
}

#[test]
fn exclude_wins_over_include() {
    let request = group(&[("include", "orders-*"), ("exclude", "/10.0.0.2")]);
    assert_eq!(counts(&request, &assign(&request).unwrap()), [3, 0, 3, 0]);
}

#[test]
fn admitted_members_get_what_the_inner_strategy_gives_them_alone() {
    let request = group(&[("exclude", "rdkafka"), ("inner", "roundrobin")]);
    let got = assign(&request).unwrap();
    let alone = subgroup(&request, |i| i != 3);
    let inner = Inner::RoundRobin.assign(&alone).unwrap();
    for m in &alone.members {
        assert_eq!(got.of(&m.member_id), inner.of(&m.member_id));
    }
    // Roundrobin, not range: the static canary deals first (0, 3), then m1 (1, 4).
    assert_eq!(got.of("m3"), [("orders", 0), ("orders", 3)]);
    assert_eq!(got.of("m1"), [("orders", 1), ("orders", 4)]);
}

#[test]
fn nobody_admitted_means_nothing_assigned() {
    let request = group(&[("include", "nobody-*")]);
    assert_eq!(counts(&request, &assign(&request).unwrap()), [0, 0, 0, 0]);
}

#[test]
fn under_cooperative_sticky_an_excluded_owner_revokes_before_anyone_gets_its_partitions() {
    let mut request = group(&[("exclude", "rdkafka"), ("inner", "cooperative-sticky")]);
    // The laptop (m4) owned 4 and 5 at generation 3, the others the rest.
    let owned = [vec![0, 1], vec![2], vec![3], vec![4, 5]];
    for (m, partitions) in request.members.iter_mut().zip(owned) {
        m.owned_partitions = vec![TopicPartitions {
            topic: "orders".into(),
            partitions,
        }];
        m.owned_generation = 3;
    }
    request.generation_id = 4;
    let got = assign(&request).unwrap();
    assert!(got.of("m4").is_empty());
    let given: Vec<(&str, i32)> = ["m1", "m2", "m3"].iter().flat_map(|m| got.of(m)).collect();
    assert!(
        !given.contains(&("orders", 4)) && !given.contains(&("orders", 5)),
        "{given:?}"
    );
    // Next round: m4 revoked them; now they are handed out.
    for m in &mut request.members {
        m.owned_generation = 4;
    }
    request.members[3].owned_partitions.clear();
    request.generation_id = 5;
    let next = assign(&request).unwrap();
    let mut all: Vec<(&str, i32)> = ["m1", "m2", "m3"].iter().flat_map(|m| next.of(m)).collect();
    all.sort_unstable();
    assert_eq!(all, (0..6).map(|p| ("orders", p)).collect::<Vec<_>>());
}

#[test]
fn bad_parameters_fail_the_call_with_a_message_saying_what_to_write() {
    let message = |params: &[(&str, &str)]| assign(&group(params)).unwrap_err().to_string();
    assert_eq!(
        message(&[("exclude", "app-[0-9]")]),
        "parameter `exclude`: pattern `app-[0-9]` uses `[`, which is not supported; the only \
         wildcards are `*` (any characters) and `?` (one character), so list the names \
         separated by commas instead"
    );
    assert!(message(&[("include", "a,,b")]).starts_with("parameter `include` has an empty"));
    assert!(
        message(&[("inner", "sticky-ish")])
            .starts_with("parameter `inner` is `sticky-ish`, which is not a strategy")
    );
    assert_eq!(
        message(&[("exlude", "x")]),
        "unknown parameter `exlude`: filtered reads `exclude`, `include`, `inner`"
    );
}
