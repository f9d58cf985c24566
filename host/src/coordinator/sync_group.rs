//! SyncGroup (API 14). In host mode every member is a follower: its SyncGroup is parked until
//! the assignor's result is installed, then answered with its own assignment and its own
//! protocol spelling. In relay mode the client leader's assignments are installed as Kafka does.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::SyncGroupRequest;

use super::event::{Notice, TimerKey};
use super::group::{Group, Mode, RebalanceRecord, vote_key};
use super::member::Parked;
use super::rebalance::reschedule_heartbeat;
use super::responses;
use super::shard::{Coordinator, Out};
use super::state::GroupState;
use super::{GroupResponse, Millis, ReplyTo, RequestContext};

pub(crate) fn handle(
    c: &mut Coordinator,
    now: Millis,
    reply_to: ReplyTo,
    group_id: &str,
    ctx: &RequestContext,
    request: SyncGroupRequest,
    out: &mut Out,
) {
    let parked = Parked {
        reply_to,
        api_version: ctx.api_version,
    };
    let fail = |out: &mut Out, error| out.sync_error(parked, error);
    if group_id.is_empty() {
        return fail(out, ResponseError::InvalidGroupId);
    }
    // Kafka's request layer: from v5 both protocol fields are mandatory.
    if ctx.api_version >= 5 && (request.protocol_type.is_none() || request.protocol_name.is_none())
    {
        return fail(out, ResponseError::InconsistentGroupProtocol);
    }
    let Some(group) = c.groups.get_mut(group_id) else {
        return fail(out, ResponseError::UnknownMemberId);
    };
    if group.is(GroupState::Dead) {
        return fail(out, ResponseError::CoordinatorNotAvailable);
    }
    let member_id = request.member_id.as_str();
    let instance = request.group_instance_id.as_ref().map(|i| i.as_str());
    if let Err(error) = group.validate_member(member_id, instance) {
        return fail(out, error);
    }
    if request.generation_id != group.generation_id {
        return fail(out, ResponseError::IllegalGeneration);
    }
    if inconsistent(
        request.protocol_type.as_deref(),
        group.protocol_type.as_deref(),
    ) || !name_matches(
        group,
        member_id,
        request.protocol_name.as_deref(),
        &c.env.strategies,
    ) {
        return fail(out, ResponseError::InconsistentGroupProtocol);
    }
    let member_key: std::sync::Arc<str> = group
        .members
        .get_key_value(member_id)
        .expect("validated")
        .0
        .clone();
    match group.state {
        GroupState::Empty | GroupState::Dead => fail(out, ResponseError::UnknownMemberId),
        GroupState::PreparingRebalance => fail(out, ResponseError::RebalanceInProgress),
        GroupState::CompletingRebalance => {
            let member = group.members.get_mut(member_id).expect("validated");
            if let Some(previous) = member.awaiting_sync.replace(parked) {
                out.sync_error(previous, ResponseError::RebalanceInProgress);
            }
            remove_pending_sync(group, &member_key, out);
            if matches!(group.mode, Mode::Relay) && group.is_leader(member_id) {
                install_relayed(group, now, &request, out);
            }
            // Host mode: answered when the assignor's result is installed.
        }
        GroupState::Stable => {
            remove_pending_sync(group, &member_key, out);
            let member = &group.members[member_id];
            let response = responses::sync(
                ctx.api_version,
                0,
                group.protocol_type.as_deref(),
                protocol_name_for(group, member_id),
                member.assignment.clone(),
            );
            out.respond(reply_to, GroupResponse::SyncGroup(response));
        }
    }
}

fn inconsistent(requested: Option<&str>, current: Option<&str>) -> bool {
    matches!((requested, current), (Some(a), Some(b)) if a != b)
}

