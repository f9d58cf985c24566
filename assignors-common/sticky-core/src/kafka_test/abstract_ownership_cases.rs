//! The rest of Kafka's `AbstractStickyAssignorTest`: large and randomized groups, previous
//! owners of different generations, deleted topics, and the rack-aware cases. Same
//! conventions as [`super::abstract_cases`].

use std::collections::BTreeMap;

use super::abstract_cases::canonical_name;
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
const TOPIC3: &str = "topic3";

fn topic_name(i: i32, max: i32) -> String {
    canonical_name("t", i, max)
}

fn consumer_name(i: i32, max: i32) -> String {
    canonical_name("c", i, max)
}

fn none_transferring() -> Option<Vec<(String, i32, String)>> {
    Some(Vec::new())
}

pub fn test_subscription_not_equal_and_assign_same_partition_with3_generation(flavor: Flavor) {
    let mut h = Harness::new(flavor);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 6);
    h.put_topic(&mut ppt, TOPIC1, 1);
    let sequences = [
        [1, 2, 3],
        [1, 3, 2],
        [2, 1, 3],
        [2, 3, 1],
        [3, 1, 2],
        [3, 2, 1],
    ];
    for s in sequences {
        let t = topics(&[TOPIC]);
        h.put(CONSUMER1, h.v2(&t, &[tp(TOPIC, 0), tp(TOPIC, 2)], s[0], 0));
        h.put(
            CONSUMER2,
            h.v2(&t, &[tp(TOPIC, 1), tp(TOPIC, 2), tp(TOPIC, 3)], s[1], 1),
        );
        h.put(
            CONSUMER3,
            h.v2(&t, &[tp(TOPIC, 2), tp(TOPIC, 4), tp(TOPIC, 5)], s[2], 2),
        );
        h.put(CONSUMER4, h.v2(&topics(&[TOPIC1]), &[tp(TOPIC1, 0)], 2, 3));
        h.assign(&ppt);
        let all: Vec<&Tp> = h.assignment.values().flatten().collect();
        let distinct: std::collections::BTreeSet<&Tp> = all.iter().copied().collect();
        assert_eq!(all.len(), distinct.len(), "{s:?}: {:?}", h.assignment);
        for list in h.assignment.values() {
            assert!((1..=2).contains(&list.len()), "{s:?}: {:?}", h.assignment);
        }
    }
}

pub fn test_new_subscription(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for i in 1..5 {
        h.put_topic(&mut ppt, &topic_name(i, 5), 1);
    }
    for i in 0..3 {
        let subscribed: Vec<String> = (i..=3 * i - 2).map(|j| topic_name(j, 5)).collect();
        h.put(&consumer_name(i, 3), h.subscription(&subscribed, i));
    }
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);

    // The Java test adds topic 1 to consumer 0's subscription in place; in the cooperative
    // case the verification above has rebuilt that subscription with its owned partitions.
    let c0 = consumer_name(0, 3);
    if let Some(s) = h.subscriptions.get_mut(&c0) {
        s.topics.push(topic_name(1, 5));
    }
    h.assign(&ppt);
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_sticky());
}

pub fn test_move_existing_assignments(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for i in 1..=6 {
        h.put_topic(&mut ppt, &format!("topic{i}"), 1);
    }
    let g = h.generation_id;
    h.put(
        CONSUMER1,
        h.v2(&topics(&[TOPIC1, TOPIC2]), &[tp(TOPIC1, 0)], g, 0),
    );
    h.put(
        CONSUMER2,
        h.v2(
            &topics(&[TOPIC1, TOPIC2, TOPIC3, "topic4"]),
            &[tp(TOPIC2, 0), tp(TOPIC3, 0)],
            g,
            1,
        ),
    );
    h.put(
        CONSUMER3,
        h.v2(
            &topics(&[TOPIC2, TOPIC3, "topic4", "topic5", "topic6"]),
            &[tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)],
            g,
            2,
        ),
    );
    h.assign(&ppt);
    assert_eq!(h.transferring(), None);
    h.verify_validity_and_balance(&ppt);
}

