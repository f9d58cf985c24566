//! The coordinator's test context: a fake clock, keyed timers that `advance(ms)` fires in
//! deadline order, request builders with sane defaults (in `builders`), answers collected by
//! reply token, and
//! `RunAssignor` effects executed synchronously with the native range/roundrobin strategies
//! (the crates the built-in modules are compiled from), or with scripted answers, failures and
//! delays; every answer goes through the host's output checks as the registry's would.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use assignor_sdk::{AssignRequest, AssignResponse, RebalanceProtocol, Topic};
use bytes::{Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    OffsetCommitRequest, OffsetCommitResponse, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::Encodable;

use crate::coordinator::view::{StrategiesView, StrategyEntry, Topics, TopicsView};
use crate::coordinator::{
    AssignorDone, AssignorFailure, AssignorOutput, AssignorRun, Coordinator, CoordinatorConfig,
    DescribeGroup, Effect, Event, GroupRequest, GroupResponse, GroupState, Millis, Notice,
    OffsetTable, ReplyTo, RequestContext, TimerKey,
};
use assignor_wire::checks::check_response;

pub use super::builders::*;

/// A scripted assignor: the answer to one run.
pub type Script = dyn FnMut(&AssignorRun) -> Result<AssignResponse, String>;

/// How the context answers `RunAssignor`.
pub enum Runner {
    /// The native strategy crates, at once.
    Native,
    /// Every run fails with this message.
    Fail(String),
    /// Runs are held in [`TestContext::held`] until the test releases them.
    Hold,
    /// Runs of this strategy are held (a stuck module); other strategies run natively.
    Hang(String),
    /// A test-supplied function per run.
    Script(Box<Script>),
}

/// Runs a strategy natively: `range` and `roundrobin` with their crates.
pub fn native(strategy: &str, request: &AssignRequest) -> Result<AssignResponse, String> {
    match strategy {
        "range" => assignor_range::assign(request)
            .map(|a| a.into_response())
            .map_err(|e| e.to_string()),
        "roundrobin" => assignor_roundrobin::assign(request)
            .map(|a| a.into_response())
            .map_err(|e| e.to_string()),
        "hold-departed" => assignor_hold_departed::assign(request)
            .map(|a| a.into_response())
            .map_err(|e| e.to_string()),
        "uniform" => assignor_uniform::assign(request)
            .map(|a| a.into_response())
            .map_err(|e| e.to_string()),
        other => Err(format!("no native strategy {other}")),
    }
}

pub fn default_topics() -> TopicsView {
    let mut topics = BTreeMap::new();
    for (name, n) in [("t", 6), ("u", 3)] {
        topics.insert(
            name.to_string(),
            Topic {
                name: name.to_string(),
                partition_count: n,
                partition_racks: Vec::new(),
            },
        );
    }
    Arc::new(Topics::with_derived_ids(topics))
}

/// range, roundrobin (eager), cooperative-sticky (cooperative), hold-departed (eager, in
/// place); kafkajs's `RoundRobinAssigner` is an alias of roundrobin.
pub fn default_strategies() -> Arc<StrategiesView> {
    let entry = |p| StrategyEntry {
        active_version: 1,
        rebalance_protocol: p,
        in_place: false,
    };
    let mut view = StrategiesView::default();
    view.modules
        .insert("range".into(), entry(RebalanceProtocol::Eager));
    view.modules
        .insert("roundrobin".into(), entry(RebalanceProtocol::Eager));
    view.modules.insert(
        "cooperative-sticky".into(),
        entry(RebalanceProtocol::Cooperative),
    );
    view.modules.insert(
        "hold-departed".into(),
        StrategyEntry {
            in_place: true,
            ..entry(RebalanceProtocol::Eager)
        },
    );
    view.aliases
        .insert("RoundRobinAssigner".into(), "roundrobin".into());
    Arc::new(view)
}

pub struct TestContext {
    pub coordinator: Coordinator,
    pub now: Millis,
    pub timers: HashMap<TimerKey, Millis>,
    pub responses: HashMap<ReplyTo, GroupResponse>,
    next_reply: u64,
    /// Every effect except responses, timers and notices, in order.
    pub persisted: Vec<Effect>,
    pub notices: Vec<Notice>,
    pub runs: Vec<AssignorRun>,
    pub runner: Runner,
    pub held: Vec<AssignorRun>,
    /// Committed offsets, kept as a standalone shard keeps them.
    pub offsets: OffsetTable,
}

impl TestContext {
    pub fn new() -> TestContext {
        TestContext::with_config(CoordinatorConfig::default())
    }

    pub fn with_config(config: CoordinatorConfig) -> TestContext {
        TestContext {
            coordinator: Coordinator::new(config, default_topics(), default_strategies()),
            now: 0,
            timers: HashMap::new(),
            responses: HashMap::new(),
            next_reply: 1,
            persisted: Vec::new(),
            notices: Vec::new(),
            runs: Vec::new(),
            runner: Runner::Native,
            held: Vec::new(),
            offsets: OffsetTable::default(),
        }
    }

    /// Feeds an event and executes its effects (assignor runs included) until quiet.
    pub fn event(&mut self, event: Event) {
        // A standalone shard loads a restored group's offsets into its table, as here.
        if let Event::Restore(restored) = &event {
            self.offsets.commit(&restored.group_id, &restored.offsets);
        }
        let effects = self.coordinator.handle(self.now, event);
        self.apply(effects);
    }

    pub fn apply(&mut self, effects: Vec<Effect>) {
        let mut queue = Vec::new();
        for effect in effects {
            match effect {
                Effect::Respond { to, response } => {
                    let previous = self.responses.insert(to, response);
                    assert!(previous.is_none(), "reply {to:?} answered twice");
                }
                Effect::ScheduleTimer { key, at } => {
                    self.timers.insert(key, at);
                }
                Effect::CancelTimer { key } => {
                    self.timers.remove(&key);
                }
                Effect::RunAssignor(run) => {
                    self.runs.push((*run).clone());
                    if let Some(done) = self.execute(*run) {
                        queue.push(Event::AssignorDone(done));
                    }
                }
                Effect::Notice(n) => self.notices.push(n),
                // Offsets are kept as a standalone shard keeps them (the write succeeds); the
                // effect is recorded too, for the tests of what is written.
                Effect::CommitOffsets {
                    to,
                    ref group_id,
                    ref offsets,
                    ref response,
                } => {
                    self.offsets.commit(group_id, offsets);
                    let answer = GroupResponse::OffsetCommit(response.clone());
                    assert!(self.responses.insert(to, answer).is_none(), "{to:?} twice");
                    self.persisted.push(effect);
                }
                Effect::FetchOffsets {
                    to,
                    group_id,
                    query,
                } => {
                    let answer = GroupResponse::OffsetFetch(self.offsets.fetch(&group_id, &query));
                    assert!(self.responses.insert(to, answer).is_none(), "{to:?} twice");
                }
                Effect::DeleteOffsets {
                    to,
                    ref group_id,
                    ref partitions,
                    ref response,
                } => {
                    self.offsets.delete(group_id, partitions);
                    let answer = GroupResponse::OffsetDelete(response.clone());
                    assert!(self.responses.insert(to, answer).is_none(), "{to:?} twice");
                    self.persisted.push(effect);
                }
                Effect::DeleteGroup { to, ref group_id } => {
                    self.offsets.delete_group(group_id);
                    let answer = GroupResponse::DeleteGroup(0);
                    assert!(self.responses.insert(to, answer).is_none(), "{to:?} twice");
                    self.persisted.push(effect);
                }
                other => self.persisted.push(other),
            }
        }
        for event in queue {
            self.event(event);
        }
    }

    fn execute(&mut self, run: AssignorRun) -> Option<AssignorDone> {
        let result = match &mut self.runner {
            Runner::Hold => {
                self.held.push(run);
                return None;
            }
            Runner::Hang(name) if *name == run.strategy => {
                self.held.push(run);
                return None;
            }
            Runner::Native | Runner::Hang(_) => native(&run.strategy, &run.request),
            Runner::Fail(message) => Err(message.clone()),
            Runner::Script(f) => f(&run),
        };
        Some(done_for(&run, result))
    }

    /// Releases a held run with the native result.
    pub fn release(&mut self, run: &AssignorRun) {
        let result = native(&run.strategy, &run.request);
        self.event(Event::AssignorDone(done_for(run, result)));
    }

    /// Advances the clock a second at a time until every reply is answered (the initial
    /// rebalance delay is extended while members keep arriving); at most a minute.
    pub fn settle(&mut self, replies: &[ReplyTo]) {
        for _ in 0..60 {
            if replies.iter().all(|r| self.answered(*r)) {
                return;
            }
            self.advance(1_000);
        }
        panic!("replies still unanswered after a minute: {replies:?}");
    }

    /// Moves the clock forward, firing due timers in deadline order.
    pub fn advance(&mut self, ms: Millis) {
        let target = self.now + ms;
        loop {
            let due = self
                .timers
                .iter()
                .filter(|(_, at)| **at <= target)
                .min_by(|a, b| a.1.cmp(b.1).then_with(|| a.0.cmp(b.0)))
                .map(|(k, at)| (k.clone(), *at));
            let Some((key, at)) = due else { break };
            self.timers.remove(&key);
            self.now = self.now.max(at);
            self.event(Event::TimerFired(key));
        }
        self.now = target;
    }

    pub fn send(
        &mut self,
        group: &str,
        version: i16,
        client_id: &str,
        request: GroupRequest,
    ) -> ReplyTo {
        let reply_to = ReplyTo(self.next_reply);
        self.next_reply += 1;
        self.event(Event::Request {
            reply_to,
            group_id: group.to_string(),
            ctx: RequestContext {
                api_version: version,
                client_id: client_id.to_string(),
                client_host: "/127.0.0.1".to_string(),
            },
            request,
        });
        reply_to
    }

    pub fn join(&mut self, join: &Join) -> ReplyTo {
        self.send(
            &join.group,
            join.version,
            &join.client_id,
            GroupRequest::JoinGroup(join.request()),
        )
    }

    pub fn sync(&mut self, sync: &Sync) -> ReplyTo {
        self.send(
            &sync.group,
            sync.version,
            "client",
            GroupRequest::SyncGroup(sync.request()),
        )
    }

    pub fn answered(&self, reply: ReplyTo) -> bool {
        self.responses.contains_key(&reply)
    }

    pub fn join_response(&self, reply: ReplyTo) -> &JoinGroupResponse {
        match self.responses.get(&reply) {
            Some(GroupResponse::JoinGroup(r)) => r,
            other => panic!("expected a JoinGroup answer for {reply:?}, got {other:?}"),
        }
    }

    pub fn sync_response(&self, reply: ReplyTo) -> &SyncGroupResponse {
        match self.responses.get(&reply) {
            Some(GroupResponse::SyncGroup(r)) => r,
            other => panic!("expected a SyncGroup answer for {reply:?}, got {other:?}"),
        }
    }

    pub fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> i16 {
        self.heartbeat_static(group, member, None, generation)
    }

    pub fn heartbeat_static(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> i16 {
        let request = HeartbeatRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_member_id(s(member))
            .with_group_instance_id(instance.map(s))
            .with_generation_id(generation);
        let reply = self.send(group, 4, "client", GroupRequest::Heartbeat(request));
        match self.responses.get(&reply) {
            Some(GroupResponse::Heartbeat(r)) => r.error_code,
            other => panic!("expected a Heartbeat answer, got {other:?}"),
        }
    }

    /// LeaveGroup with `(member id, instance id)` identities at `version`.
    pub fn leave(
        &mut self,
        group: &str,
        version: i16,
        members: &[(&str, Option<&str>)],
    ) -> LeaveGroupResponse {
        let request = if version < 3 {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s(group)))
                .with_member_id(s(members[0].0))
        } else {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s(group)))
                .with_members(
                    members
                        .iter()
                        .map(|(m, i)| {
                            MemberIdentity::default()
                                .with_member_id(s(m))
                                .with_group_instance_id(i.map(s))
                        })
                        .collect(),
                )
        };
        let reply = self.send(group, version, "client", GroupRequest::LeaveGroup(request));
        match self.responses.get(&reply) {
            Some(GroupResponse::LeaveGroup(r)) => r.clone(),
            other => panic!("expected a LeaveGroup answer, got {other:?}"),
        }
    }

    /// OffsetCommit of `(topic, partition, offset, metadata)`.
    pub fn commit(
        &mut self,
        group: &str,
        version: i16,
        member: &str,
        generation: i32,
        offsets: &[(&str, i32, i64, Option<&str>)],
    ) -> OffsetCommitResponse {
        self.commit_with(group, version, member, None, generation, offsets)
    }

    pub fn commit_with(
        &mut self,
        group: &str,
        version: i16,
        member: &str,
        instance: Option<&str>,
        generation: i32,
        offsets: &[(&str, i32, i64, Option<&str>)],
    ) -> OffsetCommitResponse {
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (t, p, o, m) in offsets {
            topics.entry(t).or_default().push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(*p)
                    .with_committed_offset(*o)
                    .with_committed_metadata(m.map(s)),
            );
        }
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(s(member))
            .with_group_instance_id(instance.map(s))
            .with_topics(
                topics
                    .into_iter()
                    .map(|(t, ps)| {
                        OffsetCommitRequestTopic::default()
                            .with_name(TopicName(s(t)))
                            .with_partitions(ps)
                    })
                    .collect(),
            );
        let reply = self.send(
            group,
            version,
            "client",
            GroupRequest::OffsetCommit(request),
        );
        match self.responses.get(&reply) {
            Some(GroupResponse::OffsetCommit(r)) => r.clone(),
            other => panic!("expected an OffsetCommit answer, got {other:?}"),
        }
    }

    /// The two-step join of a dynamic member (v4+): MEMBER_ID_REQUIRED, then the real join.
    /// Returns the member id and the parked reply.
    pub fn join_dynamic(&mut self, join: Join) -> (String, ReplyTo) {
        let first = self.join(&join);
        let response = self.join_response(first);
        assert_eq!(response.error_code, ResponseError::MemberIdRequired.code());
        let id = response.member_id.to_string();
        let reply = self.join(&join.member(&id));
        (id, reply)
    }

    /// Joins `n` dynamic members built from `join`, waits out the join phase and syncs them all.
    /// Returns the member ids (in join order) and the generation.
    pub fn stable_group(&mut self, join: Join, n: usize) -> (Vec<String>, i32) {
        let group = join.group.clone();
        let mut members = Vec::new();
        for i in 0..n {
            let j = join.clone().client(&format!("c{i}"));
            members.push(if j.version >= 4 && j.instance.is_none() {
                self.join_dynamic(j)
            } else {
                let reply = self.join(&j);
                (String::new(), reply)
            });
        }
        let replies: Vec<ReplyTo> = members.iter().map(|(_, r)| *r).collect();
        self.settle(&replies);
        let mut ids = Vec::new();
        let mut generation = -1;
        for (_, reply) in &members {
            let r = self.join_response(*reply).clone();
            assert_eq!(r.error_code, 0, "join failed: {r:?}");
            generation = r.generation_id;
            ids.push(r.member_id.to_string());
        }
        for (id, (_, reply)) in ids.iter().zip(&members) {
            let name = self
                .join_response(*reply)
                .protocol_name
                .clone()
                .map(|n| n.to_string());
            let sync =
                Sync::new(&group, id, generation).protocol(Some("consumer"), name.as_deref());
            let reply = self.sync(&sync);
            assert!(self.answered(reply) || self.state(&group) == GroupState::CompletingRebalance);
        }
        self.assert_state(&group, GroupState::Stable);
        (ids, generation)
    }

    pub fn state(&self, group: &str) -> GroupState {
        self.coordinator
            .group_state(group)
            .unwrap_or(GroupState::Dead)
    }

    pub fn generation(&self, group: &str) -> i32 {
        self.coordinator.generation(group).unwrap_or(-1)
    }

    #[track_caller]
    pub fn assert_state(&self, group: &str, state: GroupState) {
        assert_eq!(self.state(group), state, "state of group {group}");
    }

    /// Whether a timer with `key` is armed.
    pub fn armed(&self, key: &TimerKey) -> bool {
        self.timers.contains_key(key)
    }

    pub fn rebalances_started(&self) -> usize {
        self.notices
            .iter()
            .filter(|n| matches!(n, Notice::RebalanceStarted { .. }))
            .count()
    }
}

