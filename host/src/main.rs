//! `assignor-host`: the command line. Parses arguments, sets up tracing, and calls the library;
//! nothing else lives here.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use assignor_host::config::Config;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

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
    /// Run the host: the Kafka listener (and the admin API) until Ctrl-C.
    Serve(ServeArgs),
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
}

impl ServeArgs {
    fn into_config(self) -> anyhow::Result<Config> {
        let mut config = match &self.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
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
        Ok(config)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    match Cli::parse().command {
        Command::Serve(args) => {
            let config = args.into_config()?;
            assignor_host::server::run(config, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("assignor-host stopped with an error")
        }
    }
}
