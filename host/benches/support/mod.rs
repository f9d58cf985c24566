//! Shared by the benches: the native path of a strategy (the same work the module does, minus
//! the sandbox), timing helpers, and the sandbox the benches run in. Kafka-grid groups are in
//! `groups`; Apache Kafka's own assignors timed in the same run (`report::kafka`) and the
//! JSON-lines results writer (`report::jsonl`) are in `report`.
#![allow(dead_code, unused_imports, reason = "each bench uses part of it")]

mod groups;
pub mod report;

pub use groups::{grid_group, grid_group_with, incremental_group};
pub use report::jsonl::{Cell, Run};
pub use report::{Assignment, Subscription, kafka};

use std::time::{Duration, Instant};

/// The host binary's allocator (`host/src/main.rs`), so the benches time what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use assignor_host::sandbox::{
    CallOutcome, CallTag, CheckSummary, CompiledModule, Metering, PoolConfig, Sandbox,
    SandboxLimits, check_positioned,
};
use assignor_sdk::abi::v2;
pub use assignor_sdk::abi::v2::Inputs;
use assignor_sdk::{Answer, AssignRequest};

/// The native path of a built-in, doing exactly what a sandboxed call of an ABI v2 module
/// does minus the sandbox: lay out and encode the request (the host), decode it with its index
/// (the guest), assign, encode the answer (guest), decode it back to names (host) and run the
/// same output checks. The layout is worked out afresh each call; the sandbox keeps it for the
/// next rebalance of an unchanged group, so this path does a little more host work.
pub fn native(name: &str, request: &AssignRequest) -> (Answer, CheckSummary) {
    native_with(name, request, Inputs::default(), false)
}

/// [`native`] with the optional inputs a module declares (the sticky pair reads racks and user
/// data, so the host sends them) and the cooperative rule checked when `cooperative`.
pub fn native_with(
    name: &str,
    request: &AssignRequest,
    inputs: Inputs,
    cooperative: bool,
) -> (Answer, CheckSummary) {
    let layout = v2::Layout::new(request).expect("layout");
    let extras = v2::Extras { inputs, lag: None };
    let input = v2::encode_request(request, &layout, extras).expect("encode");
    let decoded = v2::decode_request(&input).expect("decode");
    let assignment = match name {
        "range" => assignor_range::assign(&decoded),
        "roundrobin" => assignor_roundrobin::assign(&decoded),
        "uniform" => assignor_uniform::assign(&decoded),
        "sticky" => assignor_sticky::assign(&decoded),
        "cooperative-sticky" => assignor_cooperative_sticky::assign(&decoded),
        other => panic!("no native strategy {other}"),
    }
    .expect("assign");
    let output = assignment.to_v2_bytes().expect("encode");
    drop(decoded);
    let read = v2::read_response(request, &output).expect("a canonical answer");
    let summary = check_positioned(request, &read, &layout, cooperative).expect("valid");
    (read, summary)
}

/// The ABI v2 request bytes the host sends a module that reads no optional input.
pub fn encode_v2(request: &AssignRequest) -> Vec<u8> {
    let layout = v2::Layout::new(request).expect("layout");
    v2::encode_request(request, &layout, v2::Extras::default()).expect("encode")
}

/// What the sandbox does with an ABI v2 answer to `request`: read it back into names and
/// run the output checks by position.
pub fn read_and_check(
    request: &AssignRequest,
    layout: &v2::Layout,
    output: &[u8],
) -> (Answer, CheckSummary) {
    let read = v2::read_response(request, output).expect("a canonical answer");
    let summary = check_positioned(request, &read, layout, false).expect("valid");
    (read, summary)
}

/// A sandbox with production settings except limits raised so the largest grid cells fit
/// (1 GiB memory, 256 MiB input/output, unbounded fuel); fuel is still metered, so the
/// overhead is the production one. The grid reports which cells need the raised limits.
pub fn bench_sandbox() -> Sandbox {
    let pool = PoolConfig {
        max_instances: 4,
        max_memory_bytes: 1 << 30,
        ..PoolConfig::default()
    };
    let limits = SandboxLimits {
        memory_bytes: 1 << 30,
        fuel: u64::MAX / 4,
        timeout: Duration::from_secs(120),
        max_input_bytes: 256 << 20,
        max_output_bytes: 256 << 20,
        ..SandboxLimits::default()
    };
    Sandbox::new(pool, limits).expect("sandbox")
}

/// `probe` (a sandbox with raised limits, [`bench_sandbox`]) under the host's default limits
/// if a call of `module` on `request` fits them, else under the defaults with only the
/// exceeded limits raised (memory to the next power of two above the peak, input and output
/// to the next power of two above their size, fuel to twice the use), and a note saying which
/// (`defaults` when none). The handle shares `probe`'s engine, so `module` runs on it as is.
pub fn sandbox_for(
    probe: &Sandbox,
    module: &CompiledModule,
    name: &str,
    request: &AssignRequest,
) -> (Sandbox, String) {
    let stats = call(probe, module, name, request).stats;
    let mut limits = SandboxLimits::default();
    let mut raised = Vec::new();
    if stats.peak_memory_bytes > limits.memory_bytes {
        limits.memory_bytes = stats.peak_memory_bytes.next_power_of_two();
        raised.push(format!("memory {} MiB", limits.memory_bytes >> 20));
    }
    if stats.input_bytes > limits.max_input_bytes {
        limits.max_input_bytes = stats.input_bytes.next_power_of_two();
        raised.push(format!("input {} MiB", limits.max_input_bytes >> 20));
    }
    if stats.output_bytes > limits.max_output_bytes {
        limits.max_output_bytes = stats.output_bytes.next_power_of_two();
        raised.push(format!("output {} MiB", limits.max_output_bytes >> 20));
    }
    if stats.fuel_used > limits.fuel {
        limits.fuel = stats.fuel_used * 2;
        limits.timeout = limits.timeout.max(Duration::from_secs(60));
        raised.push(format!("fuel {:.0}e9", limits.fuel as f64 / 1e9));
    }
    let note = if raised.is_empty() {
        "defaults".to_string()
    } else {
        raised.join(", ")
    };
    (
        probe.with_limits(limits).expect("limits fit the pool"),
        note,
    )
}

