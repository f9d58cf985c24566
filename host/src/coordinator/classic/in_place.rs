//! In-place rounds: a membership change of a Stable group whose module declares `in_place`
//! (`AssignorInfo::in_place`, docs/abi.md "In-place rounds") is tried without a rebalance.
//!
//! An eager consumer revokes everything at every rebalance, so a strategy that holds a
//! departed member's partitions for it (`hold-departed`) would still stop every member that
//! stayed if the departure started a rebalance. Instead:
//! - a departure (session expiry, LeaveGroup, a static member's close, which is an expiry)
//!   removes the member at once; the others are told nothing;
//! - a joiner's JoinGroup is parked while the group stays Stable;
//! - the module is called on the group as it now is, at the **current** generation;
//! - its answer is applied in place when it fits: every member that stayed keeps exactly its
//!   partitions and each joiner gets only partitions nobody has. The generation stays, the
//!   joiner's JoinGroup is answered with it (what Kafka answers a returning static member,
//!   KIP-345) and its SyncGroup with what the answer gave it;
//! - otherwise (an answer that moves something, a failed or slow call, a partition count
//!   that changed, another cause) the round gives up and the group rebalances as it would
//!   have, its parked joiners in that rebalance.
//!
//! A dynamic member that restarted before its previous process's session expired joins next
//! to it: same client id and host, a new member id. Calling the module then would find the
//! dead process still a member, so the round first waits for such "twins": until each one
//! is heard from (a live consumer: the joiner is someone else), departs, or the wait's bound
//! passes (`TimerKey::InPlace`).
//!
//! This file decides and keeps the round; `rebalance` carries out what it returns ([`Step`]):
//! it answers the joiners of an applied round and starts (or defers) the rebalance of one
//! that gave up.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use assignor_sdk::{Answer, AssignRequest};

use super::assignment;
use super::group::{Group, InPlace, Mode};
use super::install::Given;
use super::protocol;
use crate::coordinator::api::Millis;
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::{Ctx, Parked};
use crate::coordinator::event::{AssignorDone, Notice, RebalanceReason, RemovalReason, TimerKey};
use crate::coordinator::held::Held;
use crate::coordinator::record::{RebalanceRecord, RunRecord};
use crate::coordinator::run::{self, Finished, Run};
use crate::coordinator::saved::ModuleState;
use assignor_wire::consumer_protocol;

/// A round calls the module at most this many times (membership that keeps changing while it
/// is called rebalances instead).
const MAX_CALLS: u8 = 3;

/// What a round asks of the caller (`rebalance::settle`).
#[derive(Debug)]
pub(crate) enum Step {
    /// Not tried: the caller rebalances as usual.
    NotTried,
    /// The round goes on (a module call or a wait for twins).
    Going,
    /// Applied and persisted: answer these joiners' JoinGroups with the current generation.
    Applied(Vec<(Arc<str>, Parked)>),
    /// Gave up: rebalance for `reason` (or defer it by stabilisation, as `joined` arrivals and
    /// `left` departures).
    GaveUp {
        reason: RebalanceReason,
        joined: usize,
        left: usize,
    },
}

/// Whether a change of `group` can be tried in place now: Stable, no deferred rebalance, the
/// host's module declares `in_place`, and the members (joiners included) would select the
/// same protocol and module as the current generation's.
fn eligible(ctx: &Ctx<'_>, group: &Group) -> bool {
    if !group.is(GroupState::Stable) || group.stabilizing.is_some() || group.members.is_empty() {
        return false;
    }
    if !module_in_place(ctx, group) {
        return false;
    }
    let config = ctx.env.config_of(&group.id);
    protocol::select(group, &config, &ctx.env.strategies)
        .is_some_and(|s| group.protocol_key.as_ref() == Some(&s.key) && s.mode == group.mode)
}

/// Whether the host's module of the current generation declares `in_place`.
fn module_in_place(ctx: &Ctx<'_>, group: &Group) -> bool {
    let Mode::Host { strategy, .. } = &group.mode else {
        return false;
    };
    ctx.env
        .strategies
        .modules
        .get(strategy)
        .is_some_and(|e| e.in_place)
}

