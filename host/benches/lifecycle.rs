//! Module life-cycle costs (targets: upload -> active <= 300 ms for a 1 MiB module; restart
//! with precompiled cache <= 20 ms), and the compiler options behind them (issue 12):
//!
//! - options: for each compiler (Cranelift at `Speed`, `SpeedAndSize`, `None`; Winch), load and
//!   smoke call (`Sandbox::compile`, `prepare` and one call on the smoke group: what an upload
//!   does besides hashing, persisting and swapping, a few ms) of the built-in `range` (~450 KB,
//!   release profile) and of a ~1 MiB module (the same crate built in the dev profile, debug
//!   sections stripped; ~1.5 MB by now), and the call speed of the code each gives: range on 1,000 members x 10
//!   topics x 10 partitions per member; and the 1 MiB module's load by part (compile, ABI
//!   checks, smoke call). Options are interleaved round by round, so each sees the same
//!   machine phases.
//! - upload -> active: `Registry::upload` from bytes to the version serving calls, as the host
//!   does it (baseline code first): size and hash checks, Winch compile, ABI checks, smoke
//!   call, persist to redb, swap; and upload -> optimised, until the background Cranelift
//!   compile has swapped in the optimised code.
//! - restart: `Registry::open` on a store holding those modules plus the built-ins, all read
//!   from the precompiled cache (which holds optimised code only).
//!
//! `cargo bench -p assignor-host --bench lifecycle` (`LIFECYCLE_ROUNDS`, default 7, sets the
//! rounds of the options table). The 1 MiB module is built on first run into
//! `target/wasm-bench` (about a minute and a half).

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use assignor_host::registry::{Registry, RegistryConfig, UploadOptions, smoke_request};
use assignor_host::sandbox::{
    CallTag, Compiler, Metering, OptLevel, PoolConfig, Sandbox, SandboxLimits, Tier,
};
use assignor_host::store::Store;
use support::*;

const TAG: CallTag<'static> = CallTag {
    module: "range",
    version: 1,
};

