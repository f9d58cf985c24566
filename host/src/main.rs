//! `assignor-host`: the command line. Parses arguments, sets up tracing, and calls the library;
//! nothing else lives here.

#![allow(
    clippy::print_stderr,
    reason = "the command line reports its errors on stderr"
)]

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use assignor_host::cli::{AclArgs, GroupArgs, ModuleArgs, SimulateArgs, TopicArgs, UserArgs};
use assignor_host::config::Config;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// mimalloc rather than glibc's malloc: a rebalance of a large group allocates and frees
/// buffers of megabytes (the request, the answer, the checks' tables), which glibc maps and
/// unmaps around each call, so every call paid fresh page faults and calls of the same group
/// took two very different times (`host/benches/RESULTS.md`, "The host's allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Kafka-wire-compatible consumer-group coordinator whose partition assignors are sandboxed
/// WebAssembly modules.
#[derive(Parser)]
#[command(name = "assignor-host", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the host: the Kafka listener and the admin API until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Manage assignor modules on a running host.
    Module(ModuleArgs),
    /// Inspect and configure consumer groups on a running host.
    Group(GroupArgs),
    /// Manage the topics a running host serves.
    Topic(TopicArgs),
    /// Manage the users a standalone host authenticates (kafka.authentication = "local").
    User(UserArgs),
    /// Manage the ACLs a standalone host decides by (kafka-acls' flags).
    Acl(AclArgs),
    /// Show what a module would assign, without applying it (locally for a .wasm file).
    Simulate(SimulateArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Configuration file (TOML); flags and environment variables override it.
    #[arg(long, env = "ASSIGNOR_HOST_CONFIG")]
    config: Option<PathBuf>,
    /// Address the Kafka listener binds [default: 127.0.0.1:9092].
    #[arg(long, env = "ASSIGNOR_HOST_LISTEN")]
    listen: Option<SocketAddr>,
    /// host:port clients are told to connect to [default: the listen address].
    #[arg(long, env = "ASSIGNOR_HOST_ADVERTISE")]
    advertise: Option<String>,
    /// Address of the admin HTTP API [default: 127.0.0.1:9644].
    #[arg(long, env = "ASSIGNOR_HOST_ADMIN_LISTEN")]
    admin_listen: Option<SocketAddr>,
    /// Directory of the store [default: ./data].
    #[arg(long, env = "ASSIGNOR_HOST_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Bearer token the admin API requires (required when --admin-listen is not loopback).
    #[arg(long, env = "ASSIGNOR_HOST_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Proxy mode: bootstrap servers of the Kafka cluster to sit in front of,
    /// HOST:PORT[,HOST:PORT...] [default: none, standalone].
    #[arg(long, env = "ASSIGNOR_HOST_UPSTREAM", value_delimiter = ',')]
    upstream: Vec<String>,
    /// With --upstream: the name of a cluster of host nodes; nodes started with the same
    /// name in front of the same upstream share its groups [default: none, one node].
    #[arg(long, env = "ASSIGNOR_HOST_CLUSTER")]
    cluster: Option<String>,
}

impl ServeArgs {
    fn into_config(self) -> anyhow::Result<Config> {
        // Defaults < file < ASSIGNOR_HOST_<SECTION>__<KEY> variables < flags.
        let mut config = Config::load(self.config.as_deref(), std::env::vars())?;
        if let Some(listen) = self.listen {
            config.kafka.listen = listen;
        }
        if let Some(advertise) = self.advertise {
            config.kafka.advertised = Some(advertise);
        }
        if let Some(admin) = self.admin_listen {
            config.admin.listen = admin;
        }
        if let Some(dir) = self.data_dir {
            config.data_dir = dir;
        }
        if let Some(token) = self.token {
            config.admin.token = Some(token);
        }
        if !self.upstream.is_empty() {
            for server in &self.upstream {
                assignor_host::upstream::config::parse_server(server)
                    .map_err(|e| anyhow::anyhow!("--upstream: {e}"))?;
            }
            config.upstream.bootstrap = self.upstream;
        }
        if let Some(name) = self.cluster {
            config.cluster.name = Some(name);
        }
        Ok(config)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Logs go to stderr so that stdout carries only a command's output (tables, --json). The
    // host logs at info by default; client commands only warnings (RUST_LOG overrides both).
    let level = match cli.command {
        Command::Serve(_) => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level)),
        )
        .init();
    let outcome = match cli.command {
        Command::Module(args) => args.run().await,
        Command::Group(args) => args.run().await,
        Command::Topic(args) => args.run().await,
        Command::User(args) => args.run().await,
        Command::Acl(args) => args.run().await,
        Command::Simulate(args) => args.run().await,
        Command::Serve(args) => {
            let config = args.into_config()?;
            return assignor_host::server::run(config, stop_requested())
                .await
                .context("assignor-host stopped with an error");
        }
    };
    if let Err(error) = outcome {
        eprintln!("error: {error}");
        std::process::exit(error.exit_code());
    }
    Ok(())
}

/// Ctrl-C / SIGINT, or SIGTERM (what service managers, `kill` and container runtimes send to
/// stop a service): either stops the host cleanly, as `run` describes.
async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGTERM; Ctrl-C only"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
