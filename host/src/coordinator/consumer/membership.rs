//! Members leaving a consumer group: fenced (a leave with epoch -1, a session or revocation
//! timeout), a static member leaving for a while (epoch -2), and a static member replaced by
//! its next incarnation. Also the member timer that is not a fence (the end of a request's
//! wait for a target) and the answers owed at shutdown.

use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::group::Group;
use super::member::MemberState;
use super::partitions::Partitions;
use super::respond::{answer_waiting, fail_waiting};
use super::target;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{Notice, RebalanceReason, RemovalReason};
use crate::coordinator::held::Held;

/// Kafka's fence of several members at once: each is removed (what it owned is free again,
/// its timers cancelled, a waiting request answered UNKNOWN_MEMBER_ID), then the group epoch
/// moves once and the next target starts. Members not in the group are skipped; nothing
/// moves when none was.
pub(crate) fn fence(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    members: &[Arc<str>],
    removal: RemovalReason,
    reason: RebalanceReason,
) {
    let mut removed = 0;
    for id in members {
        let Some(mut member) = group.remove(id) else {
            continue;
        };
        removed += 1;
        if !member.target.is_empty() {
            // Until a target gives them to someone (a module holding them for this
            // consumer does not), they are shown as held.
            group.held.push(Held {
                member_id: id.to_string(),
                group_instance_id: member.instance_id.as_ref().map(|i| i.to_string()),
                client_id: member.client_id.clone(),
                client_host: member.client_host.clone(),
                partitions: member.target.to_abi(),
                since_ms: ctx.env.clock_ms(ctx.now),
            });
        }
        ctx.cancel(group.session_key(id));
        ctx.cancel(group.revocation_key(id));
        ctx.cancel(group.wait_key(id));
        if let Some(waiting) = member.waiting.take() {
            fail_waiting(ctx, waiting, ResponseError::UnknownMemberId, None);
        }
        tracing::info!(group = %group.id, member = %id, reason = ?removal, "member removed");
        ctx.notice(Notice::MemberRemoved {
            group: group.id.clone(),
            member: id.clone(),
            reason: removal,
        });
    }
    if removed == 0 {
        return;
    }
    group.bump(ctx, reason);
    target::maybe_start(ctx, group);
}

/// A static member leaves for a while (epoch -2): it stays, with epoch -2 and its assigned
/// partitions (those pending revocation are let go), until its next incarnation joins or its
/// session expires. The group epoch does not move.
pub(crate) fn static_leave(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    let Some(member) = group.members.get(member_id) else {
        return;
    };
    let mut next = member.current.clone();
    next.epoch = -2;
    next.pending_revocation = Partitions::new();
    if next.state == MemberState::UnrevokedPartitions {
        ctx.cancel(group.revocation_key(member_id));
    }
    group.set_current(member_id, next);
    if let Some(member) = group.members.get_mut(member_id) {
        member.revoking_at = None;
    }
    tracing::info!(group = %group.id, member = %member_id, "static member left temporarily");
}

/// Kafka's static replacement: the member of `old` (which left with -2) is replaced by a member with the new id, inheriting its subscription,
/// assignment and target, with epochs reset to 0. Returns the new id.
pub(crate) fn replace(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    old: &Arc<str>,
    new_id: Arc<str>,
) -> Arc<str> {
    let Some(mut member) = group.remove(old) else {
        return new_id;
    };
    ctx.cancel(group.session_key(old));
    ctx.cancel(group.revocation_key(old));
    ctx.cancel(group.wait_key(old));
    if let Some(waiting) = member.waiting.take() {
        fail_waiting(ctx, waiting, ResponseError::FencedInstanceId, None);
    }
    ctx.notice(Notice::MemberRemoved {
        group: group.id.clone(),
        member: old.clone(),
        reason: RemovalReason::Fenced,
    });
    tracing::info!(group = %group.id, member = %new_id, replaced = %old, "static member replaced");
    member.id = new_id.clone();
    member.current.epoch = 0;
    member.current.previous_epoch = 0;
    member.revoking_at = None;
    group.add(member);
    new_id
}

/// A member's session expired: fenced.
pub(crate) fn session_expired(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    if !group.members.contains_key(member_id) {
        return;
    }
    let reason = RebalanceReason::SessionExpired {
        member: member_id.clone(),
    };
    fence(
        ctx,
        group,
        std::slice::from_ref(member_id),
        RemovalReason::SessionExpired,
        reason,
    );
}

/// A member's rebalance timeout passed while it had to revoke: fenced if it is still
/// revoking at the epoch the timer was armed at.
pub(crate) fn revocation_expired(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    let Some(member) = group.members.get(member_id) else {
        return;
    };
    let still = member.current.state == MemberState::UnrevokedPartitions
        && member.revoking_at == Some(member.current.epoch);
    if !still {
        return;
    }
    let reason = RebalanceReason::RevocationExpired {
        member: member_id.clone(),
    };
    fence(
        ctx,
        group,
        std::slice::from_ref(member_id),
        RemovalReason::Fenced,
        reason,
    );
}

/// A request's wait for the next target ended: it is answered with what the member may own
/// now. A new group has nothing to answer with until its first target: the wait goes on (the
/// target chain ends within two assignor deadlines, and a joining client waits its session
/// timeout for that first answer).
pub(crate) fn wait_expired(ctx: &mut Ctx<'_>, group: &mut Group, member_id: &Arc<str>) {
    let Some(member) = group.members.get(member_id) else {
        return;
    };
    if member.waiting.is_none() {
        return;
    }
    if group.assignment_epoch == 0 && group.pending_run.is_some() {
        let key = group.wait_key(member_id);
        ctx.schedule_in(key, ctx.env.config.consumer_assignment_wait_ms.max(1));
        return;
    }
    answer_waiting(ctx, group, member_id);
}

/// The shard is shutting down: every waiting heartbeat is answered COORDINATOR_NOT_AVAILABLE
/// (the client looks the coordinator up again and sends a full heartbeat).
pub(crate) fn shutdown(ctx: &mut Ctx<'_>, group: &mut Group) {
    fail_waiting_all(ctx, group, ResponseError::CoordinatorNotAvailable);
}

/// Answers every member's waiting heartbeat with `error` (the group is going away here).
pub(crate) fn fail_waiting_all(ctx: &mut Ctx<'_>, group: &mut Group, error: ResponseError) {
    for member in group.members.values_mut() {
        if let Some(waiting) = member.waiting.take() {
            fail_waiting(ctx, waiting, error, None);
        }
    }
}
