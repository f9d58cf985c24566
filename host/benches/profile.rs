//! Not a measurement: one call of one strategy on one grid group, repeated for a while, so a
//! profiler can attribute its time. What the other benches leave unexplained is looked at here.
//!
//! ```sh
//! ASSIGNOR_HOST_PERFMAP=1 perf record -g -F 2000 -o /tmp/perf.data -- \
//!   target/release/deps/profile-<hash> uniform 10000 10 10 wasm 10
//! perf report -i /tmp/perf.data --no-children
//! ```
//!
//! Arguments: strategy, members, partitions per member, topics, `wasm` or `native`, seconds
//! (default `uniform 10000 10 10 wasm 10`), and optionally a `.wasm` file to run instead of
//! the embedded built-in; `PROFILE_SUBSCRIPTION=heterogeneous` gives the members Kafka's five
//! buckets of subscriptions. `ASSIGNOR_HOST_PERFMAP` makes the engine write `/tmp/perf-<pid>.map`;
//! the built-ins carry no name section, so for the guest's function names build a copy with
//! one and pass it:
//!
//! ```sh
//! CARGO_PROFILE_WASM_STRIP=none CARGO_PROFILE_WASM_DEBUG=1 cargo build \
//!   --target wasm32-unknown-unknown --profile wasm -p assignor-uniform --target-dir target/wasm-profile
//! ```

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::time::{Duration, Instant};

use assignor_host::sandbox::CallTag;
use support::*;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let strategy = arg(0, "uniform");
    let number = |i: usize, default: &str| -> usize {
        arg(i, default)
            .parse()
            .unwrap_or_else(|_| panic!("argument {i} is not a number"))
    };
    let (members, per_member, topics) = (number(1, "10000"), number(2, "10"), number(3, "10"));
    let path = arg(4, "wasm");
    let seconds = number(5, "10");
    // PROFILE_SUBSCRIPTION=heterogeneous: Kafka's five buckets of subscriptions.
    let subscription = match std::env::var("PROFILE_SUBSCRIPTION").ok().as_deref() {
        None | Some("homogeneous") => Subscription::Homogeneous,
        Some("heterogeneous") => Subscription::Heterogeneous,
        Some(other) => {
            panic!("PROFILE_SUBSCRIPTION: `{other}` is not homogeneous or heterogeneous")
        }
    };
    let mut request = grid_group_with(members, per_member, topics, subscription);
    request.protocol_name = strategy.clone();
    // PROFILE_METERING=epoch: the same call on an epoch-only engine (what fuel costs).
    let sandbox = match std::env::var("PROFILE_METERING").ok().as_deref() {
        None | Some("fuel") => bench_sandbox(),
        Some(other) => {
            let base = bench_sandbox();
            let metering = other
                .parse()
                .unwrap_or_else(|e| panic!("PROFILE_METERING: {e}"));
            assignor_host::sandbox::Sandbox::new_metered(
                base.pool().clone(),
                base.limits().clone(),
                metering,
            )
            .expect("sandbox")
        }
    };
    let wasm = match args.get(6) {
        Some(path) => std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")),
        None => assignor_host::builtins::builtin(&strategy)
            .expect("a built-in strategy")
            .wasm
            .to_vec(),
    };
    let module = sandbox.load(&wasm).expect("module loads");
    let tag = CallTag {
        module: &strategy,
        version: 0,
    };
    let mut times = Vec::new();
    let mut fuel = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds as u64) {
        let t = Instant::now();
        match path.as_str() {
            "native" => {
                std::hint::black_box(native(&strategy, &request));
            }
            "wasm" => {
                let outcome = sandbox.assign(&module, tag, &request, false).expect("call");
                fuel = outcome.stats.fuel_used;
                std::hint::black_box(outcome);
            }
            other => panic!("path {other}: `wasm` or `native`"),
        }
        times.push(t.elapsed());
    }
    times.sort();
    // Microseconds with a decimal for small calls, milliseconds otherwise.
    let (unit, scale) = if median(&times) < Duration::from_millis(1) {
        ("us", 1e3)
    } else {
        ("ms", 1.0)
    };
    let at = |q: f64| ms(times[((times.len() - 1) as f64 * q) as usize]) * scale;
    println!(
        "{strategy} {members}x{per_member}x{topics} {path}: {} calls, median {:.2} {unit}, best \
         {:.2} {unit} (p10 {:.2}, p25 {:.2}, p75 {:.2}, p90 {:.2}), fuel {fuel}",
        times.len(),
        at(0.5),
        at(0.0),
        at(0.1),
        at(0.25),
        at(0.75),
        at(0.9),
    );
}