pub fn test_stickiness(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 3);
    let t = topics(&[TOPIC1]);
    for (i, c) in [CONSUMER1, CONSUMER2, CONSUMER3, CONSUMER4]
        .iter()
        .enumerate()
    {
        h.put(c, h.subscription(&t, i as i32));
    }
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    let mut assigned: BTreeMap<String, Tp> = BTreeMap::new();
    for (consumer, list) in &h.assignment {
        assert!(
            list.len() <= 1,
            "{consumer} got more partitions than expected"
        );
        if let [only] = list.as_slice() {
            assigned.insert(consumer.clone(), only.clone());
        }
    }

    // Remove the potential group leader.
    h.subscriptions.remove(CONSUMER1);
    let g = h.generation_id;
    for (i, c) in [(1, CONSUMER2), (2, CONSUMER3), (3, CONSUMER4)] {
        h.put(c, h.v2(&t, &h.get(c), g, i));
    }
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    for (consumer, list) in &h.assignment {
        assert_eq!(
            list.len(),
            1,
            "{consumer} got more partitions than expected"
        );
        if let Some(previous) = assigned.get(consumer) {
            assert!(
                list.contains(previous),
                "stickiness was not honoured for {consumer}"
            );
        }
    }
}

pub fn test_assignment_updated_for_deleted_topic(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC1, 1);
    h.put_topic(&mut ppt, TOPIC3, 100);
    h.put(
        CONSUMER_ID,
        h.subscription(&topics(&[TOPIC1, TOPIC2, TOPIC3]), 0),
    );
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    assert_eq!(h.assignment.values().map(Vec::len).sum::<usize>(), 1 + 100);
    assert_eq!(h.assignment.keys().collect::<Vec<_>>(), [CONSUMER_ID]);
    assert!(h.is_fully_balanced());
}

pub fn test_no_exception_thrown_when_only_subscribed_topic_deleted(
    flavor: Flavor,
    rack: RackConfig,
) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 3);
    h.put(CONSUMER_ID, h.subscription(&topics(&[TOPIC]), 0));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    let g = h.generation_id;
    h.put(
        CONSUMER_ID,
        h.v2(&topics(&[TOPIC]), &h.get(CONSUMER_ID), g, 0),
    );
    h.assign(&PartitionsPerTopic::new());
    assert_eq!(h.transferring(), none_transferring());
    assert_eq!(h.assignment.len(), 1);
    assert!(h.get(CONSUMER_ID).is_empty());
}

pub fn test_all_consumers_reach_expected_quota_and_are_considered_filled(
    flavor: Flavor,
    rack: RackConfig,
) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 4);
    let t = topics(&[TOPIC]);
    let g = h.generation_id;
    h.put(CONSUMER1, h.v2(&t, &[tp(TOPIC, 0), tp(TOPIC, 1)], g, 0));
    h.put(CONSUMER2, h.v2(&t, &[tp(TOPIC, 2)], g, 1));
    h.put(CONSUMER3, h.v2(&t, &[], g, 2));
    h.assign(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 0), tp(TOPIC, 1)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC, 3)]);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

/// Two consumers claim the same partitions; `claims` gives each one's generation.
fn two_claimants(
    flavor: Flavor,
    rack: RackConfig,
    first: (&[Tp], i32),
    second: (&[Tp], i32),
) -> Harness {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 3);
    h.put_topic(&mut ppt, TOPIC2, 3);
    let t = topics(&[TOPIC, TOPIC2]);
    h.put(CONSUMER1, h.v2(&t, first.0, first.1, 0));
    h.put(CONSUMER2, h.v2(&t, second.0, second.1, 1));
    h.assign(&ppt);
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
    h
}

pub fn test_owned_partitions_are_invalidated_for_consumer_with_stale_generation(
    flavor: Flavor,
    rack: RackConfig,
) {
    let current = 10;
    let owned = [tp(TOPIC, 0), tp(TOPIC, 2), tp(TOPIC2, 1)];
    let h = two_claimants(flavor, rack, (&owned, current), (&owned, current - 1));
    assert_eq!(h.get(CONSUMER1), sorted(&owned));
    assert_eq!(
        h.get(CONSUMER2),
        [tp(TOPIC, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)]
    );
}

pub fn test_owned_partitions_are_invalidated_for_consumer_with_no_generation(
    flavor: Flavor,
    rack: RackConfig,
) {
    let owned = [tp(TOPIC, 0), tp(TOPIC, 2), tp(TOPIC2, 1)];
    let h = two_claimants(flavor, rack, (&owned, 10), (&owned, -1));
    assert_eq!(h.get(CONSUMER1), sorted(&owned));
    assert_eq!(
        h.get(CONSUMER2),
        [tp(TOPIC, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)]
    );
}

pub fn test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(
    flavor: Flavor,
    rack: RackConfig,
) {
    let current = 10;
    let h = two_claimants(
        flavor,
        rack,
        (&[tp(TOPIC, 0), tp(TOPIC2, 1), tp(TOPIC, 1)], current),
        (&[tp(TOPIC, 0), tp(TOPIC2, 1), tp(TOPIC2, 2)], current - 2),
    );
    assert_eq!(
        h.get(CONSUMER1),
        [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC2, 1)]
    );
    assert_eq!(
        h.get(CONSUMER2),
        [tp(TOPIC, 2), tp(TOPIC2, 0), tp(TOPIC2, 2)]
    );
}

