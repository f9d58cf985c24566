//! The rebalance life cycle (Kafka's `prepareRebalance`, `completeClassicGroupJoin`,
//! `initNextGeneration`, the initial-delay extension, session and sync expiry), and the
//! rebalances the host starts itself when a subscribed topic's partition count changes.

use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::event::{Notice, RemovalReason, TimerKey};
use super::group::{Group, HOST_LEADER, Mode};
use super::protocol;
use super::responses::{self, JoinOk};
use super::shard::{Env, Out};
use super::state::GroupState;
use super::{GroupResponse, Millis};

pub(crate) fn heartbeat_key(group: &Group, member: &Arc<str>) -> TimerKey {
    TimerKey::Heartbeat {
        group: group.id.clone(),
        member: member.clone(),
    }
}

/// Re-arms a member's session timer for `timeout_ms` from now.
pub(crate) fn reschedule_heartbeat(
    group: &Group,
    member: &Arc<str>,
    now: Millis,
    timeout_ms: Millis,
    out: &mut Out,
) {
    out.schedule(heartbeat_key(group, member), now + timeout_ms);
}

/// Kafka's `maybePrepareRebalanceOrCompleteJoin`.
pub(crate) fn maybe_prepare_or_complete(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    reason: &str,
    out: &mut Out,
) {
    if group
        .state
        .can_transition_to(GroupState::PreparingRebalance)
    {
        prepare(env, group, now, reason, out);
    } else {
        maybe_complete_join_phase(env, group, now, out);
    }
}

/// Completes the join phase when everyone has joined, except during the initial rebalance,
/// which always waits out its delay.
pub(crate) fn maybe_complete_join_phase(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    out: &mut Out,
) {
    if group.is(GroupState::PreparingRebalance)
        && group.has_all_members_joined()
        && group.previous_state != GroupState::Empty
    {
        complete_join(env, group, now, out);
    }
}

/// Kafka's `prepareRebalance`: answer parked syncs with REBALANCE_IN_PROGRESS, drop the
/// in-flight assignment, and wait for members to rejoin (with the initial delay for an Empty
/// group).
pub(crate) fn prepare(env: &mut Env, group: &mut Group, now: Millis, reason: &str, out: &mut Out) {
    if group.is(GroupState::CompletingRebalance) {
        reset_and_propagate_error(group, ResponseError::RebalanceInProgress, out);
    }
    if group.pending_run.take().is_some() {
        out.cancel(TimerKey::AssignorDeadline {
            group: group.id.clone(),
        });
    }
    out.cancel(TimerKey::Sync {
        group: group.id.clone(),
    });
    out.cancel(TimerKey::FollowUp {
        group: group.id.clone(),
    });
    group.pending_sync_members.clear();

    let initial = group.is(GroupState::Empty);
    group.transition(GroupState::PreparingRebalance, out);
    group.rebalance_reason = reason.to_string();
    group.rebalance_started_at = now;
    group.fallback_used = false;
    out.notice(Notice::RebalanceStarted {
        group: group.id.clone(),
        generation: group.generation_id,
        reason: reason.to_string(),
    });
    tracing::info!(group = %group.id, generation = group.generation_id, reason, "preparing rebalance");

    let join_key = TimerKey::Join {
        group: group.id.clone(),
    };
    if initial {
        let delay = env.config.initial_rebalance_delay_ms.max(0) as Millis;
        let remaining = group.rebalance_timeout_ms().saturating_sub(delay);
        group.initial_delay = Some((delay, remaining));
        out.schedule(join_key, now + delay);
    } else if group.has_all_members_joined() {
        complete_join(env, group, now, out);
    } else {
        group.initial_delay = None;
        out.schedule(join_key, now + group.rebalance_timeout_ms());
    }
}

/// Empties every assignment and answers parked SyncGroups with `error`.
fn reset_and_propagate_error(group: &mut Group, error: ResponseError, out: &mut Out) {
    for member in group.members.values_mut() {
        member.assignment = bytes::Bytes::new();
        if let Some(parked) = member.awaiting_sync.take() {
            out.sync_error(parked, error);
        }
    }
}

