//! Apache Kafka's `RoundRobinAssignorTest` (clients, `org.apache.kafka.clients.consumer`),
//! case for case, as data; each test has the Java test's name. Plus the examples of the
//! `RoundRobinAssignor` class documentation.

use assignor_sdk::{ABI_VERSION, AssignRequest, Assignment, Member, Topic};

use crate::assign;

fn topic(name: &str, partitions: i32) -> Topic {
    Topic {
        name: name.into(),
        partition_count: partitions,
        partition_racks: vec![],
    }
}

fn member(id: &str, instance: Option<&str>, topics: &[&str]) -> Member {
    Member {
        member_id: id.into(),
        group_instance_id: instance.map(Into::into),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    }
}

/// The request the host would send: members sorted by id, topics by name.
fn request(mut topics: Vec<Topic>, mut members: Vec<Member>) -> AssignRequest {
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "group".into(),
        protocol_type: "consumer".into(),
        protocol_name: "roundrobin".into(),
        members,
        topics,
        ..AssignRequest::default()
    }
}

fn run(topics: Vec<Topic>, members: Vec<Member>) -> Assignment {
    assign(&request(topics, members)).expect("roundrobin never refuses")
}

fn tps<'a>(list: &[(&'a str, i32)]) -> Vec<(&'a str, i32)> {
    let mut v = list.to_vec();
    v.sort();
    v
}

fn of<'a>(a: &'a Assignment, member: &str) -> Vec<(&'a str, i32)> {
    a.of(member)
}

fn ids(a: &Assignment) -> Vec<&str> {
    a.member_ids().collect()
}

const TOPIC1: &str = "topic1";
const TOPIC2: &str = "topic2";

#[test]
fn test_one_consumer_no_topic() {
    let a = run(vec![], vec![member("consumer", None, &[])]);
    assert_eq!(ids(&a), ["consumer"]);
    assert!(of(&a, "consumer").is_empty());
}

#[test]
fn test_one_consumer_nonexistent_topic() {
    for topics in [vec![], vec![topic("topic", 0)]] {
        let a = run(topics, vec![member("consumer", None, &["topic"])]);
        assert_eq!(ids(&a), ["consumer"]);
        assert!(of(&a, "consumer").is_empty());
    }
}

#[test]
fn test_one_consumer_one_topic() {
    let a = run(
        vec![topic("topic", 3)],
        vec![member("consumer", None, &["topic"])],
    );
    assert_eq!(
        of(&a, "consumer"),
        tps(&[("topic", 0), ("topic", 1), ("topic", 2)])
    );
}

#[test]
fn test_only_assigns_partitions_from_subscribed_topics() {
    let topics = vec![topic("topic", 3), topic("other", 3)];
    let a = run(topics, vec![member("consumer", None, &["topic"])]);
    assert_eq!(
        of(&a, "consumer"),
        tps(&[("topic", 0), ("topic", 1), ("topic", 2)])
    );
}

#[test]
fn test_one_consumer_multiple_topics() {
    let topics = vec![topic(TOPIC1, 1), topic(TOPIC2, 2)];
    let a = run(topics, vec![member("consumer", None, &[TOPIC1, TOPIC2])]);
    assert_eq!(
        of(&a, "consumer"),
        tps(&[(TOPIC1, 0), (TOPIC2, 0), (TOPIC2, 1)])
    );
}

#[test]
fn test_two_consumers_one_topic_one_partition() {
    let consumers = vec![
        member("consumer1", None, &["topic"]),
        member("consumer2", None, &["topic"]),
    ];
    let a = run(vec![topic("topic", 1)], consumers);
    assert_eq!(of(&a, "consumer1"), tps(&[("topic", 0)]));
    assert!(of(&a, "consumer2").is_empty());
    assert_eq!(ids(&a), ["consumer1", "consumer2"]);
}

#[test]
fn test_two_consumers_one_topic_two_partitions() {
    let consumers = vec![
        member("consumer1", None, &["topic"]),
        member("consumer2", None, &["topic"]),
    ];
    let a = run(vec![topic("topic", 2)], consumers);
    assert_eq!(of(&a, "consumer1"), tps(&[("topic", 0)]));
    assert_eq!(of(&a, "consumer2"), tps(&[("topic", 1)]));
}

