//! [`Coordinator`]: the groups of one shard and the single entry point
//! `handle(now, Event) -> Vec<Effect>`. The top of the coordinator's ladder: it imports every
//! handler and routes each event to one, with a [`Ctx`] for the event and the one group (or
//! the shard's groups) the handler needs; nothing below imports it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use assignor_sdk::AssignRequest;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
use kafka_protocol::messages::list_groups_response::ListedGroup;

use super::admin::{self, AdminError, GroupDetail, GroupSummary};
use super::api::GroupResponse;
use super::api::{GroupRequest, Millis, ReplyTo, RequestContext};
use super::classic::group::{Group, Groups};
use super::classic::{
    GroupState, heartbeat, join_group, leave_group, rebalance, stabilize, sync_group,
};
use super::config::{CoordinatorConfig, GroupConfig};
use super::consumer::group::{
    ConsumerGroupState, Group as ConsumerGroup, Groups as ConsumerGroups,
};
use super::consumer::{
    classic as classic_in_consumer, describe, heartbeat as consumer_heartbeat, membership, refresh,
    snapshot as consumer_snapshot, target, upgrade,
};
use super::context::{Ctx, Env};
use super::event::{Effect, Event, RestoredGroup, TimerKey};
use super::responses;
use super::run;
use super::saved::SavedGroup;
use super::view::{StrategiesView, TopicsView};
use super::{
    delete_groups, describe_groups, list_groups, offset_commit, offset_delete, offset_fetch,
    txn_offset_commit,
};

/// The sans-io group coordinator of one shard. See the module docs of [`super`].
pub struct Coordinator {
    env: Env,
    /// Classic groups. A group id is in at most one of the two maps.
    groups: Groups,
    /// Consumer groups (KIP-848).
    consumers: ConsumerGroups,
}

impl Coordinator {
    /// A coordinator with no groups, seeing `topics` and `strategies`.
    pub fn new(
        config: CoordinatorConfig,
        topics: TopicsView,
        strategies: Arc<StrategiesView>,
    ) -> Coordinator {
        Coordinator {
            env: Env::new(config, topics, strategies),
            groups: HashMap::new(),
            consumers: HashMap::new(),
        }
    }

    /// Sets the wall-clock time of coordinator time 0, in milliseconds since the Unix epoch
    /// (`AssignRequest.now_ms` is wall-clock time).
    pub fn with_clock_base(mut self, unix_ms: Millis) -> Coordinator {
        self.env.clock_base_ms = unix_ms;
        self
    }

    pub fn config(&self) -> &CoordinatorConfig {
        &self.env.config
    }

    /// Handles one event at coordinator time `now` and returns what the driver must do, in
    /// order.
    pub fn handle(&mut self, now: Millis, event: Event) -> Vec<Effect> {
        let Coordinator {
            env,
            groups,
            consumers,
        } = self;
        let mut ctx = Ctx::new(now, env);
        // The consumer group the event touched, whose write is armed once it is handled.
        let mut touched: Option<Arc<str>> = None;
        match event {
            Event::Request {
                reply_to,
                group_id,
                ctx: client,
                request,
            } => {
                touched = Some(Arc::from(group_id.as_str()));
                let all = (&mut *groups, &mut *consumers);
                request_for(&mut ctx, all, reply_to, &group_id, &client, request)
            }
            Event::TimerFired(key) => match consumers.get_mut(key.group()) {
                Some(group) => {
                    touched = Some(key.group().clone());
                    consumer_timer(&mut ctx, group, key)
                }
                None => timer(&mut ctx, groups, key),
            },
            Event::AssignorDone(done) => {
                if let Some(group) = consumers.get_mut(done.group_id.as_str()) {
                    touched = Some(group.id.clone());
                    target::on_done(&mut ctx, group, done)
                } else if let Some(group) = groups.get_mut(done.group_id.as_str()) {
                    rebalance::assignor_done(&mut ctx, group, done)
                } else {
                    run::dropped(&mut ctx, &done)
                }
            }
            Event::TopicsChanged(topics) => {
                ctx.env.topics = topics;
                for group in groups.values_mut() {
                    rebalance::check_topics(&mut ctx, group);
                }
                for group in consumers.values_mut() {
                    refresh::check_topics(&mut ctx, group);
                }
            }
            Event::StrategiesChanged(strategies) => {
                ctx.env.strategies = strategies;
                for group in groups.values_mut() {
                    group.rekey(&ctx.env.strategies);
                }
                for group in consumers.values_mut() {
                    refresh::check_strategies(&mut ctx, group);
                }
            }
            Event::Restore(restored) => restore(&mut ctx, (groups, consumers), *restored),
        }
        match touched.and_then(|id| consumers.get_mut(&id)) {
            Some(group) => consumer_snapshot::arm(&mut ctx, group),
            // Catalog and module changes touch every group.
            None => {
                for group in consumers.values_mut() {
                    consumer_snapshot::arm(&mut ctx, group);
                }
            }
        }
        ctx.into_effects()
    }

