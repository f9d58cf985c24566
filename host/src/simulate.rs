//! Simulations: run a module on a group and report the assignment, its balance and the
//! partition movement against the current assignment, **without applying anything**.
//!
//! Two inputs, one code path:
//! - a [`Scenario`] file (author side, `assignor-host simulate --module FILE --scenario FILE`,
//!   no server: [`run_local`] loads the `.wasm` into a sandbox built exactly like the host's,
//!   limits included, the way Shopify's `function-runner` runs a function locally);
//! - a live group's current members (admin API, `simulate --module NAME --group G`): the
//!   driver builds the request a rebalance would send now, and the registry's compiled
//!   version runs on it.
//!
//! Either way the module runs through [`Sandbox::assign`], so the output checks, fuel, memory
//! cap and timeout are the production ones; a simulation never touches a version's health
//! counters or quarantine (it is not a rebalance).

mod report;

use std::path::Path;

use assignor_sdk::{AssignRequest, LogLevel, RebalanceProtocol};

pub use assignor_wire::scenario::{Scenario, ScenarioError, ScenarioMember, ScenarioTopic};
pub use report::{Balance, MemberReport, Movement, SimulationReport, Usage};

use crate::sandbox::{
    CallError, CallTag, CompiledModule, GuestLogLine, LoadError, Metering, PoolConfig, Sandbox,
    SandboxError, SandboxLimits,
};

/// A simulation could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("cannot read module file {path}: {message}")]
    ReadModule { path: String, message: String },
    #[error("sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("the module cannot be loaded: {0}")]
    Load(#[from] LoadError),
    /// The module ran and failed (trap, fuel, memory, malformed or refused output): what a
    /// rebalance would have recorded before falling back.
    #[error("module `{}`: {}", .0.module, .0.error)]
    Call(Box<FailedCall>),
}

/// A module call that failed during a simulation, with what it used and logged.
#[derive(Debug, Clone)]
pub struct FailedCall {
    pub module: String,
    pub error: CallError,
    pub usage: Usage,
    pub logs: Vec<String>,
}

/// Runs `module` on `request` in `sandbox` and reports; `name` and `version` label the report.
/// Blocking (the module runs on this thread).
#[allow(
    clippy::result_large_err,
    reason = "a failed simulation carries the call error, usage and logs the author needs; it happens once per run"
)]
pub fn simulate(
    sandbox: &Sandbox,
    module: &CompiledModule,
    name: &str,
    version: Option<u32>,
    request: &AssignRequest,
) -> Result<SimulationReport, SimulateError> {
    let cooperative = module
        .info()
        .is_some_and(|i| i.rebalance_protocol == RebalanceProtocol::Cooperative);
    let tag = CallTag {
        module: name,
        version: version.unwrap_or(0),
    };
    match sandbox.assign(module, tag, request, cooperative) {
        Ok(outcome) => Ok(report::build(
            name,
            version,
            cooperative,
            request,
            &outcome.answer.to_response(request),
            Usage::from(&outcome.stats),
            log_lines(&outcome.logs),
        )),
        Err(failure) => Err(SimulateError::Call(Box::new(FailedCall {
            module: name.to_owned(),
            usage: Usage::from(&failure.stats),
            logs: log_lines(&failure.logs),
            error: failure.error,
        }))),
    }
}

/// The author-side runner: loads `wasm_path` into a fresh sandbox with `limits` and
/// `metering` (the host's defaults unless the caller read a config file, so a module that runs
/// out of fuel, or of time, here does on the host) and runs it on the scenario at
/// `scenario_path`. The strategy name sent to the module is what its `assignor_describe`
/// says, else the file's stem.
#[allow(
    clippy::result_large_err,
    reason = "a failed simulation carries the call error, usage and logs the author needs; it happens once per run"
)]
pub fn run_local(
    wasm_path: &Path,
    scenario_path: &Path,
    limits: SandboxLimits,
    metering: Metering,
) -> Result<SimulationReport, SimulateError> {
    let scenario = Scenario::from_file(scenario_path)?;
    let wasm = std::fs::read(wasm_path).map_err(|e| SimulateError::ReadModule {
        path: wasm_path.display().to_string(),
        message: e.to_string(),
    })?;
    let pool = PoolConfig {
        max_instances: 2,
        max_memory_bytes: limits
            .memory_bytes
            .max(PoolConfig::default().max_memory_bytes),
        ..PoolConfig::default()
    };
    let sandbox = Sandbox::new_metered(pool, limits, metering)?;
    let module = sandbox.load(&wasm)?;
    let stem = wasm_path
        .file_stem()
        .map_or_else(|| "module".to_owned(), |s| s.to_string_lossy().into_owned());
    let name = module
        .info()
        .map(|i| i.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or(stem);
    let request = scenario.to_request(&name)?;
    simulate(&sandbox, &module, &name, None, &request)
}

fn log_lines(lines: &[GuestLogLine]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            let level = match l.level {
                LogLevel::Error => "ERROR",
                LogLevel::Warn => "WARN",
                LogLevel::Info => "INFO",
                LogLevel::Debug => "DEBUG",
                LogLevel::Trace => "TRACE",
            };
            format!("{level} {}", l.message)
        })
        .collect()
}

#[cfg(test)]
mod tests;
