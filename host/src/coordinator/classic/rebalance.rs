//! The rebalance life cycle (Kafka's `prepareRebalance`, `completeClassicGroupJoin`,
//! `initNextGeneration`, the initial-delay extension, session and sync expiry, member
//! removal), and the rebalances the host starts itself when a subscribed topic's partition
//! count changes.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::JoinGroupResponse;

use super::assignment;
use super::group::{Group, HOST_LEADER, Mode};
use super::in_place::{self, Step};
use super::protocol;
use super::stabilize;
use crate::coordinator::api::{GroupResponse, Millis};
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{AssignorDone, Notice, RebalanceReason, RemovalReason, TimerKey};
use crate::coordinator::responses::{self, JoinOk};

/// Kafka's `maybePrepareRebalanceOrCompleteJoin`.
pub(crate) fn maybe_prepare_or_complete(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reason: RebalanceReason,
) {
    if group
        .state
        .can_transition_to(GroupState::PreparingRebalance)
    {
        prepare(ctx, group, reason);
    } else {
        maybe_complete_join_phase(ctx, group);
    }
}

/// Completes the join phase when everyone has joined, except during the initial rebalance,
/// which always waits out its delay.
pub(crate) fn maybe_complete_join_phase(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.is(GroupState::PreparingRebalance)
        && group.has_all_members_joined()
        && group.previous_state != GroupState::Empty
    {
        complete_join(ctx, group);
    }
}

/// Kafka's `prepareRebalance`: answer parked syncs with REBALANCE_IN_PROGRESS, drop the
/// in-flight assignment, and wait for members to rejoin (with the initial delay for an Empty
/// group).
pub(crate) fn prepare(ctx: &mut Ctx<'_>, group: &mut Group, reason: RebalanceReason) {
    if group.is(GroupState::CompletingRebalance) {
        reset_and_propagate_error(ctx, group, ResponseError::RebalanceInProgress);
    }
    crate::coordinator::run::abandon(ctx, &group.id, &mut group.pending_run);
    ctx.cancel(TimerKey::Sync {
        group: group.id.clone(),
    });
    ctx.cancel(TimerKey::FollowUp {
        group: group.id.clone(),
    });
    group.pending_sync_members.clear();
    group.follow_up_at = None;
    stabilize::end(ctx, group);
    in_place::abandon(ctx, group);

    let initial = group.is(GroupState::Empty);
    group.transition(GroupState::PreparingRebalance, ctx);
    tracing::info!(group = %group.id, generation = group.generation_id, %reason, "preparing rebalance");
    ctx.notice(Notice::RebalanceStarted {
        group: group.id.clone(),
        generation: group.generation_id,
        reason: reason.clone(),
    });
    group.rebalance_reason = Some(reason);
    group.rebalance_started_at = ctx.now;
    group.fallback_used = false;

    let join_key = TimerKey::Join {
        group: group.id.clone(),
    };
    if initial {
        let delay = ctx.env.config.initial_rebalance_delay_ms.max(0) as Millis;
        let remaining = group.rebalance_timeout_ms().saturating_sub(delay);
        group.initial_delay = Some((delay, remaining));
        ctx.schedule_in(join_key, delay);
    } else if group.has_all_members_joined() {
        complete_join(ctx, group);
    } else {
        group.initial_delay = None;
        ctx.schedule_in(join_key, group.rebalance_timeout_ms());
    }
}

/// Empties every assignment and answers parked SyncGroups with `error`.
fn reset_and_propagate_error(ctx: &mut Ctx<'_>, group: &mut Group, error: ResponseError) {
    for member in group.members.values_mut() {
        member.assignment = bytes::Bytes::new();
        if let Some(parked) = member.awaiting_sync.take() {
            ctx.sync_error(parked, error);
        }
    }
}

/// The join timer fired: extend the initial delay while members keep arriving, else complete.
pub(crate) fn join_timer(ctx: &mut Ctx<'_>, group: &mut Group) {
    if !group.is(GroupState::PreparingRebalance) {
        return;
    }
    if let Some((delay, remaining)) = group.initial_delay
        && group.new_member_added
        && remaining != 0
    {
        group.new_member_added = false;
        let configured = ctx.env.config.initial_rebalance_delay_ms.max(0) as Millis;
        let new_delay = configured.min(remaining);
        let new_remaining = remaining.saturating_sub(delay);
        group.initial_delay = Some((new_delay, new_remaining));
        ctx.schedule_in(
            TimerKey::Join {
                group: group.id.clone(),
            },
            new_delay,
        );
        return;
    }
    complete_join(ctx, group);
}