    /// Answers every parked request with COORDINATOR_NOT_AVAILABLE (the client looks the
    /// coordinator up again), for a driver that is shutting down.
    pub fn shutdown(&mut self) -> Vec<Effect> {
        let mut ctx = Ctx::new(0, &mut self.env);
        for group in self.groups.values_mut() {
            fail_parked(&mut ctx, group, ResponseError::CoordinatorNotAvailable);
        }
        for group in self.consumers.values_mut() {
            membership::shutdown(&mut ctx, group);
            // What changed in the last second is written now.
            consumer_snapshot::write(&mut ctx, group);
        }
        ctx.into_effects()
    }

    /// Gives up the groups `ids` names, which this host node no longer coordinates (their
    /// shard moved to another node of a cluster of hosts, or this node's lease lapsed): every
    /// parked JoinGroup and SyncGroup is answered NOT_COORDINATOR and every consumer-group
    /// heartbeat waiting for a target the same, so their clients look the coordinator up
    /// again and rejoin where it is now; then the groups are forgotten. Offsets are not
    /// touched (in a cluster they live upstream). The driver cancels the groups' timers; an
    /// assignor run still in flight comes back to no group and is dropped.
    pub fn release(&mut self, ids: &[String]) -> Vec<Effect> {
        let mut ctx = Ctx::new(0, &mut self.env);
        for id in ids {
            if let Some(mut group) = self.groups.remove(id.as_str()) {
                fail_parked(&mut ctx, &mut group, ResponseError::NotCoordinator);
            }
            if let Some(mut group) = self.consumers.remove(id.as_str()) {
                membership::fail_waiting_all(&mut ctx, &mut group, ResponseError::NotCoordinator);
            }
        }
        ctx.into_effects()
    }

