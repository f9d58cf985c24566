//! SyncGroup (API 14). In host mode every member is a follower: its SyncGroup is parked until
//! the assignor's result is installed, then answered with its own assignment and its own
//! protocol spelling. In relay mode the client leader's assignments are installed as Kafka does.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::SyncGroupRequest;

use super::group::{Group, Groups, Mode, vote_key};
use super::install::{install_relayed, protocol_name_for};
use crate::coordinator::api::{GroupResponse, ReplyTo, RequestContext};
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::{Ctx, Parked};
use crate::coordinator::event::TimerKey;
use crate::coordinator::responses;
use crate::coordinator::view::StrategiesView;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: SyncGroupRequest,
) {
    let parked = Parked {
        reply_to,
        api_version: client.api_version,
    };
    let fail = |ctx: &mut Ctx<'_>, error| ctx.sync_error(parked, error);
    if group_id.is_empty() {
        return fail(ctx, ResponseError::InvalidGroupId);
    }
    // Kafka's request layer: from v5 both protocol fields are mandatory.
    if client.api_version >= 5
        && (request.protocol_type.is_none() || request.protocol_name.is_none())
    {
        return fail(ctx, ResponseError::InconsistentGroupProtocol);
    }
    let Some(group) = groups.get_mut(group_id) else {
        return fail(ctx, ResponseError::UnknownMemberId);
    };
    if group.is(GroupState::Dead) {
        return fail(ctx, ResponseError::CoordinatorNotAvailable);
    }
    let member_id = request.member_id.as_str();
    let instance = request.group_instance_id.as_ref().map(|i| i.as_str());
    if let Err(error) = group.validate_member(member_id, instance) {
        return fail(ctx, error);
    }
    if request.generation_id != group.generation_id {
        return fail(ctx, ResponseError::IllegalGeneration);
    }
    if inconsistent(
        request.protocol_type.as_deref(),
        group.protocol_type.as_deref(),
    ) || !name_matches(
        group,
        member_id,
        request.protocol_name.as_deref(),
        &ctx.env.strategies,
    ) {
        return fail(ctx, ResponseError::InconsistentGroupProtocol);
    }
    let member_key: Arc<str> = group
        .members
        .get_key_value(member_id)
        .expect("validated")
        .0
        .clone();
    match group.state {
        GroupState::Empty | GroupState::Dead => fail(ctx, ResponseError::UnknownMemberId),
        GroupState::PreparingRebalance => fail(ctx, ResponseError::RebalanceInProgress),
        GroupState::CompletingRebalance => {
            let member = group.members.get_mut(member_id).expect("validated");
            if let Some(previous) = member.awaiting_sync.replace(parked) {
                ctx.sync_error(previous, ResponseError::RebalanceInProgress);
            }
            remove_pending_sync(ctx, group, &member_key);
            if matches!(group.mode, Mode::Relay) && group.is_leader(member_id) {
                install_relayed(ctx, group, &request);
            }
            // Host mode: answered when the assignor's result is installed.
        }
        GroupState::Stable => {
            remove_pending_sync(ctx, group, &member_key);
            let member = &group.members[member_id];
            let response = responses::sync(
                client.api_version,
                0,
                group.protocol_type.as_deref(),
                protocol_name_for(group, member_id),
                member.assignment.clone(),
            );
            ctx.respond(reply_to, GroupResponse::SyncGroup(response));
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
    strategies: &StrategiesView,
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

fn remove_pending_sync(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    group.pending_sync_members.remove(member_id);
    if group.pending_sync_members.is_empty() {
        ctx.cancel(TimerKey::Sync {
            group: group.id.clone(),
        });
    }
}
