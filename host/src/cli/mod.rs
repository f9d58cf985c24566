//! The command line's client side: `module`, `group`, `topic`, `user`, `acl` and `simulate` talk to a running
//! host's admin API (`--admin URL`, env `ASSIGNOR_HOST_ADMIN`, default
//! `http://127.0.0.1:9644`, or `https://` with `--admin-ca`, env `ASSIGNOR_HOST_ADMIN_CA`;
//! `--token`, env `ASSIGNOR_HOST_TOKEN`), print readable tables, or the
//! API's JSON with `--json`. `simulate --module FILE.wasm --scenario FILE` needs no host: it
//! runs the module in a local sandbox built like the host's ([`crate::simulate::run_local`]).
//!
//! `main.rs` parses these argument types with clap and calls their `run`; an error is printed
//! to stderr (the host's own message for an API refusal) and the process exits non-zero.
//! The reference of every command is `docs/operating.md`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the command line's output is what it prints"
)]

mod acl;
mod client;
mod group;
mod module;
mod simulate;
pub mod table;
mod topic;
mod user;

pub use acl::{AclArgs, AclCommand};
pub use client::{AdminClient, Body};
pub use group::{GroupArgs, GroupCommand};
pub use module::{ModuleArgs, ModuleCommand};
pub use simulate::SimulateArgs;
pub use topic::{TopicArgs, TopicCommand};
pub use user::{UserArgs, UserCommand};

use crate::simulate::SimulateError;

/// Default admin API URL: the standalone host's admin listener.
pub const DEFAULT_ADMIN_URL: &str = "http://127.0.0.1:9644";

/// How to reach the admin API, and how to print. Global: accepted before or after the
/// subcommand (`assignor-host module ls --json`).
#[derive(Debug, Clone, clap::Args)]
pub struct ApiArgs {
    /// Admin API URL of the host.
    #[arg(long, global = true, env = "ASSIGNOR_HOST_ADMIN", default_value = DEFAULT_ADMIN_URL)]
    pub admin: String,
    /// Bearer token for the admin API (needed when the host sets admin.token).
    #[arg(
        long,
        global = true,
        env = "ASSIGNOR_HOST_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// PEM file of the CA that signs the host's admin certificate, for an `https://` admin URL
    /// (default: the system's CA bundle).
    #[arg(long, global = true, env = "ASSIGNOR_HOST_ADMIN_CA")]
    pub admin_ca: Option<std::path::PathBuf>,
    /// Print the API's JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
}

impl ApiArgs {
    pub fn client(&self) -> Result<AdminClient, CliError> {
        AdminClient::new(&self.admin, self.token.clone(), self.admin_ca.as_deref())
    }
}

/// A command failed. `main` prints it and exits with [`CliError::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The host refused the request; `message` is the host's own.
    #[error("{message}{}", api_suffix(*.status, .code, .check))]
    Api {
        status: u16,
        code: String,
        message: String,
        check: Option<String>,
        detail: Option<serde_json::Value>,
    },
    #[error(
        "cannot reach the admin API at {url}: {message} (is `assignor-host serve` running there? \
         set --admin or ASSIGNOR_HOST_ADMIN)"
    )]
    Unreachable { url: String, message: String },
    #[error("{0}")]
    Usage(String),
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error(transparent)]
    Simulate(Box<SimulateError>),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

fn api_suffix(status: u16, code: &str, check: &Option<String>) -> String {
    match check {
        Some(check) => format!(" (HTTP {status}, {code}, check: {check})"),
        None => format!(" (HTTP {status}, {code})"),
    }
}

impl CliError {
    /// 2 for a usage mistake (as clap), 3 when the host cannot be reached, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Unreachable { .. } => 3,
            _ => 1,
        }
    }
}

impl From<SimulateError> for CliError {
    fn from(e: SimulateError) -> CliError {
        CliError::Simulate(Box::new(e))
    }
}

/// Prints `value` as pretty JSON (the `--json` output).
fn print_json(value: &serde_json::Value) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(_) => println!("{value}"),
    }
}

/// A string field of a JSON answer, or `-`.
fn text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}