    /// The state of a group, if it exists.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|g| g.state)
    }

    /// The generation of a group, if it exists.
    pub fn generation(&self, group_id: &str) -> Option<i32> {
        self.groups.get(group_id).map(|g| g.generation_id)
    }

    /// A consumer group's state and its group epoch, if it exists.
    pub fn consumer_group(&self, group_id: &str) -> Option<(ConsumerGroupState, i32)> {
        self.consumers
            .get(group_id)
            .map(|g| (g.state(), g.group_epoch))
    }

    /// A consumer group, for the tests' invariant checks.
    #[cfg(test)]
    pub(crate) fn consumer_group_ref(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.consumers.get(group_id)
    }

    /// Number of groups of this shard (classic and consumer).
    pub fn group_count(&self) -> usize {
        self.groups.len() + self.consumers.len()
    }

    /// Group ids, sorted (classic and consumer).
    pub fn group_ids(&self) -> Vec<String> {
        let ids: BTreeMap<&str, ()> = self
            .groups
            .keys()
            .chain(self.consumers.keys())
            .map(|k| (&**k, ()))
            .collect();
        ids.into_keys().map(str::to_string).collect()
    }

    /// The elected leader of a relay-mode group (tests: the leader is the member that got the
    /// member list).
    #[cfg(test)]
    pub(crate) fn leader_of(&self, group_id: &str) -> Option<String> {
        self.groups
            .get(group_id)?
            .leader_id
            .as_ref()
            .map(|l| l.to_string())
    }

    /// ListGroups for this shard (filters as Kafka's, see `list_groups.rs`).
    pub fn list_groups(
        &self,
        states_filter: &[String],
        types_filter: &[String],
    ) -> Vec<ListedGroup> {
        list_groups::list(&self.groups, &self.consumers, states_filter, types_filter)
    }

    /// The detail of one group (the admin API's view) at `now` (the shard's clock, for how
    /// long a deferred rebalance has waited).
    pub fn group_detail(&self, now: Millis, group_id: &str) -> Option<GroupDetail> {
        match self.consumers.get(group_id) {
            Some(group) => Some(super::consumer::admin::group_detail(&self.env, group, now)),
            None => admin::group_detail(&self.env, &self.groups, group_id, now),
        }
    }

    /// Every group of this shard, classic and consumer, sorted by id.
    pub fn group_summaries(&self) -> Vec<GroupSummary> {
        let mut all = admin::group_summaries(&self.groups);
        all.extend(super::consumer::admin::group_summaries(&self.consumers));
        all.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        all
    }

    /// Sets a group's operator configuration (persisted); it applies at the group's next
    /// rebalance.
    pub fn set_group_config(
        &mut self,
        group_id: &str,
        config: GroupConfig,
    ) -> Result<Vec<Effect>, AdminError> {
        admin::set_group_config(&mut self.env, group_id, config)
    }

    /// Starts a rebalance of a group with members, for the operator (`why` goes into the
    /// group's history).
    pub fn trigger_rebalance(
        &mut self,
        now: Millis,
        group_id: &str,
        why: Option<String>,
    ) -> Result<Vec<Effect>, AdminError> {
        let mut ctx = Ctx::new(now, &mut self.env);
        if let Some(group) = self.consumers.get_mut(group_id) {
            if !refresh::operator(&mut ctx, group, why) {
                return Err(AdminError::GroupEmpty(group_id.to_string()));
            }
            return Ok(ctx.into_effects());
        }
        admin::trigger_rebalance(&mut ctx, &mut self.groups, group_id, why)?;
        Ok(ctx.into_effects())
    }

    /// The request a rebalance of `group_id` with `strategy` would send now (for simulate).
    pub fn assign_request(
        &self,
        now: Millis,
        group_id: &str,
        strategy: &str,
    ) -> Option<AssignRequest> {
        admin::assign_request(&self.env, &self.groups, now, group_id, strategy)
    }
}

fn request_for(
    ctx: &mut Ctx<'_>,
    (groups, consumers): (&mut Groups, &mut ConsumerGroups),
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: GroupRequest,
) {
    match request {
        GroupRequest::JoinGroup(r) => {
            match consumers.get_mut(group_id) {
                // A classic member in a consumer group (Kafka's mixed groups).
                Some(group) if !group.members.is_empty() => {
                    return classic_in_consumer::join(ctx, group, reply_to, client, r);
                }
                // An empty consumer group gives way to a classic one, as in Kafka.
                Some(_) => {
                    consumers.remove(group_id);
                }
                None => {}
            }
            join_group::handle(ctx, groups, reply_to, group_id, client, r)
        }
        GroupRequest::ConsumerGroupHeartbeat(r) => {
            consumer_group_heartbeat(ctx, (groups, consumers), reply_to, group_id, client, *r)
        }
        GroupRequest::ConsumerGroupDescribe(_) => {
            let described = match consumers.get(group_id) {
                Some(group) => describe::described(ctx, group),
                None => responses::consumer_described_error(
                    group_id,
                    ResponseError::GroupIdNotFound,
                    Some(format!("Group {group_id} is not a consumer group.")),
                ),
            };
            ctx.respond(reply_to, GroupResponse::ConsumerGroupDescribe(described));
        }
        GroupRequest::SyncGroup(r) => match consumers.get_mut(group_id) {
            Some(group) => classic_in_consumer::sync(ctx, group, reply_to, client, r),
            None => sync_group::handle(ctx, groups, reply_to, group_id, client, r),
        },
        GroupRequest::Heartbeat(r) => match consumers.get_mut(group_id) {
            Some(group) => classic_in_consumer::heartbeat(ctx, group, reply_to, r),
            None => heartbeat::handle(ctx, groups, reply_to, group_id, r),
        },
        GroupRequest::LeaveGroup(r) => match consumers.get_mut(group_id) {
            Some(group) if !group_id.is_empty() => {
                classic_in_consumer::leave(ctx, group, reply_to, client, r)
            }
            _ => leave_group::handle(ctx, groups, reply_to, group_id, client, r),
        },
        GroupRequest::OffsetCommit(r) => {
            offset_commit::handle(ctx, groups, consumers, reply_to, group_id, client, r)
        }
        GroupRequest::TxnOffsetCommit(r) => {
            txn_offset_commit::handle(ctx, groups, consumers, reply_to, group_id, client, r)
        }
        GroupRequest::OffsetFetch(q) => {
            offset_fetch::handle(ctx, consumers, reply_to, group_id, client, q)
        }
        GroupRequest::OffsetDelete(r) => offset_delete::handle(ctx, groups, reply_to, group_id, r),
        // Kafka's DescribeGroups describes classic groups only: any other is not found.
        GroupRequest::DescribeGroup(_) if consumers.contains_key(group_id) => {
            let described = responses::described_not_found(group_id, client.api_version);
            ctx.respond(reply_to, GroupResponse::DescribeGroup(described));
        }
        GroupRequest::DescribeGroup(_) => {
            describe_groups::handle(ctx, groups, reply_to, group_id, client.api_version)
        }
        GroupRequest::DeleteGroup(_) => {
            delete_groups::handle(ctx, (groups, consumers), reply_to, group_id)
        }
    }
}