fn main() {
    let range = assignor_host::builtins::builtin("range")
        .unwrap()
        .wasm
        .to_vec();
    let big = big_module();
    let rounds: usize = std::env::var("LIFECYCLE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    options(&range, &big, rounds);

    let sandbox = Sandbox::new(PoolConfig::default(), SandboxLimits::default()).unwrap();
    println!();
    println!("| what | module | median | best | runs |");
    println!("|---|---:|---:|---:|---:|");
    upload(&sandbox, &range, &big, rounds);
    restart(&sandbox, &range, &big);
}

/// The options table: load + smoke call per compiler and module, and range's call time.
fn options(range: &[u8], big: &[u8], rounds: usize) {
    let compilers = [
        (
            "Cranelift `Speed` (the optimised tier)",
            Compiler::Cranelift(OptLevel::Speed),
        ),
        (
            "Cranelift `SpeedAndSize`",
            Compiler::Cranelift(OptLevel::SpeedAndSize),
        ),
        ("Cranelift `None`", Compiler::Cranelift(OptLevel::None)),
        ("Winch (the baseline tier)", Compiler::Winch),
    ];
    let pool = PoolConfig {
        max_instances: 2,
        ..PoolConfig::default()
    };
    let sandboxes: Vec<Sandbox> = compilers
        .iter()
        .map(|(_, compiler)| {
            Sandbox::with_compiler(
                pool.clone(),
                SandboxLimits::default(),
                Metering::Fuel,
                *compiler,
            )
            .unwrap()
        })
        .collect();
    let smoke = smoke_request("range");
    let group = grid_group(1_000, 10, 10);
    let modules = [range, big];
    let mut loads = vec![[Vec::new(), Vec::new()]; compilers.len()];
    // The 1 MiB module's load + smoke by part: compile, ABI checks (link, instantiate, the
    // version and describe calls), smoke call.
    let mut parts = vec![[Vec::new(), Vec::new(), Vec::new()]; compilers.len()];
    let mut calls = vec![Vec::new(); compilers.len()];
    let mut fuel = vec![0; compilers.len()];
    let compiled: Vec<_> = sandboxes.iter().map(|s| s.load(range).unwrap()).collect();
    for round in 0..=rounds {
        for (i, sandbox) in sandboxes.iter().enumerate() {
            for (m, wasm) in modules.iter().enumerate() {
                let started = Instant::now();
                let module = sandbox.compile(wasm).unwrap();
                let compiled_at = started.elapsed();
                let module = sandbox.prepare(module).unwrap();
                let checked_at = started.elapsed();
                sandbox.assign(&module, TAG, &smoke, false).unwrap();
                let done = started.elapsed();
                // Round 0 warms up.
                if round > 0 {
                    loads[i][m].push(done);
                    if m == 1 {
                        parts[i][0].push(compiled_at);
                        parts[i][1].push(checked_at - compiled_at);
                        parts[i][2].push(done - checked_at);
                    }
                }
            }
            for _ in 0..5 {
                let outcome = sandbox.assign(&compiled[i], TAG, &group, false).unwrap();
                fuel[i] = outcome.stats.fuel_used;
                if round > 0 {
                    calls[i].push(outcome.stats.duration);
                }
            }
        }
    }
    println!(
        "| compiler | load + smoke, range (release), {:.0} KB | load + smoke, range (dev, stripped), {:.0} KB | range call, 1,000 members x 10,000 partitions | fuel of that call |",
        range.len() as f64 / 1e3,
        big.len() as f64 / 1e3
    );
    println!("|---|---:|---:|---:|---:|");
    let cell = |times: &mut Vec<Duration>| {
        times.sort();
        format!("{:.1} ms (best {:.1})", ms(median(times)), ms(times[0]))
    };
    for (i, (label, _)) in compilers.iter().enumerate() {
        let [small, large] = &mut loads[i];
        println!(
            "| {label} | {} | {} | {} | {} |",
            cell(small),
            cell(large),
            cell(&mut calls[i]),
            fuel[i]
        );
    }
    println!();
    println!("| compiler | 1 MiB module: compile | ABI checks | smoke call |");
    println!("|---|---:|---:|---:|");
    for (i, (label, _)) in compilers.iter().enumerate() {
        let [compile, checks, smoke] = &mut parts[i];
        println!(
            "| {label} | {} | {} | {} |",
            cell(compile),
            cell(checks),
            cell(smoke)
        );
    }
}

/// `Registry::upload` as the host does it: to active (baseline code), and to optimised.
fn upload(sandbox: &Sandbox, range: &[u8], big: &[u8], rounds: usize) {
    // A store on disk, no cache: every upload compiles. Distinct names so none is a duplicate
    // of an earlier upload.
    let dir = tempfile::tempdir().unwrap();
    let registry = open(sandbox, dir.path(), false);
    let modules = [("range (release)", range), ("range (dev, stripped)", big)];
    let mut active = [Vec::new(), Vec::new()];
    let mut optimized = [Vec::new(), Vec::new()];
    let mut n = 0;
    for round in 0..=rounds {
        for (m, (_, wasm)) in modules.iter().enumerate() {
            n += 1;
            let name = format!("m{n}");
            let started = Instant::now();
            let outcome = registry
                .upload(&name, wasm, UploadOptions::default())
                .expect("upload");
            let to_active = started.elapsed();
            assert!(outcome.active);
            let version = registry.resolve(&name, None).unwrap();
            registry.finish_optimizing();
            let to_optimized = started.elapsed();
            assert_eq!(version.compiled().tier(), Tier::Optimized);
            if round > 0 {
                active[m].push(to_active);
                optimized[m].push(to_optimized);
            }
        }
    }
    for (m, (label, wasm)) in modules.iter().enumerate() {
        active[m].sort();
        optimized[m].sort();
        row(
            "upload -> active (baseline code)",
            label,
            wasm.len(),
            &active[m],
        );
        row(
            "upload -> optimised code in",
            label,
            wasm.len(),
            &optimized[m],
        );
    }
}

/// `Registry::open` with every module read from the precompiled cache.
fn restart(sandbox: &Sandbox, range: &[u8], big: &[u8]) {
    let builtins = assignor_host::builtins::BUILTINS.len();
    let all: Vec<(&str, &[u8])> = vec![("a", range), ("b", big)];
    for (label, uploads) in [
        (format!("{builtins} built-ins"), &all[..0]),
        (
            format!("{builtins} built-ins + range + the 1 MiB module"),
            &all[..],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        {
            let registry = open(sandbox, dir.path(), true);
            for (name, wasm) in uploads {
                registry
                    .upload(name, wasm, UploadOptions::default())
                    .unwrap();
            }
            // Dropping the registry finishes the optimising compiles, which fill the cache.
        }
        let mut times = Vec::new();
        for _ in 0..30 {
            let started = Instant::now();
            let registry = open(sandbox, dir.path(), true);
            times.push(started.elapsed());
            // Every version came from the precompiled cache, as optimised code; dropping is
            // not timed.
            for module in registry.list() {
                for v in registry.versions(&module.name).unwrap() {
                    assert!(v.meta.precompiled);
                    let version = registry.resolve(&module.name, Some(v.version)).unwrap();
                    assert_eq!(version.compiled().tier(), Tier::Optimized);
                }
            }
        }
        times.sort();
        let bytes = builtin_bytes() + uploads.iter().map(|(_, w)| w.len()).sum::<usize>();
        row("restart, precompiled cache", &label, bytes, &times);
    }
}

fn builtin_bytes() -> usize {
    assignor_host::builtins::BUILTINS
        .iter()
        .map(|b| b.wasm.len())
        .sum()
}

fn open(sandbox: &Sandbox, dir: &Path, cache: bool) -> Registry {
    let config = RegistryConfig {
        cache_dir: cache.then(|| dir.join("cache")),
        ..RegistryConfig::default()
    };
    Registry::open(sandbox.clone(), Some(Store::open(dir).unwrap()), config).unwrap()
}

fn row(what: &str, module: &str, bytes: usize, times: &[Duration]) {
    println!(
        "| {what} | {module}, {:.0} KB | {:.2} ms | {:.2} ms | {} |",
        bytes as f64 / 1e3,
        ms(median(times)),
        ms(times[0]),
        times.len()
    );
}

/// `assignor-range` built in the dev profile (unoptimized: much more code) with its DWARF
/// sections removed: a real ~1.2 MiB module.
fn big_module() -> Vec<u8> {
    let built = build_wasm(&["-p", "assignor-range"], "the dev-profile range module");
    strip_debug_sections(&std::fs::read(built.join("debug/assignor_range.wasm")).unwrap())
}

/// Drops custom sections named `.debug*` from a wasm module.
fn strip_debug_sections(wasm: &[u8]) -> Vec<u8> {
    fn leb(bytes: &[u8], mut i: usize) -> (usize, usize) {
        let (mut value, mut shift) = (0usize, 0);
        loop {
            let b = bytes[i];
            i += 1;
            value |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                return (value, i);
            }
        }
    }
    let mut out = wasm[..8].to_vec();
    let mut i = 8;
    while i < wasm.len() {
        let start = i;
        let id = wasm[i];
        let (len, body) = leb(wasm, i + 1);
        i = body + len;
        if id == 0 {
            let (name_len, name) = leb(wasm, body);
            if wasm[name..name + name_len].starts_with(b".debug") {
                continue;
            }
        }
        out.extend_from_slice(&wasm[start..i]);
    }
    out
}
