//! Applying reconciliation to a member of a group and answering it: the one place a member's
//! current assignment changes after a request (its timers follow its state), the
//! ConsumerGroupHeartbeat answer, a classic member's JoinGroup answer, and the answers to
//! requests that waited for a target (heartbeats and JoinGroups that moved the group epoch).

use std::sync::Arc;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatResponse, JoinGroupResponse};

use super::group::Group;
use super::member::{MemberState, Waiting};
use super::partitions::Partitions;
use super::reconcile::{Inputs, reconcile};
use crate::coordinator::api::{GroupResponse, Millis};
use crate::coordinator::context::Ctx;
use crate::coordinator::responses::{self, JoinOk};
use assignor_wire::consumer_protocol::PROTOCOL_TYPE;

/// Reconciles `member_id` towards the group's target with what its request said it owns, and
/// applies the result: ownership moves, the revocation timer is armed on entering
/// UNREVOKED_PARTITIONS (the member's rebalance timeout) and cancelled otherwise. Returns
/// whether the current assignment changed.
pub(crate) fn reconcile_member(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    member_id: &Arc<str>,
    owned: Option<&Partitions>,
    subscription_changed: bool,
) -> bool {
    let Some(member) = group.members.get(member_id) else {
        return false;
    };
    // The steady heartbeat: nothing to reconcile (`reconcile` would return it unchanged).
    if !subscription_changed && member.current.is_reconciled_to(group.assignment_epoch) {
        return false;
    }
    let topics = ctx.env.topics.clone();
    let subscribed = |t: &str| member.subscribes_to(t) && topics.contains_key(t);
    let elsewhere = |t: &str, p: i32| group.owned_elsewhere(member_id, t, p);
    let next = reconcile(
        &member.current,
        &Inputs {
            target_epoch: group.assignment_epoch,
            target: &member.target,
            subscribed: &subscribed,
            owned_elsewhere: &elsewhere,
            subscription_changed,
            owned,
        },
    );
    if next == member.current {
        return false;
    }
    let (revoking, epoch, timeout) = (
        next.state == MemberState::UnrevokedPartitions,
        next.epoch,
        member.rebalance_timeout_ms.max(0) as Millis,
    );
    let was_revoking = member.revoking_at;
    tracing::debug!(group = %group.id, member = %member_id, epoch = next.epoch,
        state = next.state.as_str(), assigned = next.assigned.len(),
        pending_revocation = next.pending_revocation.len(), "member reconciled");
    group.set_current(member_id, next);
    let key = group.revocation_key(member_id);
    let member = group.members.get_mut(member_id).expect("present");
    if revoking {
        if was_revoking != Some(epoch) {
            member.revoking_at = Some(epoch);
            ctx.schedule_in(key, timeout);
        }
    } else if was_revoking.is_some() {
        member.revoking_at = None;
        ctx.cancel(key);
    }
    true
}

/// The successful ConsumerGroupHeartbeat answer for `member_id` as it is now. The Assignment
/// (its current assigned partitions, by topic id) is included when asked (epoch 0, a full
/// request) or when it differs from `assigned_before`.
pub(crate) fn heartbeat_answer(
    ctx: &Ctx<'_>,
    group: &Group,
    member_id: &str,
    with_assignment: bool,
    assigned_before: &Partitions,
) -> ConsumerGroupHeartbeatResponse {
    let member = &group.members[member_id];
    let mut response = ConsumerGroupHeartbeatResponse::default()
        .with_member_id(Some(responses::s(member_id)))
        .with_member_epoch(member.current.epoch)
        .with_heartbeat_interval_ms(ctx.env.config.consumer_heartbeat_interval_ms);
    if with_assignment || member.current.assigned != *assigned_before {
        response.assignment = Some(assignment(ctx, &member.current.assigned));
    }
    response
}

/// The JoinGroup answer of a classic member as it is now: its member epoch as the
/// generation, its first protocol, no leader (so the client follows) and no members.
pub(crate) fn join_answer(group: &Group, member_id: &str, api_version: i16) -> JoinGroupResponse {
    let member = &group.members[member_id];
    let protocol = member
        .classic
        .as_ref()
        .and_then(|c| c.protocols.first())
        .map(String::as_str);
    responses::join_ok(
        api_version,
        JoinOk {
            member_id,
            generation_id: member.current.epoch,
            protocol_type: Some(PROTOCOL_TYPE),
            protocol_name: protocol,
            leader: "",
            skip_assignment: false,
            members: Vec::new(),
        },
    )
}

/// An assignment on the wire: topics by id, partitions ascending.
pub(crate) fn assignment(ctx: &Ctx<'_>, partitions: &Partitions) -> Assignment {
    Assignment::default().with_topic_partitions(
        partitions
            .to_wire(&ctx.env.topics)
            .into_iter()
            .map(|(id, ps)| {
                TopicPartitions::default()
                    .with_topic_id(id)
                    .with_partitions(ps)
            })
            .collect(),
    )
}

/// Answers `member_id`'s waiting request, if it has one, after reconciling it with what that
/// request said it owns.
pub(crate) fn answer_waiting(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    let Some(waiting) = group
        .members
        .get_mut(member_id)
        .and_then(|m| m.waiting.take())
    else {
        return;
    };
    ctx.cancel(group.wait_key(member_id));
    reconcile_member(
        ctx,
        group,
        member_id,
        waiting.owned.as_ref(),
        waiting.subscription_changed,
    );
    respond_to(ctx, group, member_id, waiting);
}

/// Answers every request waiting for a target of epoch `epoch` or older.
pub(crate) fn answer_waiting_up_to(ctx: &mut Ctx<'_>, group: &mut Group, epoch: i32) {
    let ids: Vec<Arc<str>> = group
        .members
        .values()
        .filter(|m| m.waiting.as_ref().is_some_and(|w| w.for_epoch <= epoch))
        .map(|m| m.id.clone())
        .collect();
    for id in ids {
        answer_waiting(ctx, group, &id);
    }
}

/// Answers a waiting request with the member as it is now.
fn respond_to(ctx: &mut Ctx<'_>, group: &Group, member_id: &str, waiting: Waiting) {
    if let Some(api_version) = waiting.join_version {
        let response = join_answer(group, member_id, api_version);
        return ctx.respond(waiting.reply_to, GroupResponse::JoinGroup(response));
    }
    let response = heartbeat_answer(
        ctx,
        group,
        member_id,
        waiting.with_assignment,
        &waiting.assigned_before,
    );
    ctx.respond(
        waiting.reply_to,
        GroupResponse::ConsumerGroupHeartbeat(response),
    );
}

/// Answers a waiting request with an error (its member is gone, or the target failed in
/// strict mode).
pub(crate) fn fail_waiting(
    ctx: &mut Ctx<'_>,
    waiting: Waiting,
    error: kafka_protocol::ResponseError,
    message: Option<String>,
) {
    if let Some(api_version) = waiting.join_version {
        let response = responses::join_error(api_version, "", error);
        return ctx.respond(waiting.reply_to, GroupResponse::JoinGroup(response));
    }
    ctx.respond(
        waiting.reply_to,
        GroupResponse::ConsumerGroupHeartbeat(responses::consumer_heartbeat_error(error, message)),
    );
}
