//! The consumer protocol's test helpers: a heartbeat builder with the defaults librdkafka
//! sends, a simulated client that does what librdkafka does with each answer (adopts the
//! assignment, revoking and adding at once, and acknowledges it on its next heartbeat), and
//! the ownership checks (no partition held by two members, seen by the coordinator or by
//! the clients).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
use kafka_protocol::messages::ConsumerGroupHeartbeatResponse;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{GroupId, TopicName};

use super::context::{TestContext, default_strategies};
use crate::coordinator::view::{StrategiesView, StrategyEntry};
use crate::coordinator::{Coordinator, CoordinatorConfig, GroupRequest, GroupResponse, ReplyTo};

pub use super::builders::s;

/// A partition set by topic name.
pub type Owned = BTreeMap<String, BTreeSet<i32>>;

/// The default strategies plus `uniform` (the consumer protocol's default assignor).
pub fn strategies_with_uniform() -> Arc<StrategiesView> {
    let mut view = (*default_strategies()).clone();
    view.modules.insert(
        "uniform".into(),
        StrategyEntry {
            active_version: 1,
            rebalance_protocol: assignor_sdk::RebalanceProtocol::Eager,
            in_place: false,
        },
    );
    Arc::new(view)
}

/// A test context whose modules include `uniform`.
pub fn consumer_context(config: CoordinatorConfig) -> TestContext {
    let mut ctx = TestContext::with_config(config.clone());
    ctx.coordinator = Coordinator::new(
        config,
        super::context::default_topics(),
        strategies_with_uniform(),
    );
    ctx
}

/// A ConsumerGroupHeartbeat request, built like librdkafka's.
#[derive(Debug, Clone)]
pub struct Hb {
    pub group: String,
    pub version: i16,
    pub member_id: String,
    pub epoch: i32,
    pub instance_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub names: Option<Vec<String>>,
    pub regex: Option<String>,
    pub assignor: Option<String>,
    pub owned: Option<Owned>,
}

impl Hb {
    /// A join (epoch 0) of `member` subscribing to `topics`: rebalance timeout 300 s, empty
    /// owned list, v1.
    pub fn join(member: &str, topics: &[&str]) -> Hb {
        Hb {
            group: super::builders::G.to_string(),
            version: 1,
            member_id: member.to_string(),
            epoch: 0,
            instance_id: None,
            rebalance_timeout_ms: 300_000,
            names: Some(topics.iter().map(|t| t.to_string()).collect()),
            regex: None,
            assignor: None,
            owned: Some(Owned::new()),
        }
    }

    /// A regular heartbeat at `epoch`: every optional field null (nothing changed).
    pub fn beat(member: &str, epoch: i32) -> Hb {
        Hb {
            epoch,
            rebalance_timeout_ms: -1,
            names: None,
            owned: None,
            ..Hb::join(member, &[])
        }
    }

    pub fn owning(mut self, owned: &Owned) -> Hb {
        self.owned = Some(owned.clone());
        self
    }

    pub fn assignor(mut self, name: &str) -> Hb {
        self.assignor = Some(name.to_string());
        self
    }

    pub fn instance(mut self, id: &str) -> Hb {
        self.instance_id = Some(id.to_string());
        self
    }

    pub fn request(&self, ctx: &TestContext) -> ConsumerGroupHeartbeatRequest {
        let topics = ctx.coordinator_topics();
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_member_id(s(&self.member_id))
            .with_member_epoch(self.epoch)
            .with_instance_id(self.instance_id.as_deref().map(s))
            .with_rebalance_timeout_ms(self.rebalance_timeout_ms)
            .with_subscribed_topic_names(
                self.names
                    .as_ref()
                    .map(|n| n.iter().map(|t| TopicName(s(t))).collect()),
            )
            .with_subscribed_topic_regex(self.regex.as_deref().map(s))
            .with_server_assignor(self.assignor.as_deref().map(s))
            .with_topic_partitions(self.owned.as_ref().map(|owned| {
                owned
                    .iter()
                    .map(|(t, ps)| {
                        TopicPartitions::default()
                            .with_topic_id(topics.id(t).expect("known topic"))
                            .with_partitions(ps.iter().copied().collect())
                    })
                    .collect()
            }))
    }
}

impl TestContext {
    fn coordinator_topics(&self) -> Arc<crate::coordinator::view::Topics> {
        super::context::default_topics()
    }

    /// Sends a ConsumerGroupHeartbeat.
    pub fn cgh(&mut self, hb: &Hb) -> ReplyTo {
        let request = hb.request(self);
        self.send(
            &hb.group,
            hb.version,
            "rdkafka",
            GroupRequest::ConsumerGroupHeartbeat(Box::new(request)),
        )
    }

    /// The answer to a ConsumerGroupHeartbeat.
    pub fn cgh_response(&self, reply: ReplyTo) -> &ConsumerGroupHeartbeatResponse {
        match self.responses.get(&reply) {
            Some(GroupResponse::ConsumerGroupHeartbeat(r)) => r,
            other => panic!("no ConsumerGroupHeartbeat answer for {reply:?}: {other:?}"),
        }
    }

    /// Sends `hb` and returns its answer (which must come at once).
    pub fn cgh_now(&mut self, hb: &Hb) -> ConsumerGroupHeartbeatResponse {
        let reply = self.cgh(hb);
        self.cgh_response(reply).clone()
    }

