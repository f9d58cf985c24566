//! `uniform` on Kafka's JMH shape for it (`ServerSideAssignorBenchmark`, UNIFORM, HOMOGENEOUS,
//! FULL): 10,000 members x 10 partitions per member (100,000 partitions) x {10, 100, 1000}
//! topics. The target (docs/numbers.md): 10,000 members x 100,000 partitions, full
//! assignment, in wasm, <= 10 ms median (Kafka's Java assignor: ~3-4 ms, assignor call only).
//!
//! Three tables:
//! 1. End to end, native and wasm interleaved: `Sandbox::assign` on the embedded built-in (fresh
//!    instance, encode, write, run, read, decode, checks) against the same crate called
//!    natively with the same encode/decode/checks around it. Each cell runs under the host's
//!    default limits when it fits them; a cell that does not is run with only the exceeded
//!    limits raised, and the table says which. Apache Kafka's `UniformAssignor`, timed on the
//!    same shape right after ours (`support::kafka`: its assignor call alone, ours end to
//!    end), is printed beside it, and the cells are appended to `target/bench/uniform.jsonl`.
//! 2. Where the time goes, phase by phase, natively and inside the sandbox. Natively each phase
//!    is timed on its own. In wasm the phases come from a copy of the module built with the
//!    `probes` feature (extra exports that stop after decoding; after indexing; after the
//!    builder; after building the `Assignment`), called like `assignor_assign` in a fresh
//!    instance; each phase is the difference between consecutive probes.
//! 3. Decoding the same group under each encoding: ABI v2 (what the built-in is served), ABI v1,
//!    and v1's structs as arrays instead of maps, or without each member's own copy of the
//!    subscription.
//!
//! Every path speaks ABI v2 as the built-in does: the host lays the request out and encodes it,
//! the guest decodes it with its index and answers by index.
//!
//! `cargo bench -p assignor-host --bench uniform` (`-- --quick` for one sample per cell). The
//! probe module is built on first run into `target/wasm-bench` (about a minute).

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::time::{Duration, Instant};

use assignor_host::sandbox::{CompiledModule, Sandbox, check_positioned};
use assignor_sdk::{Answer, AssignRequest};
use support::*;
use wasmtime::{Linker, Module, Store, TypedFunc};

