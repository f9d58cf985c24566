//! Kafka's `CooperativeStickyAssignorTest` (clients, `org.apache.kafka.clients.consumer`): the
//! cases of its own, case for case, each named after the Java test (parametrized ones are
//! modules with one test per parameter). The inherited `AbstractStickyAssignorTest` cases,
//! with Kafka's cooperative `verifyValidityAndBalance` (rebalance until nothing is revoked,
//! never moving a partition directly), are in `abstract_sticky_assignor_test.rs`. Plus the
//! generation librdkafka's older user data carries.

use std::collections::BTreeMap;

use assignor_sticky_core::Flavor;
use assignor_sticky_core::kafka_test::{
    Harness, PartitionsPerTopic, RackConfig, Subscription, Tp, grouped, member, request, topics, tp,
};
use assignor_sticky_core::ownership::member_data;
use assignor_sticky_core::user_data::{DEFAULT_GENERATION, write_cooperative, write_sticky};

const F: Flavor = Flavor::CooperativeSticky;
const CONSUMER1: &str = "consumer1";
const CONSUMER2: &str = "consumer2";
const CONSUMER3: &str = "consumer3";
const TOPIC: &str = "topic";
const TOPIC1: &str = "topic1";
const TOPIC2: &str = "topic2";

/// `memberData(subscription)` as a flat partition list and a generation.
fn data_of(subscription: &Subscription) -> (Vec<Tp>, i32) {
    let req = request(F, &PartitionsPerTopic::new(), &BTreeMap::new());
    let data = member_data(&req, &member("m", subscription), F);
    let partitions = data
        .partitions
        .iter()
        .flat_map(|tp| tp.partitions.iter().map(|&p| (tp.topic.clone(), p)))
        .collect();
    (partitions, data.generation)
}

/// A Subscription with only topics and user data (Java's two-argument constructor).
fn with_user_data(user_data: Option<Vec<u8>>) -> Subscription {
    Subscription {
        topics: topics(&[TOPIC]),
        user_data,
        owned: Vec::new(),
        generation: DEFAULT_GENERATION,
        rack: None,
    }
}

#[test]
fn test_encode_and_decode_generation() {
    // A fresh assignor's user data carries DEFAULT_GENERATION.
    let (_, generation) = data_of(&with_user_data(Some(write_cooperative(DEFAULT_GENERATION))));
    assert_eq!(generation, DEFAULT_GENERATION);
    // After onAssignment in generation 10.
    let (_, generation) = data_of(&with_user_data(Some(write_cooperative(10))));
    assert_eq!(generation, 10);
}

#[test]
fn test_decode_generation() {
    let (_, generation) = data_of(&with_user_data(None));
    assert_eq!(generation, DEFAULT_GENERATION);
}

/// Three consumers, `topic` partition 0 claimed by the first two in the same generation: it
/// counts as owned by both, so nobody gets it until both have revoked it.
fn claimed_by_two(rack: RackConfig, partitions: i32) -> (Harness, PartitionsPerTopic) {
    let mut h = Harness::new(F);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, partitions);
    let t = topics(&[TOPIC]);
    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&t, &[tp(TOPIC, 0), tp(TOPIC, 1)], g, 0));
    h.put(CONSUMER2, h.v2(&t, &[tp(TOPIC, 0), tp(TOPIC, 2)], g, 1));
    h.put(CONSUMER3, h.v2(&t, &[], g, 2));
    h.assign(&ppt);
    (h, ppt)
}

mod test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_equal_partitions_per_consumer {
    use super::*;

    fn case(rack: RackConfig) {
        let (mut h, ppt) = claimed_by_two(rack, 3);
        assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 1)]);
        assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
        assert!(h.get(CONSUMER3).is_empty());
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());
    }

    #[test]
    fn no_broker_rack() {
        case(RackConfig::NoBrokerRack)
    }
    #[test]
    fn no_consumer_rack() {
        case(RackConfig::NoConsumerRack)
    }
    #[test]
    fn broker_and_consumer_rack() {
        case(RackConfig::BrokerAndConsumerRack)
    }
}

mod test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_unequal_partitions_per_consumer {
    use super::*;

    fn case(rack: RackConfig) {
        let (mut h, ppt) = claimed_by_two(rack, 4);
        assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 1), tp(TOPIC, 3)]);
        assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
        assert!(h.get(CONSUMER3).is_empty());
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());
    }

    #[test]
    fn no_broker_rack() {
        case(RackConfig::NoBrokerRack)
    }
    #[test]
    fn no_consumer_rack() {
        case(RackConfig::NoConsumerRack)
    }
    #[test]
    fn broker_and_consumer_rack() {
        case(RackConfig::BrokerAndConsumerRack)
    }
}

/// Without a generation in the Subscription, the user data's generation goes with the
/// Subscription's owned partitions.
#[test]
fn test_member_data_with_inconsistent_data() {
    let h = Harness::new(F);
    // onAssignment([tp1], generationId), then subscriptionUserData: the generation only.
    let subscription = Subscription {
        topics: topics(&[TOPIC]),
        user_data: Some(write_cooperative(h.generation_id)),
        owned: vec![tp(TOPIC, 0)],
        generation: DEFAULT_GENERATION,
        rack: None,
    };
    assert_eq!(
        data_of(&subscription),
        (vec![tp(TOPIC, 0)], h.generation_id)
    );
}

