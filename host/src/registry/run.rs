//! Running a module for a rebalance: resolve the version once, refuse at once if it is
//! quarantined, call it in the sandbox, record the outcome in its health.

use std::fmt;
use std::sync::Arc;

use assignor_sdk::{Answer, AssignRequest};

use super::Registry;
use super::catalog::ModuleVersion;
use crate::sandbox::{Call, CallError, CallStats, CallTag, LagLookup};

/// A successful run: the checked assignment and which version produced it.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Canonical module name (an alias is resolved).
    pub module: String,
    pub version: u32,
    /// By positions in the request it answers ([`Answer::to_response`] names them).
    pub answer: Answer,
    pub stats: CallStats,
    /// Partitions of the group's topics nobody got (allowed, reported).
    pub unassigned_partitions: u64,
}

/// A failed run. The coordinator falls back; the failure is already recorded and logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    /// Canonical module name when it resolved, else the name asked for.
    pub module: String,
    pub version: Option<u32>,
    pub kind: RunErrorKind,
    /// What the call used, when the module ran.
    pub stats: Option<CallStats>,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunErrorKind {
    /// No module of that name or alias.
    NotFound,
    /// The pinned version does not exist.
    VersionNotFound,
    /// The version failed repeatedly; it is not called until `until_ms` (Unix ms).
    Quarantined { until_ms: u64, last_error: String },
    /// The call failed.
    Call(CallError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.version {
            Some(v) => write!(f, "module `{}` version {v}: ", self.module)?,
            None => write!(f, "module `{}`: ", self.module)?,
        }
        match &self.kind {
            RunErrorKind::NotFound => write!(f, "no such module"),
            RunErrorKind::VersionNotFound => write!(f, "no such version"),
            RunErrorKind::Quarantined {
                until_ms,
                last_error,
            } => write!(
                f,
                "quarantined after repeated failures until {until_ms} (Unix ms); last error: \
                 {last_error}"
            ),
            RunErrorKind::Call(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl Registry {
    /// The version a call of `name` (canonical or alias) would use: `pinned_version` if given,
    /// else the active one. The returned `Arc` stays valid whatever happens to the registry.
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    pub fn resolve(
        &self,
        name: &str,
        pinned_version: Option<u32>,
    ) -> Result<Arc<ModuleVersion>, RunError> {
        let catalog = self.catalog.load();
        let error = |module: &str, version, kind| RunError {
            module: module.to_owned(),
            version,
            kind,
            stats: None,
        };
        let (canonical, entry) = catalog
            .resolve(name)
            .ok_or_else(|| error(name, pinned_version, RunErrorKind::NotFound))?;
        match pinned_version {
            None => Ok(entry.active().clone()),
            Some(v) => entry
                .versions
                .get(&v)
                .cloned()
                .ok_or_else(|| error(canonical, Some(v), RunErrorKind::VersionNotFound)),
        }
    }

    /// Runs the active (or pinned) version of `name` (canonical or alias) on `request`.
    /// `cooperative` turns on the KIP-429 safety check of the output. Records the outcome in
    /// the version's health and quarantines it after repeated failures; while quarantined it
    /// answers [`RunErrorKind::Quarantined`] without calling the module.
    /// Blocking (the module runs on this thread): call it from a blocking pool.
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    pub fn run(
        &self,
        name: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
    ) -> Result<RunReport, RunError> {
        self.run_with_lag(name, pinned_version, request, cooperative, &|_| None)
    }

    /// [`Registry::run`], asking `lag` for the group's offsets when (and only when) the
    /// version that runs reads them (a v2 module declaring the `lag` input); `None` from it
    /// sends the request's own `lag`.
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    pub fn run_with_lag(
        &self,
        name: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
        lag: LagLookup<'_>,
    ) -> Result<RunReport, RunError> {
        let module = self.resolve(name, pinned_version)?;
        let (group, generation) = (request.group_id.as_str(), request.generation_id);
        // Guest log lines (`assignor.log`) and every line below carry these fields.
        let span = tracing::info_span!(
            "module_call",
            module = %module.name,
            version = module.version,
            group,
            generation
        );
        let _entered = span.enter();
        let now = self.config.clock.now_ms();
        if let Err((until_ms, last_error)) = module.health.check(now) {
            return Err(RunError {
                module: module.name.clone(),
                version: Some(module.version),
                kind: RunErrorKind::Quarantined {
                    until_ms,
                    last_error,
                },
                stats: None,
            });
        }
        let tag = CallTag {
            module: &module.name,
            version: module.version,
        };
        let offsets = if module.compiled.reads_lag() {
            lag(request)
        } else {
            None
        };
        let call = Call {
            tag,
            request,
            cooperative,
            lag: offsets.as_deref(),
        };
        match self.sandbox.call(&module.compiled, call) {
            Ok(outcome) => {
                module.health.record_success(self.config.clock.now_ms());
                tracing::debug!(
                    module = %module.name,
                    version = module.version,
                    group,
                    generation,
                    duration_us = outcome.stats.duration.as_micros() as u64,
                    fuel = outcome.stats.fuel_used,
                    "assignor ran"
                );
                Ok(RunReport {
                    module: module.name.clone(),
                    version: module.version,
                    answer: outcome.answer,
                    stats: outcome.stats,
                    unassigned_partitions: outcome.summary.unassigned_partitions,
                })
            }
            Err(failure) => {
                let now = self.config.clock.now_ms();
                let policy = &self.config.settings.quarantine;
                let quarantined =
                    module
                        .health
                        .record_failure(now, &failure.error, group, generation, policy);
                tracing::warn!(
                    module = %module.name,
                    version = module.version,
                    group,
                    generation,
                    reason = failure.error.reason(),
                    error = %failure.error,
                    "assignor call failed"
                );
                if let Some(until_ms) = quarantined {
                    tracing::error!(
                        module = %module.name,
                        version = module.version,
                        until_ms,
                        "module version quarantined after repeated failures"
                    );
                }
                Err(RunError {
                    module: module.name.clone(),
                    version: Some(module.version),
                    kind: RunErrorKind::Call(failure.error),
                    stats: Some(failure.stats),
                })
            }
        }
    }
}
