//! One rebalance's assignor call for a small group (3 members, 12 partitions: two topics of
//! six), fresh instance, marshalling and checks included (target: <= 50 us), next to the
//! native path and the registry's `run` (which adds resolving the version and recording
//! health).
//!
//! Each figure is also appended to `target/bench/small_group.jsonl` (`support::jsonl`): the
//! median and best of criterion's measurement samples (mean per call of each sample's batch).
//! No Kafka figure has this shape.
//!
//! `cargo bench -p assignor-host --bench small_group`

mod support;

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use assignor_host::registry::{Registry, RegistryConfig};
use assignor_host::sandbox::{CallTag, PoolConfig, Sandbox, SandboxLimits};
use criterion::{Bencher, Criterion, criterion_group, criterion_main};
use support::*;

fn small_group(c: &mut Criterion) {
    let request = grid_group(3, 4, 2);
    assert_eq!(
        request
            .topics
            .iter()
            .map(|t| t.partition_count)
            .sum::<i32>(),
        12
    );
    let sandbox = Sandbox::new(PoolConfig::default(), SandboxLimits::default()).unwrap();
    let registry = Registry::open(sandbox.clone(), None, RegistryConfig::default()).unwrap();
    let run = Run::start("small_group");
    let samples = RefCell::new(Vec::new());
    for name in ["range", "roundrobin"] {
        let module = sandbox
            .load(assignor_host::builtins::builtin(name).unwrap().wasm)
            .unwrap();
        let tag = CallTag {
            module: name,
            version: 0,
        };
        c.bench_function(&format!("small_group/{name}/sandbox_assign"), |b| {
            timed(b, &samples, || {
                black_box(sandbox.assign(&module, tag, &request, false).unwrap());
            })
        });
        record(&run, &samples, name, "sandbox_assign", "wasm");
        c.bench_function(&format!("small_group/{name}/registry_run"), |b| {
            timed(b, &samples, || {
                black_box(registry.run(name, None, &request, false).unwrap());
            })
        });
        record(&run, &samples, name, "registry_run", "wasm");
        c.bench_function(&format!("small_group/{name}/native"), |b| {
            timed(b, &samples, || {
                black_box(native(name, &request));
            })
        });
        record(&run, &samples, name, "native", "native");
    }
}

/// Criterion's measurement samples per benchmark (its default, set so [`record`] knows how many
/// of the batches it saw were measured: the last ones, after the warm-up batches).
const SAMPLE_SIZE: usize = 100;

/// `b.iter` that also keeps each batch's mean per call in `samples`.
fn timed(b: &mut Bencher<'_>, samples: &RefCell<Vec<Duration>>, mut f: impl FnMut()) {
    b.iter_custom(|iters| {
        let started = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = started.elapsed();
        let per_call = Duration::from_secs_f64(elapsed.as_secs_f64() / iters.max(1) as f64);
        samples.borrow_mut().push(per_call);
        elapsed
    });
}

/// Appends the benchmark just run to the results file: the median and best of criterion's
/// measurement samples. Nothing is written when it did not run (filtered out) or ran in test
/// mode (one batch).
fn record(run: &Run, samples: &RefCell<Vec<Duration>>, name: &str, call: &str, path: &'static str) {
    let mut batches = std::mem::take(&mut *samples.borrow_mut());
    if batches.len() < SAMPLE_SIZE {
        return;
    }
    let mut measured = batches.split_off(batches.len() - SAMPLE_SIZE);
    measured.sort();
    run.record(&Cell {
        cell: format!("small group, {call}"),
        strategy: name.into(),
        members: Some(3),
        topics: Some(2),
        partitions: Some(12),
        subscription: Some(Subscription::Homogeneous.as_str()),
        assignment: Some("full"),
        path: Some(path),
        metering: (path == "wasm").then_some("fuel"),
        ..Cell::timed(&measured)
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = small_group
}
criterion_main!(benches);
