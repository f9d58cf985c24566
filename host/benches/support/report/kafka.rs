//! Apache Kafka's own assignors timed on this machine kind, as data: the figures of
//! `shared/reference/kafka-java-assignor-figures.md`, so a bench cell with a Kafka counterpart
//! can print Kafka's figure beside its own.
//!
//! What a figure is: the median of 30 calls of the assignor alone (`assignor.assign(groupSpec,
//! describer)` server side, `assignor.assign(cluster, subscriptions)` client side), after
//! warm-up, on inputs built as Kafka's `ServerSideAssignorBenchmark` /
//! `ClientSideAssignorBenchmark` build them: partitions = members x 10, spread evenly over the
//! topics, FULL assignment, no racks. Building the group spec, serialising and the
//! coordinator's records are outside it; the benches' figures are end to end (encode,
//! instantiate, run, decode, checks), so a ratio near 1 means the host does its whole call in
//! the time Kafka's assignor takes alone. About 20 % noise (the machine was shared).

use std::fmt;

use super::Subscription;

/// Which of Kafka's benchmarks a figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `group-coordinator`'s assignors (KIP-848), `ServerSideAssignorBenchmark`.
    Server,
    /// The classic protocol's client assignors, `ClientSideAssignorBenchmark`.
    Client,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// One cell of Kafka's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KafkaFigure {
    pub side: Side,
    /// Kafka's class, without its package: `Uniform`, `Range`, `RoundRobin`,
    /// `CooperativeSticky`.
    pub assignor: &'static str,
    pub subscription: Subscription,
    pub members: usize,
    pub topics: usize,
    pub partitions: usize,
    /// Median ms on Apache Kafka 4.0 (`1eb7644349c`).
    pub v4_0: f64,
    /// Median ms on the 4.2 development line, where it was measured (server side only).
    pub v4_2: Option<f64>,
}

impl KafkaFigure {
    /// The lower of the two lines' figures: the one a "within 2x" verdict is held to.
    pub fn best(&self) -> f64 {
        self.v4_2.map_or(self.v4_0, |v| v.min(self.v4_0))
    }

    /// `ours / Kafka`, against the 4.0 figure and, where there is one, the 4.2 line's.
    pub fn ratios(&self, ours_ms: f64) -> (f64, Option<f64>) {
        (ours_ms / self.v4_0, self.v4_2.map(|v| ours_ms / v))
    }
}

impl fmt::Display for KafkaFigure {
    /// `3.97 / 3.64` (4.0 / 4.2 line), or `3.97` where only 4.0 was measured.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.v4_2 {
            Some(v) => write!(f, "{:.2} / {v:.2}", self.v4_0),
            None => write!(f, "{:.2}", self.v4_0),
        }
    }
}

/// `ours / Kafka` as a table cell: `2.3x / 2.5x`, or `2.3x`.
pub fn ratio_cell(figure: &KafkaFigure, ours_ms: f64) -> String {
    match figure.ratios(ours_ms) {
        (a, Some(b)) => format!("{a:.1}x / {b:.1}x"),
        (a, None) => format!("{a:.1}x"),
    }
}

/// The line every bench printing Kafka's figures prints under its table.
pub const LEGEND: &str = "Kafka ms: Apache Kafka's own assignor, timed alone on this machine kind \
    (assign() on prepared inputs, median of 30 calls; 4.0 / 4.2 line where both were measured), \
    from shared/reference/kafka-java-assignor-figures.md. Ours is end to end: encoding the \
    request, instantiating, running, decoding and checking the answer. Ratio = ours / Kafka.";

/// The figure Kafka's server-side benchmark gives `strategy` (`uniform`, `range`) on this
/// shape, if it was measured (FULL assignment only).
pub fn server(
    strategy: &str,
    subscription: Subscription,
    members: usize,
    topics: usize,
    partitions: usize,
) -> Option<&'static KafkaFigure> {
    find(
        Side::Server,
        strategy,
        subscription,
        members,
        topics,
        partitions,
    )
}

/// The figure Kafka's client-side benchmark gives `strategy` (`range`, `roundrobin`,
/// `cooperative-sticky`) on this homogeneous shape, if it was measured.
pub fn client(
    strategy: &str,
    members: usize,
    topics: usize,
    partitions: usize,
) -> Option<&'static KafkaFigure> {
    let homogeneous = Subscription::Homogeneous;
    find(
        Side::Client,
        strategy,
        homogeneous,
        members,
        topics,
        partitions,
    )
}

