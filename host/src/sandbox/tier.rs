//! Two tiers of compiled code, so an upload serves within a fraction of a second and runs
//! optimised code a second later (issue 12: upload -> active for a 1 MiB module within 300 ms
//! on 2 cores).
//!
//! - **Baseline**: Winch, wasmtime's one-pass compiler, on a twin of the process's engine made
//!   on first use. It compiles range's release build (~450 KB) 8-10x and a 1.5 MB dev build
//!   5-6x faster than Cranelift at `Speed`, and its code runs range on 1,000 members about
//!   2.2x slower (`host/benches/RESULTS.md`, "Module life cycle"). An upload is checked and
//!   first served on it ([`Sandbox::load_baseline`]).
//! - **Optimised**: Cranelift at `OptLevel::Speed`, the process's own engine, compiled in the
//!   background ([`Sandbox::optimize`]) and installed into the baseline module: calls resolve
//!   the tier once ([`CompiledModule::serving`]), so a rebalance runs one compiled module from
//!   start to end, and every call after the install runs the optimised code.
//!
//! The twin has the optimising engine's configuration with only the compiler switched
//! ([`super::engine::engine_config`]): the same fuel metering and costs, epoch deadline, NaN
//! canonicalization, features and pooling allocator, and it shares the pool permits and the
//! v2 layout cache. Both charge one unit of fuel per operator at the same points (function
//! entries, loop headers), so a call uses the same fuel and runs out of fuel at the same
//! budget on either tier, and a fuel verdict never depends on the tier; the tests check it on
//! every built-in and on hostile modules. That holds because the engines do not charge bulk
//! memory per byte, which Winch cannot do ([`super::engine::fuel_costs`]). What does depend
//! on the tier is the wall-clock deadline (baseline code is slower) and the stack (Winch's
//! frames are larger), so baseline code may answer but never refuses: a call it fails is run
//! again on the optimised code, which decides ([`Sandbox::call`]).
//!
//! Only optimised code is ever written to the precompiled cache (its key is the optimising
//! engine's compatibility hash), so a restart always loads optimised code.

use std::borrow::Cow;
use std::sync::Arc;

use wasmtime::{Engine, Linker, Module};

use super::engine::{Compiler, EpochTicker, Permits, Tier, engine_config};
use super::error::{CallError, CallFailure, LoadError};
use super::limits::{Metering, PoolConfig, SandboxLimits};
use super::stats::CallStats;
use super::store::CallState;
use super::{
    Call, CallOutcome, CompiledModule, Sandbox, SandboxError, Shared, check_limits, log, wire,
};

