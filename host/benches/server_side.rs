//! The built-in `uniform` and `range` on Apache Kafka's `ServerSideAssignorBenchmark` shape,
//! next to Kafka's own assignors timed on this machine kind (`support::kafka`):
//! partitions = members x 10, spread evenly over 10 / 100 / 1000 topics, 10,000, 1,000 and 100
//! members (Kafka's figures cover 10,000 x 10 / 100 / 1000 and 1,000 x 10 / 100), HOMOGENEOUS
//! and HETEROGENEOUS subscriptions (Kafka's `min(5, members)` contiguous buckets of members
//! and topics), no racks.
//!
//! - FULL: nobody owns anything (the cells Kafka's figures have).
//! - INCREMENTAL (labelled as such; `--full-only` skips it): `members - 1` members assigned
//!   first, natively, their answer fed back as each one's `previous_assignment`, then a member
//!   joins (all topics, or member `members - 2`'s bucket), as Kafka's benchmark does. Kafka
//!   has no INCREMENTAL figure on this machine; the built-in `range` is Kafka's client
//!   RangeAssignor and ignores previous assignments, so for it INCREMENTAL is FULL on a
//!   larger request.
//!
//! Each cell runs both paths, interleaved so both see the same machine load:
//! - wasm: `Sandbox::assign` on the embedded built-in, fresh instance per call: encode the
//!   request, instantiate, write, run, read, decode, check;
//! - native: the same crate called directly with the same encode/decode/checks around it
//!   (`support::native`).
//!
//! A cell runs under the host's default limits when it fits them, else with only the exceeded
//! limits raised (the `limits` column). Kafka's figure is its assignor call alone; ours is end
//! to end, so the ratio is a strict comparison. Prints a Markdown table and appends every cell
//! to `target/bench/server_side.jsonl` (`support::jsonl`).
//!
//! `cargo bench -p assignor-host --bench server_side` (`-- --quick` for one sample per cell,
//! `-- --full-only` without INCREMENTAL, `-- --max-members 1000` for the small cells only).

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::time::Duration;

use assignor_host::sandbox::{CompiledModule, Sandbox};
use assignor_sdk::AssignRequest;
use support::kafka::{self, KafkaFigure};
use support::*;

/// Kafka's `partitionsToMemberRatio` for its figures.
const PER_MEMBER: usize = 10;

/// (members, topics): Kafka's figures' cells (10,000 x 10 / 100 / 1000, 1,000 x 10 / 100),
/// then cells of Kafka's grid it has no figure for here, so each topic count has a curve.
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
    /// Every cell, FULL first, in the order of Kafka's figures.
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

    /// Kafka's figure for the cell (FULL only: Kafka's INCREMENTAL was not timed here).
    fn figure(&self) -> Option<&'static KafkaFigure> {
        match self.assignment {
            Assignment::Full => kafka::server(
                self.strategy,
                self.subscription,
                self.members,
                self.topics,
                self.partitions(),
            ),
            Assignment::Incremental => None,
        }
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
        "| strategy | subscription | assignment | members | topics | partitions | native ms | wasm ms | wasm/native | native best | wasm best | Kafka ms (4.0 / 4.2) | wasm / Kafka (4.0 / 4.2) | within 2x | fuel | limits |"
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
        if let Some(k) = shape.figure() {
            verdicts.push(within_2x(k, cell.wasm_median()));
        }
    }
    println!("\n{}", kafka::LEGEND);
    let within = verdicts.iter().filter(|v| **v == "yes").count();
    println!(
        "Within 2x of Kafka (wasm median <= 2 x Kafka's figure, both lines): {within} of {} cells with a Kafka figure.",
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
}

impl Measured {
    /// Runs the cell: native and wasm interleaved, under the default limits if it fits them;
    /// checks both paths give the same answer.
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
        }
    }

    fn wasm_median(&self) -> f64 {
        ms(median(&self.wasm))
    }

    fn print(&self) {
        let s = &self.shape;
        let (n, w) = (ms(median(&self.native)), self.wasm_median());
        let (kafka_ms, ratio, verdict) = match s.figure() {
            Some(k) => (k.to_string(), kafka::ratio_cell(k, w), within_2x(k, w)),
            None => ("-".into(), "-".into(), "-"),
        };
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
                kafka: s.figure(),
                ..Cell::timed(times)
            });
        }
    }
}

/// `yes` when the wasm median is within twice both of Kafka's figures, else which line it is
/// within twice of, else `no`.
fn within_2x(figure: &KafkaFigure, wasm_ms: f64) -> &'static str {
    let of_4_0 = wasm_ms <= 2.0 * figure.v4_0;
    let of_4_2 = figure.v4_2.is_none_or(|v| wasm_ms <= 2.0 * v);
    match (of_4_0, of_4_2) {
        (true, true) => "yes",
        (true, false) => "of 4.0 only",
        (false, true) => "of 4.2 line only",
        (false, false) => "no",
    }
}
