//! The built-in `uniform` and `range` on Apache Kafka's `ServerSideAssignorBenchmark` shape,
//! next to Kafka's own `UniformAssignor` and `RangeAssignor` timed on the same cell in the same
//! run (`support::kafka`): partitions = members x 10, spread evenly over 10 / 100 / 1000
//! topics, 10,000, 1,000 and 100 members, HOMOGENEOUS and HETEROGENEOUS subscriptions (Kafka's
//! `min(5, members)` contiguous buckets of members and topics), no racks.
//!
//! - FULL: nobody owns anything.
//! - INCREMENTAL (labelled as such; `--full-only` skips it): `members - 1` members assigned
//!   first, natively, their answer fed back as each one's `previous_assignment`, then a member
//!   joins (all topics, or member `members - 2`'s bucket), as Kafka's benchmark does (Kafka's
//!   side too, with its own first assignment). The built-in `range` is Kafka's client
//!   RangeAssignor and ignores previous assignments, so for it INCREMENTAL is FULL on a
//!   larger request; Kafka's server-side `RangeAssignor` keeps what members own.
//!
//! Each cell runs both paths, interleaved so both see the same machine load:
//! - wasm: `Sandbox::assign` on the embedded built-in, fresh instance per call: encode the
//!   request, instantiate, write, run, read, decode, check;
//! - native: the same crate called directly with the same encode/decode/checks around it
//!   (`support::native`).
//!
//! A cell runs under the host's default limits when it fits them, else with only the exceeded
//! limits raised (the `limits` column). Then Kafka's assignor runs on the cell in a JVM of its
//! own: its call alone, ours end to end, so the ratio is a strict comparison. Prints a Markdown
//! table and appends every cell, Kafka's time with it, to `target/bench/server_side.jsonl`
//! (`support::jsonl`).
//!
//! `cargo bench -p assignor-host --bench server_side` (`-- --quick` for one sample per cell,
//! `-- --full-only` without INCREMENTAL, `-- --max-members 1000` for the small cells only;
//! `BENCH_KAFKA=off` without Kafka's column). About 20 minutes, Kafka's 72 cells included.

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::time::Duration;

use assignor_host::sandbox::{CompiledModule, Sandbox};
use assignor_sdk::AssignRequest;
use support::kafka::{self, KafkaCell, KafkaTime};
use support::*;

/// Kafka's `partitionsToMemberRatio` for these cells.
const PER_MEMBER: usize = 10;

/// (members, topics): Kafka's grid at 10 partitions per member, largest first.
const SHAPES: [(usize, usize); 9] = [
    (10_000, 10),
    (10_000, 100),
    (10_000, 1_000),
    (1_000, 10),
    (1_000, 100),
    (1_000, 1_000),
    (100, 10),
    (100, 100),
    (100, 1_000),
];

const STRATEGIES: [&str; 2] = ["uniform", "range"];

/// One cell of the table.
#[derive(Clone, Copy)]
struct Shape {
    strategy: &'static str,
    subscription: Subscription,
    assignment: Assignment,
    members: usize,
    topics: usize,
}

impl Shape {
    /// Every cell, FULL first, the largest groups first.
    fn all(full_only: bool, max_members: usize) -> Vec<Shape> {
        let assignments: &[Assignment] = if full_only {
            &[Assignment::Full]
        } else {
            &[Assignment::Full, Assignment::Incremental]
        };
        let mut shapes = Vec::new();
        for &assignment in assignments {
            for strategy in STRATEGIES {
                for subscription in [Subscription::Homogeneous, Subscription::Heterogeneous] {
                    for (members, topics) in SHAPES {
                        if members <= max_members {
                            shapes.push(Shape {
                                strategy,
                                subscription,
                                assignment,
                                members,
                                topics,
                            });
                        }
                    }
                }
            }
        }
        shapes
    }

    fn partitions(&self) -> usize {
        self.members * PER_MEMBER
    }

    /// The request: a grid group, or for INCREMENTAL the group after the first assignment
    /// (done natively) with a member joining.
    fn request(&self) -> AssignRequest {
        let (m, t, s) = (self.members, self.topics, self.subscription);
        let mut request = match self.assignment {
            Assignment::Full => grid_group_with(m, PER_MEMBER, t, s),
            Assignment::Incremental => {
                incremental_group(m, PER_MEMBER, t, s, |r| native(self.strategy, r).0)
            }
        };
        request.protocol_name = self.strategy.into();
        request
    }

