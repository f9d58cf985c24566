//! Test support (feature `kafka-test`): Kafka's `AbstractStickyAssignorTest` fixture, so that
//! the Java tests read almost line for line in Rust. Both strategy crates run the shared cases
//! ([`abstract_cases`], through [`abstract_sticky_assignor_test!`](crate::abstract_sticky_assignor_test))
//! with their flavour, and their own `StickyAssignorTest` / `CooperativeStickyAssignorTest`
//! cases on the same [`Harness`].
//!
//! The harness mirrors the Java fixture's state: the subscriptions map, the last assignment,
//! `partitionsTransferringOwnership`, the rack configuration and the cooperative assignor's
//! remembered generation. Subscriptions are built as each flavour's Java test builds them
//! (`buildSubscriptionV0/V1/V2Above`), and `verify_validity_and_balance` is the cooperative
//! override (rebalance until nothing is revoked, asserting no partition moves directly) or the
//! base check. Java compares `List`s in Kafka's internal order; the strategy's output is
//! sorted, so the ported assertions compare sorted lists.

pub mod abstract_cases;
pub mod abstract_ownership_cases;
pub mod abstract_rack_cases;
pub mod arbitrary;
pub mod large;
pub mod oracle;
mod random;

use std::collections::BTreeMap;

use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic, TopicPartitions};

pub use random::JavaRandom;

use crate::user_data::{DEFAULT_GENERATION, write_cooperative, write_sticky};
use crate::{Flavor, Options, Outcome, run};

/// `AbstractPartitionAssignorTest.ALL_RACKS`.
pub const ALL_RACKS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

/// `RackConfig` of the parametrized Java tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RackConfig {
    NoBrokerRack,
    NoConsumerRack,
    BrokerAndConsumerRack,
}

impl RackConfig {
    pub const ALL: [RackConfig; 3] = [
        RackConfig::NoBrokerRack,
        RackConfig::NoConsumerRack,
        RackConfig::BrokerAndConsumerRack,
    ];

    /// The `hasConsumerRack` boolean parameter of some tests.
    pub fn with_consumer_rack(has: bool) -> RackConfig {
        if has {
            RackConfig::BrokerAndConsumerRack
        } else {
            RackConfig::NoConsumerRack
        }
    }
}

/// A topic-partition, `tp("topic", 0)`.
pub type Tp = (String, i32);

pub fn tp(topic: &str, partition: i32) -> Tp {
    (topic.to_string(), partition)
}

/// `partitions(...)`, sorted (see the module docs).
pub fn sorted(list: &[Tp]) -> Vec<Tp> {
    let mut v = list.to_vec();
    v.sort();
    v
}

pub fn topics(list: &[&str]) -> Vec<String> {
    list.iter().map(|t| t.to_string()).collect()
}

/// A Kafka `Subscription`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub topics: Vec<String>,
    pub user_data: Option<Vec<u8>>,
    pub owned: Vec<Tp>,
    /// `generationId`, -1 when absent.
    pub generation: i32,
    pub rack: Option<String>,
}

/// Kafka's `partitionsPerTopic`: topic name -> its partitions (with replica racks).
pub type PartitionsPerTopic = BTreeMap<String, Topic>;

/// The Java fixture.
pub struct Harness {
    pub flavor: Flavor,
    pub prefer_rack_aware_logic: bool,
    num_broker_racks: usize,
    has_consumer_rack: bool,
    replication_factor: usize,
    next_partition_index: usize,
    /// `CooperativeStickyAssignor.generation`, set by `onAssignment`.
    cooperative_generation: i32,
    pub generation_id: i32,
    pub subscriptions: BTreeMap<String, Subscription>,
    pub assignment: BTreeMap<String, Vec<Tp>>,
    pub last: Option<Outcome>,
}

impl Harness {
    /// `setUp()`: a fresh assignor, no racks.
    pub fn new(flavor: Flavor) -> Harness {
        Harness {
            flavor,
            prefer_rack_aware_logic: false,
            num_broker_racks: 0,
            has_consumer_rack: false,
            replication_factor: 2,
            next_partition_index: 0,
            cooperative_generation: DEFAULT_GENERATION,
            generation_id: 1,
            subscriptions: BTreeMap::new(),
            assignment: BTreeMap::new(),
            last: None,
        }
    }

