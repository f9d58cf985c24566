//! Host-side assignment: build the ABI `AssignRequest` when a join phase completes, run the
//! selected module (an effect tagged with generation and run id; the runner checks the output),
//! fall back when it fails, is refused or is too slow, and install the result: every member's SyncGroup answered
//! with its own complete Assignment.
//!
//! The fallback chain, all within the group's rebalance timeout (each step gets at most half
//! of it, and at most `assignor_deadline_ms`):
//! 1. the selected module (or the operator's override);
//! 2. the configured fallback strategy (default `range`), run with `cooperative: false`; for a
//!    cooperative group every partition another member still owns is then stripped from its
//!    new owner ([`strip_owned`]) so the hand-over happens in the next round, after the owner
//!    revoked it and rejoined (KIP-429 clients rejoin by themselves after a revocation);
//! 3. a native range assignment (`native_range.rs`), stripped the same way.
//!
//! The coordinator does not check a module's output again: the runner already did, with the
//! host's one set of [`crate::checks`] (the contract is on [`super::AssignorOutput`]). What the
//! coordinator adds is the stripping of the fallback's output for cooperative groups, with the
//! same ownership rule, so the stripped output passes the cooperative check by construction.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use assignor_sdk::{
    ABI_VERSION, AssignRequest, AssignResponse, Member as AbiMember, MemberAssignment, Topic,
};
use bytes::Bytes;

use super::Millis;
use super::event::{AssignorDone, AssignorRun, Effect, Notice, RunOutcome, TimerKey};
use super::group::{Group, Mode, PendingRun, RunRecord};
use super::native_range::native_range;
use super::shard::{Env, Out};
use super::state::GroupState;
use super::subscription::{decode_subscription, encode_assignment};
use super::sync_group::{propagate_assignment, record_generation};
use crate::checks::strip_owned;

/// The protocol type whose metadata is a Subscription.
pub const CONSUMER: &str = "consumer";

/// Builds the request a rebalance of `group` would send now, with each member's Subscription
/// version (`None` when its metadata is not a Subscription: it then subscribes to nothing).
///
/// Topics the catalog does not know are left out (of `topics` and of each member's list)
/// until they exist; the returned counts record them as 0 so their creation starts a
/// rebalance.
pub fn build_request(
    group: &Group,
    topics: &BTreeMap<String, Topic>,
    params: BTreeMap<String, String>,
    strategy: &str,
    generation_id: i32,
    now: Millis,
) -> (AssignRequest, Vec<Option<i16>>, BTreeMap<String, i32>) {
    let key = group.protocol_key.as_deref().unwrap_or("");
    let consumer = group.protocol_type.as_deref() == Some(CONSUMER);
    let mut members = Vec::with_capacity(group.members.len());
    let mut versions = Vec::with_capacity(group.members.len());
    let mut subscribed: BTreeSet<String> = BTreeSet::new();
    for m in group.members.values() {
        let metadata = m.metadata_for(key).cloned().unwrap_or_default();
        let mut member = AbiMember {
            member_id: m.id.to_string(),
            group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            owned_generation: -1,
            previous_assignment: m.given.clone(),
            ..AbiMember::default()
        };
        let mut version = None;
        if consumer {
            match decode_subscription(&metadata) {
                Ok(sub) => {
                    subscribed.extend(sub.topics.iter().cloned());
                    member.topics = sub
                        .topics
                        .into_iter()
                        .filter(|t| topics.contains_key(t))
                        .collect();
                    member.owned_partitions = sub.owned_partitions;
                    member.owned_generation = sub.owned_generation;
                    member.user_data = sub.user_data;
                    member.rack_id = sub.rack_id;
                    version = Some(sub.version);
                }
                Err(error) => {
                    tracing::warn!(group = %group.id, member = %m.id, %error,
                        "metadata is not a Subscription; the member subscribes to nothing");
                }
            }
        }
        member.metadata = metadata.to_vec();
        members.push(member);
        versions.push(version);
    }
    let counts: BTreeMap<String, i32> = subscribed
        .iter()
        .map(|t| (t.clone(), topics.get(t).map_or(0, |t| t.partition_count)))
        .collect();
    let request = AssignRequest {
        abi_version: ABI_VERSION,
        group_id: group.id.to_string(),
        generation_id,
        protocol_type: group.protocol_type.clone().unwrap_or_default(),
        protocol_name: strategy.to_string(),
        now_ms: now as i64,
        params,
        members,
        topics: subscribed
            .iter()
            .filter_map(|t| topics.get(t).cloned())
            .collect(),
    };
    (request, versions, counts)
}

