//! Rebalance stabilisation, the "stable state" of central rebalancers (an operator option per
//! group: `stabilize_ms`, `stabilize_max_ms`).
//!
//! Kafka starts a rebalance at every membership change, so a rolling restart of N dynamic
//! consumers (each leaves, a new one joins) costs up to 2N rebalances, and under an eager
//! protocol each one stops every member. With stabilisation on, a Stable group defers the
//! rebalance instead:
//! - a member that leaves or whose session expires is removed at once (its partitions wait
//!   without an owner), and a new member's JoinGroup is parked;
//! - the members that stay are not told anything: their heartbeats answer NONE and they keep
//!   consuming what they own, eager and cooperative alike;
//! - the rebalance starts when membership has been quiet for `stabilize_ms`, and at the latest
//!   `stabilize_max_ms` after the first change, so churn that never stops still rebalances.
//!
//! Also at the latest half of a parked member's rebalance timeout (and of the new-member join
//! timeout) after it parked: the rebalance then has the other half before the client's
//! JoinGroup request times out (librdkafka waits `max.poll.interval.ms` + 3 s).
//!
//! Anything else that starts a rebalance while one is deferred (a member's protocols changed,
//! a partition count, the operator, a module's follow-up) starts it at once, with the parked
//! members in it: the deferral ends in `rebalance::prepare`. This file only keeps the window;
//! `rebalance` starts what it defers.

use std::sync::Arc;

use super::group::{Group, Stabilizing};
use crate::coordinator::api::Millis;
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{RebalanceReason, TimerKey};
use crate::coordinator::saved::DeferredRebalance;

/// A new member joined a Stable group: park its JoinGroup instead of rebalancing, when the
/// group's configuration says so. False: rebalance as usual.
pub(crate) fn defer_join(ctx: &mut Ctx<'_>, group: &mut Group, member: &Arc<str>) -> bool {
    let Some(m) = group.members.get(member) else {
        return false;
    };
    let rebalance_timeout =
        (m.rebalance_timeout_ms.max(0) as Millis).min(ctx.env.config.new_member_join_timeout_ms);
    let cap = ctx.now + rebalance_timeout / 2;
    defer(ctx, group, 1, 0, cap)
}

/// Members left a Stable group (LeaveGroup, session expiry): defer the rebalance when the
/// group's configuration says so and members remain. False: rebalance as usual.
pub(crate) fn defer_removal(ctx: &mut Ctx<'_>, group: &mut Group, left: usize) -> bool {
    if group.members.is_empty() {
        // Nobody to keep consuming: the group goes Empty at once, as in Kafka.
        return false;
    }
    defer(ctx, group, 0, left, Millis::MAX)
}

/// Defers the rebalance of `joined` arrivals and `left` departures of a Stable group, starting
/// at the latest at `cap`, when the group's configuration says so. False: rebalance as usual.
pub(crate) fn defer(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    joined: usize,
    left: usize,
    cap: Millis,
) -> bool {
    if !group.is(GroupState::Stable) {
        return false;
    }
    let Some((quiet, max)) = ctx.env.config_of(&group.id).stabilize() else {
        return false;
    };
    let now = ctx.now;
    let window = group.stabilizing.get_or_insert(Stabilizing {
        since: now,
        latest: now.saturating_add(max),
        due: now,
        joined: 0,
        left: 0,
    });
    window.latest = window.latest.min(cap);
    window.joined += joined;
    window.left += left;
    window.due = now.saturating_add(quiet).min(window.latest);
    let (due, since) = (window.due, window.since);
    ctx.schedule_in(
        TimerKey::Stabilize {
            group: group.id.clone(),
        },
        due - now,
    );
    tracing::info!(group = %group.id, joined, left, waiting_ms = now - since,
        starts_in_ms = due - now, "rebalance deferred until membership is quiet");
    true
}

/// A group restored with a deferred rebalance waits for quiet again from now (its parked
/// members were not written; their clients join again), then rebalances. With stabilisation
/// switched off meanwhile, the rebalance starts at once.
pub(crate) fn resume(ctx: &mut Ctx<'_>, group: &mut Group, deferred: DeferredRebalance) {
    let (quiet, max) = ctx.env.config_of(&group.id).stabilize().unwrap_or((0, 0));
    let now = ctx.now;
    group.stabilizing = Some(Stabilizing {
        since: now,
        latest: now.saturating_add(max),
        due: now.saturating_add(quiet),
        joined: deferred.joined,
        left: deferred.left,
    });
    ctx.schedule_in(
        TimerKey::Stabilize {
            group: group.id.clone(),
        },
        quiet,
    );
}

/// The quiet window ended (or the wait reached its bound): why the deferred rebalance starts,
/// if one is deferred (`rebalance::stabilized` starts it).
pub(crate) fn due(ctx: &Ctx<'_>, group: &Group) -> Option<RebalanceReason> {
    let window = group.stabilizing.as_ref()?;
    Some(RebalanceReason::Stabilized {
        joined: window.joined,
        left: window.left,
        waited_ms: ctx.now.saturating_sub(window.since),
    })
}

/// A rebalance starts (`rebalance::prepare`): a deferred one is no longer waited for.
pub(crate) fn end(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.stabilizing.take().is_some() {
        ctx.cancel(TimerKey::Stabilize {
            group: group.id.clone(),
        });
    }
}
