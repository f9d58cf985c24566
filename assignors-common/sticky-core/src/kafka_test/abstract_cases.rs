//! Kafka's `AbstractStickyAssignorTest` (clients, `org.apache.kafka.clients.consumer.internals`),
//! case for case; each function has the Java test's name and takes the flavour (the Java
//! class runs once per subclass) and, where the Java test is parametrized, the rack
//! configuration. The `#[test]` functions are generated in each strategy crate by
//! [`abstract_sticky_assignor_test!`](crate::abstract_sticky_assignor_test).
//!
//! Java's randomized tests use an unseeded `Random`; here they run from fixed seeds.

use super::*;
use crate::Flavor;

const CONSUMER_ID: &str = "consumer";
const CONSUMER1: &str = "consumer1";
const CONSUMER2: &str = "consumer2";
const CONSUMER3: &str = "consumer3";
const CONSUMER4: &str = "consumer4";
const TOPIC: &str = "topic";
const TOPIC1: &str = "topic1";
const TOPIC2: &str = "topic2";

fn transfers(list: &[(&str, i32, &str)]) -> Option<Vec<(String, i32, String)>> {
    let mut v: Vec<_> = list
        .iter()
        .map(|(t, p, c)| (t.to_string(), *p, c.to_string()))
        .collect();
    v.sort();
    Some(v)
}

fn none_transferring() -> Option<Vec<(String, i32, String)>> {
    Some(Vec::new())
}

/// `getCanonicalName(str, i, maxNum)`: `str` and `i` padded to the digits of `maxNum`.
pub fn canonical_name(prefix: &str, i: i32, max: i32) -> String {
    let digits = max.to_string().len();
    format!("{prefix}{i:0digits$}")
}

fn topic_name(i: i32, max: i32) -> String {
    canonical_name("t", i, max)
}

fn consumer_name(i: i32, max: i32) -> String {
    canonical_name("c", i, max)
}

pub fn test_member_data(flavor: Flavor) {
    let mut h = Harness::new(flavor);
    let topics = topics(&[TOPIC]);
    let owned = vec![tp(TOPIC1, 0), tp(TOPIC2, 1)];
    let generation = h.generation_id;
    let subscriptions = [
        h.v0(&topics, &owned, generation, 0),
        Some(h.v1(&topics, &owned, generation, 1)),
        Some(h.v2(&topics, &owned, generation, 2)),
    ];
    for s in subscriptions.into_iter().flatten() {
        let ppt = PartitionsPerTopic::new();
        let req = request(flavor, &ppt, &std::collections::BTreeMap::new());
        let data = crate::ownership::member_data(&req, &member("m", &s), flavor);
        let partitions: Vec<Tp> = data
            .partitions
            .iter()
            .flat_map(|tp| tp.partitions.iter().map(|&p| (tp.topic.clone(), p)))
            .collect();
        assert_eq!(partitions, owned, "{s:?}");
        assert_eq!(data.generation, generation, "{s:?}");
    }
}