/// Kafka's `completeClassicGroupJoin` + `initNextGeneration`.
pub(crate) fn complete_join(ctx: &mut Ctx<'_>, group: &mut Group) {
    ctx.cancel(TimerKey::Join {
        group: group.id.clone(),
    });
    group.initial_delay = None;
    group.new_member_added = false;

    let not_rejoined: Vec<Arc<str>> = group
        .members
        .values()
        .filter(|m| m.awaiting_join.is_none() && !m.is_static())
        .map(|m| m.id.clone())
        .collect();
    for id in not_rejoined {
        remove_member(ctx, group, &id, RemovalReason::NotRejoined);
    }

    // Leader: keep it if it rejoined, else the first member that did (relay mode uses it).
    let elected = match group.leader_id.clone() {
        Some(leader)
            if group
                .members
                .get(&leader)
                .is_some_and(|m| m.awaiting_join.is_some()) =>
        {
            true
        }
        Some(_) => {
            let first = group
                .members
                .values()
                .find(|m| m.awaiting_join.is_some())
                .map(|m| m.id.clone());
            let found = first.is_some();
            if found {
                group.leader_id = first;
            }
            found
        }
        None => false,
    };
    if !elected && !group.members.is_empty() {
        tracing::warn!(group = %group.id, "no member rejoined; waiting for session expiry");
        ctx.schedule_in(
            TimerKey::Join {
                group: group.id.clone(),
            },
            group.rebalance_timeout_ms(),
        );
        return;
    }

    group.generation_id += 1;
    if group.members.is_empty() {
        group.protocol_key = None;
        group.mode = Mode::Relay;
        group.topic_counts.clear();
        group.transition(GroupState::Empty, ctx);
        ctx.persist(group.snapshot());
        ctx.notice(Notice::GenerationCompleted {
            group: group.id.clone(),
            generation: group.generation_id,
            members: 0,
            protocol: None,
            strategy: None,
        });
        return;
    }

    let config = ctx.env.config_of(&group.id);
    let Some(selection) = protocol::select(group, &config, &ctx.env.strategies) else {
        // Only reachable after a strategies change broke the common protocol: answer every
        // parked join and start over from Empty.
        let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
        for id in ids {
            if let Some(parked) = group.take_join(&id) {
                ctx.join_error(parked, &id, ResponseError::InconsistentGroupProtocol);
            }
            remove_member(ctx, group, &id, RemovalReason::Left);
        }
        group.protocol_key = None;
        group.transition(GroupState::Empty, ctx);
        ctx.persist(group.snapshot());
        return;
    };
    group.protocol_key = Some(selection.key.clone());
    group.mode = selection.mode;
    for member in group.members.values_mut() {
        member.protocol_name = member.spelling_for(&selection.key).map(str::to_string);
    }
    group.transition(GroupState::CompletingRebalance, ctx);

    let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
    for id in &ids {
        if let Some(parked) = group.take_join(id) {
            let response = join_response_for(group, id, parked.api_version, false);
            ctx.respond(parked.reply_to, GroupResponse::JoinGroup(response));
        }
        let member = group.members.get_mut(id).expect("listed above");
        member.is_new = false;
        let session = member.session_timeout_ms.max(0) as Millis;
        group.reschedule_heartbeat(id, session, ctx);
        group.pending_sync_members.insert(id.clone());
    }
    ctx.schedule_in(
        TimerKey::Sync {
            group: group.id.clone(),
        },
        group.rebalance_timeout_ms(),
    );
    tracing::info!(group = %group.id, generation = group.generation_id, members = ids.len(),
        protocol = %selection.key, "join phase completed");
    if matches!(group.mode, Mode::Host { .. }) {
        assignment::start(ctx, group);
    }
}

/// The JoinGroup answer for `member_id` at the current generation. In host mode the leader is
/// [`HOST_LEADER`] and nobody gets the member list; in relay mode Kafka's rules apply.
pub(crate) fn join_response_for(
    group: &Group,
    member_id: &str,
    api_version: i16,
    skip_assignment: bool,
) -> JoinGroupResponse {
    let member = &group.members[member_id];
    let (leader, members) = match group.mode {
        Mode::Host { .. } => (HOST_LEADER.to_string(), Vec::new()),
        Mode::Relay => {
            let leader = group.leader_id.as_deref().unwrap_or("").to_string();
            let members = if group.is_leader(member_id) {
                current_members(group)
            } else {
                Vec::new()
            };
            (leader, members)
        }
    };
    let protocol_name = match group.mode {
        Mode::Host { .. } => member.protocol_name.as_deref(),
        Mode::Relay => group.protocol_key.as_deref(),
    };
    responses::join_ok(
        api_version,
        JoinOk {
            member_id,
            generation_id: group.generation_id,
            protocol_type: group.protocol_type.as_deref(),
            protocol_name,
            leader: &leader,
            skip_assignment,
            members,
        },
    )
}

