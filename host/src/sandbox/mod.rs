//! The wasm sandbox: one wasmtime [`Engine`] for the process (and a Winch twin that serves
//! fresh uploads until their optimised code is in, `tier`), modules compiled once into a
//! [`CompiledModule`] (an `InstancePre` linked with only `assignor.log`), and a fresh `Store`
//! per call with the [`SandboxLimits`] applied.
//!
//! A call ([`Sandbox::assign`]) encodes the `AssignRequest` the way the module's ABI version
//! wants it (v1: MessagePack maps with named fields; v2: positional arrays with a topic table
//! and shared subscriptions, `wire`), writes it through `assignor_alloc`, runs
//! `assignor_assign`, bounds-checks and decodes the `AssignResponse`, and runs the
//! [output checks](assignor_wire::checks) before anything reaches a client. v1 and v2 modules run side
//! by side: each [`CompiledModule`] knows the version it speaks. Every failure is a typed [`CallError`] carrying the [`CallStats`] gathered so far;
//! the sandbox never panics on module behaviour and is usable again right after any failure,
//! because nothing outlives a call's store.
//!
//! CPU is bounded by fuel plus a wall-clock deadline (the default, deterministic) or by the
//! deadline alone ([`Metering`], chosen per engine at [`Sandbox::new_metered`]).
//!
//! Layout: [`limits`] (policy and the resource limiter), `engine` (configuration, epoch ticker,
//! pool permits), `tier` (the baseline Winch engine uploads are first served by, and the
//! swap to optimised code), `load` (ABI shape checks), `call` (one store and instance), `wire` (the
//! messages per ABI version, the v2 layout cache), `log` (the `assignor.log` import),
//! [`error`] (the failures). The output checks live in [`assignor_wire::checks`],
//! shared with the coordinator; their types are re-exported here because calls return them.

mod config;
pub mod error;
pub mod limits;

mod call;
mod engine;
mod load;
mod log;
mod stats;
mod store;
mod tier;
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use assignor_sdk::abi::v2::{Extras, Inputs};
use assignor_sdk::{
    ABI_V1, ABI_V2, ABI_VERSIONS, Answer, AssignRequest, AssignorInfo, EXPORT_ABI_VERSION, Input,
    TopicOffsets,
};
use wasmtime::{Engine, InstancePre, Linker, Module};

pub use assignor_wire::checks::{
    CheckSummary, OutputError, check_named, check_positioned, check_response,
};
pub use config::SandboxConfig;
pub use engine::{Compiler, OptLevel, Tier};
pub use error::{CallError, CallFailure, LoadError};
pub use limits::{FUEL_PER_MS, Metering, PoolConfig, SandboxLimits, UnknownMetering};
pub use log::GuestLogLine;
pub use stats::CallStats;
pub use tier::OptimizeError;
pub use wire::LagLookup;

use engine::{EpochTicker, Permits};
use store::CallState;

/// The sandbox could not be set up (a configuration problem, reported at start).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot create the wasm engine: {message}")]
    Engine { message: String },
    #[error("cannot start the epoch ticker thread: {0}")]
    Ticker(#[from] std::io::Error),
    #[error(
        "memory cap of {memory_bytes} bytes is over the pool's max_memory_bytes of {pool_bytes}"
    )]
    MemoryAbovePool { memory_bytes: u64, pool_bytes: u64 },
}

/// The process's sandbox. Cheap to clone; clones share the engine, the linker, the epoch
/// ticker and the instance pool. [`Sandbox::with_limits`] gives a handle on the same engine
/// (and so the same [`Metering`]) with other per-call limits.
#[derive(Clone)]
pub struct Sandbox {
    shared: Arc<Shared>,
    limits: Arc<SandboxLimits>,
}

struct Shared {
    engine: Engine,
    linker: Linker<CallState>,
    /// Shared with the baseline twin: the pool size bounds calls on both engines together.
    permits: Arc<Permits>,
    pool: PoolConfig,
    metering: Metering,
    layouts: Arc<wire::LayoutCache>,
    _ticker: EpochTicker,
    /// The tier of the modules this engine prepares, and its compiler.
    tier: Tier,
    compiler: Compiler,
    /// The baseline (Winch) twin of the optimising engine, made on first use (`tier`); `Err`
    /// says why it could not be made (uploads then compile with Cranelift directly).
    baseline: std::sync::OnceLock<Result<Arc<Shared>, String>>,
}