pub fn test_one_consumer_no_topic(flavor: Flavor, has_consumer_rack: bool) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(RackConfig::with_consumer_rack(has_consumer_rack));
    let ppt = PartitionsPerTopic::new();
    h.put(CONSUMER_ID, h.subscription(&[], 0));
    h.assign(&ppt);
    assert_eq!(h.assignment.keys().collect::<Vec<_>>(), [CONSUMER_ID]);
    assert!(h.get(CONSUMER_ID).is_empty());
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_one_consumer_nonexistent_topic(flavor: Flavor, has_consumer_rack: bool) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(RackConfig::with_consumer_rack(has_consumer_rack));
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 0);
    h.put(CONSUMER_ID, h.subscription(&topics(&[TOPIC]), 0));
    h.assign(&ppt);
    assert_eq!(h.assignment.keys().collect::<Vec<_>>(), [CONSUMER_ID]);
    assert!(h.get(CONSUMER_ID).is_empty());
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_one_consumer_one_topic(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 3);
    h.put(CONSUMER_ID, h.subscription(&topics(&[TOPIC]), 0));
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER_ID),
        [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2)]
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_only_assigns_partitions_from_subscribed_topics(flavor: Flavor, rack: RackConfig) {
    let other = "other";
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 2);
    let owned = [tp(TOPIC, 0), tp(TOPIC, 1), tp(other, 0), tp(other, 1)];
    let generation = h.generation_id;
    h.put(CONSUMER_ID, h.v2(&topics(&[TOPIC]), &owned, generation, 0));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER_ID), [tp(TOPIC, 0), tp(TOPIC, 1)]);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_one_consumer_multiple_topics(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 1);
    h.put_topic(&mut ppt, TOPIC2, 2);
    h.put(CONSUMER_ID, h.subscription(&topics(&[TOPIC1, TOPIC2]), 0));
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER_ID),
        [tp(TOPIC1, 0), tp(TOPIC2, 0), tp(TOPIC2, 1)]
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_two_consumers_one_topic_one_partition(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 1);
    h.put(CONSUMER1, h.subscription(&topics(&[TOPIC]), 0));
    h.put(CONSUMER2, h.subscription(&topics(&[TOPIC]), 1));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_two_consumers_one_topic_two_partitions(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 2);
    h.put(CONSUMER1, h.subscription(&topics(&[TOPIC]), 0));
    h.put(CONSUMER2, h.subscription(&topics(&[TOPIC]), 1));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 0)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 1)]);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_multiple_consumers_mixed_topic_subscriptions(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 3);
    h.put_topic(&mut ppt, TOPIC2, 2);
    h.put(CONSUMER1, h.subscription(&topics(&[TOPIC1]), 0));
    h.put(CONSUMER2, h.subscription(&topics(&[TOPIC1, TOPIC2]), 1));
    h.put(CONSUMER3, h.subscription(&topics(&[TOPIC1]), 2));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC1, 0), tp(TOPIC1, 2)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC2, 0), tp(TOPIC2, 1)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC1, 1)]);
    assert_eq!(h.transferring(), None);
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_two_consumers_two_topics_six_partitions(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 3);
    h.put_topic(&mut ppt, TOPIC2, 3);
    h.put(CONSUMER1, h.subscription(&topics(&[TOPIC1, TOPIC2]), 0));
    h.put(CONSUMER2, h.subscription(&topics(&[TOPIC1, TOPIC2]), 1));
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER1),
        [tp(TOPIC1, 0), tp(TOPIC1, 2), tp(TOPIC2, 1)]
    );
    assert_eq!(
        h.get(CONSUMER2),
        [tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)]
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

/// A consumer owning minQuota partitions is expected to get maxQuota.
pub fn test_consumer_owning_min_quota_expected_max_quota(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 2);
    h.put_topic(&mut ppt, TOPIC2, 3);
    let subscribed = topics(&[TOPIC1, TOPIC2]);
    let g = h.generation_id;
    h.put(
        CONSUMER1,
        h.v2(&subscribed, &[tp(TOPIC1, 0), tp(TOPIC2, 1)], g, 0),
    );
    h.put(
        CONSUMER2,
        h.v2(&subscribed, &[tp(TOPIC1, 1), tp(TOPIC2, 2)], g, 1),
    );
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER1),
        sorted(&[tp(TOPIC1, 0), tp(TOPIC2, 1), tp(TOPIC2, 0)])
    );
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC1, 1), tp(TOPIC2, 2)]);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

/// More consumers own maxQuota partitions than may keep them.
pub fn test_max_quota_consumer_more_than_num_expected_max_capacity_members(
    flavor: Flavor,
    rack: RackConfig,
) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 2);
    h.put_topic(&mut ppt, TOPIC2, 2);
    let subscribed = topics(&[TOPIC1, TOPIC2]);
    let g = h.generation_id;
    h.put(
        CONSUMER1,
        h.v2(&subscribed, &[tp(TOPIC1, 0), tp(TOPIC2, 0)], g, 0),
    );
    h.put(
        CONSUMER2,
        h.v2(&subscribed, &[tp(TOPIC1, 1), tp(TOPIC2, 1)], g, 1),
    );
    h.put(CONSUMER3, h.v2(&subscribed, &[], g, 2));
    h.assign(&ppt);
    assert_eq!(h.transferring(), transfers(&[(TOPIC2, 0, CONSUMER3)]));
    h.verify_validity_and_balance(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC1, 0)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC1, 1), tp(TOPIC2, 1)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC2, 0)]);
    assert!(h.is_fully_balanced());
}

/// Every consumer owns fewer than minQuota partitions.
pub fn test_all_consumers_are_under_min_quota(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 2);
    h.put_topic(&mut ppt, TOPIC2, 3);
    let subscribed = topics(&[TOPIC1, TOPIC2]);
    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&subscribed, &[tp(TOPIC1, 0)], g, 0));
    h.put(CONSUMER2, h.v2(&subscribed, &[tp(TOPIC1, 1)], g, 1));
    h.put(CONSUMER3, h.v2(&subscribed, &[], g, 2));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC1, 0), tp(TOPIC2, 1)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC1, 1), tp(TOPIC2, 2)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC2, 0)]);
    assert!(h.is_fully_balanced());
}