/// A member is being removed from `group` (before `Group::remove`): a departure from a Stable
/// group of an in-place module keeps a record of what it had, for describe.
pub(crate) fn hold(ctx: &Ctx<'_>, group: &mut Group, member_id: &str, reason: RemovalReason) {
    if !matches!(reason, RemovalReason::SessionExpired | RemovalReason::Left)
        || !group.is(GroupState::Stable)
        || !module_in_place(ctx, group)
    {
        return;
    }
    let Some(m) = group.members.get(member_id) else {
        return;
    };
    if m.given.is_empty() || group.is_parked(member_id) {
        return;
    }
    let record = Held {
        member_id: m.id.to_string(),
        group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        partitions: m.given.clone(),
        since_ms: ctx.env.clock_ms(ctx.now),
    };
    group.held.push(record);
}

/// Members left `group` (already removed): try the change in place.
pub(crate) fn departed(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reason: &RebalanceReason,
    left: usize,
) -> Step {
    if group.members.is_empty() {
        // Nobody to keep consuming: the group goes Empty, as in Kafka.
        abandon(ctx, group);
        return Step::NotTried;
    }
    if let Some(round) = &mut group.in_place {
        round.left += left;
    } else if eligible(ctx, group) {
        group.in_place = Some(round(ctx, reason.clone(), 0, left));
    } else {
        return Step::NotTried;
    }
    changed(ctx, group)
}

/// A member joined `group` (added, its JoinGroup parked): try admitting it in place.
pub(crate) fn joined(ctx: &mut Ctx<'_>, group: &mut Group, id: &Arc<str>) -> Step {
    if group.in_place.is_none() {
        if !eligible(ctx, group) {
            return Step::NotTried;
        }
        let reason = RebalanceReason::MemberAdded { member: id.clone() };
        group.in_place = Some(round(ctx, reason, 0, 0));
    }
    let twins = twins_of(group, id);
    if !twins.is_empty() {
        let joiner = &group.members[id];
        // A twin's session ends at most a session after the joiner came (it was last heard
        // before); the margin lets its expiry come first.
        let session = twins
            .iter()
            .map(|t| group.members[t].session_timeout_ms.max(0) as Millis)
            .max()
            .unwrap_or(0)
            + 1_000;
        let rebalance = (joiner.rebalance_timeout_ms.max(0) as Millis)
            .min(ctx.env.config.new_member_join_timeout_ms);
        let wait = session.min(rebalance / 2);
        tracing::info!(group = %group.id, member = %id, twins = twins.len(), wait_ms = wait,
            "waiting for members with the joiner's client id and host to be heard from or expire");
        ctx.schedule_in(
            TimerKey::InPlace {
                group: group.id.clone(),
            },
            wait,
        );
    }
    let round = group.in_place.as_mut().expect("set above");
    round.joined += 1;
    round.twins.extend(twins);
    changed(ctx, group)
}

/// Dynamic members other than joiner `id` with its client id and host that are part of the
/// current generation: maybe its previous process.
fn twins_of(group: &Group, id: &str) -> BTreeSet<Arc<str>> {
    let joiner = &group.members[id];
    if joiner.group_instance_id.is_some() {
        return BTreeSet::new();
    }
    group
        .members
        .values()
        .filter(|m| {
            &*m.id != id
                && m.group_instance_id.is_none()
                && m.awaiting_join.is_none()
                && m.client_id == joiner.client_id
                && m.client_host == joiner.client_host
        })
        .map(|m| m.id.clone())
        .collect()
}

fn round(ctx: &Ctx<'_>, reason: RebalanceReason, joined: usize, left: usize) -> InPlace {
    InPlace {
        reason,
        since: ctx.now,
        joined,
        left,
        twins: BTreeSet::new(),
        stale: false,
        calls: 0,
    }
}

/// A member of `group` was heard from (a heartbeat, a SyncGroup, an OffsetCommit): if the
/// round waited for it as a joiner's twin, it is alive, so it is not the joiner's previous
/// process.
pub(crate) fn heard_from(ctx: &mut Ctx<'_>, group: &mut Group, member: &str) -> Step {
    match &mut group.in_place {
        Some(round) if round.twins.contains(member) => {
            round.twins.remove(member);
            changed(ctx, group)
        }
        _ => Step::Going,
    }
}

/// The module's follow-up is due: asked in place first (`rebalance::follow_up`), a round in
/// flight already asks it.
pub(crate) fn followed_up(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    if group.in_place.is_some() {
        return Step::Going;
    }
    if !eligible(ctx, group) {
        return Step::NotTried;
    }
    group.in_place = Some(round(ctx, RebalanceReason::AssignorFollowUp, 0, 0));
    changed(ctx, group)
}

