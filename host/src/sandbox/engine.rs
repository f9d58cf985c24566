//! The process's wasmtime engines: their compilers and configuration, the epoch ticker thread
//! that drives call deadlines, and the permits that keep concurrent calls within the instance
//! pool.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OperatorCost, PoolingAllocationConfig,
    Strategy, VariableOperatorCost, WasmFeatures,
};

use super::limits::{Metering, PoolConfig};

pub use wasmtime::OptLevel;

/// The compiler of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    /// Cranelift, the optimising compiler, at this optimisation level.
    Cranelift(OptLevel),
    /// Winch, the baseline compiler: one pass, no optimisation.
    Winch,
}

impl Compiler {
    /// The process's engine: Cranelift at `Speed`. Measured against it (`lifecycle` bench):
    /// `SpeedAndSize` compiles no faster and its code runs no faster; `None` compiles only
    /// 1.1-1.3x faster, its code runs range 10-50% slower, and it stays several times over
    /// 300 ms for 1 MiB; Winch is the baseline tier instead.
    pub const OPTIMIZING: Compiler = Compiler::Cranelift(OptLevel::Speed);
}

/// Which code a [`CompiledModule`](super::CompiledModule) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Winch code: fast to compile, slower to run; replaced once the optimised code is in.
    Baseline,
    /// The sandbox's own engine's code (Cranelift at `Speed` in the host).
    Optimized,
}

/// The engine configuration: the `compiler` (Cranelift at `Speed` for the process's engine,
/// Winch for the baseline tier uploads are first served by, `tier.rs`), deterministic floats
/// (NaN canonicalization, which Winch honours too), no threads, relaxed SIMD, memory64 or
/// multi-memory (an assignor is a pure single-threaded function of its input), epochs always
/// on (the wall-clock deadline), fuel only under [`Metering::Fuel`], and the pooling allocator
/// with a small keep-resident size so a fresh instance per call costs a few microseconds.
///
/// Everything but the compiler is the same for both tiers, so a module meets the same policy
/// whichever serves it; Winch on wasmtime 48 supports each of these settings (x86-64 and
/// aarch64), and the sandbox tests run the built-ins under both.
///
/// Fuel is one unit per operator ([`fuel_costs`]): bulk memory and table operators are not
/// also charged per byte or element, because Winch cannot charge that way and both tiers must
/// charge exactly alike.
pub(crate) fn engine_config(pool: &PoolConfig, metering: Metering, compiler: Compiler) -> Config {
    let mut config = Config::new();
    config.operator_cost(fuel_costs());
    match compiler {
        Compiler::Cranelift(level) => {
            config
                .strategy(Strategy::Cranelift)
                .cranelift_opt_level(level);
        }
        Compiler::Winch => {
            config.strategy(Strategy::Winch);
        }
    }
    config
        .cranelift_nan_canonicalization(true)
        .consume_fuel(metering == Metering::Fuel)
        .epoch_interruption(true)
        // The `threads` crate feature is off, so threads are already unavailable; say so anyway.
        .wasm_features(
            WasmFeatures::THREADS | WasmFeatures::SHARED_EVERYTHING_THREADS,
            false,
        )
        .wasm_relaxed_simd(false)
        .wasm_memory64(false)
        .wasm_multi_memory(false);
    let n = pool.max_instances.max(1);
    let mut pooling = PoolingAllocationConfig::new();
    pooling
        .total_core_instances(n)
        .total_memories(n)
        .total_tables(n)
        .max_memories_per_module(1)
        .max_tables_per_module(1)
        .max_unused_warm_slots(n)
        .max_memory_size(usize::try_from(pool.max_memory_bytes).unwrap_or(usize::MAX))
        .linear_memory_keep_resident(usize::try_from(pool.keep_resident_bytes).unwrap_or(0))
        .table_keep_resident(usize::try_from(pool.keep_resident_bytes).unwrap_or(0))
        // Off, as wasmtime 48's default, said so that a change of that default is a decision:
        // the `PAGEMAP_SCAN` reset (Linux 6.7+, resetting only the pages the kernel reports
        // written) measured no faster at 10,000 members (uniform 3.3-3.4 ms either way) and
        // ~0.9 us slower per small call (range, 3 members: 6.1-6.3 us against 5.3-5.5), as
        // the ioctl costs more than zeroing the few pages such a call writes
        // (host/benches/RESULTS.md, "Issue 12, final").
        .pagemap_scan(Enabled::No);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    if std::env::var_os(PERFMAP_ENV).is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// wasmtime's flat cost of each operator (one unit, none for `nop`, `drop`, blocks and the
/// like), without its per-byte and per-element charges for `memory.copy`, `memory.fill`,
/// `memory.init` and the table operators.
///
/// Decision (issue 12): Cranelift inlines those charges into the code it emits; Winch, the
/// baseline tier, does not implement them (wasmtime 48), so with them a module using bulk
/// memory (every Rust module: `memcpy` is `memory.copy`) burns ~6% more fuel on the optimised
/// tier than on the baseline one (range on 1,000 members: 7,724,339 against 7,293,239) and
/// could run out of fuel on one tier and not the other. Without them both tiers charge the
/// same to the unit, which the sandbox tests check on every built-in. What it costs: a bulk
/// operation costs one unit whatever its length, so a module looping over large `memory.copy`s
/// is stopped by the wall-clock deadline (default 5 s) rather than by its fuel budget
/// (default ~1 s of ordinary code); fuel stays deterministic. Every module's fuel figure drops
/// by the bytes it copies and fills.
pub(crate) fn fuel_costs() -> OperatorCost {
    OperatorCost {
        variable: VariableOperatorCost {
            memory_copy_per_byte: 0,
            memory_fill_per_byte: 0,
            memory_init_per_byte: 0,
            memory_grow_per_page: 0,
            table_copy_per_element: 0,
            table_fill_per_element: 0,
            table_init_per_element: 0,
            table_grow_per_element: 0,
            array_copy_per_element: 0,
            array_fill_per_element: 0,
            array_new_data_per_element: 0,
            array_init_data_per_element: 0,
            array_new_elem_per_element: 0,
            array_init_elem_per_element: 0,
            array_new_default_per_element: 0,
            array_new_per_element: 0,
        },
        ..OperatorCost::new()
    }
}

/// Set (to anything) in the environment, the engine writes `/tmp/perf-<pid>.map` naming the
/// compiled code of every module, so `perf record` / `perf report` attribute a call's time to
/// the guest's own functions (`docs/operating.md`, "Profiling a module"). Off by default: the
/// map grows with every module compiled.
pub const PERFMAP_ENV: &str = "ASSIGNOR_HOST_PERFMAP";

/// Counts free instance slots; a call takes one for its whole life, waiting if none is free.
pub(crate) struct Permits {
    free: Mutex<u32>,
    freed: Condvar,
}

/// A held slot, returned on drop.
pub(crate) struct Permit<'a>(&'a Permits);

impl Permits {
    pub(crate) fn new(n: u32) -> Permits {
        Permits {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    pub(crate) fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock();
        while *free == 0 {
            self.freed.wait(&mut free);
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}

/// A thread that increments the engine's epoch every tick, so a store's epoch deadline is a
/// wall-clock deadline. It stops when this value is dropped (its channel closes).
pub(crate) struct EpochTicker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub(crate) fn start(engine: Engine, tick: Duration) -> std::io::Result<EpochTicker> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("assignor-epoch".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