/// One eager `Sandbox::assign` of `module` (named `name` in logs), which must succeed.
pub fn call(
    sandbox: &Sandbox,
    module: &CompiledModule,
    name: &str,
    request: &AssignRequest,
) -> CallOutcome {
    call_with(sandbox, module, name, request, false)
}

/// [`call`], checked under the cooperative rule when `cooperative`.
pub fn call_with(
    sandbox: &Sandbox,
    module: &CompiledModule,
    name: &str,
    request: &AssignRequest,
    cooperative: bool,
) -> CallOutcome {
    let tag = CallTag {
        module: name,
        version: 0,
    };
    sandbox
        .assign(module, tag, request, cooperative)
        .unwrap_or_else(|e| panic!("{name}: wasm call failed: {e:?}"))
}

/// Times `f` until `budget` is spent (at least `min`, at most `max` runs, after one warm-up)
/// and returns the sorted durations.
pub fn sample(budget: Duration, min: usize, max: usize, mut f: impl FnMut()) -> Vec<Duration> {
    f();
    let started = Instant::now();
    let mut times = Vec::new();
    while times.len() < min || (times.len() < max && started.elapsed() < budget) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    times
}

/// Times `a` and `b` alternately (one run of each per round, after one warm-up each) until
/// `budget` is spent, within `min..=max` rounds, so both see the same machine load; returns
/// both sorted.
pub fn sample_pair(
    budget: Duration,
    min: usize,
    max: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (Vec<Duration>, Vec<Duration>) {
    a();
    b();
    let started = Instant::now();
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    while ta.len() < min || (ta.len() < max && started.elapsed() < budget) {
        let t = Instant::now();
        a();
        ta.push(t.elapsed());
        let t = Instant::now();
        b();
        tb.push(t.elapsed());
    }
    ta.sort();
    tb.sort();
    (ta, tb)
}

/// One cell timed both ways: [`native_with`] and [`call_with`] interleaved ([`sample_pair`]
/// with `budget`, `min`, `max`), the wasm answer checked equal to the native one.
pub struct Compared {
    /// The native path's times, sorted.
    pub native: Vec<Duration>,
    /// The sandboxed call's times, sorted.
    pub wasm: Vec<Duration>,
    /// The last sandboxed call.
    pub outcome: CallOutcome,
}

/// Runs [`Compared`]'s comparison of `name` on `request`.
#[allow(
    clippy::too_many_arguments,
    reason = "a cell's whole description, passed as is"
)]
pub fn compare(
    sandbox: &Sandbox,
    module: &CompiledModule,
    name: &str,
    request: &AssignRequest,
    inputs: Inputs,
    cooperative: bool,
    (budget, min, max): (Duration, usize, usize),
) -> Compared {
    let (expected, _) = native_with(name, request, inputs, cooperative);
    let mut last = None;
    let (native, wasm) = sample_pair(
        budget,
        min,
        max,
        || {
            std::hint::black_box(native_with(name, request, inputs, cooperative));
        },
        || last = Some(call_with(sandbox, module, name, request, cooperative)),
    );
    let outcome = last.expect("ran");
    assert_eq!(outcome.answer, expected, "{name}: wasm and native agree");
    Compared {
        native,
        wasm,
        outcome,
    }
}

pub fn median(times: &[Duration]) -> Duration {
    times[times.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Builds a crate of the workspace to wasm in `target/wasm-bench` (a target dir of its own, so
/// it never waits on or invalidates the bench's build) and returns that directory. `args` go
/// after `cargo build --target wasm32-unknown-unknown`. The bench's own `CARGO_*` variables
/// and `RUSTFLAGS` are cleared: they describe the host build, not a wasm one.
pub fn build_wasm(args: &[&str], what: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let target_dir = root.join("target/wasm-bench");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .current_dir(root)
        .args(["build", "--target", "wasm32-unknown-unknown"])
        .args(args)
        .arg("--target-dir")
        .arg(&target_dir);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if (key.starts_with("CARGO_") && key != "CARGO_HOME") || key == "RUSTFLAGS" {
            command.env_remove(key);
        }
    }
    let status = command.status().expect("cargo");
    assert!(status.success(), "building {what} failed");
    target_dir.join("wasm32-unknown-unknown")
}

/// The CPU metering asked for: `--metering <fuel|epoch>` (or `--metering=...`), else the
/// environment variable `env`, else fuel (the shipped default).
pub fn metering(args: &[String], env: &str) -> Metering {
    let text = flag(args, "--metering").or_else(|| std::env::var(env).ok());
    text.map_or(Metering::Fuel, |t| {
        t.parse()
            .unwrap_or_else(|e| panic!("--metering / {env}: {e}"))
    })
}

/// The value after `name` (`name value` or `name=value`).
pub fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == name {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(name)?.strip_prefix('=').map(str::to_owned)
        }
    })
}

/// `base` (the benches' fuel-metered sandbox), or an engine with the same pool and limits and
/// `metering` when that differs: metering is fixed per engine.
pub fn metered(base: Sandbox, metering: Metering) -> Sandbox {
    if base.metering() == metering {
        return base;
    }
    Sandbox::new_metered(base.pool().clone(), base.limits().clone(), metering).expect("sandbox")
}