fn timer(ctx: &mut Ctx<'_>, groups: &mut Groups, key: TimerKey) {
    let Some(group) = groups.get_mut(key.group()) else {
        return;
    };
    match key {
        TimerKey::Heartbeat { member, .. } => rebalance::heartbeat_expired(ctx, group, &member),
        TimerKey::Join { .. } => rebalance::join_timer(ctx, group),
        TimerKey::Sync { .. } => rebalance::sync_expired(ctx, group),
        TimerKey::AssignorDeadline { .. } => rebalance::assignor_deadline(ctx, group),
        TimerKey::InPlace { .. } => rebalance::in_place_wait_over(ctx, group),
        TimerKey::FollowUp { .. } => rebalance::follow_up(ctx, group),
        TimerKey::Stabilize { .. } => rebalance::stabilized(ctx, group),
        // Consumer-group timers of a group that is gone.
        TimerKey::Revocation { .. } | TimerKey::TargetWait { .. } | TimerKey::Persist { .. } => {}
    }
}

fn consumer_timer(ctx: &mut Ctx<'_>, group: &mut ConsumerGroup, key: TimerKey) {
    match key {
        TimerKey::Heartbeat { member, .. } => membership::session_expired(ctx, group, &member),
        TimerKey::Revocation { member, .. } => membership::revocation_expired(ctx, group, &member),
        TimerKey::TargetWait { member, .. } => membership::wait_expired(ctx, group, &member),
        TimerKey::AssignorDeadline { .. } => target::deadline(ctx, group),
        TimerKey::FollowUp { .. } => refresh::follow_up(ctx, group),
        TimerKey::Persist { .. } => consumer_snapshot::write(ctx, group),
        // Classic timers of a group id that is now a consumer group.
        TimerKey::InPlace { .. } => target::twins_wait_over(ctx, group),
        TimerKey::Join { .. } | TimerKey::Sync { .. } | TimerKey::Stabilize { .. } => {}
    }
}

