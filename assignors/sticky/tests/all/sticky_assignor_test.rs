//! Kafka's `StickyAssignorTest` (clients, `org.apache.kafka.clients.consumer`): the cases of
//! its own, case for case, each named after the Java test (parametrized ones are modules with
//! one test per parameter). The inherited `AbstractStickyAssignorTest` cases are in
//! `abstract_sticky_assignor_test.rs`. Plus the two examples of the `StickyAssignor` class
//! documentation, with the answers Kafka's current code gives.

use std::collections::BTreeMap;

use assignor_sticky_core::Flavor;
use assignor_sticky_core::kafka_test::{
    Harness, PartitionsPerTopic, RackConfig, Subscription, Tp, grouped, member, request, sorted,
    topics, tp,
};
use assignor_sticky_core::ownership::member_data;
use assignor_sticky_core::user_data::{DEFAULT_GENERATION, write_sticky};

const F: Flavor = Flavor::Sticky;
const CONSUMER1: &str = "consumer1";
const CONSUMER2: &str = "consumer2";
const CONSUMER3: &str = "consumer3";
const TOPIC: &str = "topic";
const TOPIC1: &str = "topic1";
const TOPIC2: &str = "topic2";
const TOPIC3: &str = "topic3";

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

/// Three consumers, `topic` partition 0 claimed by the first two in the same generation.
fn claimed_by_two(rack: RackConfig, partitions: i32) -> Harness {
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
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
    h
}

mod test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_equal_partitions_per_consumer {
    use super::*;

    fn case(rack: RackConfig) {
        let h = claimed_by_two(rack, 3);
        assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 1)]);
        assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
        assert_eq!(h.get(CONSUMER3), [tp(TOPIC, 0)]);
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
        let h = claimed_by_two(rack, 4);
        assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 1), tp(TOPIC, 3)]);
        assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
        assert_eq!(h.get(CONSUMER3), [tp(TOPIC, 0)]);
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

/// `rackAndSubscriptionCombinations`: one test per (rack config, all subscriptions equal).
macro_rules! rack_and_subscription_combinations {
    ($case:path) => {
        #[test]
        fn no_broker_rack_equal_subscriptions() {
            $case(RackConfig::NoBrokerRack, true)
        }
        #[test]
        fn no_consumer_rack_equal_subscriptions() {
            $case(RackConfig::NoConsumerRack, true)
        }
        #[test]
        fn broker_and_consumer_rack_equal_subscriptions() {
            $case(RackConfig::BrokerAndConsumerRack, true)
        }
        #[test]
        fn no_broker_rack_different_subscriptions() {
            $case(RackConfig::NoBrokerRack, false)
        }
        #[test]
        fn no_consumer_rack_different_subscriptions() {
            $case(RackConfig::NoConsumerRack, false)
        }
        #[test]
        fn broker_and_consumer_rack_different_subscriptions() {
            $case(RackConfig::BrokerAndConsumerRack, false)
        }
    };
}

fn disjoint(a: &[Tp], b: &[Tp]) -> bool {
    !a.iter().any(|tp| b.contains(tp))
}

fn contains_all(a: &[Tp], b: &[Tp]) -> bool {
    b.iter().all(|tp| a.contains(tp))
}

mod test_assignment_with_multiple_generations1 {
    use super::*;

    fn case(rack: RackConfig, equal: bool) {
        let mut h = Harness::new(F);
        h.initialize_racks(rack);
        let all = topics(&[TOPIC, TOPIC2]);
        let c2_topics = if equal { all.clone() } else { topics(&[TOPIC]) };
        let mut ppt = PartitionsPerTopic::new();
        h.put_topic(&mut ppt, TOPIC, 6);
        h.put_topic(&mut ppt, TOPIC2, 6);
        h.put(CONSUMER1, h.subscription(&all, 0));
        h.put(CONSUMER2, h.subscription(&c2_topics, 1));
        h.put(CONSUMER3, h.subscription(&all, 2));
        h.assign(&ppt);
        let (r1p1, r1p2, r1p3) = (h.get(CONSUMER1), h.get(CONSUMER2), h.get(CONSUMER3));
        assert!(r1p1.len() == 4 && r1p2.len() == 4 && r1p3.len() == 4);
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());