/// Kafka's grid for the target: members, partitions per member, topics.
const CELLS: [(usize, usize, usize); 3] = [(10_000, 10, 10), (10_000, 10, 100), (10_000, 10, 1000)];

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let wasm = assignor_host::builtins::builtin("uniform")
        .expect("uniform is built in")
        .wasm;
    let probes = Probes::new(&build_probe_module());
    let run = Run::start_with("uniform", quick);
    let probe = bench_sandbox();
    let module = probe.load(wasm).expect("module loads");
    let groups: Vec<AssignRequest> = CELLS
        .iter()
        .map(|&(m, p, t)| {
            let mut request = grid_group(m, p, t);
            request.protocol_name = "uniform".into();
            request
        })
        .collect();

    println!("## End to end\n");
    println!(
        "| members | topics | partitions | request | native ms | wasm ms | wasm/native | native best | wasm best | peak memory | fuel | limits | Kafka ms | wasm / Kafka |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|");
    for (&(members, per_member, topics), request) in CELLS.iter().zip(&groups) {
        let (sandbox, raised) = sandbox_for(&probe, &module, "uniform", request);
        let expected = native(request);
        let mut last = None;
        let (native_times, wasm_times) = sample_pair(
            budget(quick, topics),
            if quick { 1 } else { 3 },
            if quick { 1 } else { 15 },
            || {
                std::hint::black_box(native(request));
            },
            || last = Some(call(&sandbox, &module, "uniform", request)),
        );
        let outcome = last.expect("ran");
        assert_eq!(outcome.answer, expected, "wasm and native agree");
        let (n, w) = (median(&native_times), median(&wasm_times));
        let partitions = members * per_member;
        let homogeneous = Subscription::Homogeneous;
        let full = Assignment::Full;
        let kafka =
            kafka::KafkaCell::server("uniform", members, topics, per_member, homogeneous, full)
                .and_then(|k| k.time(quick));
        let (kafka_ms, ratio) = (
            kafka::cell(kafka.as_ref()),
            kafka::ratio_cell(kafka.as_ref(), ms(w)),
        );
        println!(
            "| {members} | {topics} | {partitions} | {:.1} MB | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} MiB | {:.0}M | {raised} | {kafka_ms} | {ratio} |",
            outcome.stats.input_bytes as f64 / 1e6,
            ms(n),
            ms(w),
            w.as_secs_f64() / n.as_secs_f64(),
            ms(native_times[0]),
            ms(wasm_times[0]),
            outcome.stats.peak_memory_bytes as f64 / (1 << 20) as f64,
            outcome.stats.fuel_used as f64 / 1e6,
        );
        for (path, times) in [("native", &native_times), ("wasm", &wasm_times)] {
            let wasm = path == "wasm";
            run.record(&Cell {
                strategy: "uniform".into(),
                members: Some(members),
                topics: Some(topics),
                partitions: Some(partitions),
                subscription: Some(homogeneous.as_str()),
                assignment: Some("full"),
                path: Some(path),
                metering: wasm.then_some("fuel"),
                fuel: wasm.then_some(outcome.stats.fuel_used),
                peak_memory_bytes: wasm.then_some(outcome.stats.peak_memory_bytes),
                request_bytes: Some(outcome.stats.input_bytes),
                limits: wasm.then(|| raised.clone()),
                kafka: kafka.clone(),
                ..Cell::timed(times)
            });
        }
    }
    println!("\n{}", kafka::legend());

    println!("\n## Where the time goes (medians, ms)\n");
    println!(
        "| topics | where | host: encode request | guest: decode + free request | index group | builder | build Assignment | encode response | host: decode response + checks | sandbox (instantiate, copy in/out) | total |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (&(_, _, topics), request) in CELLS.iter().zip(&groups) {
        let runs = if quick { 1 } else { runs(topics) };
        let n = NativePhases::median_of(runs, request);
        println!(
            "| {topics} | native | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | - | {:.1} |",
            ms(n.encode),
            ms(n.decode),
            ms(n.index),
            ms(n.owners),
            ms(n.assignment),
            ms(n.respond),
            ms(n.host_decode + n.checks),
            ms(n.total()),
        );
        let (sandbox, _) = sandbox_for(&probe, &module, "uniform", request);
        let w = WasmPhases::median_of(runs, &probes, &sandbox, &module, request);
        println!(
            "| {topics} | wasm | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            ms(n.encode),
            ms(w.decode),
            ms(w.index.saturating_sub(w.decode)),
            ms(w.owners.saturating_sub(w.index)),
            ms(w.assignment.saturating_sub(w.owners)),
            ms(w.export.saturating_sub(w.assignment)),
            ms(n.host_decode + n.checks),
            ms(w.total
                .saturating_sub(w.export + n.encode + n.host_decode + n.checks)),
            ms(w.total),
        );
    }

    println!("\n## Decoding the request under other encodings (medians, ms)\n");
    println!("| topics | encoding | bytes | native decode + free | wasm decode + free |");
    println!("|---:|---|---:|---:|---:|");
    for (&(_, _, topics), request) in CELLS.iter().zip(&groups) {
        let runs = if quick { 1 } else { runs(topics) };
        let mut interned = request.clone();
        for m in &mut interned.members {
            m.topics = Vec::new().into();
        }
        let encodings: [(&str, Vec<u8>); 5] = [
            ("ABI v2: positional, topic table", encode_v2(request)),
            (
                "ABI v1: maps with field names",
                assignor_sdk::encode(request).unwrap(),
            ),
            ("structs as arrays", rmp_serde::to_vec(request).unwrap()),
            (
                "maps, no per-member subscription",
                assignor_sdk::encode(&interned).unwrap(),
            ),
            (
                "arrays, no per-member subscription",
                rmp_serde::to_vec(&interned).unwrap(),
            ),
        ];
        for (label, bytes) in encodings {
            let native = median(&sample(Duration::ZERO, runs, runs, || {
                let decoded = assignor_sdk::abi::v2::decode_request(&bytes)
                    .or_else(|_| assignor_sdk::decode::<AssignRequest>(&bytes))
                    .expect("decodes");
                std::hint::black_box(decoded);
            }));
            let wasm = median(
                &(0..runs)
                    .map(|_| probes.time("probe_decode", &bytes).0)
                    .collect::<Vec<_>>(),
            );
            println!(
                "| {topics} | {label} | {:.1} MB | {:.1} | {:.1} |",
                bytes.len() as f64 / 1e6,
                ms(native),
                ms(wasm)
            );
        }
    }
}

