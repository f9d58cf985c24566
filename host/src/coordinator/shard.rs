//! [`Coordinator`]: the groups of one shard and the single entry point
//! `handle(now, Event) -> Vec<Effect>`. Each Kafka API has its own file; this one dispatches,
//! holds what every handler shares ([`Env`]) and collects effects ([`Out`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::config::{CoordinatorConfig, GroupConfig};
use super::event::{Effect, Event, Notice, RestoredGroup, TimerKey};
use super::group::Group;
use super::ids::IdGen;
use super::member::Parked;
use super::responses;
use super::snapshot::GroupSnapshot;
use super::state::GroupState;
use super::view::{StrategiesView, TopicsView};
use super::{GroupRequest, GroupResponse, Millis, ReplyTo};

/// What every handler reads or advances besides the group itself.
pub(crate) struct Env {
    pub config: CoordinatorConfig,
    pub topics: TopicsView,
    pub strategies: Arc<StrategiesView>,
    /// Operator configuration by group id; kept apart from groups so it applies to a group
    /// created later and survives DeleteGroups.
    pub configs: HashMap<String, GroupConfig>,
    pub ids: IdGen,
    pub next_run: u64,
}

impl Env {
    pub fn config_of(&self, group: &str) -> Option<&GroupConfig> {
        self.configs.get(group)
    }
}

/// Effects collected while handling one event.
#[derive(Default)]
pub(crate) struct Out {
    pub effects: Vec<Effect>,
}

impl Out {
    pub fn respond(&mut self, to: ReplyTo, response: GroupResponse) {
        self.effects.push(Effect::Respond { to, response });
    }
    pub fn schedule(&mut self, key: TimerKey, at: Millis) {
        self.effects.push(Effect::ScheduleTimer { key, at });
    }
    pub fn cancel(&mut self, key: TimerKey) {
        self.effects.push(Effect::CancelTimer { key });
    }
    pub fn notice(&mut self, notice: Notice) {
        self.effects.push(Effect::Notice(notice));
    }
    pub fn persist(&mut self, group: &Group) {
        self.effects
            .push(Effect::PersistGroup(Arc::new(GroupSnapshot::of(group))));
    }
    /// Answers a parked JoinGroup with an error.
    pub fn join_error(&mut self, parked: Parked, member_id: &str, error: ResponseError) {
        self.respond(
            parked.reply_to,
            GroupResponse::JoinGroup(responses::join_error(parked.api_version, member_id, error)),
        );
    }
    /// Answers a parked SyncGroup with an error.
    pub fn sync_error(&mut self, parked: Parked, error: ResponseError) {
        self.respond(
            parked.reply_to,
            GroupResponse::SyncGroup(responses::sync_error(error)),
        );
    }
}

/// The sans-io group coordinator of one shard. See the module docs of [`super`].
pub struct Coordinator {
    pub(crate) env: Env,
    pub(crate) groups: HashMap<Arc<str>, Group>,
}

impl Coordinator {
    /// A coordinator with no groups, seeing `topics` and `strategies`.
    pub fn new(
        config: CoordinatorConfig,
        topics: TopicsView,
        strategies: Arc<StrategiesView>,
    ) -> Coordinator {
        Coordinator {
            env: Env {
                ids: IdGen::new(config.seed),
                config,
                topics,
                strategies,
                configs: HashMap::new(),
                next_run: 1,
            },
            groups: HashMap::new(),
        }
    }

    pub fn config(&self) -> &CoordinatorConfig {
        &self.env.config
    }

    /// Handles one event at coordinator time `now` and returns what the driver must do, in
    /// order.
    pub fn handle(&mut self, now: Millis, event: Event) -> Vec<Effect> {
        let mut out = Out::default();
        match event {
            Event::Request {
                reply_to,
                group_id,
                ctx,
                request,
            } => self.request(now, reply_to, group_id, ctx, request, &mut out),
            Event::TimerFired(key) => self.timer(now, key, &mut out),
            Event::AssignorDone(done) => {
                if let Some(group) = self.groups.get_mut(done.group_id.as_str()) {
                    super::assignment::on_done(&mut self.env, group, now, done, &mut out);
                } else {
                    super::assignment::dropped(&done, &mut out);
                }
            }
            Event::TopicsChanged(topics) => {
                self.env.topics = topics;
                for group in self.groups.values_mut() {
                    super::rebalance::check_topics(&mut self.env, group, now, &mut out);
                }
            }
            Event::StrategiesChanged(strategies) => {
                self.env.strategies = strategies;
                for group in self.groups.values_mut() {
                    group.rekey(&self.env.strategies);
                }
            }
            Event::Restore(restored) => self.restore(now, *restored, &mut out),
        }
        out.effects
    }

