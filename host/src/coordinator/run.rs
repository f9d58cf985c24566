//! One assignor run, for every group type: the call of a module as an effect, its deadline,
//! what a result or a timeout becomes (a record, a notice, the run handed back to the group
//! type to install or to go on from), the fallback module's run, and the native range that
//! ends the chain. Kafka's `TargetAssignmentBuilder` is the shape: the group type builds the
//! request (who subscribes to what, what they own), this file runs it, and the group type
//! installs what comes back (a classic group answers its SyncGroups, a consumer group sets
//! its members' targets). A third group type uses the same run.
//!
//! One run per group at a time, kept by the group as `Option<Run>`. The run's `generation`
//! is the classic generation or the consumer group epoch it assigns; a result for another
//! run, or for a run the group no longer waits for, is dropped and counted as stale.

use std::sync::Arc;

use assignor_sdk::{Answer, AssignRequest};

use super::api::Millis;
use super::context::Ctx;
use super::event::{
    AssignorDone, AssignorFailure, AssignorOutput, AssignorRun, Effect, Notice, RunOutcome,
    TimerKey,
};
use super::native_range::native_range;
use super::record::RunRecord;

/// The module name a native range's record carries.
pub(crate) const NATIVE_RANGE: &str = "native-range";

/// An assignor run in flight, or about to be launched.
#[derive(Debug, Clone)]
pub struct Run {
    pub(in crate::coordinator) run_id: u64,
    /// The classic generation, or the consumer group epoch, this run assigns.
    pub(in crate::coordinator) generation: i32,
    /// Canonical module name.
    pub(in crate::coordinator) strategy: String,
    pub(in crate::coordinator) pinned_version: Option<u32>,
    /// This is the fallback module's run (after the selected module failed, or because the
    /// selected name has no module).
    pub(in crate::coordinator) fallback: bool,
    pub(in crate::coordinator) started_at: Millis,
    /// The request (the fallback's run reuses it).
    pub(in crate::coordinator) request: Arc<AssignRequest>,
    /// Each member's Subscription version, in `request.members` order, where the group type
    /// encodes its answers at them (a classic group; `None`: the metadata was not a
    /// Subscription); empty otherwise.
    pub(in crate::coordinator) versions: Arc<Vec<Option<i16>>>,
}

impl Run {
    /// A run of `strategy` (`pinned_version` of it, if given) on `request`, for `generation`.
    pub(in crate::coordinator) fn new(
        generation: i32,
        strategy: String,
        pinned_version: Option<u32>,
        request: AssignRequest,
    ) -> Run {
        Run {
            run_id: 0,
            generation,
            strategy,
            pinned_version,
            fallback: false,
            started_at: 0,
            request: Arc::new(request),
            versions: Arc::default(),
        }
    }

    /// The same run as the fallback's (after `self` failed), if one applies: the configured
    /// fallback module when a module serves it and it is not what just failed; `None` when
    /// only the native range is left.
    pub(in crate::coordinator) fn fallback(&self, ctx: &Ctx<'_>) -> Option<Run> {
        let name = ctx
            .env
            .strategies
            .canonical(&ctx.env.config.fallback_strategy)?
            .to_owned();
        let other = name != self.strategy || self.pinned_version.is_some();
        (!self.fallback && other).then(|| Run {
            strategy: name,
            pinned_version: None,
            fallback: true,
            ..self.clone()
        })
    }
}

/// Emits `run` (numbered now) and arms the group's deadline `budget_ms` from now; the group
/// keeps it in `pending`.
pub(crate) fn launch(
    ctx: &mut Ctx<'_>,
    group: &Arc<str>,
    pending: &mut Option<Run>,
    mut run: Run,
    cooperative: bool,
    budget_ms: Millis,
) {
    run.run_id = ctx.env.next_run;
    ctx.env.next_run += 1;
    run.started_at = ctx.now;
    ctx.effect(Effect::RunAssignor(Box::new(AssignorRun {
        group_id: group.to_string(),
        generation_id: run.generation,
        run_id: run.run_id,
        strategy: run.strategy.clone(),
        pinned_version: run.pinned_version,
        cooperative: cooperative && !run.fallback,
        fallback: run.fallback,
        request: run.request.clone(),
    })));
    ctx.schedule_in(
        TimerKey::AssignorDeadline {
            group: group.clone(),
        },
        budget_ms.max(1),
    );
    tracing::debug!(group = %group, generation = run.generation, module = %run.strategy,
        fallback = run.fallback, "assignor run started");
    *pending = Some(run);
}

/// Whether `done` answers the run in `pending`.
pub(crate) fn answers(pending: Option<&Run>, done: &AssignorDone) -> bool {
    pending.is_some_and(|r| r.run_id == done.run_id && r.generation == done.generation_id)
}

/// What became of the run in flight when its result came back.
pub(crate) enum Finished {
    /// Nobody waits for this result (another run, or a group past it): dropped and counted.
    Stale,
    /// The module answered, and the runner's checks passed.
    Answered {
        run: Run,
        answer: Answer,
        record: RunRecord,
    },
    /// The call failed or its answer was refused.
    Failed {
        run: Run,
        record: RunRecord,
        message: String,
    },
}

