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
//! 3. a native range assignment (`coordinator/native_range.rs`), stripped the same way.
//!
//! The run itself (effect, deadline, records, the fallback's run) is `coordinator/run.rs`,
//! shared with consumer groups.
//!
//! The coordinator does not check a module's output again: the runner already did, with the
//! host's one set of [`assignor_wire::checks`] (the contract is on
//! [`crate::coordinator::AssignorOutput`]). What the
//! coordinator adds is the stripping of the fallback's output for cooperative groups, with the
//! same ownership rule, so the stripped output passes the cooperative check by construction.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use assignor_sdk::{ABI_VERSION, AssignRequest, Member as AbiMember, Topic};

use super::group::{Group, Mode};
use super::install::install_assigned;
use crate::coordinator::api::Millis;
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::AssignorDone;
use crate::coordinator::run::{self, Finished, Run};
use crate::coordinator::saved::ModuleState;
use assignor_wire::checks::strip_owned;
use assignor_wire::consumer_protocol::{self, decode_subscription};

/// Builds the request a rebalance of `group` would send at `now_ms` (wall-clock,
/// `Env::clock_ms`), with each member's Subscription
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
    now_ms: Millis,
) -> (AssignRequest, Vec<Option<i16>>, BTreeMap<String, i32>) {
    let key = group.protocol_key.as_deref().unwrap_or("");
    let consumer = group.protocol_type.as_deref() == Some(consumer_protocol::PROTOCOL_TYPE);
    let mut members = Vec::with_capacity(group.members.len());
    let mut versions = Vec::with_capacity(group.members.len());
    let mut subscribed: BTreeSet<String> = BTreeSet::new();
    // Members with the same subscription share one list (ABI v2 sends it once for all of
    // them, and spots the sharing by pointer); consecutive members usually have the same one.
    let mut last: Option<Arc<[String]>> = None;
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
                    let known: Vec<String> = sub
                        .topics
                        .into_iter()
                        .filter(|t| topics.contains_key(t))
                        .collect();
                    member.topics = match &last {
                        Some(shared) if **shared == *known => shared.clone(),
                        _ => {
                            let shared: Arc<[String]> = known.into();
                            last = Some(shared.clone());
                            shared
                        }
                    };
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
        now_ms: now_ms as i64,
        params,
        members,
        topics: subscribed
            .iter()
            .filter_map(|t| topics.get(t).cloned())
            .collect(),
        state: ModuleState::request_bytes(group.module_state.as_ref(), strategy),
        ..AssignRequest::default()
    };
    (request, versions, counts)
}

/// Starts the primary run of the current generation.
pub(crate) fn start(ctx: &mut Ctx<'_>, group: &mut Group) {
    if let Some((run, counts, cooperative)) = primary(ctx, group) {
        group.topic_counts = counts;
        launch(ctx, group, run, cooperative);
    }
}

/// The primary run of the current generation (the selected module, at `group.generation_id`),
/// with the partition counts of the topics it subscribes to and whether it is cooperative;
/// `None` in relay mode.
pub(crate) fn primary(ctx: &Ctx<'_>, group: &Group) -> Option<(Run, BTreeMap<String, i32>, bool)> {
    let Mode::Host {
        strategy,
        pinned_version,
        cooperative,
    } = group.mode.clone()
    else {
        return None;
    };
    let params = ctx.env.config_of(&group.id).params;
    let (request, versions, counts) = build_request(
        group,
        &ctx.env.topics,
        params,
        &strategy,
        group.generation_id,
        ctx.env.clock_ms(ctx.now),
    );
    let mut run = Run::new(group.generation_id, strategy, pinned_version, request);
    run.versions = Arc::new(versions);
    Some((run, counts, cooperative))
}

/// Emits the run, with a deadline of half the group's rebalance timeout at most.
pub(crate) fn launch(ctx: &mut Ctx<'_>, group: &mut Group, run: Run, cooperative: bool) {
    let budget = ctx
        .env
        .config
        .assignor_deadline_ms
        .min((group.rebalance_timeout_ms() / 2).max(1));
    run::launch(
        ctx,
        &group.id,
        &mut group.pending_run,
        run,
        cooperative,
        budget,
    );
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

/// An assignor run finished. Results for another generation, another run or a group that is
/// no longer completing its rebalance are dropped.
pub(crate) fn on_done(ctx: &mut Ctx<'_>, group: &mut Group, done: AssignorDone) {
    let wanted =
        group.is(GroupState::CompletingRebalance) && done.generation_id == group.generation_id;
    match run::finish(ctx, &group.id, &mut group.pending_run, done, wanted) {
        Finished::Stale => {}
        Finished::Answered {
            run,
            mut answer,
            record,
        } => {
            if run.fallback && cooperative(group) {
                // The fallback ran without the cooperative rule; obey it now.
                let stripped = strip_owned(&run.request, &mut answer);
                tracing::debug!(group = %group.id, generation = group.generation_id,
                    module = %record.module, stripped, "fallback output stripped of owned partitions");
            }
            install_assigned(ctx, group, &run, answer, record);
        }
        Finished::Failed { run, record, .. } => {
            group.last_run = Some(record);
            next_step(ctx, group, run);
        }
    }
}

/// The deadline of the in-flight run passed: take the next step (its late result is dropped).
pub(crate) fn deadline(ctx: &mut Ctx<'_>, group: &mut Group) {
    if !group.is(GroupState::CompletingRebalance) {
        return;
    }
    if let Some((run, record)) = run::expire(ctx, &group.id, &mut group.pending_run) {
        group.last_run = Some(record);
        next_step(ctx, group, run);
    }
}

/// After a failed step: the fallback strategy, else the native last resort.
fn next_step(ctx: &mut Ctx<'_>, group: &mut Group, failed: Run) {
    group.fallback_used = true;
    match failed.fallback(ctx) {
        Some(fallback) => launch(ctx, group, fallback, false),
        None => {
            let (mut answer, record) = run::native(ctx, &group.id, &failed);
            if cooperative(group) {
                strip_owned(&failed.request, &mut answer);
            }
            install_assigned(ctx, group, &failed, answer, record);
        }
    }
}
