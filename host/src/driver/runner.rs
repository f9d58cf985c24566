//! How the driver runs a strategy: the [`AssignorRunner`] trait, implemented for the
//! [`Registry`] (modules in the sandbox) and by test fakes. It is called on the blocking pool;
//! the coordinator only ever sees the plain [`AssignorOutput`] / [`AssignorFailure`] and
//! installs an output without checking it again, so a runner must check (see
//! [`AssignorOutput`]).

use assignor_sdk::AssignRequest;

use crate::coordinator::{AssignorFailure, AssignorOutput};
use crate::registry::{Registry, RunErrorKind};
use crate::sandbox::CallError;

/// Runs one strategy on one request. Blocking; called off the shards.
pub trait AssignorRunner: Send + Sync + 'static {
    /// An `Ok` output has no `error` and passed [`crate::checks::check_response`] on `request`
    /// with `cooperative` (the KIP-429 rule: no partition to a new owner while another member
    /// still owns it); an output that failed the checks is a failure with `invalid_output`.
    fn run(
        &self,
        strategy: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
    ) -> Result<AssignorOutput, AssignorFailure>;
}

impl AssignorRunner for Registry {
    fn run(
        &self,
        strategy: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
    ) -> Result<AssignorOutput, AssignorFailure> {
        match Registry::run(self, strategy, pinned_version, request, cooperative) {
            Ok(report) => Ok(AssignorOutput {
                module: report.module,
                version: report.version,
                response: report.response,
                duration_us: report.stats.duration.as_micros() as u64,
                fuel: report.stats.fuel_used,
            }),
            Err(error) => Err(AssignorFailure {
                message: error.to_string(),
                duration_us: error
                    .stats
                    .as_ref()
                    .map_or(0, |s| s.duration.as_micros() as u64),
                invalid_output: match error.kind {
                    RunErrorKind::Call(CallError::Invalid(invalid)) => Some(Box::new(invalid)),
                    _ => None,
                },
                module: error.module,
                version: error.version,
            }),
        }
    }
}