pub fn test_add_remove_consumer_one_topic(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 3);
    h.put(CONSUMER1, h.subscription(&topics(&[TOPIC]), 0));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2)]);
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());

    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&topics(&[TOPIC]), &h.get(CONSUMER1), g, 0));
    h.put(CONSUMER2, h.v2(&topics(&[TOPIC]), &[], g, 1));
    h.assign(&ppt);
    assert_eq!(h.transferring(), transfers(&[(TOPIC, 2, CONSUMER2)]));
    h.verify_validity_and_balance(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 0), tp(TOPIC, 1)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
    assert!(h.is_fully_balanced());

    h.subscriptions.remove(CONSUMER1);
    h.put(CONSUMER2, h.v2(&topics(&[TOPIC]), &h.get(CONSUMER2), g, 1));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2)]);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

fn count_of(list: &[Tp], topic: &str) -> usize {
    list.iter().filter(|(t, _)| t == topic).count()
}

pub fn test_topic_balance_after_reassignment(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let all = topics(&[TOPIC1, TOPIC2]);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 12);
    h.put_topic(&mut ppt, TOPIC2, 12);
    h.put(CONSUMER1, h.subscription(&all, 0));
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
    let each = |h: &Harness, n: usize| {
        for list in h.assignment.values() {
            assert_eq!(count_of(list, TOPIC1), n, "{:?}", h.assignment);
            assert_eq!(count_of(list, TOPIC2), n, "{:?}", h.assignment);
        }
    };
    each(&h, 12);
    assert_eq!(h.transferring(), none_transferring());
    assert!(h.is_fully_balanced());

    // Add another consumer.
    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&all, &h.get(CONSUMER1), g, 0));
    h.put(CONSUMER2, h.v2(&all, &[], g, 1));
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
    each(&h, 6);
    assert!(h.is_fully_balanced());

    // Add two more consumers.
    h.put(CONSUMER1, h.v2(&all, &h.get(CONSUMER1), g, 0));
    h.put(CONSUMER2, h.v2(&all, &h.get(CONSUMER2), g, 1));
    h.put(CONSUMER3, h.v2(&all, &[], g, 2));
    h.put(CONSUMER4, h.v2(&all, &[], g, 3));
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
    each(&h, 3);
    assert!(h.is_fully_balanced());

    // Remove two consumers.
    h.subscriptions.remove(CONSUMER1);
    h.subscriptions.remove(CONSUMER2);
    h.put(CONSUMER3, h.v2(&all, &h.get(CONSUMER3), g, 2));
    h.put(CONSUMER4, h.v2(&all, &h.get(CONSUMER4), g, 3));
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
    each(&h, 6);
    assert_eq!(h.transferring(), none_transferring());
    assert!(h.is_fully_balanced());
}

