//! `kafka-cluster`: Apache Kafka for the Python suite and for people, the same harness the
//! Rust tests use (lib.rs).
//!
//! ```sh
//! kafka-cluster run --dir /tmp/kafka                 # until Ctrl-C; prints where it listens
//! kafka-cluster start --dir D [--nodes 3] [--owner PID]   # returns; prints cluster.json
//! kafka-cluster stop-node --dir D --node 2 [--kill]
//! kafka-cluster start-node --dir D --node 2
//! kafka-cluster stop --dir D
//! ```
//!
//! `start` leaves the cluster running until `stop`, or until the owner exits (by default the
//! process that ran `kafka-cluster`, e.g. the shell or the test runner).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kafka_harness::{KafkaCluster, Setup, install};

#[derive(Parser)]
#[command(
    about = "Apache Kafka on loopback for the tests (KRaft, PLAINTEXT and SASL_SSL listeners)"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Fetches Kafka's jars with Maven (if not done yet) and prints where they are.
    Install,
    /// Starts a cluster in DIR, prints its cluster.json and returns.
    Start(StartArgs),
    /// Starts a cluster in DIR and keeps it until this command is stopped (Ctrl-C).
    Run(StartArgs),
    /// Stops every node of the cluster in DIR.
    Stop {
        #[arg(long)]
        dir: PathBuf,
    },
    /// Stops one node (SIGTERM, a controlled shutdown; --kill: SIGKILL).
    StopNode {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        node: i32,
        #[arg(long)]
        kill: bool,
    },
    /// Starts a stopped node again and waits until the cluster lists it.
    StartNode {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        node: i32,
    },
}

#[derive(clap::Args)]
struct StartArgs {
    /// Folder for configs, logs and data (created; must not hold a running cluster).
    #[arg(long)]
    dir: PathBuf,
    /// Nodes, each broker and controller.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// The process whose exit stops the cluster (default: the one that ran this command).
    #[arg(long)]
    owner: Option<u32>,
    /// Ports, four per node (PLAINTEXT, SASL_SSL, CONTROLLER, SSL), comma-separated.
    #[arg(long, value_delimiter = ',')]
    ports: Option<Vec<u16>>,
    /// A broker setting KEY=VALUE (repeatable).
    #[arg(long = "config", value_parser = parse_setting)]
    config: Vec<(String, String)>,
    /// A JVM option after the harness's own (repeatable; e.g. -XX:TieredStopAtLevel=4).
    #[arg(long = "jvm-option", allow_hyphen_values = true)]
    jvm_options: Vec<String>,
}

fn parse_setting(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{text}`: expected KEY=VALUE"))
}

impl StartArgs {
    fn setup(self, owner: u32) -> Setup {
        Setup {
            nodes: self.nodes,
            dir: Some(self.dir),
            ports: self.ports,
            owner: Some(self.owner.unwrap_or(owner)),
            config: self.config.into_iter().collect::<BTreeMap<_, _>>(),
            jvm_options: self.jvm_options,
            ..Setup::default()
        }
    }
}

#[allow(clippy::print_stdout, reason = "the command's output")]
fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Install => println!("{}", install::kafka_libs()?.display()),
        Cmd::Start(args) => {
            let cluster = KafkaCluster::start(args.setup(std::os::unix::process::parent_id()))?;
            println!("{}", serde_json::to_string_pretty(cluster.state())?);
            // Running on: the owner (or `stop`) ends it.
            std::mem::forget(cluster);
        }
        Cmd::Run(args) => {
            let cluster = KafkaCluster::start(args.setup(std::process::id()))?;
            let state = cluster.state();
            println!(
                "Apache Kafka {} in {}: PLAINTEXT {} | SASL_SSL {} (CA {}); Ctrl-C stops it",
                state.kafka_version,
                state.dir.display(),
                state.bootstrap,
                state.sasl_ssl_bootstrap,
                state.tls.ca.display()
            );
            // Ctrl-C ends this process; the watchdog then stops the nodes.
            loop {
                std::thread::park();
            }
        }
        Cmd::Stop { dir } => KafkaCluster::attach(&dir)?.stop(),
        Cmd::StopNode { dir, node, kill } => {
            let cluster = KafkaCluster::attach(&dir)?;
            if kill {
                cluster.kill_node(node)?;
            } else {
                cluster.stop_node(node)?;
            }
        }
        Cmd::StartNode { dir, node } => KafkaCluster::attach(&dir)?
            .start_node(node)
            .context("starting the node again")?,
    }
    Ok(())
}