pub fn test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers_in_same_generation(
    flavor: Flavor,
    rack: RackConfig,
) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    h.put_topic(&mut ppt, TOPIC, 3);
    let t = topics(&[TOPIC]);
    let g = h.generation_id;
    // topic-0 is owned by two consumers.
    h.put(CONSUMER1, h.v2(&t, &[tp(TOPIC, 0), tp(TOPIC, 1)], g, 0));
    h.put(CONSUMER2, h.v2(&t, &[tp(TOPIC, 0), tp(TOPIC, 2)], g, 1));
    h.put(CONSUMER3, h.v2(&t, &[], g, 2));
    h.assign(&ppt);
    assert_eq!(
        h.transferring(),
        Some(vec![(TOPIC.to_string(), 0, CONSUMER3.to_string())])
    );
    h.verify_validity_and_balance(&ppt);
    assert_eq!(h.get(CONSUMER1), [tp(TOPIC, 1)]);
    assert_eq!(h.get(CONSUMER2), [tp(TOPIC, 2)]);
    assert_eq!(h.get(CONSUMER3), [tp(TOPIC, 0)]);
    assert!(h.is_fully_balanced());
}

pub fn test_ensure_partitions_assigned_to_highest_generation(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for t in [TOPIC, TOPIC2, TOPIC3] {
        h.put_topic(&mut ppt, t, 3);
    }
    let all = topics(&[TOPIC, TOPIC2, TOPIC3]);
    let current = 10;
    h.put(
        CONSUMER1,
        h.v2(
            &all,
            &[tp(TOPIC, 0), tp(TOPIC2, 0), tp(TOPIC3, 0)],
            current,
            0,
        ),
    );
    h.put(
        CONSUMER2,
        h.v2(
            &all,
            &[tp(TOPIC, 1), tp(TOPIC2, 1), tp(TOPIC3, 1)],
            current - 1,
            1,
        ),
    );
    h.put(
        CONSUMER3,
        h.v2(
            &all,
            &[tp(TOPIC2, 1), tp(TOPIC3, 0), tp(TOPIC3, 2)],
            current - 2,
            1,
        ),
    );
    h.assign(&ppt);
    assert_eq!(
        h.get(CONSUMER1),
        [tp(TOPIC, 0), tp(TOPIC2, 0), tp(TOPIC3, 0)]
    );
    assert_eq!(
        h.get(CONSUMER2),
        [tp(TOPIC, 1), tp(TOPIC2, 1), tp(TOPIC3, 1)]
    );
    assert_eq!(
        h.get(CONSUMER3),
        [tp(TOPIC, 2), tp(TOPIC2, 2), tp(TOPIC3, 2)]
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}

pub fn test_no_reassignment_on_current_members(flavor: Flavor, rack: RackConfig) {
    let mut h = Harness::new(flavor);
    h.initialize_racks(rack);
    let mut ppt = PartitionsPerTopic::new();
    for t in [TOPIC, TOPIC1, TOPIC2, TOPIC3] {
        h.put_topic(&mut ppt, t, 3);
    }
    let all = topics(&[TOPIC, TOPIC2, TOPIC3, TOPIC1]);
    let current = 10;
    h.put(CONSUMER1, h.v2(&all, &[], -1, 0));
    h.put(
        CONSUMER2,
        h.v2(
            &all,
            &[tp(TOPIC, 0), tp(TOPIC2, 0), tp(TOPIC1, 0)],
            current - 1,
            1,
        ),
    );
    h.put(
        CONSUMER3,
        h.v2(
            &all,
            &[tp(TOPIC3, 2), tp(TOPIC2, 2), tp(TOPIC1, 1)],
            current - 2,
            2,
        ),
    );
    h.put(
        CONSUMER4,
        h.v2(
            &all,
            &[tp(TOPIC3, 1), tp(TOPIC, 1), tp(TOPIC, 2)],
            current - 3,
            3,
        ),
    );
    h.assign(&ppt);
    // Assigned partitions are not reassigned.
    assert_eq!(
        h.get(CONSUMER1),
        [tp(TOPIC1, 2), tp(TOPIC2, 1), tp(TOPIC3, 0)]
    );
    assert_eq!(h.transferring(), none_transferring());
    h.verify_validity_and_balance(&ppt);
    assert!(h.is_fully_balanced());
}