fn budget(quick: bool, topics: usize) -> Duration {
    match (quick, topics) {
        (true, _) => Duration::ZERO,
        (false, t) if t >= 1000 => Duration::from_secs(20),
        _ => Duration::from_secs(6),
    }
}

fn runs(topics: usize) -> usize {
    if topics >= 1000 { 3 } else { 9 }
}

/// The native path: what a sandboxed call does, minus the sandbox (ABI v2 both ways).
fn native(request: &AssignRequest) -> Answer {
    support::native("uniform", request).0
}

/// One native call, phase by phase.
#[derive(Default, Clone, Copy)]
struct NativePhases {
    encode: Duration,
    decode: Duration,
    index: Duration,
    owners: Duration,
    assignment: Duration,
    respond: Duration,
    host_decode: Duration,
    checks: Duration,
}

impl NativePhases {
    fn run(request: &AssignRequest) -> NativePhases {
        let mut p = NativePhases::default();
        let t = Instant::now();
        let layout = assignor_sdk::abi::v2::Layout::new(request).expect("layout");
        let input = assignor_sdk::abi::v2::encode_request(request, &layout, Default::default())
            .expect("encode");
        p.encode = t.elapsed();
        let t = Instant::now();
        let decoded = assignor_sdk::abi::v2::decode_request(&input).expect("decode");
        p.decode = t.elapsed();
        let t = Instant::now();
        let group = assignor_uniform::group::Group::new(&decoded).expect("index");
        p.index = t.elapsed();
        let t = Instant::now();
        let owners = assignor_uniform::owners(&group).expect("builder");
        p.owners = t.elapsed();
        let t = Instant::now();
        let assignment = assignor_uniform::assignment(&group, &owners);
        drop((group, owners));
        p.assignment = t.elapsed();
        let t = Instant::now();
        let output = assignment.to_v2_bytes().expect("encode");
        drop(assignment);
        p.respond = t.elapsed();
        let t = Instant::now();
        drop(decoded);
        p.decode += t.elapsed();
        let t = Instant::now();
        let read = assignor_sdk::abi::v2::read_response(request, &output).expect("canonical");
        p.host_decode = t.elapsed();
        let t = Instant::now();
        check_positioned(request, &read, &layout, false).expect("valid");
        p.checks = t.elapsed();
        p
    }

    /// Per phase, the median over `runs` calls (after one warm-up).
    fn median_of(runs: usize, request: &AssignRequest) -> NativePhases {
        NativePhases::run(request);
        let all: Vec<NativePhases> = (0..runs).map(|_| NativePhases::run(request)).collect();
        let m = |f: fn(&NativePhases) -> Duration| {
            let mut v: Vec<Duration> = all.iter().map(f).collect();
            v.sort();
            median(&v)
        };
        NativePhases {
            encode: m(|p| p.encode),
            decode: m(|p| p.decode),
            index: m(|p| p.index),
            owners: m(|p| p.owners),
            assignment: m(|p| p.assignment),
            respond: m(|p| p.respond),
            host_decode: m(|p| p.host_decode),
            checks: m(|p| p.checks),
        }
    }