/// An `AssignorDone` for `run` with `result`, reported as the registry's runner reports a
/// module call (see [`runner_result`]).
pub fn done_for(run: &AssignorRun, result: Result<AssignResponse, String>) -> AssignorDone {
    AssignorDone {
        group_id: run.group_id.clone(),
        generation_id: run.generation_id,
        run_id: run.run_id,
        result: runner_result(&run.strategy, &run.request, run.cooperative, result),
    }
}

/// What a runner returns for `result` (the coordinator's contract on `AssignorOutput`): an
/// answer carrying an error is a failure, and an answer that fails [`check_response`]
/// (cooperatively when asked) is a failure naming the culprit in `invalid_output`. Shared by
/// the coordinator's and the driver's test runners so both check as the registry does.
pub fn runner_result(
    strategy: &str,
    request: &AssignRequest,
    cooperative: bool,
    result: Result<AssignResponse, String>,
) -> Result<AssignorOutput, AssignorFailure> {
    let failure = |message, invalid_output| AssignorFailure {
        module: strategy.to_owned(),
        version: Some(1),
        message,
        duration_us: 10,
        invalid_output,
    };
    let response = result.map_err(|message| failure(message, None))?;
    if let Some(error) = &response.error {
        return Err(failure(error.clone(), None));
    }
    let checked = check_response(request, &response, cooperative)
        .and_then(|_| assignor_wire::checks::resolve(request, &response));
    match checked {
        Ok(answer) => Ok(AssignorOutput {
            module: strategy.to_owned(),
            version: 1,
            answer,
            duration_us: 10,
            fuel: 100,
        }),
        Err(invalid) => Err(failure(
            format!("invalid output: {invalid}"),
            Some(Box::new(invalid)),
        )),
    }
}