    fn request(
        &mut self,
        now: Millis,
        reply_to: ReplyTo,
        group_id: String,
        ctx: super::RequestContext,
        request: GroupRequest,
        out: &mut Out,
    ) {
        use super::{describe, heartbeat, join_group, leave_group, offsets, sync_group};
        match request {
            GroupRequest::JoinGroup(r) => {
                join_group::handle(self, now, reply_to, &group_id, &ctx, r, out)
            }
            GroupRequest::SyncGroup(r) => {
                sync_group::handle(self, now, reply_to, &group_id, &ctx, r, out)
            }
            GroupRequest::Heartbeat(r) => heartbeat::handle(self, now, reply_to, &group_id, r, out),
            GroupRequest::LeaveGroup(r) => {
                leave_group::handle(self, now, reply_to, &group_id, &ctx, r, out)
            }
            GroupRequest::OffsetCommit(r) => {
                offsets::commit(self, now, reply_to, &group_id, &ctx, r, out)
            }
            GroupRequest::OffsetFetch(q) => offsets::fetch(self, reply_to, &group_id, &ctx, q, out),
            GroupRequest::DescribeGroup => describe::describe(self, reply_to, &group_id, out),
            GroupRequest::DeleteGroup => describe::delete(self, reply_to, &group_id, out),
        }
    }

    fn timer(&mut self, now: Millis, key: TimerKey, out: &mut Out) {
        use super::{assignment, rebalance};
        let group_id = match &key {
            TimerKey::Heartbeat { group, .. }
            | TimerKey::Join { group }
            | TimerKey::Sync { group }
            | TimerKey::AssignorDeadline { group }
            | TimerKey::FollowUp { group } => group.clone(),
        };
        let Some(group) = self.groups.get_mut(&group_id) else {
            return;
        };
        let env = &mut self.env;
        match key {
            TimerKey::Heartbeat { member, .. } => {
                rebalance::heartbeat_expired(env, group, now, &member, out)
            }
            TimerKey::Join { .. } => rebalance::join_timer(env, group, now, out),
            TimerKey::Sync { .. } => rebalance::sync_expired(env, group, now, out),
            TimerKey::AssignorDeadline { .. } => assignment::deadline(env, group, now, out),
            TimerKey::FollowUp { .. } => {
                if group.is(GroupState::Stable) {
                    rebalance::prepare(env, group, now, "the assignor asked for a rebalance", out);
                }
            }
        }
    }

    fn restore(&mut self, now: Millis, restored: RestoredGroup, out: &mut Out) {
        let id: Arc<str> = Arc::from(restored.group_id.as_str());
        if let Some(config) = restored.config {
            self.env.configs.insert(restored.group_id.clone(), config);
        }
        let mut group = match &restored.snapshot {
            Some(snapshot) => snapshot.restore(&self.env.strategies),
            None => Group::new(id.clone()),
        };
        for record in &restored.offsets {
            group
                .offsets
                .insert((record.topic.clone(), record.partition), record.committed());
        }
        if restored.snapshot.is_none() && group.offsets.is_empty() {
            return;
        }
        // Stable groups resume: every member gets a full session from now.
        for member in group.members.values() {
            out.schedule(
                TimerKey::Heartbeat {
                    group: id.clone(),
                    member: member.id.clone(),
                },
                now + member.session_timeout_ms.max(0) as Millis,
            );
        }
        super::rebalance::check_topics(&mut self.env, &mut group, now, out);
        self.groups.insert(id, group);
    }

    /// Answers every parked request with COORDINATOR_NOT_AVAILABLE (the client looks the
    /// coordinator up again), for a driver that is shutting down.
    pub fn shutdown(&mut self) -> Vec<Effect> {
        let mut out = Out::default();
        for group in self.groups.values_mut() {
            let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
            for id in ids {
                if let Some(parked) = group.take_join(&id) {
                    out.join_error(parked, &id, ResponseError::CoordinatorNotAvailable);
                }
                if let Some(parked) = group
                    .members
                    .get_mut(&id)
                    .and_then(|m| m.awaiting_sync.take())
                {
                    out.sync_error(parked, ResponseError::CoordinatorNotAvailable);
                }
            }
        }
        out.effects
    }

    /// The state of a group, if it exists.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|g| g.state)
    }

    /// The generation of a group, if it exists.
    pub fn generation(&self, group_id: &str) -> Option<i32> {
        self.groups.get(group_id).map(|g| g.generation_id)
    }

    /// Number of groups of this shard.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Group ids, sorted.
    pub fn group_ids(&self) -> Vec<String> {
        let ids: BTreeMap<&str, ()> = self.groups.keys().map(|k| (&**k, ())).collect();
        ids.into_keys().map(str::to_string).collect()
    }
}