    fn total(&self) -> Duration {
        self.encode
            + self.decode
            + self.index
            + self.owners
            + self.assignment
            + self.respond
            + self.host_decode
            + self.checks
    }
}

/// Cumulative wasm times: each probe (and the real export) from the start of the guest call;
/// `total` is the whole `Sandbox::assign`. Medians of separate runs, so on a noisy machine a
/// later probe can come out shorter than an earlier one: differences saturate at zero.
#[derive(Default)]
struct WasmPhases {
    decode: Duration,
    index: Duration,
    owners: Duration,
    assignment: Duration,
    export: Duration,
    total: Duration,
}

impl WasmPhases {
    fn median_of(
        runs: usize,
        probes: &Probes,
        sandbox: &Sandbox,
        module: &CompiledModule,
        request: &AssignRequest,
    ) -> WasmPhases {
        let input = encode_v2(request);
        let time = |export: &str| {
            let mut v: Vec<Duration> = (0..runs).map(|_| probes.time(export, &input).0).collect();
            v.sort();
            median(&v)
        };
        let total = median(&sample(Duration::ZERO, runs, runs, || {
            std::hint::black_box(call(sandbox, module, "uniform", request));
        }));
        WasmPhases {
            decode: time("probe_decode"),
            index: time("probe_index"),
            owners: time("probe_owners"),
            assignment: time("probe_assignment"),
            export: time(assignor_sdk::abi::EXPORT_ASSIGN),
            total,
        }
    }
}

/// The probe build of the module, instantiated on an engine configured like the host's (fuel
/// and epochs on, pooling allocator), with limits large enough for any cell: the probes time
/// the guest's work, not the policy.
struct Probes {
    sandbox: Sandbox,
    module: Module,
}

impl Probes {
    fn new(wasm: &[u8]) -> Probes {
        let sandbox = bench_sandbox();
        let module = sandbox.compile(wasm).expect("probe module compiles");
        Probes { sandbox, module }
    }

    /// Runs `export(ptr, len)` on `input` in a fresh instance; the time covers the export call
    /// only (the input is already in guest memory), as `assignor_assign` in a real call.
    fn time(&self, export: &str, input: &[u8]) -> (Duration, i64) {
        let engine = self.sandbox.engine();
        let mut store = Store::new(engine, ());
        store.set_fuel(u64::MAX / 4).expect("fuel is on");
        store.set_epoch_deadline(1 << 40);
        let mut linker = Linker::new(engine);
        linker
            .func_wrap("assignor", "log", |_: i32, _: i32, _: i32| {})
            .expect("log import");
        let instance = linker
            .instantiate(&mut store, &self.module)
            .expect("instantiates");
        let alloc: TypedFunc<i32, i32> = instance
            .get_typed_func(&mut store, assignor_sdk::abi::EXPORT_ALLOC)
            .expect("alloc");
        let ptr = alloc
            .call(&mut store, input.len() as i32)
            .expect("alloc call");
        let memory = instance
            .get_memory(&mut store, assignor_sdk::abi::EXPORT_MEMORY)
            .expect("memory");
        memory
            .write(&mut store, ptr as usize, input)
            .expect("input fits");
        let run: TypedFunc<(i32, i32), i64> = instance
            .get_typed_func(&mut store, export)
            .expect("probe export");
        let t = Instant::now();
        let result = run
            .call(&mut store, (ptr, input.len() as i32))
            .expect("probe runs");
        let elapsed = t.elapsed();
        assert!(result >= 0, "{export} failed: {result}");
        (elapsed, result)
    }
}

/// `assignor-uniform` with the `probes` feature, built like the embedded module (`wasm`
/// profile, the workspace's 64 KiB stack) into its own target directory.
fn build_probe_module() -> Vec<u8> {
    let built = build_wasm(
        &[
            "-p",
            "assignor-uniform",
            "--features",
            "probes",
            "--profile",
            "wasm",
        ],
        "the uniform probe module",
    );
    std::fs::read(built.join("wasm/assignor_uniform.wasm")).expect("probe module built")
}