        let g = h.generation_id;
        h.put(CONSUMER1, h.v2(&all, &r1p1, g, 0));
        h.put(CONSUMER2, h.v2(&c2_topics, &r1p2, g, 1));
        h.subscriptions.remove(CONSUMER3);
        h.assign(&ppt);
        let (r2p1, r2p2) = (h.get(CONSUMER1), h.get(CONSUMER2));
        assert!(r2p1.len() == 6 && r2p2.len() == 6);
        if equal {
            // Only true when all subscriptions are equal.
            assert!(contains_all(&r2p1, &r1p1));
        }
        assert!(contains_all(&r2p2, &r1p2));
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());
        assert!(!disjoint(&r2p2, &r1p3));

        h.subscriptions.remove(CONSUMER1);
        h.put(CONSUMER2, h.v2(&c2_topics, &r2p2, 2, 1));
        h.put(CONSUMER3, h.v2(&all, &r1p3, 1, 2));
        h.assign(&ppt);
        let (r3p2, r3p3) = (h.get(CONSUMER2), h.get(CONSUMER3));
        assert!(r3p2.len() == 6 && r3p3.len() == 6);
        assert!(disjoint(&r3p2, &r3p3));
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());
    }

    rack_and_subscription_combinations!(case);
}

mod test_assignment_with_multiple_generations2 {
    use super::*;

    fn case(rack: RackConfig, equal: bool) {
        let mut h = Harness::new(F);
        h.initialize_racks(rack);
        let all = topics(&[TOPIC, TOPIC2, TOPIC3]);
        let c1_topics = if equal { all.clone() } else { topics(&[TOPIC]) };
        let c3_topics = if equal {
            all.clone()
        } else {
            topics(&[TOPIC, TOPIC2])
        };
        let mut ppt = PartitionsPerTopic::new();
        for t in [TOPIC, TOPIC2, TOPIC3] {
            h.put_topic(&mut ppt, t, 4);
        }
        h.put(CONSUMER1, h.subscription(&c1_topics, 0));
        h.put(CONSUMER2, h.subscription(&all, 1));
        h.put(CONSUMER3, h.subscription(&c3_topics, 2));
        h.assign(&ppt);
        let (r1p1, r1p2, r1p3) = (h.get(CONSUMER1), h.get(CONSUMER2), h.get(CONSUMER3));
        assert!(r1p1.len() == 4 && r1p2.len() == 4 && r1p3.len() == 4);
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());

        h.subscriptions.remove(CONSUMER1);
        h.put(CONSUMER2, h.v2(&all, &r1p2, 1, 1));
        h.subscriptions.remove(CONSUMER3);
        h.assign(&ppt);
        let r2p2 = h.get(CONSUMER2);
        assert_eq!(r2p2.len(), 12);
        assert!(contains_all(&r2p2, &r1p2));
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());

        h.put(CONSUMER1, h.v2(&c1_topics, &r1p1, 1, 0));
        h.put(CONSUMER2, h.v2(&all, &r2p2, 2, 1));
        h.put(CONSUMER3, h.v2(&c3_topics, &r1p3, 1, 2));
        h.assign(&ppt);
        let sizes: Vec<usize> = [CONSUMER1, CONSUMER2, CONSUMER3]
            .iter()
            .map(|c| h.get(c).len())
            .collect();
        assert_eq!(sizes, [4, 4, 4]);
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());
    }

    rack_and_subscription_combinations!(case);
}

mod test_assignment_with_conflicting_previous_generations {
    use super::*;