/// A Stable group assigned by a module declaring `in_place` that keeps a state: it may hold
/// partitions for departed members (asked again after a restore).
pub(crate) fn may_hold(ctx: &Ctx<'_>, group: &Group) -> bool {
    group.module_state.is_some() && eligible(ctx, group)
}

/// A parked joiner resent its JoinGroup with other protocols: the round's call (if any) is
/// for a group that is no longer there.
pub(crate) fn rejoined(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    if group.in_place.is_some() {
        changed(ctx, group)
    } else {
        Step::Going
    }
}

/// The wait for twins reached its bound: call the module with the group as it is.
pub(crate) fn wait_over(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    match &mut group.in_place {
        Some(round) if !round.twins.is_empty() => {
            round.twins.clear();
            changed(ctx, group)
        }
        _ => Step::Going,
    }
}

/// Membership changed during the round: call the module, unless a call is in flight (its
/// answer is then stale) or twins are still waited for.
fn changed(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    let Group {
        in_place,
        members,
        pending_run,
        ..
    } = &mut *group;
    let round = in_place.as_mut().expect("a round");
    round.twins.retain(|t| members.contains_key(t));
    if pending_run.is_some() {
        round.stale = true;
        return Step::Going;
    }
    if !round.twins.is_empty() {
        return Step::Going;
    }
    ctx.cancel(TimerKey::InPlace {
        group: group.id.clone(),
    });
    call(ctx, group)
}

/// Calls the module on the group as it now is, at the current generation.
fn call(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    if !eligible(ctx, group)
        || group
            .in_place
            .as_ref()
            .is_some_and(|r| r.calls >= MAX_CALLS)
    {
        return give_up(ctx, group);
    }
    let Some((run, counts, cooperative)) = assignment::primary(ctx, group) else {
        return give_up(ctx, group);
    };
    if counts != group.topic_counts {
        // A topic appeared, went or changed its partition count: that is a rebalance.
        return give_up(ctx, group);
    }
    let round = group.in_place.as_mut().expect("a round");
    round.calls += 1;
    round.stale = false;
    assignment::launch(ctx, group, run, cooperative);
    Step::Going
}

/// Whether `done` answers this round's module call.
pub(crate) fn owns(group: &Group, done: &AssignorDone) -> bool {
    group.in_place.is_some()
        && group.is(GroupState::Stable)
        && run::answers(group.pending_run.as_ref(), done)
}

/// The round's module call answered (`owns` said so).
pub(crate) fn on_done(ctx: &mut Ctx<'_>, group: &mut Group, done: AssignorDone) -> Step {
    let stale = group.in_place.as_ref().is_some_and(|r| r.stale);
    match run::finish(ctx, &group.id, &mut group.pending_run, done, true) {
        Finished::Stale => Step::Going,
        Finished::Answered {
            run,
            answer,
            record,
        } => {
            if stale {
                tracing::debug!(group = %group.id, "membership changed during the in-place call; calling again");
                return changed(ctx, group);
            }
            if fits(group, &run.request, &answer) {
                apply(ctx, group, &run, answer, record)
            } else {
                tracing::info!(group = %group.id, generation = group.generation_id,
                    "the module's answer moves partitions of members that stayed; rebalancing");
                give_up(ctx, group)
            }
        }
        Finished::Failed { .. } => {
            tracing::warn!(group = %group.id, "in-place assignor call failed; rebalancing");
            give_up(ctx, group)
        }
    }
}

/// The round's module call took too long: rebalance (its late answer is dropped).
pub(crate) fn deadline(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    match run::expire(ctx, &group.id, &mut group.pending_run) {
        Some(_) => give_up(ctx, group),
        None => Step::Going,
    }
}