/// ProtocolName check (v5): the member must send the name it was given. In host mode that is
/// its own spelling; another spelling of the same strategy is accepted too.
fn name_matches(
    group: &Group,
    member_id: &str,
    requested: Option<&str>,
    strategies: &super::view::StrategiesView,
) -> bool {
    let Some(requested) = requested else {
        return true;
    };
    let Some(expected) = protocol_name_for(group, member_id) else {
        return true;
    };
    requested == expected
        || (matches!(group.mode, Mode::Host { .. })
            && group.protocol_key.as_deref() == Some(vote_key(strategies, requested).as_str()))
}

/// The protocol name `member_id` was given: its own spelling in host mode, the group's in relay.
pub(crate) fn protocol_name_for<'a>(group: &'a Group, member_id: &str) -> Option<&'a str> {
    match group.mode {
        Mode::Host { .. } => group
            .members
            .get(member_id)
            .and_then(|m| m.protocol_name.as_deref()),
        Mode::Relay => group.protocol_key.as_deref(),
    }
}

fn remove_pending_sync(group: &mut Group, member_id: &std::sync::Arc<str>, out: &mut Out) {
    group.pending_sync_members.remove(member_id);
    if group.pending_sync_members.is_empty() {
        out.cancel(TimerKey::Sync {
            group: group.id.clone(),
        });
    }
}

/// Relay mode: the leader's assignments become every member's bytes (empty for a member the
/// leader left out, as Kafka does), the group is persisted, goes Stable, and parked syncs are
/// answered.
fn install_relayed(group: &mut Group, now: Millis, request: &SyncGroupRequest, out: &mut Out) {
    let by_member: HashMap<&str, &Bytes> = request
        .assignments
        .iter()
        .map(|a| (a.member_id.as_str(), &a.assignment))
        .collect();
    for member in group.members.values_mut() {
        member.assignment = by_member
            .get(&*member.id)
            .map(|b| (*b).clone())
            .unwrap_or_default();
    }
    out.persist(group);
    group.transition(GroupState::Stable, out);
    propagate_assignment(group, now, out);
    record_generation(group, now, None, None, 0, out);
}

/// Answers every parked SyncGroup with the member's assignment and re-arms its session (a
/// member that waited in SyncGroup had no heartbeat expectation).
pub(crate) fn propagate_assignment(group: &mut Group, now: Millis, out: &mut Out) {
    let ids: Vec<std::sync::Arc<str>> = group
        .members
        .values()
        .filter(|m| m.awaiting_sync.is_some())
        .map(|m| m.id.clone())
        .collect();
    for id in ids {
        let member = group.members.get_mut(&id).expect("listed");
        let parked = member.awaiting_sync.take().expect("filtered");
        let session = member.session_timeout_ms.max(0) as Millis;
        let response = responses::sync(
            parked.api_version,
            0,
            group.protocol_type.as_deref(),
            protocol_name_for(group, &id),
            group.members[&id].assignment.clone(),
        );
        out.respond(parked.reply_to, GroupResponse::SyncGroup(response));
        reschedule_heartbeat(group, &id, now, session, out);
    }
}

/// Notes a completed generation in the history and notices.
pub(crate) fn record_generation(
    group: &mut Group,
    now: Millis,
    strategy: Option<String>,
    module_version: Option<u32>,
    partitions_moved: u64,
    out: &mut Out,
) {
    let record = RebalanceRecord {
        generation: group.generation_id,
        reason: group.rebalance_reason.clone(),
        strategy: strategy.clone(),
        module_version,
        members: group.members.len(),
        duration_ms: now.saturating_sub(group.rebalance_started_at),
        partitions_moved,
        fallback_used: group.fallback_used,
    };
    group.history.push_back(record);
    while group.history.len() > super::group::HISTORY_LEN {
        group.history.pop_front();
    }
    out.notice(Notice::GenerationCompleted {
        group: group.id.clone(),
        generation: group.generation_id,
        members: group.members.len(),
        protocol: group.protocol_key.clone(),
        strategy,
    });
}
