//! The adapter from the module registry to the driver: the registry runs a strategy's module
//! in the sandbox (which checks the output), and the driver gets the plain
//! [`AssignorOutput`] / [`AssignorFailure`] the coordinator takes. It lives where the parts are
//! assembled, so the driver knows neither the registry nor the sandbox.

use assignor_sdk::AssignRequest;

use crate::coordinator::{AssignorFailure, AssignorOutput};
use crate::driver::{AssignorRunner, LagSource, lag_for};
use crate::registry::{Registry, RunErrorKind};
use crate::sandbox::CallError;

impl AssignorRunner for Registry {
    fn run(
        &self,
        strategy: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
        lag: &dyn LagSource,
    ) -> Result<AssignorOutput, AssignorFailure> {
        let lag = |request: &AssignRequest| Some(lag_for(lag, request));
        match Registry::run_with_lag(self, strategy, pinned_version, request, cooperative, &lag) {
            Ok(report) => Ok(AssignorOutput {
                module: report.module,
                version: report.version,
                answer: report.answer,
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