/// Every member with its metadata for the selected protocol (what a client leader receives).
fn current_members(group: &Group) -> Vec<(String, Option<String>, bytes::Bytes)> {
    let key = group.protocol_key.as_deref().unwrap_or("");
    group
        .members
        .values()
        .map(|m| {
            (
                m.id.to_string(),
                m.group_instance_id.as_ref().map(|i| i.to_string()),
                m.metadata_for(key).cloned().unwrap_or_default(),
            )
        })
        .collect()
}

/// Removes a member and cancels its session timer: its parked JoinGroup is answered
/// UNKNOWN_MEMBER_ID (so a live client rejoins), a parked SyncGroup likewise. The one place a
/// member leaves a group, so the log line and the notice are written once.
pub(crate) fn remove_member(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    member_id: &Arc<str>,
    reason: RemovalReason,
) {
    if let Some(parked) = group.take_join(member_id) {
        ctx.join_error(parked, "", ResponseError::UnknownMemberId);
    }
    if let Some(parked) = group
        .members
        .get_mut(member_id)
        .and_then(|m| m.awaiting_sync.take())
    {
        ctx.sync_error(parked, ResponseError::UnknownMemberId);
    }
    ctx.cancel(group.heartbeat_key(member_id));
    in_place::hold(ctx, group, member_id, reason);
    if group.remove(member_id).is_some() {
        member_removed(ctx, group, member_id, reason);
    }
}

/// Logs and notices a member (or pending member id) that is gone from `group`.
pub(crate) fn member_removed(
    ctx: &mut Ctx<'_>,
    group: &Group,
    member_id: &Arc<str>,
    reason: RemovalReason,
) {
    tracing::info!(group = %group.id, member = %member_id, ?reason, "member removed");
    ctx.notice(Notice::MemberRemoved {
        group: group.id.clone(),
        member: member_id.clone(),
        reason,
    });
}

/// After members left: apply the change in place (`in_place`), or rebalance a settled group (or
/// defer it, `stabilize`), or finish a join phase that was waiting only for them.
pub(crate) fn after_removal(ctx: &mut Ctx<'_>, group: &mut Group, reason: RebalanceReason) {
    let left = match &reason {
        RebalanceReason::MembersLeft { members } => members.len(),
        _ => 1,
    };
    let step = in_place::departed(ctx, group, &reason, left);
    if settle(ctx, group, step) {
        return;
    }
    if stabilize::defer_removal(ctx, group, left) {
        return;
    }
    if group.is(GroupState::Stable) || group.is(GroupState::CompletingRebalance) {
        prepare(ctx, group, reason);
    } else if group.is(GroupState::PreparingRebalance) && group.has_all_members_joined() {
        complete_join(ctx, group);
    }
}

/// A heartbeat timer fired: forget a pending member id, or remove a member whose heartbeat is
/// not satisfied.
pub(crate) fn heartbeat_expired(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    if group.pending_join_members.remove(member_id) {
        member_removed(ctx, group, member_id, RemovalReason::PendingExpired);
        if group.is(GroupState::PreparingRebalance) && group.has_all_members_joined() {
            complete_join(ctx, group);
        }
        return;
    }
    let Some(member) = group.members.get(member_id) else {
        return;
    };
    if member.has_satisfied_heartbeat() {
        return;
    }
    remove_member(ctx, group, member_id, RemovalReason::SessionExpired);
    let reason = RebalanceReason::SessionExpired {
        member: member_id.clone(),
    };
    after_removal(ctx, group, reason);
}

/// The sync timer fired: members that never sent SyncGroup are removed and the group
/// rebalances.
pub(crate) fn sync_expired(ctx: &mut Ctx<'_>, group: &mut Group) {
    if !(group.is(GroupState::CompletingRebalance) || group.is(GroupState::Stable))
        || group.pending_sync_members.is_empty()
    {
        return;
    }
    let pending: Vec<Arc<str>> = group.pending_sync_members.iter().cloned().collect();
    for id in &pending {
        remove_member(ctx, group, id, RemovalReason::SyncExpired);
    }
    prepare(ctx, group, RebalanceReason::SyncExpired);
}

/// Starts a rebalance when the partition count of a topic the current assignment covers
/// changed (clients are all followers, so none of them watches metadata for the group).
pub(crate) fn check_topics(ctx: &mut Ctx<'_>, group: &mut Group) {
    if !matches!(group.mode, Mode::Host { .. })
        || !(group.is(GroupState::Stable) || group.is(GroupState::CompletingRebalance))
    {
        return;
    }
    let changed = group.topic_counts.iter().find_map(|(topic, before)| {
        let after = ctx.env.topics.get(topic).map_or(0, |t| t.partition_count);
        (after != *before).then(|| (topic.clone(), *before, after))
    });
    if let Some((topic, before, after)) = changed {
        let reason = RebalanceReason::PartitionCountChanged {
            topic,
            before,
            after,
        };
        prepare(ctx, group, reason);
    }
}