impl Shared {
    /// Epoch ticks for a wall-clock `timeout`: rounded up, at least one.
    fn deadline_ticks(&self, timeout: Duration) -> u64 {
        let tick = self.pool.epoch_tick.as_nanos().max(1);
        (timeout.as_nanos().div_ceil(tick) as u64).max(1)
    }
}

/// Names a call in logs: the module and version being run.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallTag<'a> {
    pub module: &'a str,
    pub version: u32,
}

/// One call of a module, as one value handed from the registry down to the instance: what it
/// is called (for the logs), on what, under which rule, with which lag.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tag: CallTag<'a>,
    pub request: &'a AssignRequest,
    /// Turns on the KIP-429 safety check of the answer.
    pub cooperative: bool,
    /// The offsets a v2 module reading lag gets; `None`: the request's own `lag`. Ignored for
    /// a module that does not read lag.
    pub lag: Option<&'a [TopicOffsets]>,
}

/// A successful call: an answer that passed every check, by positions in its request
/// ([`Answer::to_response`] gives the model).
#[derive(Debug, Clone)]
pub struct CallOutcome {
    pub answer: Answer,
    pub stats: CallStats,
    pub summary: CheckSummary,
    /// What the module logged (also emitted to tracing).
    pub logs: Vec<GuestLogLine>,
}

/// A module compiled by this sandbox's engine, checked against the ABI version it speaks and
/// ready to instantiate. Immutable; share it with `Arc`.
pub struct CompiledModule {
    module: Module,
    pre: InstancePre<CallState>,
    info: Option<AssignorInfo>,
    abi_version: u32,
    inputs: Inputs,
    /// The engine that compiled it, and so the one its calls run on.
    tier: Tier,
    /// A baseline module's optimised code once installed (`tier`); calls then run that.
    optimized: std::sync::OnceLock<Box<CompiledModule>>,
    /// A baseline module's bytes, to compile its optimised code on demand (`tier`).
    wasm: Option<Arc<[u8]>>,
}

impl CompiledModule {
    /// What `assignor_describe` returned, if the module exports it.
    pub fn info(&self) -> Option<&AssignorInfo> {
        self.info.as_ref()
    }

    /// The ABI version the module speaks (`assignor_abi_version`): 1 or 2.
    pub fn abi_version(&self) -> u32 {
        self.abi_version
    }

    /// The optional inputs the module reads (ABI v2; empty for v1 modules, which get every
    /// v1 field).
    pub fn inputs(&self) -> Inputs {
        self.inputs
    }

    /// Whether the module reads per-partition lag, so a call should fetch it.
    pub fn reads_lag(&self) -> bool {
        self.inputs.has(assignor_sdk::Input::Lag)
    }

    /// The compiled module (for serialization into the precompiled cache).
    pub fn module(&self) -> &Module {
        &self.module
    }
}