#[test]
fn test_multiple_consumers_mixed_topics() {
    let topics = vec![topic(TOPIC1, 3), topic(TOPIC2, 2)];
    let consumers = vec![
        member("consumer1", None, &[TOPIC1]),
        member("consumer2", None, &[TOPIC1, TOPIC2]),
        member("consumer3", None, &[TOPIC1]),
    ];
    let a = run(topics, consumers);
    assert_eq!(of(&a, "consumer1"), tps(&[(TOPIC1, 0)]));
    assert_eq!(
        of(&a, "consumer2"),
        tps(&[(TOPIC1, 1), (TOPIC2, 0), (TOPIC2, 1)])
    );
    assert_eq!(of(&a, "consumer3"), tps(&[(TOPIC1, 2)]));
}

#[test]
fn test_two_dynamic_consumers_two_topics_six_partitions() {
    let topics = vec![topic(TOPIC1, 3), topic(TOPIC2, 3)];
    let consumers = vec![
        member("consumer1", None, &[TOPIC1, TOPIC2]),
        member("consumer2", None, &[TOPIC1, TOPIC2]),
    ];
    let a = run(topics, consumers);
    assert_eq!(
        of(&a, "consumer1"),
        tps(&[(TOPIC1, 0), (TOPIC1, 2), (TOPIC2, 1)])
    );
    assert_eq!(
        of(&a, "consumer2"),
        tps(&[(TOPIC1, 1), (TOPIC2, 0), (TOPIC2, 2)])
    );
}

#[test]
fn test_two_static_consumers_two_topics_six_partitions() {
    // consumer-a sorts before consumer-b by member id, but instance ids decide.
    let topics = vec![topic(TOPIC1, 3), topic(TOPIC2, 3)];
    let consumers = vec![
        member("consumer-b", Some("instance1"), &[TOPIC1, TOPIC2]),
        member("consumer-a", Some("instance2"), &[TOPIC1, TOPIC2]),
    ];
    let a = run(topics, consumers);
    assert_eq!(
        of(&a, "consumer-b"),
        tps(&[(TOPIC1, 0), (TOPIC1, 2), (TOPIC2, 1)])
    );
    assert_eq!(
        of(&a, "consumer-a"),
        tps(&[(TOPIC1, 1), (TOPIC2, 0), (TOPIC2, 2)])
    );
}

#[test]
fn test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions() {
    // consumer-b wins over consumer-a because it is static.
    let topics = vec![topic(TOPIC1, 3), topic(TOPIC2, 3)];
    let consumers = vec![
        member("consumer-b", Some("instance1"), &[TOPIC1, TOPIC2]),
        member("consumer-a", None, &[TOPIC1, TOPIC2]),
    ];
    let a = run(topics, consumers);
    assert_eq!(
        of(&a, "consumer-b"),
        tps(&[(TOPIC1, 0), (TOPIC1, 2), (TOPIC2, 1)])
    );
    assert_eq!(
        of(&a, "consumer-a"),
        tps(&[(TOPIC1, 1), (TOPIC2, 0), (TOPIC2, 2)])
    );
}

