//! Apache Kafka's `RangeAssignorTest` (clients, `org.apache.kafka.clients.consumer`), case for
//! case, as data. Each test has the Java test's name; a `@ParameterizedTest` over `RackConfig`
//! runs its body once per config. Kafka's fixtures are rebuilt as in
//! `AbstractPartitionAssignorTest`: brokers with racks `a, b, c, ...`, partition `i` of a topic
//! with replicas on brokers `(i + j + next_node_index) % brokers`.
//!
//! Kafka's parameterized tests run with the test-only `preferRackAwareLogic = true`; so do the
//! ported ones (`assign_partitions(request, true)`).

use assignor_sdk::{ABI_VERSION, AssignRequest, Assignment, Member, Topic};

use crate::assign_partitions;

pub(crate) const ALL_RACKS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

/// Kafka's `AbstractPartitionAssignorTest.RackConfig`, names kept.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq)]
enum RackConfig {
    NoBrokerRack,
    NoConsumerRack,
    BrokerAndConsumerRack,
}

const RACK_CONFIGS: [RackConfig; 3] = [
    RackConfig::NoBrokerRack,
    RackConfig::NoConsumerRack,
    RackConfig::BrokerAndConsumerRack,
];

/// `RangeAssignorTest`'s fields set by `initializeRacks`.
struct Fixture {
    replication_factor: usize,
    num_broker_racks: usize,
    has_consumer_rack: bool,
}

impl Fixture {
    fn initialize_racks(rack_config: RackConfig) -> Fixture {
        Fixture::initialize_racks_max(rack_config, 3)
    }

    fn initialize_racks_max(rack_config: RackConfig, max_consumers: usize) -> Fixture {
        Fixture {
            replication_factor: max_consumers,
            num_broker_racks: if rack_config != RackConfig::NoBrokerRack {
                max_consumers
            } else {
                0
            },
            has_consumer_rack: rack_config != RackConfig::NoConsumerRack,
        }
    }

    fn partition_infos(&self, topic: &str, partitions: usize) -> Topic {
        partition_infos(
            topic,
            partitions,
            self.replication_factor,
            self.num_broker_racks,
            0,
        )
    }

    fn subscription(&self, member_id: &str, topics: &[&str], consumer_index: usize) -> Member {
        let num_racks = if self.num_broker_racks > 0 {
            self.num_broker_racks
        } else {
            ALL_RACKS.len()
        };
        let rack = self
            .has_consumer_rack
            .then(|| ALL_RACKS[consumer_index % num_racks]);
        member(member_id, None, rack, topics)
    }
}

/// `AbstractPartitionAssignorTest.partitionInfos(topic, n, rf, numBrokerRacks, nextNodeIndex)`.
pub(crate) fn partition_infos(
    topic: &str,
    partitions: usize,
    rf: usize,
    num_broker_racks: usize,
    next: usize,
) -> Topic {
    let num_brokers = if num_broker_racks == 0 {
        rf
    } else {
        num_broker_racks * rf
    };
    let broker_racks: Vec<Option<&str>> = (0..num_brokers)
        .map(|i| (num_broker_racks > 0).then(|| ALL_RACKS[i % num_broker_racks]))
        .collect();
    partition_infos_on(topic, partitions, rf, &broker_racks, next)
}

/// `AbstractPartitionAssignorTest.partitionInfos(topic, n, rf, brokerRacks, nextNodeIndex)`:
/// replica `j` of partition `i` is on broker `(i + j + next) % brokers`; brokers without a
/// rack contribute none.
pub(crate) fn partition_infos_on(
    topic: &str,
    partitions: usize,
    rf: usize,
    broker_racks: &[Option<&str>],
    next: usize,
) -> Topic {
    let partition_racks = (0..partitions)
        .map(|i| {
            (0..rf)
                .filter_map(|j| broker_racks[(i + j + next) % broker_racks.len()])
                .map(String::from)
                .collect()
        })
        .collect();
    Topic {
        name: topic.into(),
        partition_count: partitions as i32,
        partition_racks,
    }
}

pub(crate) fn member(
    id: &str,
    instance: Option<&str>,
    rack: Option<&str>,
    topics: &[&str],
) -> Member {
    Member {
        member_id: id.into(),
        group_instance_id: instance.map(Into::into),
        rack_id: rack.map(Into::into),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    }
}

fn with_instance(mut m: Member, instance: &str) -> Member {
    m.group_instance_id = Some(instance.into());
    m
}