    fn case(rack: RackConfig, equal: bool) {
        let mut h = Harness::new(F);
        h.initialize_racks(rack);
        let mut ppt = PartitionsPerTopic::new();
        for t in [TOPIC, TOPIC2, TOPIC3] {
            h.put_topic(&mut ppt, t, 4);
        }
        let all = topics(&[TOPIC, TOPIC2, TOPIC3]);
        let c1_topics = if equal { all.clone() } else { topics(&[TOPIC]) };
        let c2_topics = if equal {
            all.clone()
        } else {
            topics(&[TOPIC, TOPIC2])
        };
        h.put(CONSUMER1, h.subscription(&c1_topics, 0));
        h.put(CONSUMER2, h.subscription(&c2_topics, 1));
        h.put(CONSUMER3, h.subscription(&all, 2));
        let c1_owned = if equal {
            vec![
                tp(TOPIC, 0),
                tp(TOPIC, 1),
                tp(TOPIC, 2),
                tp(TOPIC2, 2),
                tp(TOPIC2, 3),
                tp(TOPIC3, 0),
            ]
        } else {
            vec![tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2), tp(TOPIC, 3)]
        };
        let c2_owned = [
            tp(TOPIC, 0),
            tp(TOPIC, 1),
            tp(TOPIC2, 0),
            tp(TOPIC2, 1),
            tp(TOPIC2, 2),
            tp(TOPIC2, 3),
        ];
        let c3_owned = [
            tp(TOPIC, 2),
            tp(TOPIC, 3),
            tp(TOPIC3, 0),
            tp(TOPIC3, 1),
            tp(TOPIC3, 2),
            tp(TOPIC3, 3),
        ];
        h.put(CONSUMER1, h.v2(&c1_topics, &c1_owned, 1, 0));
        h.put(CONSUMER2, h.v2(&c2_topics, &c2_owned, 2, 1));
        h.put(CONSUMER3, h.v2(&all, &c3_owned, 2, 2));
        h.assign(&ppt);
        let (c1, c2, c3) = (h.get(CONSUMER1), h.get(CONSUMER2), h.get(CONSUMER3));
        assert!(c1.len() == 4 && c2.len() == 4 && c3.len() == 4);
        assert!(contains_all(&c2_owned, &c2));
        assert!(contains_all(&c3_owned, &c3));
        h.verify_validity_and_balance(&ppt);
        assert!(h.is_fully_balanced());
    }

    rack_and_subscription_combinations!(case);
}

mod test_schema_backward_compatibility {
    use super::*;

