//! Apache Kafka's own assignors, timed in the same run as ours: a bench cell with a Kafka
//! counterpart launches the Java timing program of `host/benches/kafka-assignors/` on the same
//! shape and prints Kafka's median beside its own, so both columns share the machine's state.
//!
//! What Kafka's time is: its assignor call alone (`assign(groupSpec, describer)` server side,
//! `assign(cluster, groupSubscription)` client side) on the input Kafka's
//! `ServerSideAssignorBenchmark` / `ClientSideAssignorBenchmark` build (racks off), timed as JMH
//! would: one JVM per cell, at least 20 calls and 3 s of warm-up, then at least 30 timed calls
//! and 1 s; median, min and p90. Building the input, serialising and the coordinator's records
//! are outside it; the benches' own figures are end to end (encode, instantiate, run, decode,
//! checks), so a ratio near 1 means the host does its whole call in the time Kafka's assignor
//! takes alone.
//!
//! The program is a Maven project built on first use into `target/kafka-assignors` (its
//! dependencies in `target/maven`); running a bench needs `mvn` and a JDK 17 or newer,
//! compiling one does not. Kafka's sticky pair on heterogeneous subscriptions takes ~1 s a call
//! at 3,000 members and grows about quadratically, so at 10,000 members one of its cells takes
//! many minutes under the warm-up and call counts above. To bound that:
//! - `BENCH_KAFKA_BUDGET_S=S` gives each Kafka cell about S seconds: warm-up stops at half of
//!   it (after one call), timing at all of it (after three); a cell cut short prints its call
//!   count beside its median (`kafka_samples` in the jsonl);
//! - `BENCH_KAFKA_MAX_MEMBERS=N` times Kafka only on cells of at most N members;
//! - `BENCH_KAFKA=off` leaves Kafka's column empty.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde::Deserialize;

use super::jsonl::{target_dir, workspace_root};
use super::{Assignment, Subscription};

/// Which of Kafka's benchmarks the counterpart comes from.
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

/// One cell of Kafka's benchmarks: the counterpart of a bench cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KafkaCell {
    pub side: Side,
    /// The host's strategy name, also the timing program's `--assignor`.
    pub strategy: &'static str,
    pub members: usize,
    pub topics: usize,
    /// Kafka's `partitionsToMemberRatio`; a topic holds `members x this / topics` partitions.
    pub partitions_per_member: usize,
    pub subscription: Subscription,
    pub assignment: Assignment,
}

impl KafkaCell {
    /// The server-side counterpart of `strategy` (`UniformAssignor`, `RangeAssignor`), if
    /// Kafka's coordinator has one.
    pub fn server(
        strategy: &'static str,
        members: usize,
        topics: usize,
        partitions_per_member: usize,
        subscription: Subscription,
        assignment: Assignment,
    ) -> Option<KafkaCell> {
        matches!(strategy, "uniform" | "range").then_some(KafkaCell {
            side: Side::Server,
            strategy,
            members,
            topics,
            partitions_per_member,
            subscription,
            assignment,
        })
    }

    /// The client-side counterpart of `strategy` (`RangeAssignor`, `RoundRobinAssignor`,
    /// `StickyAssignor`, `CooperativeStickyAssignor`), if the Java client has one.
    pub fn client(
        strategy: &'static str,
        members: usize,
        topics: usize,
        partitions_per_member: usize,
        subscription: Subscription,
        assignment: Assignment,
    ) -> Option<KafkaCell> {
        matches!(
            strategy,
            "range" | "roundrobin" | "sticky" | "cooperative-sticky"
        )
        .then_some(KafkaCell {
            side: Side::Client,
            strategy,
            members,
            topics,
            partitions_per_member,
            subscription,
            assignment,
        })
    }

    /// Times the cell in a JVM of its own and returns Kafka's figures; `None` when
    /// `BENCH_KAFKA=off` or the cell has more members than `BENCH_KAFKA_MAX_MEMBERS`. `quick`
    /// (a bench's `--quick`) warms up with one call and times one. Panics, saying what to
    /// install, when `mvn` or `java` is missing.
    pub fn time(&self, quick: bool) -> Option<KafkaTime> {
        if !enabled() || self.members > max_members() {
            return None;
        }
        let program = Program::get();
        let mut command = Command::new(&program.java);
        command
            .arg("-cp")
            .arg(&program.classpath)
            .arg("assignorhost.kafka.Timing")
            .args(["--side", self.side.as_str(), "--assignor", self.strategy])
            .args(["--members", &self.members.to_string()])
            .args(["--topics", &self.topics.to_string()])
            .args([
                "--partitions-per-member",
                &self.partitions_per_member.to_string(),
            ])
            .args(["--subscription", self.subscription.as_str()])
            .args(["--type", self.assignment.as_str()]);
        if let Some(budget) = budget_s() {
            command.args(["--budget-ms", &(budget * 1000).to_string()]);
        }
        if quick {
            command.args([
                "--warmup-calls",
                "1",
                "--warmup-ms",
                "0",
                "--calls",
                "1",
                "--measure-ms",
                "0",
            ]);
        }
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", program.java.display()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "Kafka's timing program failed on {self:?} ({}):\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let line = stdout.lines().rev().find(|l| l.starts_with('{'));
        let time: KafkaTime = line
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("Kafka's timing program printed no result line:\n{stdout}"));
        let _ = VERSION.set(time.kafka_version.clone());
        Some(time)
    }
}

/// Kafka's figures for one cell, as the timing program prints them.
#[derive(Debug, Clone, Deserialize)]
pub struct KafkaTime {
    /// The release timed (`kafka-clients`' own version file; the pom pins both artifacts).
    pub kafka_version: String,
    /// `server` or `client`.
    pub side: String,
    /// The assignor's class, with its package.
    pub class: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub p90_ms: f64,
    /// Timed calls the figures are taken over.
    pub calls: usize,
    /// Untimed calls before them.
    pub warmup_calls: usize,
}

