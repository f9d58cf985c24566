//! One rebalance's assignor call for a small group (3 members, 12 partitions: two topics of
//! six), fresh instance, marshalling and checks included (target: <= 50 us), next to the
//! native path and the registry's `run` (which adds resolving the version and recording
//! health).
//!
//! `cargo bench -p assignor-host --bench small_group`

mod support;

use std::hint::black_box;
use std::time::Duration;

use assignor_host::registry::{Registry, RegistryConfig};
use assignor_host::sandbox::{CallTag, PoolConfig, Sandbox, SandboxLimits};
use criterion::{Criterion, criterion_group, criterion_main};
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
    for name in ["range", "roundrobin"] {
        let module = sandbox
            .load(assignor_host::builtins::builtin(name).unwrap().wasm)
            .unwrap();
        let tag = CallTag {
            module: name,
            version: 0,
        };
        c.bench_function(&format!("small_group/{name}/sandbox_assign"), |b| {
            b.iter(|| black_box(sandbox.assign(&module, tag, &request, false).unwrap()))
        });
        c.bench_function(&format!("small_group/{name}/registry_run"), |b| {
            b.iter(|| black_box(registry.run(name, None, &request, false).unwrap()))
        });
        c.bench_function(&format!("small_group/{name}/native"), |b| {
            b.iter(|| black_box(native(name, &request)))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = small_group
}
criterion_main!(benches);
