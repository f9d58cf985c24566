//! `assignor-host simulate`: what a module would assign, without applying it.
//!
//! - `--module FILE.wasm --scenario FILE`: local, no host (the author's runner): the module
//!   runs in a sandbox built like the host's, with the host's limits (`--config` and
//!   `ASSIGNOR_HOST_SANDBOX__LIMITS__*` change them);
//! - `--module NAME --group G`: on a live group's current members, on the host;
//! - `--module NAME --scenario FILE`: a scenario, with a module registered on the host.

use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{Value, json};

use super::client::Body;
use super::table::{Table, bytes, micros, pairs};
use super::{ApiArgs, CliError, print_json};
use crate::config::Config;
use crate::simulate::{Scenario, SimulateError, SimulationReport, Usage, run_local};

/// Run a module on a group and show the assignment, balance and movement, applying nothing.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    /// A .wasm file (runs locally, no host needed) or the name of a module on the host.
    #[arg(long)]
    pub module: String,
    /// A live group on the host: simulate on its current members and assignment.
    #[arg(
        long,
        conflicts_with = "scenario",
        required_unless_present = "scenario"
    )]
    pub group: Option<String>,
    /// A scenario file, JSON or TOML (format in docs/operating.md).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Version of the named module [default: its active version].
    #[arg(long)]
    pub version: Option<u32>,
    /// For a local run: the host config file whose sandbox settings (limits, metering) apply.
    #[arg(long, env = "ASSIGNOR_HOST_CONFIG")]
    pub config: Option<PathBuf>,
}

impl SimulateArgs {
    /// Whether `--module` names a local file rather than a module on the host.
    fn is_local(&self) -> bool {
        self.module.ends_with(".wasm") || Path::new(&self.module).is_file()
    }

    pub async fn run(self) -> Result<(), CliError> {
        let result = if self.is_local() {
            self.local().await
        } else {
            self.remote().await
        };
        match result {
            Ok(report) => {
                if self.api.json {
                    print_json(&report);
                } else {
                    let report: SimulationReport = serde_json::from_value(report).map_err(|e| {
                        CliError::Usage(format!("the host's report is not readable: {e}"))
                    })?;
                    print!("{}", render(&report));
                }
                Ok(())
            }
            Err(error) => {
                eprint!("{}", failure_detail(&error));
                Err(error)
            }
        }
    }

    async fn local(&self) -> Result<Value, CliError> {
        let Some(scenario) = self.scenario.clone() else {
            return Err(CliError::Usage(format!(
                "{} is a local file: give --scenario FILE (a live group needs a module pushed \
                 to the host)",
                self.module
            )));
        };
        if self.version.is_some() {
            return Err(CliError::Usage(
                "--version names a version on the host; a local file has none".into(),
            ));
        }
        let sandbox = Config::load(self.config.as_deref(), std::env::vars())?.sandbox;
        let (limits, metering) = (sandbox.limits, sandbox.metering);
        let module = PathBuf::from(&self.module);
        let report =
            tokio::task::spawn_blocking(move || run_local(&module, &scenario, limits, metering))
                .await
                .map_err(|e| CliError::Usage(format!("the simulation task failed: {e}")))??;
        Ok(json!(report))
    }

    async fn remote(&self) -> Result<Value, CliError> {
        let client = self.api.client()?;
        let mut body = json!({ "module": self.module });
        if let Some(version) = self.version {
            body["version"] = json!(version);
        }
        match (&self.group, &self.scenario) {
            (Some(group), _) => body["group"] = json!(group),
            (None, Some(path)) => {
                body["scenario"] = json!(Scenario::from_file(path).map_err(SimulateError::from)?)
            }
            (None, None) => {
                return Err(CliError::Usage("give --group G or --scenario FILE".into()));
            }
        }
        let (_, report) = client
            .call(Method::POST, "/v1/simulate", Body::Json(body))
            .await?;
        Ok(report)
    }
}

/// The report as text: members, balance, unassigned partitions, movement, usage, logs.
pub fn render(r: &SimulationReport) -> String {
    let version = r
        .version
        .map_or_else(|| "(local file)".to_owned(), |v| format!("version {v}"));
    let mut out = pairs(&[
        ("module", format!("{} {version}", r.module)),
        (
            "group",
            format!(
                "{}, generation {}, {} members",
                r.group_id,
                r.generation_id,
                r.members.len()
            ),
        ),
    ]);
    let mut table = Table::new(&["MEMBER", "PARTITIONS", "GAINED", "LOST", "ASSIGNMENT"]);
    for m in &r.members {
        table.row(vec![
            m.member_id.clone(),
            m.partitions.to_string(),
            m.gained.to_string(),
            m.lost.to_string(),
            super::table::assignment(&json!(m.assignment)),
        ]);
    }
    out.push('\n');
    out.push_str(&table.render());
    out.push('\n');
    let b = &r.balance;
    let m = &r.movement;
    let mut facts = vec![
        (
            "balance",
            format!(
                "{} of {} partitions assigned; {} to {} per member (spread {})",
                b.assigned, b.partitions, b.min_per_member, b.max_per_member, b.spread
            ),
        ),
        (
            "unassigned",
            if r.unassigned.is_empty() {
                "none".to_owned()
            } else {
                super::table::assignment(&json!(r.unassigned))
            },
        ),
        (
            "movement",
            format!(
                "{} moved, {} kept, {} newly assigned, {} revoked ({} assigned before)",
                m.moved, m.kept, m.newly_assigned, m.revoked, m.previously_assigned
            ),
        ),
        ("usage", usage(&r.usage)),
    ];
    if let Some(ms) = r.rebalance_after_ms {
        facts.push((
            "follow-up",
            format!("the module asks for a rebalance after {ms} ms"),
        ));
    }
    out.push_str(&pairs(&facts));
    out.push_str(&logs(&r.logs));
    out
}

fn usage(u: &Usage) -> String {
    format!(
        "{}, {} fuel, {} peak memory, {} in, {} out",
        micros(u.duration_us),
        u.fuel,
        bytes(u.peak_memory_bytes),
        bytes(u.input_bytes),
        bytes(u.output_bytes)
    )
}

fn logs(lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut out = "logs:\n".to_owned();
    for line in lines {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// What a failed call used and logged, printed before the error itself.
fn failure_detail(error: &CliError) -> String {
    match error {
        CliError::Simulate(e) => match &**e {
            SimulateError::Call(failed) => {
                format!("usage  {}\n{}", usage(&failed.usage), logs(&failed.logs))
            }
            _ => String::new(),
        },
        CliError::Api {
            detail: Some(detail),
            ..
        } => {
            let u: Option<Usage> = serde_json::from_value(detail["usage"].clone()).ok();
            let l: Vec<String> = serde_json::from_value(detail["logs"].clone()).unwrap_or_default();
            let mut out = u
                .map(|u| format!("usage  {}\n", usage(&u)))
                .unwrap_or_default();
            out.push_str(&logs(&l));
            out
        }
        _ => String::new(),
    }
}
