//! The target assignment: which module computes it (the assignor the group names, the
//! operator's override, or the fallback when no module serves the name), the ABI request,
//! the run as an effect and its result, and what happens when the module fails.
//!
//! Kafka computes the target synchronously inside the heartbeat that moved the group epoch.
//! Here a module runs off the shard ([`Effect::RunAssignor`], its result an
//! [`AssignorDone`] event), so a target is computed asynchronously, one run per group at a
//! time: the run in flight covers the group epoch it started at; when it ends, a later epoch
//! starts the next run at once. A result for an older epoch than the group's is still
//! installed (as that epoch's target: members reconcile towards it meanwhile), so a group
//! whose membership keeps changing still makes progress. The heartbeat that moved the epoch
//! waits for the target (`respond.rs`, `heartbeat.rs`).
//!
//! When the module fails (trap, fuel, timeout, refused output), by default:
//! - a group that has a target keeps it: the failed epoch gets the previous target, so its
//!   members keep their partitions (new members get none until a target computes);
//! - a new group takes the fallback module's target, then a native range's;
//! - with `strict` on, the waiting heartbeats are answered UNKNOWN_SERVER_ERROR and neither
//!   epoch moves (Kafka's answer); the next heartbeat tries again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use assignor_sdk::{ABI_VERSION, Answer, AssignRequest, Member as AbiMember, Topic};
use kafka_protocol::ResponseError;

use super::group::{AssignorChoice, Group};
use super::partitions::Partitions;
use super::respond::{answer_waiting_up_to, fail_waiting};
use super::twins;
use crate::coordinator::classic::{RebalanceRecord, RunRecord};
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{AssignorDone, Notice};
use crate::coordinator::run::{self, Finished, Run};
use crate::coordinator::saved::ModuleState;

/// Starts the computation of the group's next target when one is due (the group epoch moved
/// past the target's) and none is in flight. A group without members needs none: its target
/// epoch follows the group epoch at once (KAFKA-20442), and a run in flight for members that
/// are gone is abandoned (its result is dropped when it comes).
pub(crate) fn maybe_start(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.group_epoch <= group.assignment_epoch {
        return;
    }
    if group.members.is_empty() {
        run::abandon(ctx, &group.id, &mut group.pending_run);
        group.assignment_epoch = group.group_epoch;
        return;
    }
    if group.pending_run.is_some() || twins::waiting(ctx, group) {
        return;
    }
    let choice = choose(ctx, group);
    if choice.missing {
        ctx.notice(Notice::AssignorUnavailable {
            group: group.id.clone(),
            epoch: group.group_epoch,
            requested: choice.requested.clone(),
            fallback: choice.module.clone(),
        });
    }
    let params = ctx.env.config_of(&group.id).params;
    let request = build_request(
        group,
        &ctx.env.topics,
        params,
        &choice.module,
        group.group_epoch,
        ctx.env.clock_ms(ctx.now),
    );
    // What this run sees of the catalog: a later change of it moves the epoch again.
    group.topic_signature = request
        .topics
        .iter()
        .map(|t| {
            let id = ctx.env.topics.id(&t.name).unwrap_or_default();
            (t.name.clone(), (id, t.partition_count))
        })
        .collect();
    let mut run = Run::new(
        group.group_epoch,
        choice.module.clone(),
        choice.pinned_version,
        request,
    );
    run.fallback = choice.missing;
    group.fallback_used = choice.missing;
    group.assignor = choice;
    if run.strategy.is_empty() {
        // Not even the fallback has a module: the native range, at once.
        return install_native(ctx, group, run);
    }
    launch(ctx, group, run);
}

/// The module for the next target: the operator's override when a module serves it; else
/// the assignor most members name (`group.remote.assignor`), else the configured default,
/// through the aliases; when no module serves that name, the fallback module.
pub(crate) fn choose(ctx: &Ctx<'_>, group: &Group) -> AssignorChoice {
    let config = ctx.env.config_of(&group.id);
    let strategies = &ctx.env.strategies;
    let requested = group
        .preferred_assignor()
        .unwrap_or_else(|| ctx.env.config.consumer_default_assignor.clone());
    if let Some(module) = config
        .strategy
        .as_deref()
        .and_then(|s| strategies.canonical(s))
    {
        return AssignorChoice {
            requested,
            module: module.to_owned(),
            pinned_version: config.pinned_version,
            overridden: true,
            missing: false,
        };
    }
    match strategies.canonical(&requested) {
        Some(module) => AssignorChoice {
            module: module.to_owned(),
            requested,
            pinned_version: None,
            overridden: false,
            missing: false,
        },
        None => AssignorChoice {
            module: strategies
                .canonical(&ctx.env.config.fallback_strategy)
                .unwrap_or("")
                .to_owned(),
            requested,
            pinned_version: None,
            overridden: false,
            missing: true,
        },
    }
}

