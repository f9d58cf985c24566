//! A consumer restarted before its previous process's session expired (KIP-848): the new
//! process joins under a new member id next to the old member, which only its session expiry
//! removes (45 s by Kafka's default). A module that holds a departed member's partitions for
//! it (declaring `in_place`, `hold-departed`) would then see the old member still there and
//! give the newcomer a share of the others'. So the next target waits for the joiner's
//! "twins" (dynamic members with its client id and host): until each is heard from (alive:
//! the joiner is someone else), fenced (its session expired: the module then gives the
//! joiner the partitions it holds for it), or the wait's bound passes (`TimerKey::InPlace`).
//! Meanwhile everyone keeps the current target; the joiner owns nothing yet.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::group::Group;
use crate::coordinator::api::Millis;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::TimerKey;

/// How much longer than a session the wait lasts at most.
const MARGIN_MS: Millis = 1_000;

/// A member joined (epoch 0): when the group's module may hold for departed members
/// (`in_place`) and members with its client id and host are there, the target waits for them.
pub(crate) fn joined(ctx: &mut Ctx<'_>, group: &mut Group, joiner: &Arc<str>, in_place: bool) {
    let Some(j) = group.members.get(joiner) else {
        return;
    };
    if !in_place || j.instance_id.is_some() {
        return;
    }
    let twins: BTreeSet<Arc<str>> = group
        .members
        .values()
        .filter(|m| {
            m.id != *joiner
                && m.instance_id.is_none()
                && m.classic.is_none()
                && m.current.epoch > 0
                && m.client_id == j.client_id
                && m.client_host == j.client_host
        })
        .map(|m| m.id.clone())
        .collect();
    if twins.is_empty() {
        return;
    }
    // A twin's session ends at most a session after the joiner came (it was last heard
    // before); the margin lets its expiry come first.
    let session = ctx.env.config.consumer_session_timeout_ms.max(0) as Millis + MARGIN_MS;
    let wait = session.min(j.rebalance_timeout_ms.max(0) as Millis / 2);
    tracing::info!(group = %group.id, member = %joiner, twins = twins.len(), wait_ms = wait,
        "the next target waits for members with the joiner's client id and host to be heard from or expire");
    ctx.schedule_in(
        TimerKey::InPlace {
            group: group.id.clone(),
        },
        wait,
    );
    group.twins.extend(twins);
}

/// Whether the next target still waits: some twin is still a member and not heard from.
pub(crate) fn waiting(ctx: &mut Ctx<'_>, group: &mut Group) -> bool {
    if group.twins.is_empty() {
        return false;
    }
    let Group { twins, members, .. } = &mut *group;
    twins.retain(|t| members.contains_key(t));
    if twins.is_empty() {
        ctx.cancel(TimerKey::InPlace {
            group: group.id.clone(),
        });
        return false;
    }
    true
}

/// `member` heartbeated: it is alive, so not a joiner's previous process. True when the
/// target waited for it (the caller starts it now if nothing else is waited for).
pub(crate) fn heard_from(ctx: &mut Ctx<'_>, group: &mut Group, member: &str) -> bool {
    if !group.twins.remove(member) {
        return false;
    }
    if group.twins.is_empty() {
        ctx.cancel(TimerKey::InPlace {
            group: group.id.clone(),
        });
    }
    true
}

/// The wait reached its bound: the target is computed with the group as it is.
pub(crate) fn wait_over(group: &mut Group) {
    group.twins.clear();
}