/// The request the host would send: members sorted by id, topics by name.
pub(crate) fn request(mut topics: Vec<Topic>, mut members: Vec<Member>) -> AssignRequest {
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "group".into(),
        protocol_type: "consumer".into(),
        protocol_name: "range".into(),
        members,
        topics,
        ..AssignRequest::default()
    }
}

/// Runs the assignor as Kafka's parameterized tests do (`preferRackAwareLogic = true`).
fn assign(request: &AssignRequest) -> Assignment {
    assign_partitions(request, true)
}

pub(crate) fn tps(list: &[(&str, i32)]) -> Vec<(String, i32)> {
    let mut v: Vec<_> = list.iter().map(|(t, p)| (t.to_string(), *p)).collect();
    v.sort();
    v
}

pub(crate) fn of(assignment: &Assignment, member: &str) -> Vec<(String, i32)> {
    assignment
        .of(member)
        .into_iter()
        .map(|(t, p)| (t.to_string(), p))
        .collect()
}

fn members(assignment: &Assignment) -> Vec<&str> {
    assignment.member_ids().collect()
}

#[test]
fn test_one_consumer_no_topic() {
    for has_consumer_rack in [true, false] {
        let f = Fixture::initialize_racks(if has_consumer_rack {
            RackConfig::BrokerAndConsumerRack
        } else {
            RackConfig::NoConsumerRack
        });
        let a = assign(&request(vec![], vec![f.subscription("consumer1", &[], 0)]));
        assert_eq!(members(&a), ["consumer1"]);
        assert!(of(&a, "consumer1").is_empty());
    }
}

#[test]
fn test_one_consumer_nonexistent_topic() {
    for has_consumer_rack in [true, false] {
        let f = Fixture::initialize_racks(if has_consumer_rack {
            RackConfig::BrokerAndConsumerRack
        } else {
            RackConfig::NoConsumerRack
        });
        let consumer = f.subscription("consumer1", &["topic1"], 0);
        // Kafka leaves a topic without metadata out; the host may also send it with no partitions.
        let unknown = Topic {
            name: "topic1".into(),
            partition_count: 0,
            partition_racks: vec![],
        };
        for topics in [vec![], vec![unknown]] {
            let a = assign(&request(topics, vec![consumer.clone()]));
            assert_eq!(members(&a), ["consumer1"]);
            assert!(of(&a, "consumer1").is_empty());
        }
    }
}

#[test]
fn test_one_consumer_one_topic() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let a = assign(&request(
            vec![f.partition_infos("topic1", 3)],
            vec![f.subscription("consumer1", &["topic1"], 0)],
        ));
        assert_eq!(members(&a), ["consumer1"]);
        assert_eq!(
            of(&a, "consumer1"),
            tps(&[("topic1", 0), ("topic1", 1), ("topic1", 2)]),
            "{rc:?}"
        );
    }
}

#[test]
fn test_only_assigns_partitions_from_subscribed_topics() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let topics = vec![
            f.partition_infos("topic1", 3),
            f.partition_infos("other", 3),
        ];
        let a = assign(&request(
            topics,
            vec![f.subscription("consumer1", &["topic1"], 0)],
        ));
        assert_eq!(members(&a), ["consumer1"]);
        assert_eq!(
            of(&a, "consumer1"),
            tps(&[("topic1", 0), ("topic1", 1), ("topic1", 2)]),
            "{rc:?}"
        );
    }
}

#[test]
fn test_one_consumer_multiple_topics() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let topics = vec![
            f.partition_infos("topic1", 1),
            f.partition_infos("topic2", 2),
        ];
        let a = assign(&request(
            topics,
            vec![f.subscription("consumer1", &["topic1", "topic2"], 0)],
        ));
        assert_eq!(members(&a), ["consumer1"]);
        assert_eq!(
            of(&a, "consumer1"),
            tps(&[("topic1", 0), ("topic2", 0), ("topic2", 1)]),
            "{rc:?}"
        );
    }
}

#[test]
fn test_two_consumers_one_topic_one_partition() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let consumers = vec![
            f.subscription("consumer1", &["topic1"], 0),
            f.subscription("consumer2", &["topic1"], 1),
        ];
        let a = assign(&request(vec![f.partition_infos("topic1", 1)], consumers));
        assert_eq!(of(&a, "consumer1"), tps(&[("topic1", 0)]), "{rc:?}");
        assert_eq!(of(&a, "consumer2"), tps(&[]), "{rc:?}");
        assert_eq!(members(&a), ["consumer1", "consumer2"]);
    }
}

