//! Module life-cycle costs (targets: upload -> active <= 300 ms for a 1 MiB module; restart
//! with precompiled cache <= 20 ms):
//!
//! - upload -> active: `Registry::upload` from bytes to the version serving calls: size and
//!   hash checks, Cranelift compile, ABI checks, smoke call, persist to redb, swap. Measured for
//!   the built-in `range` module (~300 KB, release profile) and for a ~1.2 MiB module (the same
//!   crate built in the dev profile, debug sections stripped: ~0.9 MB of code).
//! - restart: `Registry::open` on a store holding those modules plus the two built-ins, all
//!   read from the precompiled cache.
//!
//! `cargo bench -p assignor-host --bench lifecycle`. The 1 MiB module is built on first run
//! into `target/wasm-bench` (about a minute and a half).

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use assignor_host::registry::{Registry, RegistryConfig, UploadOptions};
use assignor_host::store::Store;
use support::*;

fn main() {
    let sandbox = assignor_host::sandbox::Sandbox::new(
        assignor_host::sandbox::PoolConfig::default(),
        assignor_host::sandbox::SandboxLimits::default(),
    )
    .unwrap();
    let range = assignor_host::builtins::builtin("range")
        .unwrap()
        .wasm
        .to_vec();
    let big = big_module();
    println!("| what | module | median | best | runs |");
    println!("|---|---:|---:|---:|---:|");

    for (label, wasm) in [("range (release)", &range), ("range (dev, stripped)", &big)] {
        // A store on disk, no cache: every upload compiles. Distinct names so none is a
        // duplicate of an earlier upload.
        let dir = tempfile::tempdir().unwrap();
        let registry = open(&sandbox, dir.path(), false);
        let mut n = 0;
        let times = sample(Duration::from_secs(5), 5, 20, || {
            n += 1;
            let outcome = registry
                .upload(&format!("m{n}"), wasm, UploadOptions::default())
                .expect("upload");
            assert!(outcome.active);
        });
        row("upload -> active", label, wasm.len(), &times);
    }

    let builtins = assignor_host::builtins::BUILTINS.len();
    let all: Vec<(&str, &Vec<u8>)> = vec![("a", &range), ("b", &big)];
    for (label, uploads) in [
        (format!("{builtins} built-ins"), &all[..0]),
        (
            format!("{builtins} built-ins + range + the 1.2 MB module"),
            &all[..],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        {
            let registry = open(&sandbox, dir.path(), true);
            for (name, wasm) in uploads {
                registry
                    .upload(name, wasm, UploadOptions::default())
                    .unwrap();
            }
        }
        let mut times = Vec::new();
        for _ in 0..30 {
            let started = Instant::now();
            let registry = open(&sandbox, dir.path(), true);
            times.push(started.elapsed());
            // Every version came from the precompiled cache; dropping is not timed.
            for module in registry.list() {
                let versions = registry.versions(&module.name).unwrap();
                assert!(versions.iter().all(|v| v.meta.precompiled));
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

fn open(sandbox: &assignor_host::sandbox::Sandbox, dir: &Path, cache: bool) -> Registry {
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
