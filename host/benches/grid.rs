//! Wasm versus native, same strategy, same input, marshalling and checks included, on part of
//! Kafka's benchmark grid: members {100, 1000, 10000} x partitions per member {5, 10, 50} x
//! topics {10, 100}, homogeneous subscriptions, full assignment (no owned partitions).
//!
//! - wasm: `Sandbox::assign` on the embedded built-in, a fresh instance per call: encode the
//!   request, instantiate, write, run, read, decode, check.
//! - native: the same crate called directly with the same encode/decode/check around it
//!   (`support::native`).
//!
//! Native and wasm runs alternate, so both see the same machine load. Prints a Markdown table
//! (median and best times with their ratios, request size, peak guest memory, fuel) and the
//! fuel rate (fuel units per millisecond of guest time, from the best times) used to calibrate
//! the default fuel budget. Cells marked `*` exceed the default limits
//! (`SandboxLimits::default()`: memory, input, fuel) and ran with the bench's raised limits.
//! Every cell is one of Kafka's `ClientSideAssignorBenchmark` (members, partitions per member
//! and topics are its parameters), so after ours Apache Kafka's own `RangeAssignor` /
//! `RoundRobinAssignor` runs on it (`support::kafka`: its assignor call alone, in a JVM of its
//! own; ours end to end) and the row prints its median and the ratio wasm / Kafka. Every cell,
//! Kafka's time with it, is also appended to `target/bench/grid.jsonl` (`support::jsonl`).
//!
//! `cargo bench -p assignor-host --bench grid` (`-- --quick` for one sample per cell;
//! `BENCH_KAFKA=off` without Kafka's column).
//!
//! CPU metering: fuel + epoch deadline by default, as a host ships; `-- --metering epoch` (or
//! `GRID_METERING=epoch`; the flag wins) runs the same grid on an epoch-only engine
//! (`[sandbox] metering = "epoch"`), so the ratio columns can be compared. Its fuel column
//! reads `-` and no fuel rate is printed: nothing is counted. `-- --max-members 100` keeps the
//! cells up to that many members (a smoke run of the bench itself, not a measurement).

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::time::Duration;

use assignor_host::sandbox::{CallTag, Metering, SandboxLimits};
use support::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let metering = metering(&args, "GRID_METERING");
    let max_members = flag(&args, "--max-members").map_or(usize::MAX, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("--max-members {v}: not a number"))
    });
    let sandbox = metered(bench_sandbox(), metering);
    let run = Run::start_with("grid", quick || max_members != usize::MAX);
    let defaults = SandboxLimits::default();
    println!("metering: {metering}\n");
    println!(
        "| strategy | members | partitions/member | topics | partitions | native ms | wasm ms \
         | wasm/native | native best | wasm best | best ratio | request | peak memory | fuel \
         | Kafka client ms | wasm / Kafka |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut rates = Vec::new();
    for name in ["range", "roundrobin"] {
        let wasm = assignor_host::builtins::builtin(name)
            .expect("built-in")
            .wasm;
        let module = sandbox.load(wasm).expect("module loads");
        for members in [100, 1_000, 10_000]
            .into_iter()
            .filter(|&m| m <= max_members)
        {
            for per_member in [5, 10, 50] {
                for topics in [10, 100] {
                    let request = grid_group(members, per_member, topics);
                    let partitions = members * per_member;
                    // Few samples for the big cells: a full run stays within minutes.
                    let rounds = match (quick, partitions) {
                        (true, _) => (Duration::ZERO, 1, 1),
                        (false, p) if p >= 100_000 => (Duration::from_secs(2), 3, 5),
                        _ => (Duration::from_millis(1500), 5, 200),
                    };
                    let Compared {
                        native: native_times,
                        wasm: wasm_times,
                        outcome,
                    } = compare(
                        &sandbox,
                        &module,
                        name,
                        &request,
                        Inputs::default(),
                        false,
                        rounds,
                    );
                    let (n, w) = (median(&native_times), median(&wasm_times));
                    let (nb, wb) = (native_times[0], wasm_times[0]);
                    let stats = outcome.stats;
                    let over = stats.peak_memory_bytes > defaults.memory_bytes
                        || stats.input_bytes > defaults.max_input_bytes
                        || stats.fuel_used > defaults.fuel;
                    let fuel = match metering {
                        Metering::Fuel => format!("{:.1}M", stats.fuel_used as f64 / 1e6),
                        Metering::Epoch => "-".to_owned(),
                    };
                    if metering == Metering::Fuel && wb > Duration::from_millis(5) {
                        rates.push(stats.fuel_used as f64 / ms(wb));
                    }
                    let kafka = kafka::KafkaCell::client(
                        name,
                        members,
                        topics,
                        per_member,
                        Subscription::Homogeneous,
                        Assignment::Full,
                    )
                    .and_then(|k| k.time(quick));
                    let (kafka_ms, ratio) = (
                        kafka::cell(kafka.as_ref()),
                        kafka::ratio_cell(kafka.as_ref(), ms(w)),
                    );
                    println!(
                        "| {name} | {members} | {per_member} | {topics} | {partitions} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} | {:.1} KB | {:.1} MiB{} | {fuel} | {kafka_ms} | {ratio} |",
                        ms(n),
                        ms(w),
                        w.as_secs_f64() / n.as_secs_f64(),
                        ms(nb),
                        ms(wb),
                        wb.as_secs_f64() / nb.as_secs_f64(),
                        stats.input_bytes as f64 / 1e3,
                        stats.peak_memory_bytes as f64 / (1 << 20) as f64,
                        if over { " *" } else { "" },
                    );
                    for (path, times) in [("native", &native_times), ("wasm", &wasm_times)] {
                        let wasm = path == "wasm";
                        run.record(&Cell {
                            strategy: name.into(),
                            members: Some(members),
                            topics: Some(topics),
                            partitions: Some(partitions),
                            subscription: Some(Subscription::Homogeneous.as_str()),
                            assignment: Some("full"),
                            path: Some(path),
                            metering: wasm.then_some(metering.as_str()),
                            fuel: (wasm && metering == Metering::Fuel).then_some(stats.fuel_used),
                            peak_memory_bytes: wasm.then_some(stats.peak_memory_bytes),
                            request_bytes: Some(stats.input_bytes),
                            limits: wasm
                                .then(|| if over { "raised" } else { "defaults" }.to_string()),
                            kafka: kafka.clone(),
                            ..Cell::timed(times)
                        });
                    }
                }
            }
        }
    }
    small_group(&sandbox, quick, &run, metering);
    println!("\n{}", kafka::legend());
    rates.sort_by(f64::total_cmp);
    if !rates.is_empty() {
        println!(
            "\nfuel per ms of wasm call (best time, cells over 5 ms): min {:.2}M, median {:.2}M, max {:.2}M",
            rates[0] / 1e6,
            rates[rates.len() / 2] / 1e6,
            rates[rates.len() - 1] / 1e6
        );
    }
}

