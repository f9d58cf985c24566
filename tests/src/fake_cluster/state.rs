//! What the fake cluster knows: its brokers, topics with their leaders and logs, committed
//! offsets, and every request each broker received.
//!
//! One [`State`] behind one mutex is shared by every broker and connection, and by the test's
//! hooks; it is never held across an `.await`. Answers are computed from it when they are due
//! (after a broker's delay), so pipelined requests see each other's effects in request order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use tokio::sync::Notify;
use uuid::Uuid;

use super::log::Log;

/// The host every broker listens on and advertises.
pub const HOST: &str = "127.0.0.1";

/// The cluster id in Metadata (v2+) and DescribeCluster: 22 characters, as Kafka's base64 ids.
pub const CLUSTER_ID: &str = "FakeClusterForProxyTst";

/// Kafka error codes the fake answers with (Kafka's `Errors` enum, by value).
pub mod error {
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    pub const NOT_COORDINATOR: i16 = 16;
    pub const INVALID_REQUIRED_ACKS: i16 = 21;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const UNSUPPORTED_VERSION: i16 = 35;
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
    pub const INVALID_PARTITIONS: i16 = 37;
    pub const INVALID_REPLICATION_FACTOR: i16 = 38;
    pub const INVALID_REQUEST: i16 = 42;
    pub const NON_EMPTY_GROUP: i16 = 68;
    pub const GROUP_ID_NOT_FOUND: i16 = 69;
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
}

/// One request as a broker received it: API, version, correlation id.
pub type Received = (ApiKey, i16, i32);

/// Shared by the brokers' tasks and the [`FakeCluster`](super::FakeCluster) handle.
pub struct Shared {
    state: Mutex<State>,
    /// Woken after every append, so a Fetch holding for `max_wait_ms` answers at once.
    pub appended: Notify,
    /// Woken after every request a broker records (for `FakeCluster::wait_for_requests`).
    pub received: Notify,
}

impl Shared {
    pub fn new(state: State) -> Shared {
        Shared {
            state: Mutex::new(state),
            appended: Notify::new(),
            received: Notify::new(),
        }
    }

    /// The state; a panic in another holder (a failed test hook) does not hide it.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub struct State {
    /// Brokers in the order they joined; the first is the controller and the coordinator of
    /// every group and transactional id.
    pub brokers: Vec<Broker>,
    pub topics: BTreeMap<String, Topic>,
    /// Committed offsets by group, then `(topic, partition)`.
    pub offsets: BTreeMap<String, BTreeMap<(String, i32), Committed>>,
    /// Groups someone joined on the cluster directly (see `FakeCluster::occupy_group`).
    pub occupied_groups: BTreeSet<String>,
}

pub struct Broker {
    pub id: i32,
    pub port: u16,
    /// Added to the moment each request is received before it is answered.
    pub delay: Duration,
    pub received: Vec<Received>,
    /// The client id of each request in `received`, in the same order.
    pub client_ids: Vec<Option<String>>,
}

pub struct Topic {
    pub id: Uuid,
    pub partitions: Vec<Partition>,
}

pub struct Partition {
    pub leader: i32,
    /// Starts at 0 and grows by one on every leader change.
    pub leader_epoch: i32,
    pub log: Log,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

impl State {
    pub fn new() -> State {
        State {
            brokers: Vec::new(),
            topics: BTreeMap::new(),
            offsets: BTreeMap::new(),
            occupied_groups: BTreeSet::new(),
        }
    }

    pub fn broker(&self, id: i32) -> Option<&Broker> {
        self.brokers.iter().find(|b| b.id == id)
    }

    pub fn broker_mut(&mut self, id: i32) -> &mut Broker {
        self.brokers
            .iter_mut()
            .find(|b| b.id == id)
            .unwrap_or_else(|| panic!("the fake cluster has no broker {id}"))
    }

    /// The controller, and the coordinator of every group and transactional id.
    pub fn first_broker(&self) -> i32 {
        self.brokers.first().expect("a cluster has a broker").id
    }

    /// `(host, port, rack)` of a broker.
    pub fn endpoint(&self, id: i32) -> (&'static str, i32, String) {
        let port = self.broker(id).map_or(0, |b| i32::from(b.port));
        (HOST, port, rack(id))
    }

    /// Adds a topic whose partition `p` is led by the `p % n`-th of the `n` brokers known now.
    pub fn add_topic(&mut self, name: &str, partitions: i32) {
        assert!(
            !self.topics.contains_key(name),
            "topic {name} exists already"
        );
        let mut topic = Topic {
            id: topic_id(name),
            partitions: Vec::new(),
        };
        self.grow(&mut topic, partitions);
        self.topics.insert(name.to_owned(), topic);
    }

    /// Adds partitions to `topic` up to `count`, led as [`State::add_topic`] leads them.
    pub fn grow(&self, topic: &mut Topic, count: i32) {
        let ids: Vec<i32> = self.brokers.iter().map(|b| b.id).collect();
        for p in topic.partitions.len()..count.max(0) as usize {
            topic.partitions.push(Partition {
                leader: ids[p % ids.len()],
                leader_epoch: 0,
                log: Log::default(),
            });
        }
    }

    /// Every broker's id, in joining order: the replicas and ISR of every partition.
    pub fn broker_ids(&self) -> Vec<i32> {
        self.brokers.iter().map(|b| b.id).collect()
    }

    pub fn topic_by_id(&self, id: Uuid) -> Option<(&String, &Topic)> {
        self.topics.iter().find(|(_, t)| t.id == id)
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&Partition> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get(topic)?.partitions.get(index)
    }

    pub fn partition_mut(&mut self, topic: &str, partition: i32) -> Option<&mut Partition> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get_mut(topic)?.partitions.get_mut(index)
    }
}

/// The rack every broker reports: `rack-<id>`.
pub fn rack(id: i32) -> String {
    format!("rack-{id}")
}

/// A stable, non-zero topic id derived from the name (two FNV-1a hashes), so tests can predict
/// it and a topic re-created under the same name gets the same id.
pub fn topic_id(name: &str) -> Uuid {
    let fnv = |seed: u64| {
        name.bytes().fold(seed, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let high = fnv(0xcbf2_9ce4_8422_2325);
    let low = fnv(0x8422_2325_cbf2_9ce4) | 1;
    Uuid::from_u64_pair(high, low)
}
