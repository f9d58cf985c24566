//! Shared by the benches: Kafka-grid groups, the native path of a strategy (the same work the
//! module does, minus the sandbox), timing helpers, and the sandbox the benches run in.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// The host binary's allocator (`host/src/main.rs`), so the benches time what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use assignor_host::sandbox::{CheckSummary, PoolConfig, Sandbox, SandboxLimits, check_positioned};
use assignor_sdk::abi::v2;
use assignor_sdk::{Answer, AssignRequest, Member, Topic};

/// A homogeneous group from Kafka's benchmark grid: `members` consumers all subscribed to
/// `topics` topics holding `members * partitions_per_member` partitions, spread evenly.
/// Member ids look like a Java consumer's (`consumer-<n>-<uuid>`), so strings weigh what they
/// weigh in production; no protocol metadata is attached.
pub fn grid_group(members: usize, partitions_per_member: usize, topics: usize) -> AssignRequest {
    let names: Vec<String> = (0..topics).map(|t| format!("topic-{t:04}")).collect();
    // One subscription list shared by every member, as the coordinator builds them.
    let subscription: std::sync::Arc<[String]> = names.clone().into();
    let per_topic = (members * partitions_per_member).div_ceil(topics) as i32;
    AssignRequest {
        abi_version: 1,
        group_id: "bench-group".into(),
        generation_id: 1,
        protocol_type: "consumer".into(),
        protocol_name: "range".into(),
        now_ms: 0,
        params: Default::default(),
        members: (0..members)
            .map(|i| Member {
                member_id: format!("consumer-{i:05}-6f1c2a8e-4d7b-4b1e-9a3f-2c5d8e7f{i:04x}"),
                client_id: format!("consumer-{i}"),
                client_host: "/10.0.0.1".into(),
                topics: subscription.clone(),
                owned_generation: -1,
                ..Member::default()
            })
            .collect(),
        topics: names
            .iter()
            .map(|name| Topic {
                name: name.clone(),
                partition_count: per_topic,
                partition_racks: Vec::new(),
            })
            .collect(),
        ..AssignRequest::default()
    }
}

/// The native path of a built-in, doing exactly what a sandboxed call of an ABI v2 module
/// does minus the sandbox: lay out and encode the request (the host), decode it with its index
/// (the guest), assign, encode the answer (guest), decode it back to names (host) and run the
/// same output checks. The layout is worked out afresh each call; the sandbox keeps it for the
/// next rebalance of an unchanged group, so this path does a little more host work.
pub fn native(name: &str, request: &AssignRequest) -> (Answer, CheckSummary) {
    let layout = v2::Layout::new(request).expect("layout");
    let input = v2::encode_request(request, &layout, v2::Extras::default()).expect("encode");
    let decoded = v2::decode_request(&input).expect("decode");
    let assignment = match name {
        "range" => assignor_range::assign(&decoded),
        "roundrobin" => assignor_roundrobin::assign(&decoded),
        "uniform" => assignor_uniform::assign(&decoded),
        other => panic!("no native strategy {other}"),
    }
    .expect("assign");
    let output = assignment.to_v2_bytes().expect("encode");
    drop(decoded);
    read_and_check(request, &layout, &output)
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