/// The small-group call (3 members, 12 partitions), as the mean of the best of five batches of
/// 2,000 calls: on a shared machine the best batch is the closest to an idle machine, next to
/// `small_group.rs`'s criterion figures taken under whatever load there is.
fn small_group(
    sandbox: &assignor_host::sandbox::Sandbox,
    quick: bool,
    run: &Run,
    metering: Metering,
) {
    let request = grid_group(3, 4, 2);
    let batches = if quick { 1 } else { 5 };
    println!("\n| small group, 3 members x 12 partitions | native us | wasm us (fresh instance) |");
    println!("|---|---:|---:|");
    for name in ["range", "roundrobin"] {
        let wasm = assignor_host::builtins::builtin(name)
            .expect("built-in")
            .wasm;
        let module = sandbox.load(wasm).expect("module loads");
        let tag = CallTag {
            module: name,
            version: 0,
        };
        // Each batch's mean per call, sorted.
        let batch_means = |f: &mut dyn FnMut()| {
            let mut means: Vec<Duration> = (0..batches)
                .map(|_| {
                    let started = std::time::Instant::now();
                    for _ in 0..2_000 {
                        f();
                    }
                    started.elapsed() / 2_000
                })
                .collect();
            means.sort();
            means
        };
        let native_means = batch_means(&mut || {
            std::hint::black_box(native(name, &request));
        });
        let wasm_means = batch_means(&mut || {
            std::hint::black_box(sandbox.assign(&module, tag, &request, false).expect("call"));
        });
        println!(
            "| {name} | {:.1} | {:.1} |",
            ms(native_means[0]) * 1e3,
            ms(wasm_means[0]) * 1e3
        );
        for (path, means) in [("native", &native_means), ("wasm", &wasm_means)] {
            run.record(&Cell {
                cell: "small group, mean of a batch of 2,000 calls".into(),
                strategy: name.into(),
                members: Some(3),
                topics: Some(2),
                partitions: Some(12),
                subscription: Some(Subscription::Homogeneous.as_str()),
                assignment: Some("full"),
                path: Some(path),
                metering: (path == "wasm").then_some(metering.as_str()),
                ..Cell::timed(means)
            });
        }
    }
}