    /// `initializeRacks(rackConfig)`.
    pub fn initialize_racks(&mut self, rack_config: RackConfig) {
        self.replication_factor = 3;
        self.num_broker_racks = if rack_config == RackConfig::NoBrokerRack {
            0
        } else {
            3
        };
        self.has_consumer_rack = rack_config != RackConfig::NoConsumerRack;
        self.prefer_rack_aware_logic = true;
    }

    /// The fixture of `CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight`.
    pub fn set_racks(
        &mut self,
        replication_factor: usize,
        num_broker_racks: usize,
        has_consumer_rack: bool,
    ) {
        self.replication_factor = replication_factor;
        self.num_broker_racks = num_broker_racks;
        self.has_consumer_rack = has_consumer_rack;
    }

    /// `partitionInfos(topic, n)`: replicas on brokers `(i + j + next) % brokers`.
    pub fn partition_infos(&mut self, topic: &str, n: i32) -> Topic {
        let next = self.next_partition_index;
        self.next_partition_index += 1;
        let brokers = if self.num_broker_racks == 0 {
            self.replication_factor
        } else {
            self.num_broker_racks * self.replication_factor
        };
        let broker_racks: Vec<Option<&str>> = (0..brokers)
            .map(|i| (self.num_broker_racks > 0).then(|| ALL_RACKS[i % self.num_broker_racks]))
            .collect();
        partition_infos_on(topic, n, self.replication_factor, &broker_racks, next)
    }

    /// Adds `partitionInfos(topic, n)` to `ppt`.
    pub fn put_topic(&mut self, ppt: &mut PartitionsPerTopic, topic: &str, n: i32) {
        let info = self.partition_infos(topic, n);
        ppt.insert(topic.to_string(), info);
    }

    /// `consumerRackId(consumerIndex)`.
    pub fn consumer_rack_id(&self, index: i32) -> Option<String> {
        if !self.has_consumer_rack {
            return None;
        }
        let racks = if self.num_broker_racks > 0 {
            self.num_broker_racks
        } else {
            ALL_RACKS.len()
        };
        Some(ALL_RACKS[index.rem_euclid(racks as i32) as usize].to_string())
    }

    /// `subscription(topics, consumerIndex)`: no user data, nothing owned.
    pub fn subscription(&self, topics: &[String], index: i32) -> Subscription {
        Subscription {
            topics: topics.to_vec(),
            user_data: None,
            owned: Vec::new(),
            generation: DEFAULT_GENERATION,
            rack: self.consumer_rack_id(index),
        }
    }

    /// The flavour's `generateUserData(topics, partitions, generation)`.
    pub fn generate_user_data(&mut self, partitions: &[Tp], generation: i32) -> Vec<u8> {
        match self.flavor {
            Flavor::Sticky => write_sticky(&grouped(partitions), Some(generation)),
            Flavor::CooperativeSticky => {
                // onAssignment with the fixture's generationId, then subscriptionUserData.
                self.cooperative_generation = self.generation_id;
                write_cooperative(self.cooperative_generation)
            }
        }
    }

    /// `buildSubscriptionV0`: `None` for the cooperative flavour (it needs V1 or above).
    pub fn v0(
        &self,
        topics: &[String],
        partitions: &[Tp],
        generation: i32,
        index: i32,
    ) -> Option<Subscription> {
        match self.flavor {
            Flavor::Sticky => Some(Subscription {
                topics: topics.to_vec(),
                user_data: Some(write_sticky(&grouped(partitions), Some(generation))),
                owned: Vec::new(),
                generation: DEFAULT_GENERATION,
                rack: self.consumer_rack_id(index),
            }),
            Flavor::CooperativeSticky => None,
        }
    }