    /// The coordinator's view: every partition some member owns (assigned or pending
    /// revocation), checking that none has two owners.
    pub fn assert_single_owners(&self, group: &str) -> BTreeMap<(String, i32), String> {
        let mut owners = BTreeMap::new();
        let Some(group) = self.coordinator.consumer_group_ref(group) else {
            return owners;
        };
        for member in group.members.values() {
            for (t, p) in member.current.owned().iter() {
                let previous = owners.insert((t.to_string(), p), member.id.to_string());
                assert!(
                    previous.is_none(),
                    "{t}-{p} owned by {previous:?} and {}",
                    member.id
                );
            }
        }
        owners
    }
}

/// The assignment an answer carries, by topic name (`None`: the field was null).
pub fn assignment_of(response: &ConsumerGroupHeartbeatResponse) -> Option<Owned> {
    let topics = super::context::default_topics();
    response.assignment.as_ref().map(|a| {
        let mut owned = Owned::new();
        for tp in &a.topic_partitions {
            let name = topics
                .name_of(&tp.topic_id)
                .expect("an id the catalog knows");
            owned
                .entry(name.to_string())
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
        owned
    })
}

pub fn owned(pairs: &[(&str, &[i32])]) -> Owned {
    pairs
        .iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (t.to_string(), ps.iter().copied().collect()))
        .collect()
}

/// A simulated librdkafka consumer: its member id, epoch and the partitions it consumes
/// from. On each answer it adopts the assignment at once (revoking what left it, adding what
/// came) and reports it on its next heartbeat, as librdkafka does after its rebalance
/// callbacks.
#[derive(Debug, Clone)]
pub struct Client {
    pub member_id: String,
    pub epoch: i32,
    pub owned: Owned,
    pub topics: Vec<String>,
    /// The owned set changed since the last heartbeat: the next one acknowledges it.
    pub ack: bool,
}

impl Client {
    pub fn new(member_id: &str, topics: &[&str]) -> Client {
        Client {
            member_id: member_id.to_string(),
            epoch: 0,
            owned: Owned::new(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            ack: false,
        }
    }

    /// The client's next heartbeat: a join at epoch 0, an acknowledgement after a change,
    /// else a plain heartbeat.
    pub fn next(&self) -> Hb {
        if self.epoch == 0 {
            let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
            return Hb::join(&self.member_id, &topics);
        }
        let hb = Hb::beat(&self.member_id, self.epoch);
        if self.ack { hb.owning(&self.owned) } else { hb }
    }

    /// Heartbeats once; an error makes it lose everything and rejoin at epoch 0 (librdkafka on
    /// FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID). Returns the answer's error code.
    pub fn poll(&mut self, ctx: &mut TestContext) -> i16 {
        let reply = ctx.cgh(&self.next());
        let Some(GroupResponse::ConsumerGroupHeartbeat(response)) = ctx.responses.get(&reply)
        else {
            // Parked: the client waits (the tests release the run).
            return 0;
        };
        let response = response.clone();
        self.apply(&response);
        response.error_code
    }

    pub fn apply(&mut self, response: &ConsumerGroupHeartbeatResponse) {
        if response.error_code != 0 {
            self.epoch = 0;
            self.owned.clear();
            self.ack = false;
            return;
        }
        self.epoch = response.member_epoch;
        self.ack = false;
        if let Some(assigned) = assignment_of(response)
            && assigned != self.owned
        {
            self.owned = assigned;
            self.ack = true;
        }
    }
}

/// Asserts that no partition is consumed by two clients at once.
pub fn assert_disjoint(clients: &[Client]) {
    let mut seen: BTreeMap<(String, i32), &str> = BTreeMap::new();
    for c in clients {
        for (t, ps) in &c.owned {
            for p in ps {
                if let Some(other) = seen.insert((t.clone(), *p), &c.member_id) {
                    panic!("{t}-{p} consumed by {other} and {}", c.member_id);
                }
            }
        }
    }
}

/// Every partition of `topics` in the default catalog (t: 6, u: 3).
pub fn all_partitions(topics: &[&str]) -> Owned {
    let catalog = super::context::default_topics();
    topics
        .iter()
        .map(|t| {
            let n = catalog[*t].partition_count;
            (t.to_string(), (0..n).collect())
        })
        .collect()
}

/// The union of what the clients consume.
pub fn union(clients: &[Client]) -> Owned {
    let mut all = Owned::new();
    for c in clients {
        for (t, ps) in &c.owned {
            all.entry(t.clone()).or_default().extend(ps.iter().copied());
        }
    }
    all
}

/// Polls every client in turn until none changes (at most `rounds` rounds), checking after
/// each heartbeat that no partition has two owners, by the coordinator's books and by what
/// the clients consume.
pub fn settle(ctx: &mut TestContext, clients: &mut [Client], rounds: usize) {
    for _ in 0..rounds {
        let before: Vec<_> = clients.iter().map(|c| (c.epoch, c.owned.clone())).collect();
        for i in 0..clients.len() {
            clients[i].poll(ctx);
            ctx.assert_single_owners(super::builders::G);
            assert_disjoint(clients);
        }
        let after: Vec<_> = clients.iter().map(|c| (c.epoch, c.owned.clone())).collect();
        if before == after && clients.iter().all(|c| !c.ack) {
            return;
        }
    }
    panic!("clients did not settle: {clients:?}");
}