/// The ABI request for a target of `group` at `epoch` with `strategy`: members by member id,
/// each with the topics it subscribes to that the catalog knows, what it owns now (at its
/// member epoch) and its current target as `previous_assignment` (Kafka's assignors are
/// sticky through it); the subscribed topics the catalog knows. `now` is the request's
/// `now_ms`, wall-clock (`Env::clock_ms`).
pub fn build_request(
    group: &Group,
    topics: &BTreeMap<String, Topic>,
    params: BTreeMap<String, String>,
    strategy: &str,
    epoch: i32,
    now: crate::coordinator::api::Millis,
) -> AssignRequest {
    let mut subscribed: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    // Members with the same subscription share one list, as most members of a group do.
    let mut shared: Option<(Vec<&str>, Arc<[String]>)> = None;
    let members = group
        .members
        .values()
        .map(|m| {
            let known: Vec<&str> = m
                .subscribed_topics()
                .into_iter()
                .filter(|t| topics.contains_key(*t))
                .collect();
            let member_topics = match &shared {
                Some((names, list)) if *names == known => list.clone(),
                _ => {
                    subscribed.extend(known.iter().copied());
                    let list: Arc<[String]> = known.iter().map(|t| (*t).to_owned()).collect();
                    shared = Some((known, list.clone()));
                    list
                }
            };
            AbiMember {
                member_id: m.id.to_string(),
                group_instance_id: m.instance_id.as_ref().map(|i| i.to_string()),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rack_id: m.rack_id.clone(),
                topics: member_topics,
                owned_partitions: m.current.owned().to_abi(),
                owned_generation: m.current.epoch,
                previous_assignment: m.target.to_abi(),
                user_data: None,
                metadata: Vec::new(),
                ..AbiMember::default()
            }
        })
        .collect();
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: group.id.to_string(),
        generation_id: epoch,
        protocol_type: assignor_wire::consumer_protocol::PROTOCOL_TYPE.to_owned(),
        protocol_name: strategy.to_owned(),
        now_ms: now as i64,
        params,
        members,
        topics: subscribed
            .into_iter()
            .filter_map(|t| topics.get(t).cloned())
            .collect(),
        state: ModuleState::request_bytes(group.module_state.as_ref(), strategy),
        ..AssignRequest::default()
    }
}

/// Emits the run; its deadline is the configured one (no rebalance timeout bounds a target).
fn launch(ctx: &mut Ctx<'_>, group: &mut Group, run: Run) {
    // Reconciliation keeps every hand-over safe: no module output needs the cooperative rule.
    let budget = ctx.env.config.assignor_deadline_ms;
    run::launch(ctx, &group.id, &mut group.pending_run, run, false, budget);
}

/// A run finished. A result for another run (superseded, timed out) is dropped.
pub(crate) fn on_done(ctx: &mut Ctx<'_>, group: &mut Group, done: AssignorDone) {
    match run::finish(ctx, &group.id, &mut group.pending_run, done, true) {
        Finished::Stale => {}
        Finished::Answered {
            run,
            answer,
            record,
        } => install(ctx, group, &run, answer, record),
        Finished::Failed {
            run,
            record,
            message,
        } => {
            group.last_run = Some(record);
            next_step(ctx, group, run, message);
        }
    }
}

/// The run in flight took too long: the next step (its late result is dropped).
pub(crate) fn deadline(ctx: &mut Ctx<'_>, group: &mut Group) {
    if let Some((run, record)) = run::expire(ctx, &group.id, &mut group.pending_run) {
        group.last_run = Some(record);
        next_step(ctx, group, run, "the assignor timed out".to_owned());
    }
}

/// After a failed run: Kafka's error (strict), else the previous target, else the fallback
/// module, else the native range.
fn next_step(ctx: &mut Ctx<'_>, group: &mut Group, failed: Run, message: String) {
    group.fallback_used = true;
    if ctx.env.config.strict {
        let waiting: Vec<_> = group
            .members
            .values_mut()
            .filter(|m| {
                m.waiting
                    .as_ref()
                    .is_some_and(|w| w.for_epoch <= failed.generation)
            })
            .filter_map(|m| m.waiting.take().map(|w| (m.id.clone(), w)))
            .collect();
        for (id, w) in waiting {
            ctx.cancel(group.wait_key(&id));
            let text = format!("The assignor {} failed: {message}", failed.strategy);
            fail_waiting(ctx, w, ResponseError::UnknownServerError, Some(text));
        }
        return;
    }
    if group.assignment_epoch > 0 {
        tracing::warn!(group = %group.id, epoch = failed.generation,
            "the previous target assignment is kept");
        let record = RebalanceRecord {
            generation: failed.generation,
            reason: group.bump_reason.take().map(|r| r.to_string()),
            strategy: Some("previous target".to_owned()),
            module_version: None,
            members: group.members.len(),
            duration_ms: ctx.now.saturating_sub(group.bumped_at),
            partitions_moved: 0,
            fallback_used: true,
            in_place: false,
        };
        group.record(record);
        group.assignment_epoch = failed.generation;
        group.dirty = true;
        return after_target(ctx, group, failed.generation);
    }
    match failed.fallback(ctx) {
        Some(fallback) => launch(ctx, group, fallback),
        None => install_native(ctx, group, failed),
    }
}

