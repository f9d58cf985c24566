//! `assignor-host module ...`: push, list, show, versions, activate, roll back, remove, status.

use std::path::PathBuf;

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{Body, segment};
use super::table::{Table, bytes, micros, pairs, unix_ms};
use super::{ApiArgs, CliError, print_json, text};

/// Manage assignor modules (a module's name is the strategy name consumers use).
#[derive(Debug, clap::Args)]
pub struct ModuleArgs {
    #[command(flatten)]
    pub api: ApiArgs,
    #[command(subcommand)]
    pub command: ModuleCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ModuleCommand {
    /// Upload a .wasm as the next version of NAME and make it active (groups use it from their
    /// next rebalance).
    Push {
        name: String,
        file: PathBuf,
        /// Refuse the upload unless the file has this sha256 (hex).
        #[arg(long)]
        sha256: Option<String>,
        /// Store the version without activating it.
        #[arg(long)]
        no_activate: bool,
    },
    /// List modules with their active versions.
    #[command(alias = "list")]
    Ls,
    /// One module: active version, its metadata and health.
    Show { name: String },
    /// Every version of a module.
    Versions { name: String },
    /// Make VERSION the active version (0 is the built-in).
    Activate { name: String, version: u32 },
    /// Activate the version before the active one.
    Rollback { name: String },
    /// Delete every uploaded version of NAME (a built-in name returns to its built-in), or one
    /// version with --version.
    #[command(alias = "delete")]
    Rm {
        name: String,
        #[arg(long)]
        version: Option<u32>,
    },
    /// Calls, failures by reason, recent failures and quarantine of each version.
    Status { name: String },
}

impl ModuleArgs {
    pub async fn run(self) -> Result<(), CliError> {
        let client = self.api.client()?;
        let json = self.api.json;
        let (value, render): (Value, fn(&Value) -> String) = match self.command {
            ModuleCommand::Push {
                name,
                file,
                sha256,
                no_activate,
            } => {
                let wasm = std::fs::read(&file).map_err(|e| CliError::Read {
                    path: file.display().to_string(),
                    message: e.to_string(),
                })?;
                let mut path = format!("/v1/modules/{}?activate={}", segment(&name), !no_activate);
                if let Some(sha) = sha256 {
                    path.push_str(&format!("&sha256={}", segment(&sha)));
                }
                let (_, value) = client.call(Method::PUT, &path, Body::Wasm(wasm)).await?;
                (value, render_push)
            }
            ModuleCommand::Ls => (client.get("/v1/modules").await?, render_list),
            ModuleCommand::Show { name } => (
                client
                    .get(&format!("/v1/modules/{}", segment(&name)))
                    .await?,
                render_show,
            ),
            ModuleCommand::Versions { name } => (
                client
                    .get(&format!("/v1/modules/{}/versions", segment(&name)))
                    .await?,
                render_versions,
            ),
            ModuleCommand::Activate { name, version } => {
                let path = format!("/v1/modules/{}/activate", segment(&name));
                let body = Body::Json(json!({ "version": version }));
                (
                    client.call(Method::POST, &path, body).await?.1,
                    render_active,
                )
            }
            ModuleCommand::Rollback { name } => {
                let path = format!("/v1/modules/{}/rollback", segment(&name));
                (
                    client.call(Method::POST, &path, Body::None).await?.1,
                    render_active,
                )
            }
            ModuleCommand::Rm { name, version } => {
                let path = match version {
                    Some(v) => format!("/v1/modules/{}/versions/{v}", segment(&name)),
                    None => format!("/v1/modules/{}", segment(&name)),
                };
                (
                    client.call(Method::DELETE, &path, Body::None).await?.1,
                    render_rm,
                )
            }
            ModuleCommand::Status { name } => (
                client
                    .get(&format!("/v1/modules/{}/status", segment(&name)))
                    .await?,
                render_status,
            ),
        };
        if json {
            print_json(&value);
        } else {
            print!("{}", render(&value));
        }
        Ok(())
    }
}

fn render_push(v: &Value) -> String {
    let what = if v["created"] == true {
        format!("pushed {} version {}", text(&v["name"]), v["version"])
    } else {
        format!(
            "unchanged: {} version {} has these bytes",
            text(&v["name"]),
            v["version"]
        )
    };
    let state = if v["active"] == true {
        "active; groups use it from their next rebalance"
    } else {
        "stored, not active"
    };
    let mut facts = vec![
        ("sha256", text(&v["sha256"])),
        ("protocol", text(&v["info"]["rebalance_protocol"])),
        ("checked in", micros(v["duration_us"].as_u64().unwrap_or(0))),
    ];
    if let Some(smoke) = v["smoke"].as_object() {
        facts.push((
            "smoke call",
            format!(
                "{}, {} fuel, {} peak memory",
                micros(smoke["duration_us"].as_u64().unwrap_or(0)),
                smoke["fuel"],
                bytes(smoke["peak_memory_bytes"].as_u64().unwrap_or(0))
            ),
        ));
    }
    format!("{what} ({state})\n{}", pairs(&facts))
}

fn render_list(v: &Value) -> String {
    let mut table = Table::new(&[
        "NAME",
        "ACTIVE",
        "VERSIONS",
        "PROTOCOL",
        "BUILTIN",
        "QUARANTINED",
    ]);
    for m in v["modules"].as_array().into_iter().flatten() {
        let versions: Vec<String> = m["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| n.to_string())
            .collect();
        table.row(vec![
            text(&m["name"]),
            text(&m["active_version"]),
            versions.join(","),
            text(&m["rebalance_protocol"]),
            yes(&m["has_builtin"]),
            yes(&m["quarantined"]),
        ]);
    }
    table.render()
}

fn render_show(v: &Value) -> String {
    let active = &v["active"];
    let health = &active["health"];
    let versions: Vec<String> = v["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n.to_string())
        .collect();
    let mut out = pairs(&[
        ("name", text(&v["name"])),
        ("active version", text(&v["active_version"])),
        ("versions", versions.join(", ")),
        ("protocol", text(&v["rebalance_protocol"])),
        ("built-in", yes(&active["builtin"])),
        ("description", text(&active["info"]["description"])),
        ("module version", text(&active["info"]["version"])),
        ("sha256", text(&active["sha256"])),
        ("size", bytes(active["size"].as_u64().unwrap_or(0))),
        (
            "uploaded",
            unix_ms(active["uploaded_ms"].as_u64().unwrap_or(0)),
        ),
        (
            "calls",
            format!(
                "{} ({} ok, {} failed)",
                health["calls"], health["successes"], health["failures"]
            ),
        ),
        ("quarantined", quarantine(&health["quarantined_until_ms"])),
    ]);
    out.push_str(&failures(&health["recent_failures"]));
    out
}

fn render_versions(v: &Value) -> String {
    let mut table = Table::new(&[
        "VERSION",
        "ACTIVE",
        "SHA256",
        "SIZE",
        "UPLOADED",
        "CALLS",
        "FAILURES",
        "QUARANTINED",
    ]);
    for ver in v["versions"].as_array().into_iter().flatten() {
        let sha = text(&ver["sha256"]);
        table.row(vec![
            text(&ver["version"]),
            if ver["active"] == true {
                "*".into()
            } else {
                String::new()
            },
            sha.chars().take(12).collect(),
            bytes(ver["size"].as_u64().unwrap_or(0)),
            if ver["builtin"] == true {
                "built-in".into()
            } else {
                unix_ms(ver["uploaded_ms"].as_u64().unwrap_or(0))
            },
            text(&ver["health"]["calls"]),
            text(&ver["health"]["failures"]),
            quarantine(&ver["health"]["quarantined_until_ms"]),
        ]);
    }
    table.render()
}

fn render_active(v: &Value) -> String {
    format!(
        "{}: version {} is active; groups use it from their next rebalance\n",
        text(&v["name"]),
        v["active_version"]
    )
}

fn render_rm(v: &Value) -> String {
    if let Some(version) = v.get("deleted_version") {
        return format!("{}: version {version} deleted\n", text(&v["name"]));
    }
    let removed: Vec<String> = v["removed_versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n.to_string())
        .collect();
    let after = match v["active"].as_u64() {
        Some(0) => "the built-in is active again".to_owned(),
        Some(n) => format!("version {n} is active"),
        None => "the name is gone".to_owned(),
    };
    format!(
        "{}: deleted versions {}; {after}\n",
        text(&v["name"]),
        removed.join(", ")
    )
}

fn render_status(v: &Value) -> String {
    let mut table = Table::new(&[
        "VERSION",
        "ACTIVE",
        "CALLS",
        "OK",
        "FAILED",
        "IN A ROW",
        "QUARANTINED",
    ]);
    let mut recent = String::new();
    for ver in v["versions"].as_array().into_iter().flatten() {
        table.row(vec![
            text(&ver["version"]),
            if ver["active"] == true {
                "*".into()
            } else {
                String::new()
            },
            text(&ver["calls"]),
            text(&ver["successes"]),
            text(&ver["failures"]),
            text(&ver["consecutive_failures"]),
            quarantine(&ver["quarantined_until_ms"]),
        ]);
        let list = failures(&ver["recent_failures"]);
        if !list.is_empty() {
            recent.push_str(&format!("\nversion {}:\n{list}", ver["version"]));
        }
    }
    format!("{}{recent}", table.render())
}

/// Recent failures, newest first.
fn failures(list: &Value) -> String {
    let mut table = Table::new(&["WHEN", "REASON", "GROUP", "GENERATION", "MESSAGE"]);
    for f in list.as_array().into_iter().flatten() {
        table.row(vec![
            unix_ms(f["at_ms"].as_u64().unwrap_or(0)),
            text(&f["reason"]),
            text(&f["group"]),
            text(&f["generation"]),
            text(&f["message"]).lines().next().unwrap_or("").to_owned(),
        ]);
    }
    if table.is_empty() {
        String::new()
    } else {
        format!("recent failures:\n{}", table.render())
    }
}

fn quarantine(until: &Value) -> String {
    match until.as_u64() {
        Some(ms) => format!("until {}", unix_ms(ms)),
        None => "no".into(),
    }
}

fn yes(v: &Value) -> String {
    if *v == true {
        "yes".into()
    } else {
        "no".into()
    }
}