    /// Kafka's counterpart: its server-side assignor of the same name on the same cell.
    fn kafka(&self) -> Option<KafkaCell> {
        KafkaCell::server(
            self.strategy,
            self.members,
            self.topics,
            PER_MEMBER,
            self.subscription,
            self.assignment,
        )
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let full_only = args.iter().any(|a| a == "--full-only");
    let max_members = args
        .iter()
        .position(|a| a == "--max-members")
        .and_then(|i| args.get(i + 1))
        .map_or(usize::MAX, |v| v.parse().expect("--max-members N"));
    let run = Run::start_with("server_side", quick);
    let probe = bench_sandbox();
    let modules: Vec<CompiledModule> = STRATEGIES
        .iter()
        .map(|name| {
            let wasm = assignor_host::builtins::builtin(name)
                .expect("built in")
                .wasm;
            probe.load(wasm).expect("module loads")
        })
        .collect();

    println!(
        "# Kafka's ServerSideAssignorBenchmark shape: partitions = members x {PER_MEMBER}, no racks\n"
    );
    if let Some(load) = support::report::jsonl::load_average() {
        println!("Machine load (1-minute average) at the start: {load:.2} on 2 cores.\n");
    }
    println!(
        "| strategy | subscription | assignment | members | topics | partitions | native ms | wasm ms | wasm/native | native best | wasm best | Kafka ms | wasm / Kafka | within 2x | fuel | limits |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|");
    let mut verdicts = Vec::new();
    for shape in Shape::all(full_only, max_members) {
        let module = &modules[STRATEGIES
            .iter()
            .position(|s| *s == shape.strategy)
            .unwrap()];
        let cell = Measured::run(&probe, module, shape, quick);
        cell.print();
        cell.record(&run);
        if let Some(k) = &cell.kafka {
            verdicts.push(within_2x(k, cell.wasm_median()));
        }
    }
    println!("\n{}", kafka::legend());
    let within = verdicts.iter().filter(|v| **v == "yes").count();
    println!(
        "Within 2x of Kafka (wasm median <= 2 x Kafka's median): {within} of {} cells timed on Kafka.",
        verdicts.len()
    );
    if let Some(load) = support::report::jsonl::load_average() {
        println!("Machine load (1-minute average) at the end: {load:.2}.");
    }
    if let Some(path) = run.path() {
        println!("Results appended to {}.", path.display());
    }
}

/// One cell, both paths.
struct Measured {
    shape: Shape,
    native: Vec<Duration>,
    wasm: Vec<Duration>,
    fuel: u64,
    peak_memory: u64,
    request_bytes: u64,
    limits: String,
    /// Kafka's counterpart, timed right after ours.
    kafka: Option<KafkaTime>,
}

impl Measured {
    /// Runs the cell: native and wasm interleaved, under the default limits if it fits them;
    /// checks both paths give the same answer; then Kafka's counterpart.
    fn run(probe: &Sandbox, module: &CompiledModule, shape: Shape, quick: bool) -> Measured {
        let name = shape.strategy;
        let request = shape.request();
        let (sandbox, limits) = sandbox_for(probe, module, name, &request);
        let rounds = match (quick, shape.members >= 10_000) {
            (true, _) => (Duration::ZERO, 1, 1),
            (false, true) => (Duration::from_secs(4), 7, 41),
            (false, false) => (Duration::from_secs(2), 11, 101),
        };
        let Compared {
            native,
            wasm,
            outcome,
        } = compare(
            &sandbox,
            module,
            name,
            &request,
            Inputs::default(),
            false,
            rounds,
        );
        Measured {
            shape,
            native,
            wasm,
            fuel: outcome.stats.fuel_used,
            peak_memory: outcome.stats.peak_memory_bytes,
            request_bytes: outcome.stats.input_bytes,
            limits,
            kafka: shape.kafka().and_then(|k| k.time(quick)),
        }
    }

    fn wasm_median(&self) -> f64 {
        ms(median(&self.wasm))
    }

    fn print(&self) {
        let s = &self.shape;
        let (n, w) = (ms(median(&self.native)), self.wasm_median());
        let k = self.kafka.as_ref();
        let (kafka_ms, ratio) = (kafka::cell(k), kafka::ratio_cell(k, w));
        let verdict = k.map_or("-", |k| within_2x(k, w));
        println!(
            "| {} | {} | {} | {} | {} | {} | {n:.2} | {w:.2} | {:.2} | {:.2} | {:.2} | {kafka_ms} | {ratio} | {verdict} | {:.0}M | {} |",
            s.strategy,
            s.subscription,
            s.assignment.as_str(),
            s.members,
            s.topics,
            s.partitions(),
            w / n,
            ms(self.native[0]),
            ms(self.wasm[0]),
            self.fuel as f64 / 1e6,
            self.limits,
        );
    }

    /// Appends both paths to the run's results file.
    fn record(&self, run: &Run) {
        let s = &self.shape;
        for (path, times) in [("native", &self.native), ("wasm", &self.wasm)] {
            let wasm = path == "wasm";
            run.record(&Cell {
                strategy: s.strategy.into(),
                members: Some(s.members),
                topics: Some(s.topics),
                partitions: Some(s.partitions()),
                subscription: Some(s.subscription.as_str()),
                assignment: Some(s.assignment.as_str()),
                path: Some(path),
                metering: wasm.then_some("fuel"),
                fuel: wasm.then_some(self.fuel),
                peak_memory_bytes: wasm.then_some(self.peak_memory),
                request_bytes: Some(self.request_bytes),
                limits: wasm.then(|| self.limits.clone()),
                kafka: self.kafka.clone(),
                ..Cell::timed(times)
            });
        }
    }
}

/// `yes` when the wasm median is at most twice Kafka's median (the target), else `no`.
fn within_2x(kafka: &KafkaTime, wasm_ms: f64) -> &'static str {
    if wasm_ms <= 2.0 * kafka.median_ms {
        "yes"
    } else {
        "no"
    }
}
