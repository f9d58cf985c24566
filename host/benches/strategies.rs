//! Wasm versus native for every strategy Kafka ships a counterpart of: `range`, `roundrobin`,
//! `uniform`, `sticky` and `cooperative-sticky`, homogeneous and heterogeneous (Kafka's five
//! buckets), FULL and INCREMENTAL (`support::incremental_group`), 100 / 1,000 / 10,000
//! members x 10 partitions each, on 10 and 100 topics. `grid.rs` covers more shapes for range
//! and roundrobin; this covers every strategy on the shapes Kafka's figures have.
//!
//! Both paths do the whole call and run interleaved (`support::sample_pair`): wasm is
//! `Sandbox::assign` on the embedded built-in (encode, instantiate, run, decode, checks),
//! native the same crate with the same encode / decode / checks around it, given the same
//! optional inputs the module declares (the sticky pair reads racks and user data) and checked
//! under the cooperative rule where the strategy is cooperative. Each cell checks both answer
//! alike. A cell runs under the host's default limits when it fits them (`limits` column).
//! Then Kafka's counterpart runs on the same cell in a JVM of its own (`support::kafka`): the
//! server-side `UniformAssignor` for `uniform`, the Java client's `RangeAssignor`,
//! `RoundRobinAssignor`, `StickyAssignor` and `CooperativeStickyAssignor` for the rest, on the
//! input of Kafka's `ClientSideAssignorBenchmark` (INCREMENTAL as that benchmark describes it:
//! `support::kafka`'s program says where it differs). Its median is printed beside ours with
//! the ratio.
//!
//! `cargo bench -p assignor-host --bench strategies` (`-- --quick` for one sample per cell,
//! `-- --max-members 1000`, `-- --strategy sticky` for one strategy, `-- --metering epoch` on an
//! epoch-only engine; `BENCH_KAFKA=off` without Kafka's column, `BENCH_KAFKA_BUDGET_S=60` to
//! bound Kafka's slow cells, its sticky pair on heterogeneous subscriptions, where one call
//! takes 13-61 s at 10,000 members FULL. A budget cannot shorten one call: Kafka's
//! `CooperativeStickyAssignor` on heterogeneous INCREMENTAL cells takes 12.7 s a call at 1,000
//! members x 100 topics and far more at 10,000, so a run that must end within the hour takes
//! `BENCH_KAFKA_MAX_MEMBERS=1000` too). Every cell is appended to
//! `target/bench/strategies.jsonl`.

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::time::Duration;

use assignor_host::sandbox::{CompiledModule, Metering, Sandbox};
use assignor_sdk::AssignRequest;
use support::kafka::{self, KafkaCell};
use support::*;

const STRATEGIES: [&str; 5] = [
    "range",
    "roundrobin",
    "uniform",
    "sticky",
    "cooperative-sticky",
];

/// Kafka's benchmarks' partitions per member.
const PER_MEMBER: usize = 10;

/// A cell's ratio at most this is the target (`wasm/native <= 1.3`).
const TARGET: f64 = 1.3;

/// One cell.
#[derive(Clone, Copy)]
struct Shape {
    strategy: &'static str,
    subscription: Subscription,
    assignment: Assignment,
    members: usize,
    topics: usize,
}

impl Shape {
    fn cooperative(&self) -> bool {
        self.strategy == "cooperative-sticky"
    }

    /// The request: a grid group, or for INCREMENTAL the group after a first native
    /// assignment by the same strategy with one member joining.
    fn request(&self, inputs: Inputs) -> AssignRequest {
        let (m, t, s) = (self.members, self.topics, self.subscription);
        let mut request = match self.assignment {
            Assignment::Full => grid_group_with(m, PER_MEMBER, t, s),
            Assignment::Incremental => incremental_group(m, PER_MEMBER, t, s, |r| {
                native_with(self.strategy, r, inputs, self.cooperative()).0
            }),
        };
        request.protocol_name = self.strategy.into();
        request
    }