/// The optimised code could not replace a baseline module's; it goes on serving baseline code.
#[derive(Debug, thiserror::Error)]
pub enum OptimizeError {
    #[error("the optimising compile failed: {0}")]
    Load(#[from] LoadError),
    #[error("the optimised module differs from the baseline one: {what}")]
    Differs { what: &'static str },
    #[error("the module already runs optimised code")]
    AlreadyOptimized,
}

impl Shared {
    /// An engine with `compiler`, its linker and epoch ticker, sharing `permits` and `layouts`.
    fn build(
        pool: PoolConfig,
        metering: Metering,
        compiler: Compiler,
        tier: Tier,
        permits: Arc<Permits>,
        layouts: Arc<wire::LayoutCache>,
    ) -> Result<Shared, SandboxError> {
        let engine_error = |e: wasmtime::Error| SandboxError::Engine {
            message: format!("{e:#}"),
        };
        let engine =
            Engine::new(&engine_config(&pool, metering, compiler)).map_err(engine_error)?;
        let mut linker = Linker::new(&engine);
        log::define(&mut linker, |state: &mut CallState| &mut state.log).map_err(engine_error)?;
        let ticker = EpochTicker::start(engine.clone(), pool.epoch_tick)?;
        Ok(Shared {
            engine,
            linker,
            permits,
            pool,
            metering,
            layouts,
            _ticker: ticker,
            tier,
            compiler,
            baseline: Default::default(),
        })
    }
}

impl Sandbox {
    /// [`Sandbox::new_metered`] with the compiler chosen; the host uses
    /// [`Compiler::OPTIMIZING`], the life-cycle bench compares the others. Whatever the
    /// compiler, [`Sandbox::load_baseline`] compiles with Winch.
    pub fn with_compiler(
        pool: PoolConfig,
        limits: SandboxLimits,
        metering: Metering,
        compiler: Compiler,
    ) -> Result<Sandbox, SandboxError> {
        check_limits(&pool, &limits)?;
        let permits = Arc::new(Permits::new(pool.max_instances));
        let shared = Shared::build(
            pool,
            metering,
            compiler,
            Tier::Optimized,
            permits,
            Default::default(),
        )?;
        Ok(Sandbox {
            shared: Arc::new(shared),
            limits: Arc::new(limits),
        })
    }

    /// The compiler of this sandbox's engine.
    pub fn compiler(&self) -> Compiler {
        self.shared.compiler
    }

    /// The baseline twin with this handle's limits, or why it cannot be made (logged once).
    fn baseline(&self) -> Result<Sandbox, String> {
        let shared = &self.shared;
        if shared.tier == Tier::Baseline {
            return Err("the baseline engine has no twin".to_owned());
        }
        let twin = shared.baseline.get_or_init(|| {
            Shared::build(
                shared.pool.clone(),
                shared.metering,
                Compiler::Winch,
                Tier::Baseline,
                shared.permits.clone(),
                shared.layouts.clone(),
            )
            .map(Arc::new)
            .map_err(|e| {
                tracing::warn!(error = %e, "no baseline engine: uploads compile with Cranelift");
                e.to_string()
            })
        });
        twin.clone().map(|shared| Sandbox {
            shared,
            limits: self.limits.clone(),
        })
    }

    /// The sandbox whose engine runs code of `tier`.
    pub(super) fn on_tier(&self, tier: Tier) -> Result<Cow<'_, Sandbox>, CallError> {
        if tier == self.shared.tier {
            return Ok(Cow::Borrowed(self));
        }
        // Only the optimising engine has a twin, and only the twin makes baseline modules.
        match self.baseline() {
            Ok(twin) if tier == Tier::Baseline => Ok(Cow::Owned(twin)),
            Ok(_) | Err(_) => Err(CallError::Instantiate {
                message: format!("no engine for {tier:?} code in this sandbox"),
            }),
        }
    }

    /// [`Sandbox::load`] with Winch: compiled in a fraction of Cranelift's time, checked
    /// against the ABI the same way, [`Tier::Baseline`] until [`Sandbox::optimize`] installs
    /// its optimised code. An `Err` (Winch unavailable here, or a module it refuses, e.g. one
    /// using tail calls, which Winch does not implement) is no verdict on the module: the
    /// caller loads it with [`Sandbox::load`], whose answer is the verdict.
    pub fn load_baseline(&self, wasm: &[u8]) -> Result<CompiledModule, LoadError> {
        let twin = self
            .baseline()
            .map_err(|message| LoadError::Compile { message })?;
        let mut module = twin.load(wasm)?;
        module.wasm = Some(wasm.into());
        Ok(module)
    }

    /// Makes `call` of `module` in a fresh instance, the answer checked: on baseline or
    /// optimised code, one of them from start to end. The code is resolved once
    /// (`CompiledModule::serving`) and run to the end. Baseline code may answer but never
    /// refuses: a call it fails (other than an input over the cap, refused before any code
    /// runs) is run again on the optimised code, compiled now if it is not in yet, and that is
    /// the outcome. Fuel, memory and answers are the same on both tiers, so this only ever
    /// changes what differs: the deadline (baseline code is slower) and the stack (its frames
    /// are larger).
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    pub fn call(
        &self,
        module: &CompiledModule,
        call: Call<'_>,
    ) -> Result<CallOutcome, CallFailure> {
        // The engine of the code's tier (this sandbox's, or its optimising twin) runs it.
        let run = |module: &CompiledModule| match self.on_tier(module.tier) {
            Ok(sandbox) => sandbox.call_compiled(module, call),
            Err(error) => Err(CallFailure {
                error,
                stats: CallStats::default(),
                logs: Vec::new(),
            }),
        };
        let serving = module.serving();
        let failure = match run(serving) {
            Err(failure) if serving.tier == Tier::Baseline => failure,
            outcome => return outcome,
        };
        if matches!(
            failure.error,
            CallError::InputTooLarge { .. } | CallError::Encode { .. }
        ) {
            return Err(failure);
        }
        let Some(optimized) = self.optimized_now(module) else {
            return Err(failure);
        };
        tracing::warn!(module = call.tag.module, version = call.tag.version, error = %failure.error,
            "baseline code failed; the optimised code decides");
        run(optimized)
    }

    /// The optimised code of baseline `module`: installed already, or compiled and installed
    /// now; `None` if it cannot be had.
    fn optimized_now<'m>(&self, module: &'m CompiledModule) -> Option<&'m CompiledModule> {
        if let Some(optimized) = module.optimized.get() {
            return Some(optimized);
        }
        let wasm = module.wasm.as_deref()?;
        match self.optimize(module, wasm) {
            Ok(optimized) => Some(optimized),
            Err(OptimizeError::AlreadyOptimized) => module.optimized.get().map(|o| &**o),
            Err(error) => {
                tracing::warn!(%error, "no optimised code to run the call again on");
                None
            }
        }
    }

    /// Compiles `wasm` with this sandbox's engine and installs the result into `baseline`
    /// (compiled from the same bytes by [`Sandbox::load_baseline`]): every call that starts
    /// after this returns runs the optimised code; calls under way finish on the baseline
    /// code. Returns the installed module (for the precompiled cache). On `Err` nothing
    /// changed and `baseline` goes on serving.
    pub fn optimize<'m>(
        &self,
        baseline: &'m CompiledModule,
        wasm: &[u8],
    ) -> Result<&'m CompiledModule, OptimizeError> {
        if baseline.tier != Tier::Baseline || baseline.optimized.get().is_some() {
            return Err(OptimizeError::AlreadyOptimized);
        }
        let optimized = self.load(wasm)?;
        // The same bytes answer the same: a difference means the bytes are not the same module.
        let differs = |what| Err(OptimizeError::Differs { what });
        if optimized.abi_version != baseline.abi_version {
            return differs("assignor_abi_version");
        }
        if optimized.info != baseline.info {
            return differs("assignor_describe");
        }
        if optimized.inputs != baseline.inputs {
            return differs("the inputs it reads");
        }
        baseline
            .optimized
            .set(Box::new(optimized))
            .map_err(|_| OptimizeError::AlreadyOptimized)?;
        Ok(baseline.serving())
    }
}

impl CompiledModule {
    /// The code a call starting now runs: the installed optimised module if there is one, else
    /// this one. A call resolves it once and keeps it to its end.
    pub(super) fn serving(&self) -> &CompiledModule {
        self.optimized.get().map_or(self, |optimized| optimized)
    }

    /// The tier a call starting now would run.
    pub fn tier(&self) -> Tier {
        self.serving().tier
    }

    /// The module the optimising engine compiled, when a call would run it now: what the
    /// precompiled cache may store.
    pub fn optimized_module(&self) -> Option<&Module> {
        let serving = self.serving();
        (serving.tier == Tier::Optimized).then_some(&serving.module)
    }
}

#[cfg(test)]
#[path = "tier_tests.rs"]
mod tests;