/// ConsumerGroupHeartbeat: the protocol switch and the request checks, then a leave, or a
/// heartbeat of the group (created by an epoch-0 join; an empty classic group of that id gives
/// way, a classic group with members is upgraded in place, or, when it cannot be,
/// GROUP_ID_NOT_FOUND, as Kafka answers).
fn consumer_group_heartbeat(
    ctx: &mut Ctx<'_>,
    (groups, consumers): (&mut Groups, &mut ConsumerGroups),
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) {
    if !ctx.env.config.consumer_protocol {
        let refusal = (
            ResponseError::UnsupportedVersion,
            "The consumer group protocol is disabled.".to_owned(),
        );
        return consumer_heartbeat::fail(ctx, reply_to, refusal);
    }
    if let Err(refusal) = consumer_heartbeat::validate(ctx, client.api_version, &request) {
        return consumer_heartbeat::fail(ctx, reply_to, refusal);
    }
    if request.member_epoch < 0 {
        let group = consumers.get_mut(group_id);
        return consumer_heartbeat::leave(ctx, group, group_id, reply_to, &request);
    }
    if !consumers.contains_key(group_id) {
        let not_found = |what: &str| {
            (
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} {what}."),
            )
        };
        if request.member_epoch != 0 {
            return consumer_heartbeat::fail(ctx, reply_to, not_found("not found"));
        }
        let group = match groups.get(group_id) {
            // Kafka's online upgrade: the classic members stay, now in a consumer group.
            Some(classic) if !classic.members.is_empty() => {
                match upgrade::from_classic(classic, ctx.env.config.max_group_size) {
                    Ok(group) => {
                        // What is stored of the classic group is its Empty shape (its offsets
                        // stay): after a restart the members rejoin a consumer group.
                        let mut record = classic.record();
                        record.members.clear();
                        ctx.persist(SavedGroup::Classic(record));
                        group
                    }
                    Err(why) => {
                        let refusal = not_found(&format!("{why}; it cannot be upgraded"));
                        return consumer_heartbeat::fail(ctx, reply_to, refusal);
                    }
                }
            }
            _ => ConsumerGroup::new(Arc::from(group_id)),
        };
        groups.remove(group_id);
        consumers.insert(group.id.clone(), group);
    }
    let group = consumers
        .get_mut(group_id)
        .expect("present or just created");
    consumer_heartbeat::handle(ctx, group, reply_to, client, request);
}

/// A group read back from the store: its operator configuration and its metadata (a classic
/// group with members resumes Stable, every member with a full session from now; a consumer
/// group resumes at its epochs, `consumer::snapshot`), or, for a group that only holds
/// offsets, an Empty classic group (the offsets themselves are the driver's).
fn restore(
    ctx: &mut Ctx<'_>,
    (groups, consumers): (&mut Groups, &mut ConsumerGroups),
    restored: RestoredGroup,
) {
    let id: Arc<str> = Arc::from(restored.group_id.as_str());
    if let Some(config) = restored.config {
        ctx.env.configs.insert(restored.group_id.clone(), config);
    }
    let classic = match restored.snapshot {
        Some(SavedGroup::Consumer(state)) => {
            let group = ConsumerGroup::restore(&state, &ctx.env.topics);
            let group = consumers.entry(id).insert_entry(group).into_mut();
            consumer_snapshot::resume(ctx, group);
            return;
        }
        Some(SavedGroup::Classic(record)) => Some(record),
        None if restored.offsets.is_empty() => return,
        None => None,
    };
    let mut group = match &classic {
        Some(record) => Group::restore(record, &ctx.env.strategies),
        None => Group::new(id.clone()),
    };
    for member in group.members.values() {
        group.reschedule_heartbeat(&member.id, member.session_timeout_ms.max(0) as Millis, ctx);
    }
    if let Some(deferred) = classic.as_ref().and_then(|s| s.deferred)
        && group.is(GroupState::Stable)
    {
        stabilize::resume(ctx, &mut group, deferred);
    }
    rebalance::check_topics(ctx, &mut group);
    // A module that may hold partitions (it declares `in_place`) is asked again at once
    // whether it does: the follow-up it asked for is not written with the group. The call is
    // in place, so a module that still holds costs nobody a rebalance.
    if rebalance::may_hold(ctx, &group) {
        ctx.schedule_in(TimerKey::FollowUp { group: id.clone() }, 0);
    }
    groups.insert(id, group);
}

/// Answers every parked JoinGroup and SyncGroup of a classic group with `error`.
fn fail_parked(ctx: &mut Ctx<'_>, group: &mut Group, error: ResponseError) {
    let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
    for id in ids {
        if let Some(parked) = group.take_join(&id) {
            ctx.join_error(parked, &id, error);
        }
        if let Some(parked) = group
            .members
            .get_mut(&id)
            .and_then(|m| m.awaiting_sync.take())
        {
            ctx.sync_error(parked, error);
        }
    }
}
