//! Test support (feature `kafka-test`) for the strategy crates' tests; not part of any module.
//!
//! - [`Harness`]: Kafka's `AbstractStickyAssignorTest` fixture, so the Java tests read almost
//!   line for line in Rust. It mirrors the fixture's state: the subscriptions map, the last
//!   assignment, `partitionsTransferringOwnership`, the rack configuration and the cooperative
//!   assignor's remembered generation. Subscriptions are built as each flavour's Java test
//!   builds them (`buildSubscriptionV0/V1/V2Above`), and `verify_validity_and_balance` is the
//!   cooperative override (rebalance until nothing is revoked, asserting no partition moves
//!   directly) or the base check. Java compares `List`s in Kafka's internal order; the
//!   strategy's output is sorted, so the ported assertions compare sorted lists.
//! - [`abstract_cases`], [`abstract_ownership_cases`], [`abstract_large_cases`],
//!   [`abstract_rack_cases`]: every case of `AbstractStickyAssignorTest`, turned into `#[test]`s
//!   by [`abstract_sticky_assignor_test!`](crate::abstract_sticky_assignor_test).
//! - [`oracle`]: answers recorded from Kafka's Java assignor, and the check against them.
//! - [`arbitrary`]: random groups (proptest) and the invariants every answer must keep.
//! - [`large`]: the 2,000-member, 200,000-partition group of the size tests.

pub mod abstract_cases;
pub mod abstract_large_cases;
pub mod abstract_ownership_cases;
pub mod abstract_rack_cases;
pub mod arbitrary;
pub mod large;
mod macros;
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

    /// A check that scales to a million partitions (not a Kafka one): every partition of
    /// `ppt` a member subscribes to is assigned exactly once, to a subscriber.
    pub fn verify_complete_and_valid(&self, ppt: &PartitionsPerTopic) {
        let mut seen = std::collections::HashSet::new();
        for (consumer, partitions) in &self.assignment {
            let topics = &self.subscriptions[consumer].topics;
            for (topic, p) in partitions {
                assert!(
                    topics.contains(topic),
                    "{consumer} got {topic}-{p} without subscribing"
                );
                assert!(
                    seen.insert((topic.as_str(), *p)),
                    "{topic}-{p} assigned twice"
                );
            }
        }
        let subscribed: std::collections::HashSet<&String> = self
            .subscriptions
            .values()
            .flat_map(|s| &s.topics)
            .collect();
        let expected: usize = ppt
            .values()
            .filter(|t| subscribed.contains(&t.name))
            .map(|t| t.partition_count.max(0) as usize)
            .sum();
        assert_eq!(seen.len(), expected, "partitions assigned");
    }

    /// [`Self::verify_complete_and_valid`], after handing out (cooperative flavour) what
    /// waited a round: members rejoin owning what they got until nothing is withheld.
    pub fn verify_complete_and_valid_after_rounds(&mut self, ppt: &PartitionsPerTopic) {
        for _ in 0..4 {
            let waiting = self.last.as_ref().is_some_and(|o| !o.withheld.is_empty());
            if !waiting {
                break;
            }
            let g = self.generation_id;
            let next: Vec<(String, Subscription)> = self
                .assignment
                .iter()
                .map(|(c, owned)| {
                    let old = &self.subscriptions[c];
                    let mut sub = self.v2(&old.topics, owned, g, 0);
                    sub.rack = old.rack.clone();
                    (c.clone(), sub)
                })
                .collect();
            self.subscriptions.extend(next);
            self.assign(ppt);
        }
        self.verify_complete_and_valid(ppt);
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
        topics: s.topics.clone().into(),
        owned_partitions: grouped(&s.owned),
        owned_generation: s.generation,
        user_data: s.user_data.clone(),
        rack_id: s.rack.clone(),
        ..Member::default()
    }
}