    /// `buildSubscriptionV1`.
    pub fn v1(
        &mut self,
        topics: &[String],
        partitions: &[Tp],
        generation: i32,
        _index: i32,
    ) -> Subscription {
        let user_data = match self.flavor {
            Flavor::Sticky => write_sticky(&grouped(partitions), Some(generation)),
            Flavor::CooperativeSticky => {
                self.cooperative_generation = generation;
                write_cooperative(generation)
            }
        };
        Subscription {
            topics: topics.to_vec(),
            user_data: Some(user_data),
            owned: partitions.to_vec(),
            generation: DEFAULT_GENERATION,
            rack: None,
        }
    }

    /// `buildSubscriptionV2Above`.
    pub fn v2(
        &self,
        topics: &[String],
        partitions: &[Tp],
        generation: i32,
        index: i32,
    ) -> Subscription {
        let (user_data, rack) = match self.flavor {
            Flavor::Sticky => (write_sticky(&grouped(partitions), Some(generation)), None),
            Flavor::CooperativeSticky => (
                write_cooperative(self.cooperative_generation),
                self.consumer_rack_id(index),
            ),
        };
        Subscription {
            topics: topics.to_vec(),
            user_data: Some(user_data),
            owned: partitions.to_vec(),
            generation: if generation < 0 {
                DEFAULT_GENERATION
            } else {
                generation
            },
            rack,
        }
    }

    /// `assignor = createAssignor()`: forgets the cooperative assignor's generation.
    pub fn reset_assignor(&mut self) {
        self.cooperative_generation = DEFAULT_GENERATION;
    }

    pub fn put(&mut self, consumer: &str, subscription: Subscription) {
        self.subscriptions
            .insert(consumer.to_string(), subscription);
    }

    /// `assignor.assignPartitions(partitionsPerTopic, subscriptions)`.
    pub fn assign(&mut self, ppt: &PartitionsPerTopic) -> &BTreeMap<String, Vec<Tp>> {
        let request = request(self.flavor, ppt, &self.subscriptions);
        let options = Options {
            prefer_rack_aware_logic: self.prefer_rack_aware_logic,
        };
        let outcome = run(&request, self.flavor, options).expect("the assignor never refuses here");
        self.assignment = self
            .subscriptions
            .keys()
            .map(|c| {
                let list = outcome
                    .assignment
                    .of(c)
                    .into_iter()
                    .map(|(t, p)| (t.to_string(), p))
                    .collect();
                (c.clone(), list)
            })
            .collect();
        self.last = Some(outcome);
        &self.assignment
    }

    /// The assignment of `consumer` (sorted).
    pub fn get(&self, consumer: &str) -> Vec<Tp> {
        self.assignment.get(consumer).cloned().unwrap_or_default()
    }

    /// `assignor.partitionsTransferringOwnership`: `None` after the general builder.
    pub fn transferring(&self) -> Option<Vec<(String, i32, String)>> {
        self.last
            .as_ref()
            .and_then(|o| o.partitions_transferring_ownership.clone())
    }

    /// `assignor.isSticky()`.
    pub fn is_sticky(&self) -> bool {
        self.last
            .as_ref()
            .and_then(|o| o.is_sticky)
            .expect("isSticky is only defined after the general builder")
    }