impl Sandbox {
    /// The process's one sandbox with the default limits and a pool of 8 instances, made on
    /// first use and shared by clone: an engine, its pool and its epoch ticker are costly to
    /// make, so the tests and examples of a process share one instead of each making its own.
    pub fn shared_default() -> Sandbox {
        static SHARED: std::sync::OnceLock<Sandbox> = std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| {
                let pool = PoolConfig {
                    max_instances: 8,
                    ..PoolConfig::default()
                };
                Sandbox::new(pool, SandboxLimits::default()).expect("the default sandbox")
            })
            .clone()
    }

    /// Creates the engine with [`Metering::Fuel`] (the default: fuel budget plus wall-clock
    /// deadline), the linker (only `assignor.log`) and the epoch ticker.
    pub fn new(pool: PoolConfig, limits: SandboxLimits) -> Result<Sandbox, SandboxError> {
        Sandbox::new_metered(pool, limits, Metering::Fuel)
    }

    /// [`Sandbox::new`] with the CPU metering chosen: the config file's `[sandbox] metering`.
    ///
    /// Metering is an argument here rather than a field of [`SandboxLimits`] because it is
    /// compiled into the code (fuel counters) and so fixed per engine, while limits are per
    /// store: keeping it out of the limits means [`Sandbox::with_limits`] cannot ask an engine
    /// for a metering it was not built with. A process wanting both runs two sandboxes (two
    /// engines, two epoch tickers, two pools, and modules compiled once per engine).
    pub fn new_metered(
        pool: PoolConfig,
        limits: SandboxLimits,
        metering: Metering,
    ) -> Result<Sandbox, SandboxError> {
        Sandbox::with_compiler(pool, limits, metering, Compiler::OPTIMIZING)
    }

    /// A handle on the same engine whose calls run under `limits`. The engine's [`Metering`]
    /// stays: under [`Metering::Epoch`], `limits.fuel` is ignored and `limits.timeout` is the
    /// CPU bound.
    pub fn with_limits(&self, limits: SandboxLimits) -> Result<Sandbox, SandboxError> {
        check_limits(&self.shared.pool, &limits)?;
        Ok(Sandbox {
            shared: self.shared.clone(),
            limits: Arc::new(limits),
        })
    }

    pub fn limits(&self) -> &SandboxLimits {
        &self.limits
    }

    pub fn pool(&self) -> &PoolConfig {
        &self.shared.pool
    }

    /// How this sandbox's engine bounds CPU; fixed when the engine was created.
    pub fn metering(&self) -> Metering {
        self.shared.metering
    }

    /// The engine, for serializing and deserializing precompiled code.
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// Compiles a binary module with this engine's compiler (Cranelift at `Speed`: ~0.3 s for
    /// the 328 KB release `range`, ~0.65 s for 1 MiB on 2 cores), so callers keep the result;
    /// [`Sandbox::load_baseline`] is the fast path uploads take. WebAssembly text is refused ([`LoadError::Text`]): only the binary format is
    /// accepted, so a module's sha256 is that of the code that runs. Nothing is checked beyond
    /// validity; see [`Sandbox::prepare`].
    pub fn compile(&self, wasm: &[u8]) -> Result<Module, LoadError> {
        load::check_binary(wasm)?;
        Module::from_binary(&self.shared.engine, wasm).map_err(|e| LoadError::Compile {
            message: format!("{e:#}"),
        })
    }

    /// Refuses bytes that are not a binary module by their look alone (WebAssembly text), before
    /// any cache lookup or compile; [`Sandbox::compile`] does the same check.
    pub fn check_binary(wasm: &[u8]) -> Result<(), LoadError> {
        load::check_binary(wasm)
    }

    /// Makes a compiled module callable: checks imports, exports and memory against the ABI,
    /// links it, instantiates it once to read `assignor_abi_version()` (1 or 2) and
    /// `assignor_describe` if exported.
    pub fn prepare(&self, module: Module) -> Result<CompiledModule, LoadError> {
        load::check_shape(&module, self.limits.memory_bytes)?;
        let pre = self
            .shared
            .linker
            .instantiate_pre(&module)
            .map_err(|e| LoadError::Link {
                message: format!("{e:#}"),
            })?;
        let mut compiled = CompiledModule {
            module,
            pre,
            info: None,
            abi_version: ABI_V1,
            inputs: Inputs::NONE,
            tier: self.shared.tier,
            optimized: Default::default(),
            wasm: None,
        };
        let has_describe = compiled
            .module
            .get_export(assignor_sdk::EXPORT_DESCRIBE)
            .is_some();
        let step = |step, error| LoadError::Call { step, error };
        let mut session = self
            .session(&compiled)
            .map_err(|e| step("instantiating the module", e))?;
        let found = session
            .call_i32(EXPORT_ABI_VERSION)
            .map_err(|e| step(EXPORT_ABI_VERSION, e))?;
        if !ABI_VERSIONS.iter().any(|&v| v as i32 == found) {
            return Err(LoadError::AbiVersion { found });
        }
        compiled.abi_version = found as u32;
        if has_describe {
            let info = session
                .describe()
                .map_err(|e| step(assignor_sdk::EXPORT_DESCRIBE, e))?;
            if compiled.abi_version == ABI_V2 {
                compiled.inputs = info.inputs.iter().copied().collect();
            }
            compiled.info = Some(info);
        }
        drop(session);
        Ok(compiled)
    }

    /// [`Sandbox::compile`] then [`Sandbox::prepare`].
    pub fn load(&self, wasm: &[u8]) -> Result<CompiledModule, LoadError> {
        self.prepare(self.compile(wasm)?)
    }

    /// Runs `module` on `request` in a fresh instance and checks the answer. `cooperative`
    /// turns on the KIP-429 safety check. Marshalling and checks are included in the stats.
    /// A v2 module reading lag gets the request's own `lag` ([`Sandbox::call`] says otherwise).
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    pub fn assign(
        &self,
        module: &CompiledModule,
        tag: CallTag<'_>,
        request: &AssignRequest,
        cooperative: bool,
    ) -> Result<CallOutcome, CallFailure> {
        let call = Call {
            tag,
            request,
            cooperative,
            lag: None,
        };
        self.call(module, call)
    }

    /// [`Sandbox::call`] of exactly `module`, on this sandbox's engine (the one that compiled
    /// it).
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    fn call_compiled(
        &self,
        module: &CompiledModule,
        call: Call<'_>,
    ) -> Result<CallOutcome, CallFailure> {
        let Call {
            tag,
            request,
            cooperative,
            lag,
        } = call;
        let started = Instant::now();
        let failure = |error, mut stats: CallStats, logs| {
            stats.duration = started.elapsed();
            CallFailure { error, stats, logs }
        };
        let encoded = if module.abi_version == ABI_V2 {
            let extras = Extras {
                inputs: module.inputs,
                lag,
            };
            wire::encode_v2(request, &self.shared.layouts, extras).map(|(b, l)| (b, Some(l)))
        } else {
            wire::encode_v1(request).map(|bytes| (bytes, None))
        };
        let (input, layout) = match encoded {
            Ok(encoded) => encoded,
            Err(error) => return Err(failure(error, CallStats::default(), Vec::new())),
        };
        let cap = self.limits.max_input_bytes;
        if input.len() as u64 > cap {
            // Refused before an instance is taken from the pool.
            let stats = CallStats {
                input_bytes: input.len() as u64,
                ..CallStats::default()
            };
            let error = CallError::InputTooLarge {
                bytes: input.len() as u64,
                cap,
            };
            return Err(failure(error, stats, Vec::new()));
        }
        let mut session = match self.session(module) {
            Ok(session) => session,
            Err(error) => {
                let stats = CallStats {
                    input_bytes: input.len() as u64,
                    ..CallStats::default()
                };
                return Err(failure(error, stats, Vec::new()));
            }
        };
        let result = session.assign(&input, |bytes| match &layout {
            Some(_) => wire::read_v2(request, bytes),
            None => wire::read_v1(request, bytes),
        });
        let (stats, log) = session.finish();
        log::emit(
            &log.lines,
            log.dropped,
            tag.module,
            tag.version,
            &request.group_id,
            request.generation_id,
        );
        let mut answer = match result {
            Ok(answer) => answer,
            Err(error) => return Err(failure(error, stats, log.lines)),
        };
        // The checks see the state as returned (one over the cap is refused whether or not
        // the module declared the input), then it is dropped unless the module reads it back.
        let verdict = match &layout {
            Some(layout) => check_positioned(request, &answer, layout, cooperative),
            None => check_named(request, &answer, cooperative),
        };
        let summary = match verdict {
            Ok(summary) => summary,
            Err(e) => return Err(failure(CallError::Invalid(e), stats, log.lines)),
        };
        if !module.inputs.has(Input::State) {
            answer.state = None;
        }
        let mut stats = stats;
        stats.duration = started.elapsed();
        Ok(CallOutcome {
            answer,
            stats,
            summary,
            logs: log.lines,
        })
    }
}

impl Sandbox {
    /// Groups whose v2 layout (topic and subscription tables) the sandbox keeps for their next
    /// rebalance.
    pub fn cached_layouts(&self) -> usize {
        self.shared.layouts.len()
    }
}

fn check_limits(pool: &PoolConfig, limits: &SandboxLimits) -> Result<(), SandboxError> {
    if limits.memory_bytes > pool.max_memory_bytes {
        return Err(SandboxError::MemoryAbovePool {
            memory_bytes: limits.memory_bytes,
            pool_bytes: pool.max_memory_bytes,
        });
    }
    Ok(())
}