fn find(
    side: Side,
    strategy: &str,
    subscription: Subscription,
    members: usize,
    topics: usize,
    partitions: usize,
) -> Option<&'static KafkaFigure> {
    let assignor = match strategy {
        "uniform" => "Uniform",
        "range" => "Range",
        "roundrobin" => "RoundRobin",
        "cooperative-sticky" => "CooperativeSticky",
        _ => return None,
    };
    FIGURES.iter().find(|f| {
        f.side == side
            && f.assignor == assignor
            && f.subscription == subscription
            && f.members == members
            && f.topics == topics
            && f.partitions == partitions
    })
}

const fn server_cell(
    assignor: &'static str,
    subscription: Subscription,
    members: usize,
    topics: usize,
    v4_0: f64,
    v4_2: f64,
) -> KafkaFigure {
    KafkaFigure {
        side: Side::Server,
        assignor,
        subscription,
        members,
        topics,
        partitions: members * 10,
        v4_0,
        v4_2: Some(v4_2),
    }
}

const fn client_cell(
    assignor: &'static str,
    members: usize,
    topics: usize,
    v4_0: f64,
) -> KafkaFigure {
    KafkaFigure {
        side: Side::Client,
        assignor,
        subscription: Subscription::Homogeneous,
        members,
        topics,
        partitions: members * 10,
        v4_0,
        v4_2: None,
    }
}

const HOMOGENEOUS: Subscription = Subscription::Homogeneous;
const HETEROGENEOUS: Subscription = Subscription::Heterogeneous;

/// Every figure of the reference file, in its order.
pub const FIGURES: &[KafkaFigure] = &[
    // Server side (group-coordinator), median ms: Kafka 4.0, 4.2 line.
    server_cell("Uniform", HOMOGENEOUS, 10_000, 10, 3.97, 3.64),
    server_cell("Uniform", HOMOGENEOUS, 10_000, 100, 3.40, 3.18),
    server_cell("Uniform", HOMOGENEOUS, 10_000, 1_000, 10.41, 12.80),
    server_cell("Uniform", HOMOGENEOUS, 1_000, 10, 0.78, 0.81),
    server_cell("Uniform", HOMOGENEOUS, 1_000, 100, 0.75, 0.79),
    server_cell("Range", HOMOGENEOUS, 10_000, 10, 3.49, 3.42),
    server_cell("Range", HOMOGENEOUS, 10_000, 100, 7.82, 10.07),
    server_cell("Range", HOMOGENEOUS, 10_000, 1_000, 52.16, 45.12),
    server_cell("Range", HOMOGENEOUS, 1_000, 10, 0.52, 0.54),
    server_cell("Range", HOMOGENEOUS, 1_000, 100, 0.83, 0.87),
    server_cell("Uniform", HETEROGENEOUS, 10_000, 10, 13.14, 44.72),
    server_cell("Uniform", HETEROGENEOUS, 10_000, 100, 32.62, 163.52),
    server_cell("Uniform", HETEROGENEOUS, 10_000, 1_000, 258.88, 315.16),
    server_cell("Uniform", HETEROGENEOUS, 1_000, 10, 1.59, 2.54),
    server_cell("Uniform", HETEROGENEOUS, 1_000, 100, 2.33, 8.63),
    // Client side (classic protocol), homogeneous, median ms, Kafka 4.0.
    client_cell("Range", 100, 10, 0.66),
    client_cell("Range", 100, 100, 2.27),
    client_cell("Range", 1_000, 10, 3.29),
    client_cell("Range", 1_000, 100, 14.98),
    client_cell("Range", 10_000, 10, 45.55),
    client_cell("Range", 10_000, 100, 209.49),
    client_cell("RoundRobin", 100, 10, 0.11),
    client_cell("RoundRobin", 100, 100, 0.62),
    client_cell("RoundRobin", 1_000, 10, 1.13),
    client_cell("RoundRobin", 1_000, 100, 6.24),
    client_cell("RoundRobin", 10_000, 10, 13.44),
    client_cell("RoundRobin", 10_000, 100, 72.42),
    client_cell("CooperativeSticky", 100, 10, 0.13),
    client_cell("CooperativeSticky", 100, 100, 0.25),
    client_cell("CooperativeSticky", 1_000, 10, 1.49),
    client_cell("CooperativeSticky", 1_000, 100, 2.83),
    client_cell("CooperativeSticky", 10_000, 10, 10.75),
    client_cell("CooperativeSticky", 10_000, 100, 23.78),
];