#[test]
fn test_member_data_with_empty_partitions_and_equal_generation() {
    let mut h = Harness::new(F);
    let owned = [tp(TOPIC1, 0), tp(TOPIC2, 1)];
    let g = h.generation_id;
    let subscription = Subscription {
        topics: topics(&[TOPIC]),
        user_data: Some(h.generate_user_data(&owned, g)),
        owned: Vec::new(),
        generation: g,
        rack: None,
    };
    assert_eq!(data_of(&subscription), (Vec::new(), g));
}

#[test]
fn test_member_data_with_empty_partitions_and_higher_generation() {
    let mut h = Harness::new(F);
    let owned = [tp(TOPIC1, 0), tp(TOPIC2, 1)];
    let g = h.generation_id;
    let subscription = Subscription {
        topics: topics(&[TOPIC]),
        user_data: Some(h.generate_user_data(&owned, g - 1)),
        owned: Vec::new(),
        generation: g,
        rack: None,
    };
    assert_eq!(data_of(&subscription), (Vec::new(), g));
}

#[test]
fn test_assignor_with_old_version_subscriptions() {
    let mut h = Harness::new(F);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 3);
    let t = topics(&[TOPIC1]);
    let g = h.generation_id;
    // The cooperative assignor needs Subscription V1 or above.
    assert!(h.v0(&t, &[tp(TOPIC1, 0)], g, 0).is_none());
    let v1 = h.v1(&t, &[tp(TOPIC1, 0)], g, 0);
    h.put(CONSUMER1, v1);
    let v1 = h.v1(&t, &[tp(TOPIC1, 1)], g, 1);
    h.put(CONSUMER2, v1);
    h.put(CONSUMER3, h.v2(&t, &[], g, 2));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC1, 0)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC1, 1)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC1, 2)]);
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

/// Two consumers on two racks, each owning one partition on its own rack and one on the other:
/// the two misplaced ones change hands (so both are in the transfer list), and the cooperative
/// round leaves each consumer only the partition it keeps.
#[test]
fn test_uniform_subscription_transfer_ownership_list_is_right() {
    let mut h = Harness::new(F);
    h.set_racks(1, 2, true);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 4);
    let t = topics(&[TOPIC1]);
    let g = h.generation_id;
    h.put("c0", h.v2(&t, &[tp(TOPIC1, 0), tp(TOPIC1, 1)], g, 0));
    h.put("c1", h.v2(&t, &[tp(TOPIC1, 2), tp(TOPIC1, 3)], g, 1));
    h.assign(&ppt);
    assert_eq!(h.transferring().map(|t| t.len()), Some(2));
    // Not asserted by Kafka: what the round hands out.
    assert_eq!(h.get("c0"), [tp(TOPIC1, 0)]);
    assert_eq!(h.get("c1"), [tp(TOPIC1, 3)]);
}

/// librdkafka before Subscription v2 sent `StickyAssignor`-format user data (previous
/// assignment and generation) with cooperative-sticky; its generation is used (Kafka's Java
/// leader would read the topic count as the generation).
#[test]
fn librdkafka_sticky_format_user_data_gives_the_generation() {
    let user_data = write_sticky(&grouped(&[tp(TOPIC, 0), tp(TOPIC, 1)]), Some(7));
    let subscription = Subscription {
        topics: topics(&[TOPIC]),
        user_data: Some(user_data),
        owned: vec![tp(TOPIC, 1)],
        generation: DEFAULT_GENERATION,
        rack: None,
    };
    assert_eq!(data_of(&subscription), (vec![tp(TOPIC, 1)], 7));
}

/// Not a Kafka test: the host's `previous_assignment` is not ownership for the cooperative
/// flavour (a cooperative client reports exactly what it holds in `owned_partitions`), so it
/// neither keeps a partition for a member nor makes a second claim that would hold it back.
#[test]
fn the_hosts_previous_assignment_is_not_ownership() {
    use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic, TopicPartitions};
    let t = |list: &[i32]| {
        vec![TopicPartitions {
            topic: "t".into(),
            partitions: list.to_vec(),
        }]
    };
    let member = |id: &str, owned: &[i32], previous: &[i32]| Member {
        member_id: id.into(),
        topics: vec!["t".into()].into(),
        owned_partitions: t(owned),
        owned_generation: if owned.is_empty() { -1 } else { 9 },
        previous_assignment: t(previous),
        ..Member::default()
    };
    let request = AssignRequest {
        abi_version: ABI_VERSION,
        generation_id: 10,
        protocol_type: "consumer".into(),
        members: vec![member("a", &[], &[0, 1]), member("b", &[0, 1], &[2, 3])],
        topics: vec![Topic {
            name: "t".into(),
            partition_count: 4,
            partition_racks: vec![],
        }],
        ..AssignRequest::default()
    };
    let outcome =
        assignor_sticky_core::run(&request, F, assignor_sticky_core::Options::default()).unwrap();
    assert!(outcome.withheld.is_empty(), "{:?}", outcome.withheld);
    assert_eq!(outcome.assignment.partitions("a", "t"), [2, 3]);
    assert_eq!(outcome.assignment.partitions("b", "t"), [0, 1]);
}