#[test]
fn test_two_consumers_one_topic_two_partitions() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let consumers = vec![
            f.subscription("consumer1", &["topic1"], 0),
            f.subscription("consumer2", &["topic1"], 1),
        ];
        let a = assign(&request(vec![f.partition_infos("topic1", 2)], consumers));
        assert_eq!(of(&a, "consumer1"), tps(&[("topic1", 0)]), "{rc:?}");
        assert_eq!(of(&a, "consumer2"), tps(&[("topic1", 1)]), "{rc:?}");
    }
}

#[test]
fn test_multiple_consumers_mixed_topics() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let topics = vec![
            f.partition_infos("topic1", 3),
            f.partition_infos("topic2", 2),
        ];
        let consumers = vec![
            f.subscription("consumer1", &["topic1"], 0),
            f.subscription("consumer2", &["topic1", "topic2"], 1),
            f.subscription("consumer3", &["topic1"], 2),
        ];
        let a = assign(&request(topics, consumers));
        assert_eq!(of(&a, "consumer1"), tps(&[("topic1", 0)]), "{rc:?}");
        assert_eq!(
            of(&a, "consumer2"),
            tps(&[("topic1", 1), ("topic2", 0), ("topic2", 1)]),
            "{rc:?}"
        );
        assert_eq!(of(&a, "consumer3"), tps(&[("topic1", 2)]), "{rc:?}");
    }
}

#[test]
fn test_two_consumers_two_topics_six_partitions() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let topics = vec![
            f.partition_infos("topic1", 3),
            f.partition_infos("topic2", 3),
        ];
        let consumers = vec![
            f.subscription("consumer1", &["topic1", "topic2"], 0),
            f.subscription("consumer2", &["topic1", "topic2"], 1),
        ];
        let a = assign(&request(topics, consumers));
        assert_eq!(
            of(&a, "consumer1"),
            tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]),
            "{rc:?}"
        );
        assert_eq!(
            of(&a, "consumer2"),
            tps(&[("topic1", 2), ("topic2", 2)]),
            "{rc:?}"
        );
    }
}

#[test]
fn test_two_static_consumers_two_topics_six_partitions() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        // consumer-a sorts before consumer-b by member id, but instance ids decide.
        let topics = vec![
            f.partition_infos("topic1", 3),
            f.partition_infos("topic2", 3),
        ];
        let consumers = vec![
            with_instance(
                f.subscription("consumer-b", &["topic1", "topic2"], 0),
                "instance1",
            ),
            with_instance(
                f.subscription("consumer-a", &["topic1", "topic2"], 1),
                "instance2",
            ),
        ];
        let a = assign(&request(topics, consumers));
        assert_eq!(
            of(&a, "consumer-b"),
            tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]),
            "{rc:?}"
        );
        assert_eq!(
            of(&a, "consumer-a"),
            tps(&[("topic1", 2), ("topic2", 2)]),
            "{rc:?}"
        );
    }
}

#[test]
fn test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        // consumer-b wins over consumer-a because it is static.
        let topics = vec![
            f.partition_infos("topic1", 3),
            f.partition_infos("topic2", 3),
        ];
        let consumers = vec![
            with_instance(
                f.subscription("consumer-b", &["topic1", "topic2"], 0),
                "instance1",
            ),
            f.subscription("consumer-a", &["topic1", "topic2"], 1),
        ];
        let a = assign(&request(topics, consumers));
        assert_eq!(
            of(&a, "consumer-b"),
            tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]),
            "{rc:?}"
        );
        assert_eq!(
            of(&a, "consumer-a"),
            tps(&[("topic1", 2), ("topic2", 2)]),
            "{rc:?}"
        );
    }
}