    /// Kafka's counterpart: the coordinator's `UniformAssignor` for `uniform` (the Java client
    /// has none), the client's assignor of the same name for the rest.
    fn kafka(&self) -> Option<KafkaCell> {
        let (m, t, s, a) = (
            self.members,
            self.topics,
            self.subscription,
            self.assignment,
        );
        match self.strategy {
            "uniform" => KafkaCell::server("uniform", m, t, PER_MEMBER, s, a),
            name => KafkaCell::client(name, m, t, PER_MEMBER, s, a),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let metering = metering(&args, "STRATEGIES_METERING");
    let max_members =
        flag(&args, "--max-members").map_or(usize::MAX, |v| v.parse().expect("--max-members N"));
    let only = flag(&args, "--strategy");
    let probe = metered(bench_sandbox(), metering);
    let run = Run::start_with("strategies", quick || max_members != usize::MAX);
    println!("metering: {metering}\n");
    if let Some(load) = report::jsonl::load_average() {
        println!("Machine load (1-minute average) at the start: {load:.2} on 2 cores.\n");
    }
    println!(
        "| strategy | subscription | assignment | members | topics | native ms | wasm ms | wasm/native | native best | wasm best | best ratio | fuel | limits | Kafka ms | wasm / Kafka |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|");
    let mut ratios: Vec<(&str, f64)> = Vec::new();
    for strategy in STRATEGIES {
        if only.as_deref().is_some_and(|o| o != strategy) {
            continue;
        }
        let wasm = assignor_host::builtins::builtin(strategy)
            .expect("built-in")
            .wasm;
        let module = probe.load(wasm).expect("module loads");
        for assignment in [Assignment::Full, Assignment::Incremental] {
            for subscription in [Subscription::Homogeneous, Subscription::Heterogeneous] {
                for members in [100, 1_000, 10_000] {
                    for topics in [10, 100] {
                        if members > max_members {
                            continue;
                        }
                        let shape = Shape {
                            strategy,
                            subscription,
                            assignment,
                            members,
                            topics,
                        };
                        let ratio = measure(&probe, &module, shape, quick, metering, &run);
                        ratios.push((strategy, ratio));
                    }
                }
            }
        }
    }
    summary(&ratios);
    println!("\n{}", kafka::legend());
    if let Some(load) = report::jsonl::load_average() {
        println!("Machine load (1-minute average) at the end: {load:.2}.");
    }
}

/// Runs one cell, prints its row, records both paths; returns the median ratio wasm/native.
fn measure(
    probe: &Sandbox,
    module: &CompiledModule,
    shape: Shape,
    quick: bool,
    metering: Metering,
    run: &Run,
) -> f64 {
    let name = shape.strategy;
    let (inputs, cooperative) = (module.inputs(), shape.cooperative());
    let request = shape.request(inputs);
    let (sandbox, limits) = sandbox_for(probe, module, name, &request);
    let rounds = match (quick, shape.members >= 10_000) {
        (true, _) => (Duration::ZERO, 1, 1),
        (false, true) => (Duration::from_secs(3), 5, 21),
        (false, false) => (Duration::from_millis(1500), 9, 101),
    };
    let Compared {
        native: native_times,
        wasm: wasm_times,
        outcome,
    } = compare(
        &sandbox,
        module,
        name,
        &request,
        inputs,
        cooperative,
        rounds,
    );
    let (n, w) = (median(&native_times), median(&wasm_times));
    let (nb, wb) = (native_times[0], wasm_times[0]);
    let ratio = w.as_secs_f64() / n.as_secs_f64();
    let fuel = match metering {
        Metering::Fuel => format!("{:.1}M", outcome.stats.fuel_used as f64 / 1e6),
        Metering::Epoch => "-".to_owned(),
    };
    let kafka = shape.kafka().and_then(|k| k.time(quick));
    let (kafka_ms, vs_kafka) = (
        kafka::cell(kafka.as_ref()),
        kafka::ratio_cell(kafka.as_ref(), ms(w)),
    );
    println!(
        "| {name} | {} | {} | {} | {} | {:.3} | {:.3} | {ratio:.2} | {:.3} | {:.3} | {:.2} | {fuel} | {limits} | {kafka_ms} | {vs_kafka} |",
        shape.subscription,
        shape.assignment.as_str(),
        shape.members,
        shape.topics,
        ms(n),
        ms(w),
        ms(nb),
        ms(wb),
        wb.as_secs_f64() / nb.as_secs_f64(),
    );
    for (path, times) in [("native", &native_times), ("wasm", &wasm_times)] {
        let wasm = path == "wasm";
        run.record(&Cell {
            strategy: name.into(),
            members: Some(shape.members),
            topics: Some(shape.topics),
            partitions: Some(shape.members * PER_MEMBER),
            subscription: Some(shape.subscription.as_str()),
            assignment: Some(shape.assignment.as_str()),
            path: Some(path),
            metering: wasm.then_some(metering.as_str()),
            fuel: (wasm && metering == Metering::Fuel).then_some(outcome.stats.fuel_used),
            peak_memory_bytes: wasm.then_some(outcome.stats.peak_memory_bytes),
            request_bytes: Some(outcome.stats.input_bytes),
            limits: wasm.then(|| limits.clone()),
            kafka: kafka.clone(),
            ..Cell::timed(times)
        });
    }
    ratio
}

/// Per strategy and overall: the median ratio, the worst, and the cells within the target.
fn summary(ratios: &[(&str, f64)]) {
    println!("\n| strategy | cells | median wasm/native | worst | cells <= {TARGET} |");
    println!("|---|---:|---:|---:|---:|");
    let row = |label: &str, mut values: Vec<f64>| {
        if values.is_empty() {
            return;
        }
        values.sort_by(f64::total_cmp);
        let within = values.iter().filter(|r| **r <= TARGET).count();
        println!(
            "| {label} | {} | {:.2} | {:.2} | {within} |",
            values.len(),
            values[values.len() / 2],
            values[values.len() - 1],
        );
    };
    for strategy in STRATEGIES {
        row(
            strategy,
            ratios
                .iter()
                .filter(|(s, _)| *s == strategy)
                .map(|(_, r)| *r)
                .collect(),
        );
    }
    row("all", ratios.iter().map(|(_, r)| *r).collect());
}