    /// `isFullyBalanced(assignment)`.
    pub fn is_fully_balanced(&self) -> bool {
        let sizes = self.assignment.values().map(Vec::len);
        let (min, max) = sizes.fold((usize::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
        self.assignment.is_empty() || max - min <= 1
    }

    /// `verifyValidityAndBalance`: for the cooperative flavour, first rebalance (at most 4
    /// times) until no partition is revoked, asserting none moves directly between owners.
    pub fn verify_validity_and_balance(&mut self, ppt: &PartitionsPerTopic) {
        if self.flavor == Flavor::CooperativeSticky {
            let mut rebalances = 0;
            while self.verify_cooperative_validity() {
                let updates: Vec<(String, Subscription)> = self
                    .assignment
                    .iter()
                    .map(|(consumer, partitions)| {
                        let old = &self.subscriptions[consumer];
                        let index = old
                            .rack
                            .as_deref()
                            .and_then(|r| ALL_RACKS.iter().position(|a| *a == r))
                            .map_or(-1, |i| i as i32);
                        let sub = self.v2(&old.topics, partitions, self.generation_id, index);
                        (consumer.clone(), sub)
                    })
                    .collect();
                for (consumer, sub) in updates {
                    self.subscriptions.insert(consumer, sub);
                }
                self.assign(ppt);
                rebalances += 1;
                assert!(rebalances <= 4, "more than 4 cooperative rebalances");
            }
        }
        self.verify_base_validity_and_balance();
    }

    /// `CooperativeStickyAssignorTest.verifyCooperativeValidity`: whether something is revoked.
    fn verify_cooperative_validity(&self) -> bool {
        let mut added = std::collections::BTreeSet::new();
        let mut revoked = std::collections::BTreeSet::new();
        for (consumer, assigned) in &self.assignment {
            let owned = &self.subscriptions[consumer].owned;
            revoked.extend(owned.iter().filter(|tp| !assigned.contains(tp)).cloned());
            added.extend(assigned.iter().filter(|tp| !owned.contains(tp)).cloned());
        }
        let both: Vec<_> = added.intersection(&revoked).collect();
        assert!(
            both.is_empty(),
            "partitions assigned to a new consumer in the rebalance that revokes them: {both:?}"
        );
        !revoked.is_empty()
    }

    /// The base `verifyValidityAndBalance`: only subscribed topics, no partition twice, and
    /// two consumers whose counts differ by more than one share no topic.
    fn verify_base_validity_and_balance(&self) {
        let consumers: Vec<&String> = self.assignment.keys().collect();
        for (i, c) in consumers.iter().enumerate() {
            let partitions = &self.assignment[*c];
            for (topic, p) in partitions {
                assert!(
                    self.subscriptions[*c].topics.contains(topic),
                    "{c} got {topic}-{p} without subscribing to {topic}"
                );
            }
            for other in &consumers[i + 1..] {
                let other_partitions = &self.assignment[*other];
                let common: Vec<_> = partitions
                    .iter()
                    .filter(|tp| other_partitions.contains(tp))
                    .collect();
                assert!(common.is_empty(), "{c} and {other} share {common:?}");
                if partitions.len().abs_diff(other_partitions.len()) <= 1 {
                    continue;
                }
                for (topic, _) in partitions {
                    assert!(
                        !other_partitions.iter().any(|(t, _)| t == topic),
                        "partitions of {topic} could move between {c} ({}) and {other} ({}) for a \
                         better balance: {:?}",
                        partitions.len(),
                        other_partitions.len(),
                        self.assignment
                    );
                }
            }
        }
    }
}

/// `AbstractPartitionAssignorTest.partitionInfos(topic, n, rf, brokerRacks, nextNodeIndex)`.
pub fn partition_infos_on(
    topic: &str,
    n: i32,
    replication_factor: usize,
    broker_racks: &[Option<&str>],
    next: usize,
) -> Topic {
    let partition_racks = (0..n.max(0) as usize)
        .map(|i| {
            (0..replication_factor)
                .filter_map(|j| broker_racks[(i + j + next) % broker_racks.len()])
                .map(String::from)
                .collect()
        })
        .collect();
    Topic {
        name: topic.to_string(),
        partition_count: n,
        partition_racks,
    }
}

/// Consecutive partitions of one topic as one entry.
pub fn grouped(partitions: &[Tp]) -> Vec<TopicPartitions> {
    let mut out: Vec<TopicPartitions> = Vec::new();
    for (topic, p) in partitions {
        match out.last_mut() {
            Some(last) if last.topic == *topic => last.partitions.push(*p),
            _ => out.push(TopicPartitions {
                topic: topic.clone(),
                partitions: vec![*p],
            }),
        }
    }
    out
}

/// The request the host would send for these subscriptions: members sorted by id.
pub fn request(
    flavor: Flavor,
    ppt: &PartitionsPerTopic,
    subscriptions: &BTreeMap<String, Subscription>,
) -> AssignRequest {
    let members = subscriptions.iter().map(|(id, s)| member(id, s)).collect();
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "group".into(),
        generation_id: 2,
        protocol_type: "consumer".into(),
        protocol_name: match flavor {
            Flavor::Sticky => "sticky".into(),
            Flavor::CooperativeSticky => "cooperative-sticky".into(),
        },
        members,
        topics: ppt.values().cloned().collect(),
        ..AssignRequest::default()
    }
}

/// The ABI member for a subscription.
pub fn member(id: &str, s: &Subscription) -> Member {
    Member {
        member_id: id.to_string(),
        topics: s.topics.clone(),
        owned_partitions: grouped(&s.owned),
        owned_generation: s.generation,
        user_data: s.user_data.clone(),
        rack_id: s.rack.clone(),
        ..Member::default()
    }
}

/// Generates the `#[test]`s of Kafka's `AbstractStickyAssignorTest` for one flavour:
/// `assignor_sticky_core::abstract_sticky_assignor_test!(assignor_sticky_core::Flavor::Sticky);`
/// Parametrized Java tests become a module with one test per parameter.
#[macro_export]
macro_rules! abstract_sticky_assignor_test {
    ($flavor:expr) => {
        #[test]
        fn test_member_data() {
            $crate::kafka_test::abstract_cases::test_member_data($flavor)
        }
        $crate::__by_consumer_rack!($flavor, abstract_cases::test_one_consumer_no_topic);
        $crate::__by_consumer_rack!($flavor, abstract_cases::test_one_consumer_nonexistent_topic);
        $crate::__by_rack_config!($flavor, abstract_cases::test_one_consumer_one_topic);
        $crate::__by_rack_config!($flavor, abstract_cases::test_only_assigns_partitions_from_subscribed_topics);
        $crate::__by_rack_config!($flavor, abstract_cases::test_one_consumer_multiple_topics);
        $crate::__by_rack_config!($flavor, abstract_cases::test_two_consumers_one_topic_one_partition);
        $crate::__by_rack_config!($flavor, abstract_cases::test_two_consumers_one_topic_two_partitions);
        $crate::__by_rack_config!($flavor, abstract_cases::test_multiple_consumers_mixed_topic_subscriptions);
        $crate::__by_rack_config!($flavor, abstract_cases::test_two_consumers_two_topics_six_partitions);
        $crate::__by_rack_config!($flavor, abstract_cases::test_consumer_owning_min_quota_expected_max_quota);
        $crate::__by_rack_config!($flavor, abstract_cases::test_max_quota_consumer_more_than_num_expected_max_capacity_members);
        $crate::__by_rack_config!($flavor, abstract_cases::test_all_consumers_are_under_min_quota);
        $crate::__by_rack_config!($flavor, abstract_cases::test_add_remove_consumer_one_topic);
        $crate::__by_rack_config!($flavor, abstract_cases::test_topic_balance_after_reassignment);
        $crate::__by_rack_config!($flavor, abstract_cases::test_add_remove_two_consumers_two_topics);
        $crate::__by_rack_config!($flavor, abstract_cases::test_poor_round_robin_assignment_scenario);
        $crate::__by_rack_config!($flavor, abstract_cases::test_add_remove_topic_two_consumers);
        $crate::__by_rack_config!($flavor, abstract_cases::test_reassignment_after_one_consumer_leaves);
        $crate::__by_rack_config!($flavor, abstract_cases::test_reassignment_after_one_consumer_added);
        $crate::__by_rack_config!($flavor, abstract_cases::test_same_subscriptions);
        mod test_large_assignment_and_group_with_uniform_subscription {
            use $crate::kafka_test::abstract_ownership_cases as cases;
            #[test]
            #[ignore = "a million partitions; run with --release -- --ignored"]
            fn without_consumer_rack() {
                cases::test_large_assignment_and_group_with_uniform_subscription($flavor, false)
            }
            #[test]
            #[ignore = "100,000 partitions, rack-aware; run with --release -- --ignored"]
            fn with_consumer_rack() {
                cases::test_large_assignment_and_group_with_uniform_subscription($flavor, true)
            }
        }
        mod test_large_assignment_and_group_with_non_equal_subscription {
            use $crate::kafka_test::abstract_ownership_cases as cases;
            #[test]
            #[ignore = "a million partitions, general builder; run with --release -- --ignored"]
            fn without_consumer_rack() {
                cases::test_large_assignment_and_group_with_non_equal_subscription($flavor, false)
            }
            #[test]
            #[ignore = "100,000 partitions, general builder, rack-aware; run with --release -- --ignored"]
            fn with_consumer_rack() {
                cases::test_large_assignment_and_group_with_non_equal_subscription($flavor, true)
            }
        }
        $crate::__by_consumer_rack!($flavor, abstract_ownership_cases::test_assignment_and_group_with_non_equal_subscription_not_timeout);
        #[test]
        fn test_subscription_not_equal_and_assign_same_partition_with3_generation() {
            $crate::kafka_test::abstract_ownership_cases::test_subscription_not_equal_and_assign_same_partition_with3_generation($flavor)
        }
        mod test_large_assignment_with_multiple_consumers_leaving_and_random_subscription {
            use $crate::kafka_test::abstract_ownership_cases as cases;
            #[test]
            fn without_consumer_rack() {
                for seed in [1, 2, 3] {
                    cases::test_large_assignment_with_multiple_consumers_leaving_and_random_subscription($flavor, false, seed)
                }
            }
            #[test]
            fn with_consumer_rack() {
                for seed in [1, 2, 3] {
                    cases::test_large_assignment_with_multiple_consumers_leaving_and_random_subscription($flavor, true, seed)
                }
            }
        }
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_new_subscription);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_move_existing_assignments);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_stickiness);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_assignment_updated_for_deleted_topic);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_no_exception_thrown_when_only_subscribed_topic_deleted);
        mod test_reassignment_with_random_subscriptions_and_changes {
            use $crate::kafka_test::{RackConfig, abstract_ownership_cases as cases};
            #[test]
            fn no_broker_rack() {
                cases::test_reassignment_with_random_subscriptions_and_changes($flavor, RackConfig::NoBrokerRack, 11)
            }
            #[test]
            fn no_consumer_rack() {
                cases::test_reassignment_with_random_subscriptions_and_changes($flavor, RackConfig::NoConsumerRack, 12)
            }
            #[test]
            fn broker_and_consumer_rack() {
                cases::test_reassignment_with_random_subscriptions_and_changes($flavor, RackConfig::BrokerAndConsumerRack, 13)
            }
        }
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_all_consumers_reach_expected_quota_and_are_considered_filled);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_owned_partitions_are_invalidated_for_consumer_with_stale_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_owned_partitions_are_invalidated_for_consumer_with_no_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers_in_same_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_ensure_partitions_assigned_to_highest_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_no_reassignment_on_current_members);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation);
        #[test]
        fn test_rack_aware_assignment_with_uniform_subscription() {
            $crate::kafka_test::abstract_rack_cases::test_rack_aware_assignment_with_uniform_subscription($flavor)
        }
        #[test]
        fn test_rack_aware_assignment_with_non_equal_subscription() {
            $crate::kafka_test::abstract_rack_cases::test_rack_aware_assignment_with_non_equal_subscription($flavor)
        }
    };
}

/// One test per `RackConfig` of a `@EnumSource(RackConfig.class)` Java test.
#[doc(hidden)]
#[macro_export]
macro_rules! __by_rack_config {
    ($flavor:expr, $module:ident :: $name:ident) => {
        mod $name {
            use $crate::kafka_test::RackConfig;
            #[test]
            fn no_broker_rack() {
                $crate::kafka_test::$module::$name($flavor, RackConfig::NoBrokerRack)
            }
            #[test]
            fn no_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, RackConfig::NoConsumerRack)
            }
            #[test]
            fn broker_and_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, RackConfig::BrokerAndConsumerRack)
            }
        }
    };
}

/// One test per value of a `hasConsumerRack` boolean Java test.
#[doc(hidden)]
#[macro_export]
macro_rules! __by_consumer_rack {
    ($flavor:expr, $module:ident :: $name:ident) => {
        mod $name {
            #[test]
            fn without_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, false)
            }
            #[test]
            fn with_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, true)
            }
        }
    };
}