/// Decodes assignment bytes to `topic -> partitions`, panicking on zero or malformed bytes.
pub fn assigned(bytes: &Bytes) -> BTreeMap<String, Vec<i32>> {
    let (partitions, _) = assignor_wire::consumer_protocol::decode_assignment(bytes)
        .unwrap_or_else(|| panic!("not an Assignment: {bytes:?}"));
    partitions
        .into_iter()
        .map(|tp| (tp.topic, tp.partitions))
        .collect()
}

/// Encodes a response at `version`, as the wire layer will (fields absent at a version must be
/// left at their defaults or kafka-protocol refuses).
pub fn encodes<T: Encodable>(message: &T, version: i16) -> bool {
    let mut buf = BytesMut::new();
    message.encode(&mut buf, version).is_ok()
}

impl TestContext {
    /// Whether `member` is the relay-mode leader (it received the member list).
    pub fn is_relay_leader(&self, member: &str) -> bool {
        self.coordinator.group_detail(self.now, G).is_some_and(|d| {
            d.mode == "relay" && self.coordinator.leader_of(G).as_deref() == Some(member)
        })
    }

    pub fn has_member(&self, group: &str, member: &str) -> bool {
        self.coordinator
            .group_detail(self.now, group)
            .is_some_and(|d| d.members.iter().any(|m| m.member_id == member))
    }

    pub fn describe(
        &mut self,
        group: &str,
    ) -> kafka_protocol::messages::describe_groups_response::DescribedGroup {
        let reply = self.send(
            group,
            5,
            "admin",
            GroupRequest::DescribeGroup(DescribeGroup),
        );
        match self.responses.get(&reply) {
            Some(GroupResponse::DescribeGroup(d)) => d.clone(),
            other => panic!("expected a DescribeGroups answer, got {other:?}"),
        }
    }
}