/// Starts the primary run of the current generation.
pub(crate) fn start(env: &mut Env, group: &mut Group, now: Millis, out: &mut Out) {
    let Mode::Host {
        strategy,
        pinned_version,
        cooperative,
    } = group.mode.clone()
    else {
        return;
    };
    let params = env
        .config_of(&group.id)
        .map(|c| c.params.clone())
        .unwrap_or_default();
    let (request, versions, counts) = build_request(
        group,
        &env.topics,
        params,
        &strategy,
        group.generation_id,
        now,
    );
    group.topic_counts = counts;
    let pending = PendingRun {
        run_id: 0,
        generation_id: group.generation_id,
        strategy,
        pinned_version,
        fallback: false,
        started_at: now,
        request: Arc::new(request),
        versions: Arc::new(versions),
    };
    launch(env, group, now, pending, cooperative, out);
}

/// Emits the run and arms its deadline.
fn launch(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    mut pending: PendingRun,
    cooperative: bool,
    out: &mut Out,
) {
    pending.run_id = env.next_run;
    env.next_run += 1;
    pending.started_at = now;
    out.effects.push(Effect::RunAssignor(Box::new(AssignorRun {
        group_id: group.id.to_string(),
        generation_id: pending.generation_id,
        run_id: pending.run_id,
        strategy: pending.strategy.clone(),
        pinned_version: pending.pinned_version,
        cooperative: cooperative && !pending.fallback,
        fallback: pending.fallback,
        request: pending.request.clone(),
    })));
    let budget = env
        .config
        .assignor_deadline_ms
        .min((group.rebalance_timeout_ms() / 2).max(1));
    out.schedule(
        TimerKey::AssignorDeadline {
            group: group.id.clone(),
        },
        now + budget,
    );
    tracing::debug!(group = %group.id, generation = pending.generation_id, module = %pending.strategy,
        fallback = pending.fallback, "assignor run started");
    group.pending_run = Some(pending);
}

fn cooperative(group: &Group) -> bool {
    matches!(
        group.mode,
        Mode::Host {
            cooperative: true,
            ..
        }
    )
}

/// A result came back for a group that no longer exists.
pub(crate) fn dropped(done: &AssignorDone, out: &mut Out) {
    out.notice(Notice::AssignorFinished {
        group: Arc::from(done.group_id.as_str()),
        generation: done.generation_id,
        module: module_of(done),
        version: version_of(done),
        outcome: RunOutcome::Stale,
        duration_us: 0,
        fuel: 0,
        fallback: false,
    });
}

fn module_of(done: &AssignorDone) -> String {
    match &done.result {
        Ok(o) => o.module.clone(),
        Err(f) => f.module.clone(),
    }
}

fn version_of(done: &AssignorDone) -> Option<u32> {
    match &done.result {
        Ok(o) => Some(o.version),
        Err(f) => f.version,
    }
}

/// An assignor run finished. Results for another generation, another run or a group that is
/// no longer completing its rebalance are dropped.
pub(crate) fn on_done(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    done: AssignorDone,
    out: &mut Out,
) {
    let current = group
        .pending_run
        .as_ref()
        .is_some_and(|p| p.run_id == done.run_id && p.generation_id == done.generation_id)
        && group.is(GroupState::CompletingRebalance)
        && done.generation_id == group.generation_id;
    if !current {
        tracing::debug!(group = %group.id, generation = done.generation_id, "stale assignor result dropped");
        return dropped(&done, out);
    }
    let pending = group.pending_run.take().expect("checked");
    out.cancel(TimerKey::AssignorDeadline {
        group: group.id.clone(),
    });
    match done.result {
        Ok(output) => {
            let record = RunRecord {
                generation: group.generation_id,
                module: output.module.clone(),
                version: Some(output.version),
                duration_us: output.duration_us,
                fuel: output.fuel,
                outcome: RunOutcome::Ok,
                fallback_used: pending.fallback,
            };
            notice_run(group, &record, out);
            let mut response = output.response;
            if pending.fallback && cooperative(group) {
                // The fallback ran without the cooperative rule; obey it now.
                let stripped = strip_owned(&pending.request, &mut response);
                tracing::debug!(group = %group.id, generation = group.generation_id,
                    module = %output.module, stripped, "fallback output stripped of owned partitions");
            }
            install(group, now, &pending, response, record, out);
        }
        Err(failure) => {
            let outcome = match &failure.invalid_output {
                Some(invalid) => RunOutcome::Refused(invalid.to_string()),
                None => RunOutcome::Failed(failure.message.clone()),
            };
            let record = RunRecord {
                generation: group.generation_id,
                module: failure.module.clone(),
                version: failure.version,
                duration_us: failure.duration_us,
                fuel: 0,
                outcome,
                fallback_used: pending.fallback,
            };
            tracing::warn!(group = %group.id, generation = group.generation_id, module = %failure.module,
                version = ?failure.version, error = %failure.message, "assignor failed");
            notice_run(group, &record, out);
            group.last_run = Some(record);
            next_step(env, group, now, pending, out);
        }
    }
}

