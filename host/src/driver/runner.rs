//! How the driver runs a strategy: the [`AssignorRunner`] trait, implemented for the
//! [`Registry`] (modules in the sandbox) and by test fakes. It is called on the blocking pool;
//! the coordinator only ever sees the plain [`AssignorOutput`] / [`AssignorFailure`].

use assignor_sdk::AssignRequest;

use crate::coordinator::{AssignorFailure, AssignorOutput};
use crate::registry::Registry;

/// Runs one strategy on one request. Blocking; called off the shards.
pub trait AssignorRunner: Send + Sync + 'static {
    /// `cooperative`: the output must not hand a partition to a new owner while another member
    /// still lists it as owned (checked by the runner's output checks).
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
                module: error.module,
                version: error.version,
            }),
        }
    }
}
