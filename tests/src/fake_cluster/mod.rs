//! A scripted Kafka cluster of several brokers on loopback, to test the host's proxy mode
//! against more than the single-broker clusters that install here.
//!
//! [`FakeCluster::start`] binds one `127.0.0.1:0` listener per broker. Partition `p` of every
//! topic is led by the `p % n`-th broker (in the order given); every broker is a replica and
//! in the ISR; broker `id` has rack `rack-<id>`; the first broker is the controller and the
//! coordinator of every group and transactional id; the cluster id is [`CLUSTER_ID`]; topic
//! ids are derived from the names ([`topic_id`]). Requests and answers are real Kafka bytes,
//! decoded and encoded by `kafka-protocol`.
//!
//! Each broker answers, per connection and strictly in request order, with the request's
//! correlation id and the header version of the response:
//!
//! | API | versions | answer |
//! |---|---|---|
//! | ApiVersions | 0-3 | the fixed table [`API_VERSIONS`]; newer: v0 + UNSUPPORTED_VERSION |
//! | Metadata | 0-12 | all brokers with their ports and racks, the topics asked (unknown: error 3) |
//! | DescribeCluster | 0-1 | all brokers, cluster id, controller |
//! | FindCoordinator | 0-4 | the first broker for groups and transactional ids |
//! | CreateTopics | 2-7 | creates the topic, leaders spread over the brokers known then |
//! | Produce | 3-11 | appends on the leader; elsewhere NOT_LEADER_OR_FOLLOWER (+ KIP-951 hints v10+); acks=0 unanswered |
//! | Fetch | 4-16 | the stored batches from the leader; elsewhere NOT_LEADER_OR_FOLLOWER (+ hints v16) |
//! | ListOffsets | 1-7 | latest, earliest, by timestamp, on the leader |
//! | OffsetCommit, OffsetFetch, DeleteGroups | 2-8, 1-8, 0-2 | a committed-offset store on the coordinator |
//! | JoinGroup, SyncGroup, Heartbeat, LeaveGroup, TxnOffsetCommit, ConsumerGroupHeartbeat, DescribeTopicPartitions | advertised | never served: the connection is closed |
//!
//! Anything else, or a version outside the table, closes the connection; every request is
//! recorded first ([`FakeCluster::requests`]), so a test can assert what reached which broker
//! (and that no group API did). See the files for each API's details.
//!
//! Not modelled, on purpose: fetch sessions (every Fetch answer has session id 0, so clients
//! send full fetches); transactions and idempotence (producer ids, sequences and
//! `isolation_level` are not checked); leader-epoch fencing (`current_leader_epoch` in requests
//! is ignored); topic auto-creation; replica and follower fetching (KIP-392); SASL and TLS;
//! quotas (throttle 0); retention (every log starts at offset 0); a killed broker's leadership
//! moving by itself (the test moves it with [`FakeCluster::set_leader`]); ListOffsets by
//! timestamp finer than a batch.

mod answer;
mod apis;
mod broker;
mod cluster;
mod data;
mod fetch;
mod log;
mod offsets;
mod state;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use cluster::API_VERSIONS;
pub use fetch::MAX_WAIT as MAX_FETCH_WAIT;
pub use state::{CLUSTER_ID, HOST, topic_id};

use state::{Broker, Shared, State};

/// A running fake cluster. Dropping it (or [`FakeCluster::stop`]) closes every listener and
/// connection.
pub struct FakeCluster {
    shared: Arc<Shared>,
    /// The listener task of each running broker.
    running: Mutex<BTreeMap<i32, JoinHandle<()>>>,
}