    fn case(rack: RackConfig) {
        let mut h = Harness::new(F);
        h.initialize_racks(rack);
        let mut ppt = PartitionsPerTopic::new();
        h.put_topic(&mut ppt, TOPIC, 3);
        let t = topics(&[TOPIC]);
        h.put(CONSUMER1, h.subscription(&t, 0));
        h.put(CONSUMER2, h.subscription(&t, 1));
        h.put(CONSUMER3, h.subscription(&t, 2));
        let c1_owned = [tp(TOPIC, 0), tp(TOPIC, 2)];
        let c2_owned = [tp(TOPIC, 1)];
        h.put(CONSUMER1, h.v2(&t, &c1_owned, 1, 0));
        // buildSubscriptionWithOldSchema: STICKY_ASSIGNOR_USER_DATA_V0, no generation.
        let old_schema = Subscription {
            topics: t.clone(),
            user_data: Some(write_sticky(&grouped(&c2_owned), None)),
            owned: Vec::new(),
            generation: DEFAULT_GENERATION,
            rack: h.consumer_rack_id(1),
        };
        h.put(CONSUMER2, old_schema);
        h.assign(&ppt);
        let (c1, c2, c3) = (h.get(CONSUMER1), h.get(CONSUMER2), h.get(CONSUMER3));
        assert!(c1.len() == 1 && c2.len() == 1 && c3.len() == 1);
        assert!(contains_all(&c1_owned, &c1));
        assert!(contains_all(&c2_owned, &c2));
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

/// The user data wins over `owned_partitions` (the same for every rack configuration: racks
/// play no part in reading member data).
#[test]
fn test_member_data_with_inconsistent_data() {
    let h = Harness::new(F);
    // onAssignment([tp1], generationId), then subscriptionUserData.
    let user_data = write_sticky(&grouped(&[tp(TOPIC, 1)]), Some(h.generation_id));
    let subscription = Subscription {
        topics: topics(&[TOPIC]),
        user_data: Some(user_data),
        owned: vec![tp(TOPIC, 0)],
        generation: DEFAULT_GENERATION,
        rack: None,
    };
    assert_eq!(
        data_of(&subscription),
        (vec![tp(TOPIC, 1)], h.generation_id)
    );
}

#[test]
fn test_member_data_will_honor_user_data() {
    let mut h = Harness::new(F);
    let owned = [tp(TOPIC1, 0), tp(TOPIC2, 1)];
    let generation_in_user_data = h.generation_id - 1;
    let subscription = Subscription {
        topics: topics(&[TOPIC]),
        user_data: Some(h.generate_user_data(&owned, generation_in_user_data)),
        owned: Vec::new(),
        generation: h.generation_id,
        rack: None,
    };
    assert_eq!(
        data_of(&subscription),
        (owned.to_vec(), generation_in_user_data)
    );
}

#[test]
fn test_assignor_with_old_version_subscriptions() {
    let mut h = Harness::new(F);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 3);
    let t = topics(&[TOPIC1]);
    let g = h.generation_id;
    let v0 = h
        .v0(&t, &[tp(TOPIC1, 0)], g, 0)
        .expect("sticky supports V0");
    h.put(CONSUMER1, v0);
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

/// `StickyAssignor` class docs, example 1: three consumers on four two-partition topics; `C1`
/// leaves. The first assignment is the documented one; after the leave Kafka's current code
/// answers differently from the (older) docs, but keeps the same promise: `C0` and `C2` keep
/// everything and share `C1`'s partitions.
#[test]
fn class_doc_example_1() {
    let mut h = Harness::new(F);
    let mut ppt = PartitionsPerTopic::new();
    let all = topics(&["t0", "t1", "t2", "t3"]);
    for t in &all {
        h.put_topic(&mut ppt, t, 2);
    }
    for (i, c) in ["C0", "C1", "C2"].iter().enumerate() {
        h.put(c, h.subscription(&all, i as i32));
    }
    h.assign(&ppt);
    assert_eq!(h.get("C0"), [tp("t0", 0), tp("t1", 1), tp("t3", 0)]);
    assert_eq!(h.get("C1"), [tp("t0", 1), tp("t2", 0), tp("t3", 1)]);
    assert_eq!(h.get("C2"), [tp("t1", 0), tp("t2", 1)]);

    let g = h.generation_id;
    h.put("C0", h.v2(&all, &h.get("C0"), g, 0));
    h.put("C2", h.v2(&all, &h.get("C2"), g, 2));
    h.subscriptions.remove("C1");
    h.assign(&ppt);
    assert_eq!(
        h.get("C0"),
        [tp("t0", 0), tp("t0", 1), tp("t1", 1), tp("t3", 0)]
    );
    assert_eq!(
        h.get("C2"),
        [tp("t1", 0), tp("t2", 0), tp("t2", 1), tp("t3", 1)]
    );
}

/// `StickyAssignor` class docs, example 2: different subscriptions; `C0` leaves and its one
/// partition moves, nothing else does.
#[test]
fn class_doc_example_2() {
    let mut h = Harness::new(F);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, "t0", 1);
    h.put_topic(&mut ppt, "t1", 2);
    h.put_topic(&mut ppt, "t2", 3);
    h.put("C0", h.subscription(&topics(&["t0"]), 0));
    h.put("C1", h.subscription(&topics(&["t0", "t1"]), 1));
    h.put("C2", h.subscription(&topics(&["t0", "t1", "t2"]), 2));
    h.assign(&ppt);
    assert_eq!(h.get("C0"), [tp("t0", 0)]);
    assert_eq!(h.get("C1"), [tp("t1", 0), tp("t1", 1)]);
    assert_eq!(h.get("C2"), [tp("t2", 0), tp("t2", 1), tp("t2", 2)]);

    let g = h.generation_id;
    h.put("C1", h.v2(&topics(&["t0", "t1"]), &h.get("C1"), g, 1));
    h.put("C2", h.v2(&topics(&["t0", "t1", "t2"]), &h.get("C2"), g, 2));
    h.subscriptions.remove("C0");
    h.assign(&ppt);
    assert_eq!(
        h.get("C1"),
        sorted(&[tp("t1", 0), tp("t1", 1), tp("t0", 0)])
    );
    assert_eq!(h.get("C2"), [tp("t2", 0), tp("t2", 1), tp("t2", 2)]);
}