pub fn test_add_remove_two_consumers_two_topics(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let all = topics(&[TOPIC1, TOPIC2]);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 3);
    h.put_topic(&mut ppt, TOPIC2, 4);
    h.put(CONSUMER1, h.subscription(&all, 0));
    h.put(CONSUMER2, h.subscription(&all, 1));
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER1),
        [tp(TOPIC1, 0), tp(TOPIC1, 2), tp(TOPIC2, 1), tp(TOPIC2, 3)]
    );
    assert_eq!(
        h.get(CONSUMER2),
        [tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)]
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());

    // Add two consumers.
    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&all, &h.get(CONSUMER1), g, 0));
    h.put(CONSUMER2, h.v2(&all, &h.get(CONSUMER2), g, 1));
    h.put(CONSUMER3, h.v2(&all, &[], g, 2));
    h.put(CONSUMER4, h.v2(&all, &[], g, 3));
    h.assign(&ppt);
    assert_eq!(
        h.transferring(),
        transfers(&[
            (TOPIC1, 2, CONSUMER3),
            (TOPIC2, 3, CONSUMER3),
            (TOPIC2, 2, CONSUMER4)
        ])
    );
    h.verify_validity_and_balance(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC1, 0), tp(TOPIC2, 1)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC1, 1), tp(TOPIC2, 0)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC1, 2), tp(TOPIC2, 3)]);
    assert_eq!(h.get(CONSUMER4), [tp(TOPIC2, 2)]);
    assert!(h.is_fully_balanced());

    // Remove two consumers.
    h.subscriptions.remove(CONSUMER1);
    h.subscriptions.remove(CONSUMER2);
    h.put(CONSUMER3, h.v2(&all, &h.get(CONSUMER3), g, 2));
    h.put(CONSUMER4, h.v2(&all, &h.get(CONSUMER4), g, 3));
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER3),
        sorted(&[tp(TOPIC1, 2), tp(TOPIC2, 3), tp(TOPIC1, 0), tp(TOPIC2, 1)])
    );
    assert_eq!(
        h.get(CONSUMER4),
        sorted(&[tp(TOPIC2, 2), tp(TOPIC1, 1), tp(TOPIC2, 0)])
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

/// A scenario Kafka's round robin handles poorly (see the Java test's comment).
pub fn test_poor_round_robin_assignment_scenario(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for i in 1..=5 {
        let name = format!("topic{i}");
        h.put_topic(&mut ppt, &name, (i % 2) + 1);
    }
    let five = topics(&["topic1", "topic2", "topic3", "topic4", "topic5"]);
    let three = topics(&["topic1", "topic3", "topic5"]);
    h.put("consumer1", h.subscription(&five, 0));
    h.put("consumer2", h.subscription(&three, 1));
    h.put("consumer3", h.subscription(&three, 2));
    h.put("consumer4", h.subscription(&five, 3));
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
}

pub fn test_add_remove_topic_two_consumers(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 3);
    h.put(CONSUMER1, h.subscription(&topics(&[TOPIC]), 0));
    h.put(CONSUMER2, h.subscription(&topics(&[TOPIC]), 1));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    assert!(h.is_fully_balanced());
    h.verify_validity_and_balance(&ppt);
    let first1 = h.get(CONSUMER1);
    let first2 = h.get(CONSUMER2);
    assert!((first1.len() == 1 && first2.len() == 2) || (first1.len() == 2 && first2.len() == 1));

    h.put_topic(&mut ppt, TOPIC2, 3);
    let both = topics(&[TOPIC, TOPIC2]);
    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&both, &h.get(CONSUMER1), g, 0));
    h.put(CONSUMER2, h.v2(&both, &h.get(CONSUMER2), g, 1));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
    let second1 = h.get(CONSUMER1);
    let second2 = h.get(CONSUMER2);
    assert!(second1.len() == 3 && second2.len() == 3);
    assert!(first1.iter().all(|tp| second1.contains(tp)));
    assert!(first2.iter().all(|tp| second2.contains(tp)));

    ppt.remove(TOPIC);
    let only2 = topics(&[TOPIC2]);
    h.put(CONSUMER1, h.v2(&only2, &h.get(CONSUMER1), g, 0));
    h.put(CONSUMER2, h.v2(&only2, &h.get(CONSUMER2), g, 1));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
    let third1 = h.get(CONSUMER1);
    let third2 = h.get(CONSUMER2);
    assert!((third1.len() == 1 && third2.len() == 2) || (third1.len() == 2 && third2.len() == 1));
    assert!(third1.iter().all(|tp| second1.contains(tp)));
    assert!(third2.iter().all(|tp| second2.contains(tp)));
}

pub fn test_reassignment_after_one_consumer_leaves(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for i in 1..20 {
        let name = topic_name(i, 20);
        h.put_topic(&mut ppt, &name, i);
    }
    for i in 1..20 {
        let subscribed: Vec<String> = (1..=i).map(|j| topic_name(j, 20)).collect();
        h.put(&consumer_name(i, 20), h.subscription(&subscribed, i));
    }
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);

    let g = h.generation_id;
    for i in 1..20 {
        let consumer = consumer_name(i, 20);
        let topics = h.subscriptions[&consumer].topics.clone();
        h.put(&consumer, h.v2(&topics, &h.get(&consumer), g, i));
    }
    h.subscriptions.remove("c10");
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_sticky());
}

pub fn test_reassignment_after_one_consumer_added(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, "topic", 20);
    for i in 1..10 {
        h.put(
            &consumer_name(i, 10),
            h.subscription(&topics(&["topic"]), i),
        );
    }
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);

    // Add a new consumer.
    h.put(
        &consumer_name(10, 10),
        h.subscription(&topics(&["topic"]), 10),
    );
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
}

pub fn test_same_subscriptions(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for i in 1..15 {
        let name = topic_name(i, 15);
        h.put_topic(&mut ppt, &name, i);
    }
    let all: Vec<String> = (1..=ppt.len() as i32).map(|j| topic_name(j, 15)).collect();
    for i in 1..9 {
        h.put(&consumer_name(i, 9), h.subscription(&all, i));
    }
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);

    let g = h.generation_id;
    for i in 1..9 {
        let consumer = consumer_name(i, 9);
        h.put(&consumer, h.v2(&all, &h.get(&consumer), g, i));
    }
    h.subscriptions.remove(&consumer_name(5, 9));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
}