impl FakeCluster {
    /// A cluster of `brokers` (node ids; the first is the controller and coordinator) with
    /// `topics` as `(name, partitions)`, every broker listening on its own loopback port.
    pub async fn start(brokers: &[i32], topics: &[(&str, i32)]) -> FakeCluster {
        assert!(!brokers.is_empty(), "a cluster needs a broker");
        let cluster = FakeCluster {
            shared: Arc::new(Shared::new(State::new())),
            running: Mutex::new(BTreeMap::new()),
        };
        for &id in brokers {
            cluster.add_broker(id).await;
        }
        let mut state = cluster.shared.lock();
        for &(name, partitions) in topics {
            state.add_topic(name, partitions);
        }
        drop(state);
        cluster
    }

    /// A new broker `id` listening on a fresh port; it is in Metadata and DescribeCluster from
    /// now on (and a replica of every partition), but leads nothing until
    /// [`FakeCluster::set_leader`] moves a partition to it or a topic is created.
    pub async fn add_broker(&self, id: i32) -> SocketAddr {
        let listener = TcpListener::bind((HOST, 0)).await.expect("bind a broker");
        let addr = listener.local_addr().expect("bound address");
        let mut state = self.shared.lock();
        assert!(state.broker(id).is_none(), "broker {id} exists already");
        state.brokers.push(Broker {
            id,
            port: addr.port(),
            delay: Duration::ZERO,
            received: Vec::new(),
            client_ids: Vec::new(),
        });
        drop(state);
        self.run(id, listener);
        addr
    }

    fn run(&self, id: i32, listener: TcpListener) {
        let task = tokio::spawn(broker::serve(self.shared.clone(), id, listener));
        let mut running = self.running.lock().expect("running brokers");
        running.insert(id, task);
    }

    /// Where broker `id` listens (also while it is killed: the port it comes back on).
    pub fn broker_addr(&self, id: i32) -> SocketAddr {
        let state = self.shared.lock();
        let broker = state
            .broker(id)
            .unwrap_or_else(|| panic!("the fake cluster has no broker {id}"));
        SocketAddr::from(([127, 0, 0, 1], broker.port))
    }

    /// Every broker's node id, in the order they joined.
    pub fn broker_ids(&self) -> Vec<i32> {
        self.shared.lock().broker_ids()
    }

    /// `host:port,host:port,...` of every broker, for a `bootstrap.servers` or `--upstream`.
    pub fn bootstrap(&self) -> String {
        let ids = self.broker_ids();
        let addrs: Vec<String> = ids
            .iter()
            .map(|&id| self.broker_addr(id).to_string())
            .collect();
        addrs.join(",")
    }

    /// Every request broker `id` received, in arrival order: `(api, version, correlation id)`.
    /// Requests that were refused (and closed their connection) are included.
    pub fn requests(&self, id: i32) -> Vec<(ApiKey, i16, i32)> {
        let state = self.shared.lock();
        let broker = state
            .broker(id)
            .unwrap_or_else(|| panic!("the fake cluster has no broker {id}"));
        broker.received.clone()
    }

    /// The requests broker `id` received from clients that named themselves `client_id` in
    /// the request header, in arrival order (a proxy passes its clients' headers up as they
    /// are, so this tells their requests from the proxy's own).
    pub fn requests_from(&self, id: i32, client_id: &str) -> Vec<(ApiKey, i16, i32)> {
        let state = self.shared.lock();
        let broker = state
            .broker(id)
            .unwrap_or_else(|| panic!("the fake cluster has no broker {id}"));
        broker
            .received
            .iter()
            .zip(&broker.client_ids)
            .filter(|(_, client)| client.as_deref() == Some(client_id))
            .map(|(received, _)| *received)
            .collect()
    }

    /// Waits until broker `id` has received `count` requests in all (it has read them, and
    /// fixed their delays), at most [`crate::DEADLINE`]; panics after that.
    pub async fn wait_for_requests(&self, id: i32, count: usize) {
        let arrived = async {
            loop {
                let received = self.shared.received.notified();
                tokio::pin!(received);
                received.as_mut().enable();
                if self.requests(id).len() >= count {
                    return;
                }
                received.await;
            }
        };
        tokio::time::timeout(crate::DEADLINE, arrived)
            .await
            .unwrap_or_else(|_| panic!("broker {id} did not receive {count} requests"));
    }

