//! Heartbeat (API 12): identity and generation checks, then the answer by state; every valid
//! heartbeat re-arms the member's session timer. REBALANCE_IN_PROGRESS is how members learn of
//! a rebalance, including the ones the host starts itself.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::HeartbeatRequest;

use super::group::Groups;
use super::rebalance;
use crate::coordinator::api::{GroupResponse, Millis, ReplyTo};
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::Ctx;
use crate::coordinator::responses;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    reply_to: ReplyTo,
    group_id: &str,
    request: HeartbeatRequest,
) {
    let code = answer(ctx, groups, group_id, &request);
    ctx.respond(
        reply_to,
        GroupResponse::Heartbeat(responses::heartbeat(code)),
    );
}

fn answer(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    group_id: &str,
    request: &HeartbeatRequest,
) -> i16 {
    if group_id.is_empty() {
        return ResponseError::InvalidGroupId.code();
    }
    let Some(group) = groups.get_mut(group_id) else {
        return ResponseError::UnknownMemberId.code();
    };
    if group.is(GroupState::Dead) {
        return ResponseError::CoordinatorNotAvailable.code();
    }
    let member_id = request.member_id.as_str();
    let instance = request.group_instance_id.as_ref().map(|i| i.as_str());
    if let Err(error) = group.validate_member(member_id, instance) {
        return error.code();
    }
    if request.generation_id != group.generation_id {
        return ResponseError::IllegalGeneration.code();
    }
    let (id, member) = group.members.get_key_value(member_id).expect("validated");
    let (id, session) = (id.clone(), member.session_timeout_ms.max(0) as Millis);
    match group.state {
        GroupState::Empty | GroupState::Dead => ResponseError::UnknownMemberId.code(),
        GroupState::PreparingRebalance => {
            group.reschedule_heartbeat(&id, session, ctx);
            ResponseError::RebalanceInProgress.code()
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            group.reschedule_heartbeat(&id, session, ctx);
            if group.in_place.is_some() {
                // Alive: not the previous process of a joiner the round waits on.
                rebalance::heard_from(ctx, group, &id);
            }
            0
        }
    }
}