/// The deadline of the in-flight run passed: take the next step (its late result is dropped).
pub(crate) fn deadline(env: &mut Env, group: &mut Group, now: Millis, out: &mut Out) {
    if !group.is(GroupState::CompletingRebalance) {
        return;
    }
    let Some(pending) = group.pending_run.take() else {
        return;
    };
    let record = RunRecord {
        generation: group.generation_id,
        module: pending.strategy.clone(),
        version: pending.pinned_version,
        duration_us: now.saturating_sub(pending.started_at) * 1000,
        fuel: 0,
        outcome: RunOutcome::TimedOut,
        fallback_used: pending.fallback,
    };
    tracing::warn!(group = %group.id, generation = group.generation_id, module = %pending.strategy, "assignor timed out");
    notice_run(group, &record, out);
    group.last_run = Some(record);
    next_step(env, group, now, pending, out);
}

/// After a failed step: the fallback strategy, else the native last resort.
fn next_step(env: &mut Env, group: &mut Group, now: Millis, failed: PendingRun, out: &mut Out) {
    group.fallback_used = true;
    let fallback = env
        .strategies
        .canonical(&env.config.fallback_strategy)
        .map(str::to_string);
    match fallback {
        Some(name)
            if !failed.fallback && (name != failed.strategy || failed.pinned_version.is_some()) =>
        {
            let pending = PendingRun {
                strategy: name,
                pinned_version: None,
                fallback: true,
                ..failed
            };
            launch(env, group, now, pending, false, out);
        }
        _ => {
            let mut response = native_range(&failed.request);
            if cooperative(group) {
                strip_owned(&failed.request, &mut response);
            }
            let record = RunRecord {
                generation: group.generation_id,
                module: "native-range".to_string(),
                version: None,
                duration_us: 0,
                fuel: 0,
                outcome: RunOutcome::Ok,
                fallback_used: true,
            };
            notice_run(group, &record, out);
            install(group, now, &failed, response, record, out);
        }
    }
}

fn notice_run(group: &Group, record: &RunRecord, out: &mut Out) {
    out.notice(Notice::AssignorFinished {
        group: group.id.clone(),
        generation: record.generation,
        module: record.module.clone(),
        version: record.version,
        outcome: record.outcome.clone(),
        duration_us: record.duration_us,
        fuel: record.fuel,
        fallback: record.fallback_used,
    });
}

/// Installs a checked assignment: encodes every member's Assignment, persists the group, goes
/// Stable and answers the parked SyncGroups.
fn install(
    group: &mut Group,
    now: Millis,
    pending: &PendingRun,
    response: AssignResponse,
    record: RunRecord,
    out: &mut Out,
) {
    let mut by_member: HashMap<String, MemberAssignment> = response
        .assignments
        .into_iter()
        .map(|a| (a.member_id.clone(), a))
        .collect();
    let consumer = group.protocol_type.as_deref() == Some(CONSUMER);
    let mut before: HashMap<(String, i32), Arc<str>> = HashMap::new();
    for m in group.members.values() {
        for tp in &m.given {
            for p in &tp.partitions {
                before.insert((tp.topic.clone(), *p), m.id.clone());
            }
        }
    }
    let mut moved = 0u64;
    for (abi, version) in pending.request.members.iter().zip(pending.versions.iter()) {
        let Some(member) = group.members.get_mut(abi.member_id.as_str()) else {
            continue;
        };
        let assigned = by_member.remove(&abi.member_id).unwrap_or_default();
        let mut partitions = assigned.partitions;
        partitions.retain(|tp| !tp.partitions.is_empty());
        partitions.sort_by(|a, b| a.topic.cmp(&b.topic));
        for tp in &mut partitions {
            tp.partitions.sort_unstable();
        }
        for tp in &partitions {
            for p in &tp.partitions {
                if before
                    .get(&(tp.topic.clone(), *p))
                    .is_some_and(|owner| *owner != member.id)
                {
                    moved += 1;
                }
            }
        }
        member.assignment = if consumer {
            encode_assignment(
                version.unwrap_or(0),
                &partitions,
                assigned.user_data.as_deref(),
            )
        } else {
            assigned.metadata.map(Bytes::from).unwrap_or_default()
        };
        member.given = partitions;
    }
    let strategy = record.module.clone();
    let version = record.version;
    group.last_run = Some(record);
    out.persist(group);
    group.transition(GroupState::Stable, out);
    propagate_assignment(group, now, out);
    record_generation(group, now, Some(strategy), version, moved, out);
    if let Some(after) = response.rebalance_after_ms {
        out.schedule(
            TimerKey::FollowUp {
                group: group.id.clone(),
            },
            now + after,
        );
    }
    tracing::info!(group = %group.id, generation = group.generation_id, module = %pending.strategy,
        partitions_moved = moved, "assignment installed");
}