    /// The leader of `topic`'s `partition`.
    pub fn leader(&self, topic: &str, partition: i32) -> i32 {
        let state = self.shared.lock();
        state
            .partition(topic, partition)
            .unwrap_or_else(|| panic!("no partition {topic}-{partition}"))
            .leader
    }

    /// Moves the leadership of `topic`'s `partition` to `broker` (its leader epoch grows by
    /// one); the log moves with it, as a replicated log would.
    pub fn set_leader(&self, topic: &str, partition: i32, broker: i32) {
        let mut state = self.shared.lock();
        assert!(state.broker(broker).is_some(), "no broker {broker}");
        let p = state
            .partition_mut(topic, partition)
            .unwrap_or_else(|| panic!("no partition {topic}-{partition}"));
        p.leader = broker;
        p.leader_epoch += 1;
    }

    /// Delays every later answer of broker `id` by `delay` from its request's arrival; answers
    /// still leave in request order, and the delays of pipelined requests overlap.
    pub fn set_delay(&self, id: i32, delay: Duration) {
        self.shared.lock().broker_mut(id).delay = delay;
    }

    /// Creates `topic` with `partitions`, or grows it to that many, as if an operator did it
    /// on the cluster directly; new partitions are led as at start, over the brokers known now.
    pub fn set_partitions(&self, topic: &str, partitions: i32) {
        let mut state = self.shared.lock();
        match state.topics.remove(topic) {
            None => state.add_topic(topic, partitions),
            Some(mut existing) => {
                state.grow(&mut existing, partitions);
                state.topics.insert(topic.to_owned(), existing);
            }
        }
    }

    /// Marks `group` as joined on the cluster directly: commits to it get UNKNOWN_MEMBER_ID and
    /// DeleteGroups NON_EMPTY_GROUP, as from a Kafka group that has members.
    pub fn occupy_group(&self, group: &str) {
        self.shared.lock().occupied_groups.insert(group.to_owned());
    }

    /// The offset `group` committed for `topic`'s `partition`, read straight from the store.
    pub fn committed(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        let state = self.shared.lock();
        let offsets = state.offsets.get(group)?;
        Some(offsets.get(&(topic.to_owned(), partition))?.offset)
    }

    /// The record batches stored for `topic`'s `partition`, with the offsets the leader gave.
    pub fn records(&self, topic: &str, partition: i32) -> Vec<Bytes> {
        let state = self.shared.lock();
        state
            .partition(topic, partition)
            .unwrap_or_else(|| panic!("no partition {topic}-{partition}"))
            .log
            .batches()
    }

    /// Stops broker `id`: its listener and every connection close (clients see the socket
    /// end). It stays in Metadata and keeps leading its partitions, like a broker that is
    /// down but not yet fenced; its logs and request history are kept.
    pub async fn kill_broker(&self, id: i32) {
        let task = self.running.lock().expect("running brokers").remove(&id);
        let task = task.unwrap_or_else(|| panic!("broker {id} is not running"));
        task.abort();
        let _ = task.await;
    }

    /// Starts a killed broker `id` again on the same port.
    pub async fn restart_broker(&self, id: i32) {
        let addr = self.broker_addr(id);
        assert!(
            !self
                .running
                .lock()
                .expect("running brokers")
                .contains_key(&id),
            "broker {id} is running"
        );
        let listener = TcpListener::bind(addr).await.expect("rebind the same port");
        self.run(id, listener);
    }

    /// Stops every broker and waits until their listeners are closed.
    pub async fn stop(self) {
        let tasks = std::mem::take(&mut *self.running.lock().expect("running brokers"));
        for task in tasks.into_values() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        let running = self.running.get_mut().unwrap_or_else(|p| p.into_inner());
        for task in running.values() {
            task.abort();
        }
    }
}