/// The stabilisation window ended: the rebalance it deferred starts.
pub(crate) fn stabilized(ctx: &mut Ctx<'_>, group: &mut Group) {
    if !group.is(GroupState::Stable) {
        stabilize::end(ctx, group);
        return;
    }
    if let Some(reason) = stabilize::due(ctx, group) {
        prepare(ctx, group, reason);
    }
}

/// A module asked for another rebalance; a group that is not Stable is rebalancing already.
/// A module that declares `in_place` is asked in place first: an answer that moves nothing
/// (it holds on) costs nobody a rebalance.
pub(crate) fn follow_up(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.is(GroupState::Stable) {
        let step = in_place::followed_up(ctx, group);
        if !settle(ctx, group, step) {
            prepare(ctx, group, RebalanceReason::AssignorFollowUp);
        }
    }
}

/// Whether `group`'s module may hold partitions for departed members: a Stable group assigned
/// by a module declaring `in_place` that keeps a state.
pub(crate) fn may_hold(ctx: &Ctx<'_>, group: &Group) -> bool {
    in_place::may_hold(ctx, group)
}

/// Carries out what an in-place round asks (`in_place::Step`). False when it was not tried:
/// the caller goes on as usual.
pub(crate) fn settle(ctx: &mut Ctx<'_>, group: &mut Group, step: Step) -> bool {
    match step {
        Step::NotTried => false,
        Step::Going => true,
        Step::Applied(joiners) => {
            for (id, parked) in joiners {
                let response = join_response_for(group, &id, parked.api_version, false);
                ctx.respond(parked.reply_to, GroupResponse::JoinGroup(response));
                let session = group.members[&id].session_timeout_ms.max(0) as Millis;
                group.reschedule_heartbeat(&id, session, ctx);
            }
            true
        }
        Step::GaveUp {
            reason,
            joined,
            left,
        } => {
            // Parked joiners wait at most half their rebalance timeout (as for `defer_join`).
            let cap = group
                .members
                .values()
                .filter(|m| m.awaiting_join.is_some())
                .map(|m| {
                    let timeout = (m.rebalance_timeout_ms.max(0) as Millis)
                        .min(ctx.env.config.new_member_join_timeout_ms);
                    ctx.now + timeout / 2
                })
                .min()
                .unwrap_or(Millis::MAX);
            let changed = joined + left > 0;
            if !(changed && stabilize::defer(ctx, group, joined, left, cap)) {
                maybe_prepare_or_complete(ctx, group, reason);
            }
            true
        }
    }
}

/// An assignor run finished: an in-place round's call, or a rebalance's.
pub(crate) fn assignor_done(ctx: &mut Ctx<'_>, group: &mut Group, done: AssignorDone) {
    if in_place::owns(group, &done) {
        let step = in_place::on_done(ctx, group, done);
        settle(ctx, group, step);
    } else {
        assignment::on_done(ctx, group, done);
    }
}

/// The deadline of an assignor run passed: an in-place round's call, or a rebalance's.
pub(crate) fn assignor_deadline(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.is(GroupState::Stable) {
        let step = in_place::deadline(ctx, group);
        settle(ctx, group, step);
    } else {
        assignment::deadline(ctx, group);
    }
}

/// The in-place round's wait for a joiner's twins reached its bound.
pub(crate) fn in_place_wait_over(ctx: &mut Ctx<'_>, group: &mut Group) {
    let step = in_place::wait_over(ctx, group);
    settle(ctx, group, step);
}

/// A member was heard from (it is alive): an in-place round waiting for it goes on.
pub(crate) fn heard_from(ctx: &mut Ctx<'_>, group: &mut Group, member: &str) {
    let step = in_place::heard_from(ctx, group, member);
    settle(ctx, group, step);
}

/// A parked joiner resent its JoinGroup with other protocols.
pub(crate) fn parked_member_changed(ctx: &mut Ctx<'_>, group: &mut Group) {
    let step = in_place::rejoined(ctx, group);
    settle(ctx, group, step);
}

/// A member joined a Stable group: admitted in place when its module allows it. False: the
/// caller rebalances (or defers) as usual.
pub(crate) fn joined_in_place(ctx: &mut Ctx<'_>, group: &mut Group, member: &Arc<str>) -> bool {
    let step = in_place::joined(ctx, group, member);
    settle(ctx, group, step)
}