#[test]
fn test_static_member_round_robin_assignment_persistent() {
    let topics = vec![topic(TOPIC1, 3), topic(TOPIC2, 3)];
    let both = [TOPIC1, TOPIC2];
    let mut consumers = vec![
        member("consumer1", Some("instance1"), &both),
        member("consumer2", Some("instance2"), &both),
        member("consumer3", Some("instance3"), &both),
        // consumer4 is a dynamic member.
        member("consumer4", None, &both),
    ];
    let expected_static = [
        ("consumer1", tps(&[(TOPIC1, 0), (TOPIC2, 1)])),
        ("consumer2", tps(&[(TOPIC1, 1), (TOPIC2, 2)])),
        ("consumer3", tps(&[(TOPIC1, 2)])),
    ];
    let a = run(topics.clone(), consumers.clone());
    for (id, expected) in &expected_static {
        assert_eq!(&of(&a, id), expected, "{id}");
    }
    assert_eq!(of(&a, "consumer4"), tps(&[(TOPIC2, 0)]));
    assert_eq!(
        ids(&a),
        ["consumer1", "consumer2", "consumer3", "consumer4"]
    );

    // Replace dynamic member 4 with a new dynamic member 5.
    consumers.pop();
    consumers.push(member("consumer5", None, &both));
    let a = run(topics, consumers);
    for (id, expected) in &expected_static {
        assert_eq!(&of(&a, id), expected, "{id}");
    }
    assert_eq!(of(&a, "consumer5"), tps(&[(TOPIC2, 0)]));
    assert_eq!(
        ids(&a),
        ["consumer1", "consumer2", "consumer3", "consumer5"]
    );
}

/// `checkStaticAssignment`: the assignment keyed by instance id.
fn by_instance(members: &[Member], a: &Assignment) -> Vec<(String, Vec<(String, i32)>)> {
    let mut out: Vec<_> = members
        .iter()
        .filter_map(|m| {
            let partitions = a
                .of(&m.member_id)
                .into_iter()
                .map(|(t, p)| (t.to_string(), p))
                .collect();
            Some((m.group_instance_id.clone()?, partitions))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn test_static_member_round_robin_assignment_persistent_after_member_id_changes() {
    let topics = vec![topic(TOPIC1, 5), topic(TOPIC2, 5)];
    let both = [TOPIC1, TOPIC2];
    let consumers = vec![
        member("consumer1", Some("instance1"), &both),
        member("consumer2", Some("instance2"), &both),
        member("consumer3", Some("instance3"), &both),
    ];
    let owned = |list: &[(&str, i32)]| {
        list.iter()
            .map(|(t, p)| (t.to_string(), *p))
            .collect::<Vec<_>>()
    };
    let expected = vec![
        (
            "instance1".to_string(),
            owned(&[(TOPIC1, 0), (TOPIC1, 3), (TOPIC2, 1), (TOPIC2, 4)]),
        ),
        (
            "instance2".to_string(),
            owned(&[(TOPIC1, 1), (TOPIC1, 4), (TOPIC2, 2)]),
        ),
        (
            "instance3".to_string(),
            owned(&[(TOPIC1, 2), (TOPIC2, 0), (TOPIC2, 3)]),
        ),
    ];
    assert_eq!(
        by_instance(&consumers, &run(topics.clone(), consumers.clone())),
        expected
    );

    // consumer4 takes over instance3 and consumer5 instance2: same assignment per instance.
    let swapped = vec![
        member("consumer1", Some("instance1"), &both),
        member("consumer5", Some("instance2"), &both),
        member("consumer4", Some("instance3"), &both),
    ];
    assert_eq!(
        by_instance(&swapped, &run(topics, swapped.clone())),
        expected
    );
}

#[test]
fn class_doc_example_with_identical_subscriptions() {
    let topics = vec![topic("t0", 3), topic("t1", 3)];
    let consumers = vec![
        member("C0", None, &["t0", "t1"]),
        member("C1", None, &["t0", "t1"]),
    ];
    let a = run(topics, consumers);
    assert_eq!(of(&a, "C0"), tps(&[("t0", 0), ("t0", 2), ("t1", 1)]));
    assert_eq!(of(&a, "C1"), tps(&[("t0", 1), ("t1", 0), ("t1", 2)]));
}

#[test]
fn class_doc_example_with_different_subscriptions() {
    let topics = vec![topic("t0", 1), topic("t1", 2), topic("t2", 3)];
    let consumers = vec![
        member("C0", None, &["t0"]),
        member("C1", None, &["t0", "t1"]),
        member("C2", None, &["t0", "t1", "t2"]),
    ];
    let a = run(topics, consumers);
    assert_eq!(of(&a, "C0"), tps(&[("t0", 0)]));
    assert_eq!(of(&a, "C1"), tps(&[("t1", 0)]));
    assert_eq!(
        of(&a, "C2"),
        tps(&[("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)])
    );
}
