//! [`Ctx`]: what a handler reads and advances besides the group it works on, and where it puts
//! its effects. Handlers take a `Ctx` and one group, never the whole [`super::Coordinator`], so
//! the dispatch file imports the handlers and no handler imports the dispatch.

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::api::{GroupResponse, Millis, ReplyTo};
use super::config::{CoordinatorConfig, GroupConfig};
use super::event::{Effect, Notice, TimerKey};
use super::ids::IdGen;
use super::responses;
use super::saved::SavedGroup;
use super::view::{StrategiesView, TopicsView};

/// What every handler of a shard shares: settings, the views of the world, the operator's
/// group configuration, and the generators of member ids and run ids.
pub(crate) struct Env {
    pub config: CoordinatorConfig,
    pub topics: TopicsView,
    pub strategies: Arc<StrategiesView>,
    /// Operator configuration by group id; kept apart from groups so it applies to a group
    /// created later and survives DeleteGroups.
    pub configs: HashMap<String, GroupConfig>,
    pub ids: IdGen,
    /// The id of the next assignor run (a late result carries its run id, so it is dropped).
    pub next_run: u64,
    /// Milliseconds since the Unix epoch at coordinator time 0 (set by the driver; 0 in
    /// tests): a request's `now_ms` is wall-clock time, so a module that keeps a time in its
    /// `state` (a hold since then) reads it right after a restart or on another node.
    pub clock_base_ms: Millis,
}

impl Env {
    /// A shard's environment: no groups configured yet, run ids from 1.
    pub fn new(
        config: CoordinatorConfig,
        topics: TopicsView,
        strategies: Arc<StrategiesView>,
    ) -> Env {
        Env {
            ids: IdGen::new(config.seed),
            config,
            topics,
            strategies,
            configs: HashMap::new(),
            next_run: 1,
            clock_base_ms: 0,
        }
    }

    /// A request's `now_ms` for coordinator time `now`: milliseconds since the Unix epoch.
    pub fn clock_ms(&self, now: Millis) -> Millis {
        self.clock_base_ms.saturating_add(now)
    }

    /// The operator's configuration of `group`, or the default (no override, no parameters).
    pub fn config_of(&self, group: &str) -> GroupConfig {
        self.configs.get(group).cloned().unwrap_or_default()
    }
}

/// One event's handling: the time it happens at, the shard's [`Env`], and the effects so far,
/// in the order the driver must execute them.
pub(crate) struct Ctx<'a> {
    /// Coordinator time of the event.
    pub now: Millis,
    pub env: &'a mut Env,
    effects: Vec<Effect>,
}

impl<'a> Ctx<'a> {
    pub fn new(now: Millis, env: &'a mut Env) -> Ctx<'a> {
        Ctx {
            now,
            env,
            effects: Vec::new(),
        }
    }

    /// The effects, in order.
    pub fn into_effects(self) -> Vec<Effect> {
        self.effects
    }

    pub fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    pub fn respond(&mut self, to: ReplyTo, response: GroupResponse) {
        self.effect(Effect::Respond { to, response });
    }

    /// Arms `key` to fire `after_ms` from now (replacing its previous deadline).
    pub fn schedule_in(&mut self, key: TimerKey, after_ms: Millis) {
        let at = self.now + after_ms;
        self.effect(Effect::ScheduleTimer { key, at });
    }

    pub fn cancel(&mut self, key: TimerKey) {
        self.effect(Effect::CancelTimer { key });
    }

    /// A module's answer for `group` was installed: its `rebalance_after_ms` arms the
    /// follow-up, and an answer without one cancels a follow-up an earlier answer asked for
    /// (the latest answer's request is the one that stands).
    pub fn follow_up(&mut self, group: &Arc<str>, after_ms: Option<u64>) {
        let key = TimerKey::FollowUp {
            group: group.clone(),
        };
        match after_ms {
            Some(after) => self.schedule_in(key, after),
            None => self.cancel(key),
        }
    }

    pub fn notice(&mut self, notice: Notice) {
        self.effect(Effect::Notice(notice));
    }

    /// Stores a group's metadata (before the answers that depend on it, as Kafka answers
    /// after the write).
    pub fn persist(&mut self, snapshot: SavedGroup) {
        self.effect(Effect::PersistGroup(Arc::new(snapshot)));
    }

    /// Answers a JoinGroup with an error.
    pub fn join_error(&mut self, to: Parked, member_id: &str, error: ResponseError) {
        self.respond(
            to.reply_to,
            GroupResponse::JoinGroup(responses::join_error(to.api_version, member_id, error)),
        );
    }

    /// Answers a SyncGroup with an error.
    pub fn sync_error(&mut self, to: Parked, error: ResponseError) {
        self.respond(
            to.reply_to,
            GroupResponse::SyncGroup(responses::sync_error(error)),
        );
    }
}

/// A request waiting for its answer: who to answer and the request version that shapes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parked {
    pub reply_to: ReplyTo,
    pub api_version: i16,
}
