//! LeaveGroup (API 13): a batch of identities (v3+; v0-2 carry one member id). Each identity is
//! answered on its own; one rebalance follows if any left.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::LeaveGroupRequest;
use kafka_protocol::messages::leave_group_response::MemberResponse;

use super::group::Groups;
use super::rebalance::{self, member_removed, remove_member};
use crate::coordinator::api::{GroupResponse, ReplyTo, RequestContext};
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{RebalanceReason, RemovalReason};
use crate::coordinator::responses;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: LeaveGroupRequest,
) {
    let v = client.api_version;
    // v0-2 name one member at the top level; fold it into the batch shape.
    let identities: Vec<(String, Option<String>, Option<String>)> = if v < 3 {
        vec![(request.member_id.to_string(), None, None)]
    } else {
        request
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|i| i.to_string()),
                    m.reason.as_ref().map(|r| r.to_string()),
                )
            })
            .collect()
    };
    let reply = |ctx: &mut Ctx<'_>, top: i16, members: Vec<MemberResponse>| {
        ctx.respond(
            reply_to,
            GroupResponse::LeaveGroup(responses::leave(v, top, members)),
        );
    };
    let entry = |member_id: &str, instance: &Option<String>, error: i16| {
        MemberResponse::default()
            .with_member_id(responses::s(member_id))
            .with_group_instance_id(instance.as_deref().map(responses::s))
            .with_error_code(error)
    };
    if group_id.is_empty() {
        return reply(ctx, ResponseError::InvalidGroupId.code(), Vec::new());
    }
    let Some(group) = groups.get_mut(group_id) else {
        let unknown = ResponseError::UnknownMemberId.code();
        let members = identities
            .iter()
            .map(|(m, i, _)| entry(m, i, unknown))
            .collect();
        return reply(ctx, 0, members);
    };
    if group.is(GroupState::Dead) {
        return reply(
            ctx,
            ResponseError::CoordinatorNotAvailable.code(),
            Vec::new(),
        );
    }

    let mut results = Vec::with_capacity(identities.len());
    let mut left = Vec::new();
    for (member_id, instance, reason) in &identities {
        let code = if member_id.is_empty() {
            // Administrative removal of a static member by instance id.
            match instance
                .as_deref()
                .and_then(|i| group.static_member(i).cloned())
            {
                Some(current) => {
                    remove_member(ctx, group, &current, RemovalReason::Left);
                    left.push((current, reason.clone()));
                    0
                }
                None => ResponseError::UnknownMemberId.code(),
            }
        } else if let Some(pending) = group.pending_join_members.take(member_id.as_str()) {
            ctx.cancel(group.heartbeat_key(&pending));
            member_removed(ctx, group, &pending, RemovalReason::Left);
            left.push((pending, reason.clone()));
            0
        } else {
            match group.validate_member(member_id, instance.as_deref()) {
                Ok(()) => {
                    let id = group
                        .members
                        .get_key_value(member_id.as_str())
                        .expect("validated")
                        .0
                        .clone();
                    remove_member(ctx, group, &id, RemovalReason::Left);
                    left.push((id, reason.clone()));
                    0
                }
                Err(error) => error.code(),
            }
        };
        results.push(entry(member_id, instance, code));
    }
    if !left.is_empty() {
        rebalance::after_removal(ctx, group, RebalanceReason::MembersLeft { members: left });
    }
    reply(ctx, 0, results);
}