#[test]
fn test_static_member_range_assignment_persistent() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks_max(rc, 5);
        let topics = vec![
            f.partition_infos("topic1", 5),
            f.partition_infos("topic2", 4),
        ];
        let both = ["topic1", "topic2"];
        let mut consumers: Vec<Member> = (1..=3)
            .map(|i| {
                with_instance(
                    f.subscription(&format!("consumer{i}"), &both, i - 1),
                    &format!("instance{i}"),
                )
            })
            .collect();
        // consumer4 is a dynamic member.
        consumers.push(f.subscription("consumer4", &both, 3));
        let a = assign(&request(topics.clone(), consumers.clone()));
        let expected_static = [
            (
                "consumer1",
                tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0)]),
            ),
            ("consumer2", tps(&[("topic1", 2), ("topic2", 1)])),
            ("consumer3", tps(&[("topic1", 3), ("topic2", 2)])),
        ];
        for (id, expected) in &expected_static {
            assert_eq!(&of(&a, id), expected, "{rc:?} {id}");
        }
        assert_eq!(
            of(&a, "consumer4"),
            tps(&[("topic1", 4), ("topic2", 3)]),
            "{rc:?}"
        );
        assert_eq!(
            members(&a),
            ["consumer1", "consumer2", "consumer3", "consumer4"]
        );

        // Replace dynamic member 4 with a new dynamic member 5.
        consumers.pop();
        consumers.push(f.subscription("consumer5", &both, 4));
        let a = assign(&request(topics, consumers));
        for (id, expected) in &expected_static {
            assert_eq!(&of(&a, id), expected, "{rc:?} {id}");
        }
        assert_eq!(
            of(&a, "consumer5"),
            tps(&[("topic1", 4), ("topic2", 3)]),
            "{rc:?}"
        );
        assert_eq!(
            members(&a),
            ["consumer1", "consumer2", "consumer3", "consumer5"]
        );
    }
}

/// `checkStaticAssignment`: the assignment keyed by instance id.
fn by_instance(
    request: &AssignRequest,
    assignment: &Assignment,
) -> Vec<(String, Vec<(String, i32)>)> {
    let mut out: Vec<_> = request
        .members
        .iter()
        .filter_map(|m| Some((m.group_instance_id.clone()?, of(assignment, &m.member_id))))
        .collect();
    out.sort();
    out
}

/// The member-id swap of the `...PersistentAfterMemberIdChanges` tests: consumer4 takes
/// consumer3's subscription (and instance), consumer5 takes consumer2's.
fn swap_member_ids(consumers: &[Member]) -> Vec<Member> {
    consumers
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.member_id = match m.member_id.as_str() {
                "consumer3" => "consumer4".into(),
                "consumer2" => "consumer5".into(),
                other => other.into(),
            };
            m
        })
        .collect()
}

#[test]
fn test_static_member_range_assignment_persistent_after_member_id_changes() {
    for rc in RACK_CONFIGS {
        let f = Fixture::initialize_racks(rc);
        let topics = vec![
            f.partition_infos("topic1", 5),
            f.partition_infos("topic2", 5),
        ];
        let consumers: Vec<Member> = (1..=3)
            .map(|i| {
                with_instance(
                    f.subscription(&format!("consumer{i}"), &["topic1", "topic2"], i - 1),
                    &format!("instance{i}"),
                )
            })
            .collect();
        let expected = vec![
            (
                "instance1".to_string(),
                tps(&[("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]),
            ),
            (
                "instance2".to_string(),
                tps(&[("topic1", 2), ("topic1", 3), ("topic2", 2), ("topic2", 3)]),
            ),
            (
                "instance3".to_string(),
                tps(&[("topic1", 4), ("topic2", 4)]),
            ),
        ];
        let req = request(topics.clone(), consumers.clone());
        assert_eq!(by_instance(&req, &assign(&req)), expected, "{rc:?}");

        let req = request(topics, swap_member_ids(&consumers));
        assert_eq!(
            by_instance(&req, &assign(&req)),
            expected,
            "{rc:?} after member id changes"
        );
    }
}

#[test]
fn test_rack_aware_static_member_range_assignment_persistent_after_member_id_changes() {
    let f = Fixture::initialize_racks(RackConfig::BrokerAndConsumerRack);
    let topics = vec![
        partition_infos("topic1", 5, 2, 3, 0),
        partition_infos("topic2", 5, 2, 3, 0),
    ];
    let consumers: Vec<Member> = (1..=3)
        .map(|i| {
            with_instance(
                f.subscription(&format!("consumer{i}"), &["topic1", "topic2"], i - 1),
                &format!("instance{i}"),
            )
        })
        .collect();
    let expected = vec![
        (
            "instance1".to_string(),
            tps(&[("topic1", 0), ("topic1", 2), ("topic2", 0), ("topic2", 2)]),
        ),
        (
            "instance2".to_string(),
            tps(&[("topic1", 1), ("topic1", 3), ("topic2", 1), ("topic2", 3)]),
        ),
        (
            "instance3".to_string(),
            tps(&[("topic1", 4), ("topic2", 4)]),
        ),
    ];
    let req = request(topics.clone(), consumers.clone());
    assert_eq!(by_instance(&req, &assign(&req)), expected);

    let req = request(topics, swap_member_ids(&consumers));
    assert_eq!(
        by_instance(&req, &assign(&req)),
        expected,
        "after member id changes"
    );
}