/// The join timer fired: extend the initial delay while members keep arriving, else complete.
pub(crate) fn join_timer(env: &mut Env, group: &mut Group, now: Millis, out: &mut Out) {
    if !group.is(GroupState::PreparingRebalance) {
        return;
    }
    if let Some((delay, remaining)) = group.initial_delay
        && group.new_member_added
        && remaining != 0
    {
        group.new_member_added = false;
        let configured = env.config.initial_rebalance_delay_ms.max(0) as Millis;
        let new_delay = configured.min(remaining);
        let new_remaining = remaining.saturating_sub(delay);
        group.initial_delay = Some((new_delay, new_remaining));
        out.schedule(
            TimerKey::Join {
                group: group.id.clone(),
            },
            now + new_delay,
        );
        return;
    }
    complete_join(env, group, now, out);
}

/// Kafka's `completeClassicGroupJoin` + `initNextGeneration`.
pub(crate) fn complete_join(env: &mut Env, group: &mut Group, now: Millis, out: &mut Out) {
    out.cancel(TimerKey::Join {
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
        remove_member(group, &id, RemovalReason::NotRejoined, out);
        out.cancel(heartbeat_key(group, &id));
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
        out.schedule(
            TimerKey::Join {
                group: group.id.clone(),
            },
            now + group.rebalance_timeout_ms(),
        );
        return;
    }

    group.generation_id += 1;
    if group.members.is_empty() {
        group.protocol_key = None;
        group.mode = Mode::Relay;
        group.topic_counts.clear();
        group.transition(GroupState::Empty, out);
        out.persist(group);
        out.notice(Notice::GenerationCompleted {
            group: group.id.clone(),
            generation: group.generation_id,
            members: 0,
            protocol: None,
            strategy: None,
        });
        return;
    }

    let config = env.config_of(&group.id).cloned().unwrap_or_default();
    let Some(selection) = protocol::select(group, &config, &env.strategies) else {
        // Only reachable after a strategies change broke the common protocol: answer every
        // parked join and start over from Empty.
        let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
        for id in ids {
            if let Some(parked) = group.take_join(&id) {
                out.join_error(parked, &id, ResponseError::InconsistentGroupProtocol);
            }
            remove_member(group, &id, RemovalReason::Left, out);
            out.cancel(heartbeat_key(group, &id));
        }
        group.protocol_key = None;
        group.transition(GroupState::Empty, out);
        out.persist(group);
        return;
    };
    group.protocol_key = Some(selection.key.clone());
    group.mode = selection.mode;
    for member in group.members.values_mut() {
        member.protocol_name = member.spelling_for(&selection.key).map(str::to_string);
    }
    group.transition(GroupState::CompletingRebalance, out);

    let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
    for id in &ids {
        if let Some(parked) = group.take_join(id) {
            let response = join_response_for(group, id, parked.api_version, false);
            out.respond(parked.reply_to, GroupResponse::JoinGroup(response));
        }
        let member = group.members.get_mut(id).expect("listed above");
        member.is_new = false;
        let session = member.session_timeout_ms.max(0) as Millis;
        reschedule_heartbeat(group, id, now, session, out);
        group.pending_sync_members.insert(id.clone());
    }
    out.schedule(
        TimerKey::Sync {
            group: group.id.clone(),
        },
        now + group.rebalance_timeout_ms(),
    );
    tracing::info!(group = %group.id, generation = group.generation_id, members = ids.len(),
        protocol = %selection.key, "join phase completed");
    if matches!(group.mode, Mode::Host { .. }) {
        super::assignment::start(env, group, now, out);
    }
}

/// The JoinGroup answer for `member_id` at the current generation. In host mode the leader is
/// [`HOST_LEADER`] and nobody gets the member list; in relay mode Kafka's rules apply.
pub(crate) fn join_response_for(
    group: &Group,
    member_id: &str,
    api_version: i16,
    skip_assignment: bool,
) -> kafka_protocol::messages::JoinGroupResponse {
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
pub(crate) fn current_members(group: &Group) -> Vec<(String, Option<String>, bytes::Bytes)> {
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

/// Removes a member: its parked JoinGroup is answered UNKNOWN_MEMBER_ID (so a live client
/// rejoins), a parked SyncGroup likewise.
pub(crate) fn remove_member(
    group: &mut Group,
    member_id: &Arc<str>,
    reason: RemovalReason,
    out: &mut Out,
) {
    if let Some(parked) = group.take_join(member_id) {
        out.join_error(parked, "", ResponseError::UnknownMemberId);
    }
    if let Some(parked) = group
        .members
        .get_mut(member_id)
        .and_then(|m| m.awaiting_sync.take())
    {
        out.sync_error(parked, ResponseError::UnknownMemberId);
    }
    if group.remove(member_id).is_some() {
        tracing::info!(group = %group.id, member = %member_id, ?reason, "member removed");
        out.notice(Notice::MemberRemoved {
            group: group.id.clone(),
            member: member_id.clone(),
            reason,
        });
    }
}

/// After members left: rebalance a settled group, or finish a join phase that was waiting only
/// for them.
pub(crate) fn after_removal(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    reason: &str,
    out: &mut Out,
) {
    if group.is(GroupState::Stable) || group.is(GroupState::CompletingRebalance) {
        prepare(env, group, now, reason, out);
    } else if group.is(GroupState::PreparingRebalance) && group.has_all_members_joined() {
        complete_join(env, group, now, out);
    }
}

/// A heartbeat timer fired: forget a pending member id, or remove a member whose heartbeat is
/// not satisfied.
pub(crate) fn heartbeat_expired(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    member_id: &Arc<str>,
    out: &mut Out,
) {
    if group.pending_join_members.remove(member_id) {
        tracing::info!(group = %group.id, member = %member_id, "pending member expired");
        out.notice(Notice::MemberRemoved {
            group: group.id.clone(),
            member: member_id.clone(),
            reason: RemovalReason::PendingExpired,
        });
        if group.is(GroupState::PreparingRebalance) && group.has_all_members_joined() {
            complete_join(env, group, now, out);
        }
        return;
    }
    let Some(member) = group.members.get(member_id) else {
        return;
    };
    if member.has_satisfied_heartbeat() {
        return;
    }
    remove_member(group, member_id, RemovalReason::SessionExpired, out);
    after_removal(
        env,
        group,
        now,
        &format!("member {member_id} session expired"),
        out,
    );
}

/// The sync timer fired: members that never sent SyncGroup are removed and the group
/// rebalances.
pub(crate) fn sync_expired(env: &mut Env, group: &mut Group, now: Millis, out: &mut Out) {
    if !(group.is(GroupState::CompletingRebalance) || group.is(GroupState::Stable))
        || group.pending_sync_members.is_empty()
    {
        return;
    }
    let pending: Vec<Arc<str>> = group.pending_sync_members.iter().cloned().collect();
    for id in &pending {
        remove_member(group, id, RemovalReason::SyncExpired, out);
        out.cancel(heartbeat_key(group, id));
    }
    prepare(
        env,
        group,
        now,
        "members did not send SyncGroup in time",
        out,
    );
}

/// Starts a rebalance when the partition count of a topic the current assignment covers
/// changed (clients are all followers, so none of them watches metadata for the group).
pub(crate) fn check_topics(env: &mut Env, group: &mut Group, now: Millis, out: &mut Out) {
    if !matches!(group.mode, Mode::Host { .. })
        || !(group.is(GroupState::Stable) || group.is(GroupState::CompletingRebalance))
    {
        return;
    }
    let changed = group.topic_counts.iter().find_map(|(topic, before)| {
        let after = env.topics.get(topic).map_or(0, |t| t.partition_count);
        (after != *before).then(|| (topic.clone(), *before, after))
    });
    if let Some((topic, before, after)) = changed {
        let reason = format!("partition count of topic {topic} changed from {before} to {after}");
        prepare(env, group, now, &reason, out);
    }
}
