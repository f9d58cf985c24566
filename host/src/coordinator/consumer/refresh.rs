//! What moves a consumer group's epoch from outside a request: the catalog changed (a
//! subscribed topic appeared, went or changed its partition count, or a regex now matches
//! other topics: Kafka's metadata hash), a module now serves the assignor the group names
//! (it was served by the fallback), the module asked for a follow-up
//! (`rebalance_after_ms`), or the operator asked (`group rebalance`).

use super::group::Group;
use super::heartbeat::resolve;
use super::target;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::RebalanceReason;

/// The catalog changed: regexes are matched again, and the epoch moves when what the group
/// subscribes to looks different (ids, partition counts, topics matched).
pub(crate) fn check_topics(ctx: &mut Ctx<'_>, group: &mut Group) {
    let topics = ctx.env.topics.clone();
    for member in group.members.values_mut() {
        if let Some(sub) = &mut member.regex {
            sub.matched = resolve(&sub.regex, &topics);
        }
    }
    let now = group.signature(&topics);
    if group.members.is_empty() || now == group.topic_signature {
        return;
    }
    // The first topic that differs names the change (a topic that went counts as 0).
    let count = |sig: &std::collections::BTreeMap<String, (uuid::Uuid, i32)>, t: &str| {
        sig.get(t).map_or(0, |(_, n)| *n)
    };
    let topic = now
        .iter()
        .find(|(t, s)| group.topic_signature.get(*t) != Some(*s))
        .map(|(t, _)| t.clone())
        .or_else(|| {
            group
                .topic_signature
                .keys()
                .find(|t| !now.contains_key(*t))
                .cloned()
        })
        .unwrap_or_default();
    let reason = RebalanceReason::PartitionCountChanged {
        before: count(&group.topic_signature, &topic),
        after: count(&now, &topic),
        topic,
    };
    group.bump(ctx, reason);
    target::maybe_start(ctx, group);
}

/// The modules changed: a group that the fallback serves because its assignor had no module
/// moves to the module of that name at once (its next target is computed by it).
pub(crate) fn check_strategies(ctx: &mut Ctx<'_>, group: &mut Group) {
    if !group.assignor.missing || group.members.is_empty() {
        return;
    }
    let Some(module) = ctx.env.strategies.canonical(&group.assignor.requested) else {
        return;
    };
    let module = module.to_owned();
    group.bump(ctx, RebalanceReason::ModuleAvailable { module });
    target::maybe_start(ctx, group);
}

/// The operator asked for a new target (`group rebalance`): the epoch moves and the module
/// (its active version, or the pinned one) computes the target at once. Returns false for a
/// group without members, which has nothing to assign.
pub(crate) fn operator(ctx: &mut Ctx<'_>, group: &mut Group, why: Option<String>) -> bool {
    if group.members.is_empty() {
        return false;
    }
    group.bump(ctx, RebalanceReason::Operator { why });
    target::maybe_start(ctx, group);
    true
}

/// The module asked for another target computation.
pub(crate) fn follow_up(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.members.is_empty() {
        return;
    }
    group.bump(ctx, RebalanceReason::AssignorFollowUp);
    target::maybe_start(ctx, group);
}
