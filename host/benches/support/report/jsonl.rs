//! Machine-readable results: every bench appends one JSON object per measured cell (and path)
//! to `target/bench/<bench>.jsonl`, read by `scripts/plot_numbers.py`.
//!
//! The files are **append-only**: a run never rewrites what earlier runs wrote, and every line
//! carries the `run_id` of the run that wrote it (UTC start time and process id), the commit
//! (`git rev-parse HEAD`) and whether the work tree had changes then. On a machine whose speed
//! drifts, keeping every run lets a reader compare runs; the plot takes each bench's latest
//! complete run (`"quick": false`). Delete the files to start afresh. `BENCH_JSONL=0` turns
//! writing off; `CARGO_TARGET_DIR` moves the files with the target directory.
//!
//! Using it from a bench (`mod support;` brings it in):
//!
//! ```ignore
//! let run = support::Run::start("lifecycle");
//! run.record(&Cell {
//!     cell: "upload -> active".into(),
//!     strategy: "range".into(),
//!     ..Cell::timed(&sorted_durations)
//! });
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::kafka::KafkaTime;

/// One bench run's writer: what every line of the run shares.
pub struct Run {
    bench: &'static str,
    run_id: String,
    timestamp: String,
    commit: Option<String>,
    dirty: Option<bool>,
    quick: bool,
    path: Option<PathBuf>,
}

/// One measured cell, on one path. Fields a bench has no value for stay `None` / empty and
/// are left out of the line.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cell {
    /// What was measured when the bench measures more than assignments (`rejoin`,
    /// `heartbeats`, `upload -> active`); empty for an assignor call.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cell: String,
    /// The strategy (module) name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topics: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<usize>,
    /// `homogeneous` or `heterogeneous`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription: Option<&'static str>,
    /// `full` (nobody owns anything) or `incremental` (a member joins an assigned group).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<&'static str>,
    /// `native` or `wasm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<&'static str>,
    /// Median and best time of the cell (`None` for a figure that is not a time: `value`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_ms: Option<f64>,
    /// Timed runs the median and best (or the value) are taken over.
    pub samples: usize,
    /// How the wasm engine bounded CPU (`fuel`, the default, or `epoch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metering: Option<&'static str>,
    /// Fuel one wasm call burnt (deterministic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<u64>,
    /// Sandbox limits raised for the cell, if any (`defaults` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<String>,
    /// A figure that is not a time (`value` in `unit`: heartbeats/s, bytes per member).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
    /// Kafka's assignor timed on the same shape in the same run, if it has a counterpart.
    #[serde(skip)]
    pub kafka: Option<KafkaTime>,
}

impl Cell {
    /// A timing cell from sorted durations (median and best); empty `times` panics.
    pub fn timed(times: &[Duration]) -> Cell {
        Cell::default().with_times(times)
    }

    /// This cell with the median and best of sorted `times` (empty `times` panics).
    pub fn with_times(self, times: &[Duration]) -> Cell {
        // Whole nanoseconds, so the JSON holds `2.427137`, not `2.4271369999999997`.
        let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
        Cell {
            median_ms: Some(ms(times[times.len() / 2])),
            best_ms: Some(ms(times[0])),
            samples: times.len(),
            ..self
        }
    }
}

/// A line as written: the run's fields, the cell's, Kafka's time flattened.
#[derive(Serialize)]
struct Line<'a> {
    bench: &'static str,
    run_id: &'a str,
    timestamp: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dirty: Option<bool>,
    quick: bool,
    /// The machine's 1-minute load average when the line was written (`/proc/loadavg`): on a
    /// shared 2-core machine, how much else was running.
    #[serde(skip_serializing_if = "Option::is_none")]
    load_1m: Option<f64>,
    #[serde(flatten)]
    cell: &'a Cell,
    /// Kafka's median, min and p90 ms and the timed calls they are taken over.
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_best_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_p90_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_samples: Option<usize>,
    /// `server` or `client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_side: Option<&'a str>,
    /// The class without its package: `UniformAssignor`.
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_assignor: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kafka_version: Option<&'a str>,
}

impl Run {
    /// A run of `bench`, writing full-run lines.
    pub fn start(bench: &'static str) -> Run {
        Run::start_with(bench, false)
    }

    /// A run of `bench`; `quick` marks a smoke run (too few samples to plot).
    pub fn start_with(bench: &'static str, quick: bool) -> Run {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let timestamp = rfc3339(now.as_secs());
        let compact: String = timestamp.chars().filter(char::is_ascii_digit).collect();
        let root = workspace_root();
        let enabled = std::env::var("BENCH_JSONL").map_or(true, |v| v != "0");
        let path = enabled.then(|| {
            target_dir(&root)
                .join("bench")
                .join(format!("{bench}.jsonl"))
        });
        Run {
            bench,
            run_id: format!("{compact}-{}", std::process::id()),
            timestamp,
            commit: git(&root, &["rev-parse", "HEAD"]),
            dirty: git(&root, &["status", "--porcelain", "--untracked-files=no"])
                .map(|s| !s.is_empty()),
            quick,
            path,
        }
    }

    /// Appends `cell` to the bench's file. A failure to write is reported on stderr, never
    /// fatal: the printed tables are the bench's first output.
    #[allow(
        clippy::print_stderr,
        reason = "a bench reports a failed write and goes on"
    )]
    pub fn record(&self, cell: &Cell) {
        let Some(path) = &self.path else { return };
        let line = Line {
            bench: self.bench,
            run_id: &self.run_id,
            timestamp: &self.timestamp,
            commit: self.commit.as_deref(),
            dirty: self.dirty,
            quick: self.quick,
            load_1m: load_average(),
            cell,
            kafka_ms: cell.kafka.as_ref().map(|k| k.median_ms),
            kafka_best_ms: cell.kafka.as_ref().map(|k| k.min_ms),
            kafka_p90_ms: cell.kafka.as_ref().map(|k| k.p90_ms),
            kafka_samples: cell.kafka.as_ref().map(|k| k.calls),
            kafka_side: cell.kafka.as_ref().map(|k| k.side.as_str()),
            kafka_assignor: cell.kafka.as_ref().map(KafkaTime::assignor),
            kafka_version: cell.kafka.as_ref().map(|k| k.kafka_version.as_str()),
        };
        let written = serde_json::to_string(&line)
            .map_err(std::io::Error::other)
            .and_then(|text| {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?;
                writeln!(file, "{text}")
            });
        if let Err(e) = written {
            eprintln!("bench results: cannot append to {}: {e}", path.display());
        }
    }

    /// Where the lines go (`None` when `BENCH_JSONL=0`).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

/// The 1-minute load average, where the system reports one (Linux).
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

pub(super) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ sits in the workspace")
        .to_path_buf()
}

pub(super) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (days to civil date: Howard Hinnant's
/// algorithm).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}