impl KafkaTime {
    /// The class without its package: `UniformAssignor`.
    pub fn assignor(&self) -> &str {
        self.class.rsplit('.').next().unwrap_or(&self.class)
    }

    /// `ours / Kafka's median` as a table cell: `1.3x`.
    pub fn ratio(&self, ours_ms: f64) -> String {
        format!("{:.1}x", ours_ms / self.median_ms)
    }
}

/// `Some(time)` as a table cell (`3.64`, or `10523.10 (5 calls)` when a budget cut it to fewer
/// than the usual 30 calls), `-` for none.
pub fn cell(time: Option<&KafkaTime>) -> String {
    time.map_or("-".into(), |k| match k.calls {
        30.. => format!("{:.2}", k.median_ms),
        calls => format!("{:.2} ({calls} calls)", k.median_ms),
    })
}

/// `ours / Kafka` as a table cell, `-` without a Kafka time.
pub fn ratio_cell(time: Option<&KafkaTime>, ours_ms: f64) -> String {
    time.map_or("-".into(), |k| k.ratio(ours_ms))
}

/// The Kafka version the run timed, once a cell has been timed.
static VERSION: OnceLock<String> = OnceLock::new();

/// The line every bench printing Kafka's time prints under its table.
pub fn legend() -> String {
    let version = VERSION.get().map_or("", String::as_str);
    let mut skipped = match (enabled(), max_members()) {
        (false, _) => " Not timed in this run (BENCH_KAFKA=off).".to_owned(),
        (true, usize::MAX) => String::new(),
        (true, n) => format!(" Timed on cells of at most {n} members (BENCH_KAFKA_MAX_MEMBERS)."),
    };
    if let Some(budget) = budget_s() {
        skipped += &format!(" About {budget} s per Kafka cell (BENCH_KAFKA_BUDGET_S).");
    }
    format!(
        "Kafka ms: Apache Kafka {version}'s own assignor timed in this run, cell by cell next to \
         ours (host/benches/kafka-assignors: a JVM per cell, the input of Kafka's \
         ServerSideAssignorBenchmark / ClientSideAssignorBenchmark, assign() alone, median of \
         >= 30 calls after >= 20 calls and 3 s of warm-up). Ours is end to end: encoding the \
         request, instantiating, running, decoding and checking the answer. Ratio = ours / \
         Kafka's median.{skipped}"
    )
}

/// Whether Kafka's column is wanted (`BENCH_KAFKA` is anything but `off`).
pub fn enabled() -> bool {
    std::env::var("BENCH_KAFKA").map_or(true, |v| v != "off")
}

/// `BENCH_KAFKA_MAX_MEMBERS`, unbounded when unset.
fn max_members() -> usize {
    std::env::var("BENCH_KAFKA_MAX_MEMBERS").map_or(usize::MAX, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("BENCH_KAFKA_MAX_MEMBERS={v}: not a number"))
    })
}

/// `BENCH_KAFKA_BUDGET_S`, if set.
fn budget_s() -> Option<u64> {
    let v = std::env::var("BENCH_KAFKA_BUDGET_S").ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("BENCH_KAFKA_BUDGET_S={v}: not a number")),
    )
}

/// The built timing program: which `java` runs it, on which class path.
struct Program {
    java: PathBuf,
    classpath: String,
}

impl Program {
    /// Built once per bench process (Maven compiles only what changed).
    fn get() -> &'static Program {
        static PROGRAM: OnceLock<Program> = OnceLock::new();
        PROGRAM.get_or_init(Program::build)
    }

    #[allow(
        clippy::print_stderr,
        reason = "the first build downloads Kafka's jars: say why the bench waits"
    )]
    fn build() -> Program {
        let root = workspace_root();
        let target = target_dir(&root);
        let out = target.join("kafka-assignors");
        let pom = root.join("host/benches/kafka-assignors/pom.xml");
        let java = std::env::var_os("JAVA_HOME").map_or_else(
            || PathBuf::from("java"),
            |home| Path::new(&home).join("bin/java"),
        );
        for (tool, args) in [
            ("mvn", ["-v"]),
            (java.to_str().unwrap_or("java"), ["-version"]),
        ] {
            if let Err(e) = Command::new(tool).args(args).output() {
                panic!(
                    "Kafka's assignors are timed by a Java program built with Maven, and `{tool}` \
                     cannot run ({e}). Install Maven and a JDK 17 or newer (Debian: `apt-get \
                     install maven openjdk-17-jdk-headless`), or set BENCH_KAFKA=off to run the \
                     bench without Kafka's column."
                );
            }
        }
        eprintln!(
            "building Kafka's timing program into {} (the first build downloads Kafka's jars)",
            out.display()
        );
        let built = Command::new("mvn")
            .args(["-B", "-q"])
            .arg(format!(
                "-Dmaven.repo.local={}",
                target.join("maven").display()
            ))
            .arg(format!("-Dkafka.assignors.dir={}", out.display()))
            .arg("-f")
            .arg(&pom)
            .arg("compile")
            .output()
            .expect("mvn runs");
        assert!(
            built.status.success(),
            "building {} failed ({}):\n{}{}",
            pom.display(),
            built.status,
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        let dependencies = std::fs::read_to_string(out.join("classpath.txt"))
            .unwrap_or_else(|e| panic!("{}: {e}", out.join("classpath.txt").display()));
        let classpath = format!("{}:{}", out.join("classes").display(), dependencies.trim());
        Program { java, classpath }
    }
}