/// Whether `answer` can be applied without a rebalance: every member of `request` that stayed
/// gets exactly what it has, and each joiner only partitions no member that stayed has.
fn fits(group: &Group, request: &AssignRequest, answer: &Answer) -> bool {
    let entry_of = answer.entry_of(request.members.len());
    let position = |tp: &assignor_sdk::TopicPartitions| request.topic_index(&tp.topic);
    let mut kept: HashSet<(u32, i32)> = HashSet::new();
    for member in &request.members {
        if group.is_parked(&member.member_id) {
            continue;
        }
        for tp in &member.previous_assignment {
            let Some(t) = position(tp) else {
                return false; // a topic it has is gone from the request: it would lose it
            };
            kept.extend(tp.partitions.iter().map(|&p| (t as u32, p)));
        }
    }
    request.members.iter().enumerate().all(|(m, member)| {
        let given = Given::of(answer, entry_of[m]);
        let got = given
            .positions
            .iter()
            .flat_map(|(t, list)| list.iter().map(move |&p| (*t, p)));
        if group.is_parked(&member.member_id) {
            return got.into_iter().all(|tp| !kept.contains(&tp));
        }
        let got: BTreeSet<(u32, i32)> = got.collect();
        let had: BTreeSet<(u32, i32)> = member
            .previous_assignment
            .iter()
            .flat_map(|tp| {
                let t = position(tp).unwrap_or(usize::MAX) as u32;
                tp.partitions.iter().map(move |&p| (t, p))
            })
            .collect();
        got == had
    })
}

/// Applies a fitting answer: the joiners get their partitions, the module's state and
/// follow-up count as for an installed answer, the group is persisted, and the joiners are
/// returned with their parked JoinGroups for the caller to answer.
fn apply(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    run: &Run,
    mut answer: Answer,
    record: RunRecord,
) -> Step {
    let round = group.in_place.take().expect("a round");
    let request = &run.request;
    let entry_of = answer.entry_of(request.members.len());
    let consumer = group.protocol_type.as_deref() == Some(consumer_protocol::PROTOCOL_TYPE);
    let key = group.protocol_key.clone().unwrap_or_default();
    let mut joiners = Vec::new();
    for (m, (abi, version)) in request.members.iter().zip(run.versions.iter()).enumerate() {
        if !group.is_parked(&abi.member_id) {
            continue;
        }
        let id: Arc<str> = Arc::from(abi.member_id.as_str());
        let given = Given::of(&answer, entry_of[m]);
        let (assignment, partitions) = given.encode(request, *version, consumer);
        let parked = group.take_join(&id).expect("parked");
        let member = group.members.get_mut(&id).expect("a member of the request");
        member.protocol_name = member.spelling_for(&key).map(str::to_string);
        member.assignment = assignment;
        member.given = partitions;
        member.is_new = false;
        joiners.push((id, parked));
    }
    group.module_state = ModuleState::from_answer(&run.strategy, answer.state.take());
    group.refresh_held(&ctx.env.topics);
    group.follow_up_at = answer
        .rebalance_after_ms
        .map(|ms| ctx.now.saturating_add(ms));
    ctx.follow_up(&group.id, answer.rebalance_after_ms);
    group.history.push_back(RebalanceRecord {
        generation: group.generation_id,
        reason: Some(round.reason.to_string()),
        strategy: Some(record.module.clone()),
        module_version: record.version,
        members: group.members.len(),
        duration_ms: ctx.now.saturating_sub(round.since),
        partitions_moved: 0,
        fallback_used: false,
        in_place: true,
    });
    while group.history.len() > super::group::HISTORY_LEN {
        group.history.pop_front();
    }
    group.last_run = Some(record);
    // Before the joiners are answered, as Kafka answers after the write.
    ctx.persist(group.snapshot());
    tracing::info!(group = %group.id, generation = group.generation_id, joined = round.joined,
        left = round.left, reason = %round.reason, "membership change applied in place");
    ctx.notice(Notice::InPlaceRound {
        group: group.id.clone(),
        generation: group.generation_id,
        applied: true,
    });
    Step::Applied(joiners)
}

/// The round cannot be done in place: it ends, and the caller rebalances for its reason.
fn give_up(ctx: &mut Ctx<'_>, group: &mut Group) -> Step {
    match abandon(ctx, group) {
        Some(round) => {
            ctx.notice(Notice::InPlaceRound {
                group: group.id.clone(),
                generation: group.generation_id,
                applied: false,
            });
            Step::GaveUp {
                reason: round.reason,
                joined: round.joined,
                left: round.left,
            }
        }
        None => Step::NotTried,
    }
}

/// Ends the round, if any, without a word: its module call's answer will be dropped (a
/// rebalance starting takes `pending_run` itself).
pub(crate) fn abandon(ctx: &mut Ctx<'_>, group: &mut Group) -> Option<InPlace> {
    let round = group.in_place.take()?;
    ctx.cancel(TimerKey::InPlace {
        group: group.id.clone(),
    });
    if group.is(GroupState::Stable) {
        run::abandon(ctx, &group.id, &mut group.pending_run);
    }
    Some(round)
}