/// The last resort: Kafka's range computed natively (valid by construction).
fn install_native(ctx: &mut Ctx<'_>, group: &mut Group, run: Run) {
    let (answer, record) = run::native(ctx, &group.id, &run);
    group.fallback_used = true;
    install(ctx, group, &run, answer, record);
}

/// Installs a checked output as the target of `run.generation`: each member of the run's request
/// gets its share (none if the output leaves it out); members that joined after the run
/// started keep theirs until the next target. Then the waiting requests are answered and the
/// next run starts if the group epoch moved meanwhile.
fn install(ctx: &mut Ctx<'_>, group: &mut Group, run: &Run, answer: Answer, record: RunRecord) {
    let topics = &run.request.topics;
    let mut by_member: HashMap<String, Partitions> = answer
        .entries()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let pairs = answer
                .topics(i)
                .map(|(t, list)| (topics[t as usize].name.as_str(), list));
            (
                run.request.members[e.member as usize].member_id.clone(),
                Partitions::from_pairs(pairs),
            )
        })
        .collect();
    let in_request: HashSet<&str> = run
        .request
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    let mut before: HashMap<(String, i32), Arc<str>> = HashMap::new();
    for m in group.members.values() {
        for (t, p) in m.target.iter() {
            before.insert((t.to_owned(), p), m.id.clone());
        }
    }
    let mut moved = 0u64;
    for member in group.members.values_mut() {
        if !in_request.contains(&*member.id) {
            continue;
        }
        let target = by_member.remove(&*member.id).unwrap_or_default();
        moved += target
            .iter()
            .filter(|(t, p)| {
                before
                    .get(&((*t).to_owned(), *p))
                    .is_some_and(|o| *o != member.id)
            })
            .count() as u64;
        member.target = target;
    }
    group.assignment_epoch = run.generation;
    group.dirty = true;
    let history = RebalanceRecord {
        generation: run.generation,
        reason: group.bump_reason.take().map(|r| r.to_string()),
        strategy: Some(record.module.clone()),
        module_version: record.version,
        members: group.members.len(),
        duration_ms: ctx.now.saturating_sub(group.bumped_at),
        partitions_moved: moved,
        fallback_used: group.fallback_used,
        in_place: false,
    };
    group.record(history);
    ctx.notice(Notice::GenerationCompleted {
        group: group.id.clone(),
        generation: run.generation,
        members: group.members.len(),
        protocol: Some(group.assignor.requested.clone()),
        strategy: Some(record.module.clone()),
    });
    tracing::info!(group = %group.id, epoch = run.generation, module = %record.module,
        partitions_moved = moved, "target assignment installed");
    if !run.fallback && record.module == run.strategy {
        // The selected module answered: what it keeps replaces what it kept; a fallback's
        // target leaves the module's state for its next run.
        group.module_state = ModuleState::from_answer(&record.module, answer.state);
    }
    group.last_run = Some(record);
    let targets = group.members.values().flat_map(|m| m.target.iter());
    crate::coordinator::held::refresh(&mut group.held, targets, &ctx.env.topics);
    group.follow_up_at = answer
        .rebalance_after_ms
        .map(|ms| ctx.now.saturating_add(ms));
    ctx.follow_up(&group.id, answer.rebalance_after_ms);
    after_target(ctx, group, run.generation);
}

/// A target of `epoch` is in place: the requests waiting for it are answered, and the next
/// run starts if the group epoch moved past it.
fn after_target(ctx: &mut Ctx<'_>, group: &mut Group, epoch: i32) {
    answer_waiting_up_to(ctx, group, epoch);
    maybe_start(ctx, group);
}

/// Whether the module the group's target comes from declares `in_place`: it may hold a
/// departed member's partitions for it (`twins.rs`).
pub(crate) fn module_may_hold(ctx: &Ctx<'_>, group: &Group) -> bool {
    let choice = choose(ctx, group);
    ctx.env
        .strategies
        .modules
        .get(&choice.module)
        .is_some_and(|e| e.in_place)
}

/// The wait for a joiner's twins reached its bound: compute the target now.
pub(crate) fn twins_wait_over(ctx: &mut Ctx<'_>, group: &mut Group) {
    twins::wait_over(group);
    maybe_start(ctx, group);
}