/// Takes the run `done` answers out of `pending` when `wanted` (the group type's own reasons
/// to still want it, beyond being the same run), cancels its deadline, logs and notices the
/// outcome. Anything else is [`Finished::Stale`].
pub(crate) fn finish(
    ctx: &mut Ctx<'_>,
    group: &Arc<str>,
    pending: &mut Option<Run>,
    done: AssignorDone,
    wanted: bool,
) -> Finished {
    if !(wanted && answers(pending.as_ref(), &done)) {
        tracing::debug!(group = %group, generation = done.generation_id, "stale assignor result dropped");
        dropped(ctx, &done);
        return Finished::Stale;
    }
    let run = pending.take().expect("checked");
    ctx.cancel(TimerKey::AssignorDeadline {
        group: group.clone(),
    });
    match done.result {
        Ok(output) => {
            let record = answered(&run, &output);
            notice(ctx, group, &record);
            Finished::Answered {
                run,
                answer: output.answer,
                record,
            }
        }
        Err(failure) => {
            let record = failed(&run, &failure);
            tracing::warn!(group = %group, generation = run.generation, module = %failure.module,
                version = ?failure.version, error = %failure.message, "assignor failed");
            notice(ctx, group, &record);
            Finished::Failed {
                run,
                record,
                message: failure.message,
            }
        }
    }
}

/// The deadline of the run in `pending` passed: takes it, with its record (logged and
/// noticed); its late result will be dropped.
pub(crate) fn expire(
    ctx: &mut Ctx<'_>,
    group: &Arc<str>,
    pending: &mut Option<Run>,
) -> Option<(Run, RunRecord)> {
    let run = pending.take()?;
    let record = RunRecord {
        generation: run.generation,
        module: run.strategy.clone(),
        version: run.pinned_version,
        duration_us: ctx.now.saturating_sub(run.started_at) * 1000,
        fuel: 0,
        outcome: RunOutcome::TimedOut,
        fallback_used: run.fallback,
    };
    tracing::warn!(group = %group, generation = run.generation, module = %run.strategy, "assignor timed out");
    notice(ctx, group, &record);
    Some((run, record))
}

/// Abandons the run in `pending`, if any (the group no longer needs it): its deadline is
/// cancelled and its result will be dropped.
pub(crate) fn abandon(ctx: &mut Ctx<'_>, group: &Arc<str>, pending: &mut Option<Run>) -> bool {
    let abandoned = pending.take().is_some();
    if abandoned {
        ctx.cancel(TimerKey::AssignorDeadline {
            group: group.clone(),
        });
    }
    abandoned
}

/// The end of the chain: Kafka's range computed natively on `run`'s request (valid by
/// construction), with its record, noticed.
pub(crate) fn native(ctx: &mut Ctx<'_>, group: &Arc<str>, run: &Run) -> (Answer, RunRecord) {
    let answer = native_range(&run.request);
    let record = RunRecord {
        generation: run.generation,
        module: NATIVE_RANGE.to_owned(),
        version: None,
        duration_us: 0,
        fuel: 0,
        outcome: RunOutcome::Ok,
        fallback_used: true,
    };
    notice(ctx, group, &record);
    (answer, record)
}

/// A result for a group that is gone, or for a run nobody waits for.
pub(crate) fn dropped(ctx: &mut Ctx<'_>, done: &AssignorDone) {
    let (module, version) = match &done.result {
        Ok(o) => (o.module.clone(), Some(o.version)),
        Err(f) => (f.module.clone(), f.version),
    };
    ctx.notice(Notice::AssignorFinished {
        group: Arc::from(done.group_id.as_str()),
        generation: done.generation_id,
        module,
        version,
        outcome: RunOutcome::Stale,
        duration_us: 0,
        fuel: 0,
        fallback: false,
    });
}

/// The record of a call the module answered.
fn answered(run: &Run, output: &AssignorOutput) -> RunRecord {
    RunRecord {
        generation: run.generation,
        module: output.module.clone(),
        version: Some(output.version),
        duration_us: output.duration_us,
        fuel: output.fuel,
        outcome: RunOutcome::Ok,
        fallback_used: run.fallback,
    }
}

/// The record of a call that failed, or whose answer the output checks refused.
fn failed(run: &Run, failure: &AssignorFailure) -> RunRecord {
    let outcome = match &failure.invalid_output {
        Some(invalid) => RunOutcome::Refused(invalid.to_string()),
        None => RunOutcome::Failed(failure.message.clone()),
    };
    RunRecord {
        generation: run.generation,
        module: failure.module.clone(),
        version: failure.version,
        duration_us: failure.duration_us,
        fuel: 0,
        outcome,
        fallback_used: run.fallback,
    }
}

/// Tells the metrics and the log what a run came to.
fn notice(ctx: &mut Ctx<'_>, group: &Arc<str>, record: &RunRecord) {
    ctx.notice(Notice::AssignorFinished {
        group: group.clone(),
        generation: record.generation,
        module: record.module.clone(),
        version: record.version,
        outcome: record.outcome.clone(),
        duration_us: record.duration_us,
        fuel: record.fuel,
        fallback: record.fallback_used,
    });
}
