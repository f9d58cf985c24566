//! Apache Kafka itself, started by the tests: KRaft nodes on loopback, each both broker and
//! controller, with the listeners and security a production cluster has.
//!
//! Every node has four listeners on free loopback ports:
//!
//! - `PLAINTEXT`: the trusted listener. Its principal (`User:ANONYMOUS`) is a super user, so
//!   the tests that are not about security (most of them) use it as before, and the brokers
//!   talk to each other on it.
//! - `SASL_SSL`: TLS with a certificate signed by a test CA made at start (PEM files in the
//!   cluster's `tls/` folder), SASL `PLAIN` and `SCRAM-SHA-512` for the users of [`USERS`]
//!   (`admin`, a super user, and `alice` and `bob`, who may do what ACLs grant them), and
//!   `OAUTHBEARER` with Kafka's default validator, which takes unsigned tokens (test only).
//! - `CONTROLLER`: the KRaft quorum (every node is a voter).
//! - `SSL`: TLS with the same certificate, no SASL; a client certificate (alice's, in `tls/`)
//!   is asked for and makes the principal its subject in RFC 2253 form (most specific name
//!   first), `User:CN=alice,O=assignor-host tests` (the host's: `CN=assignor-host,...`);
//!   without one the principal is `User:ANONYMOUS`, a super user as on `PLAINTEXT`.
//!
//! `StandardAuthorizer` checks every request, so a SASL_SSL client is held to Kafka's ACLs.
//! Each node has a rack (`rack-<node id>`), topics are never auto-created, internal topics are
//! replicated to every node (up to three), and a new group forms at once
//! (`group.initial.rebalance.delay.ms=0`, as the host's tests set theirs).
//!
//! Kafka's jars come from Maven Central through `tests/kafka/pom.xml` ([`install`]), into
//! `target/kafka/<version>/lib`; nothing is downloaded by hand.
//!
//! A cluster stops what it started when dropped, and also when the process that owns it dies
//! (a test that panics, aborts or is killed): a small watchdog process waits for the owner's
//! exit and kills the nodes (`process.rs`). [`shared`] gives each test process one
//! single-node cluster, started on first use, for tests that only need *a* Kafka; tests about
//! brokers start their own with [`KafkaCluster::start`].
//!
//! The same harness runs outside Rust as the `kafka-cluster` command (`src/main.rs`): the
//! Python suite and people start a cluster in a folder, which then holds `cluster.json`
//! ([`State`]), the nodes' configs, logs and data.

pub mod install;
mod probe;
mod process;
mod properties;
mod tls;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use std::{fs, thread};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

pub use install::KAFKA_VERSION;
pub use probe::{Seen, metadata};
pub use tls::Tls;

/// A SASL user of the test cluster. Every user has the same password for `PLAIN` and for
/// `SCRAM-SHA-512`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub password: String,
    /// In `super.users`: no ACL is checked for it.
    pub super_user: bool,
}

/// The users every test cluster has: `(name, password, super user)`.
/// `assignor-host` is for a host under test that should hold only the ACLs
/// docs/operating.md lists for the host's user (the proxy-mode suites' secured runs).
pub const USERS: [(&str, &str, bool); 4] = [
    ("admin", "admin-secret", true),
    ("alice", "alice-secret", false),
    ("bob", "bob-secret", false),
    ("assignor-host", "assignor-host-secret", false),
];

/// Listener ports per node: PLAINTEXT, SASL_SSL, CONTROLLER, SSL.
pub const PORTS: usize = 4;

/// How to start a cluster.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Nodes, each broker and controller (1, or 3 for tests about brokers).
    pub nodes: usize,
    /// Folder for configs, logs and data; a temporary folder (removed at stop) if `None`.
    pub dir: Option<PathBuf>,
    /// Ports, three per node in node order (PLAINTEXT, SASL_SSL, CONTROLLER); free ones if
    /// `None`.
    pub ports: Option<Vec<u16>>,
    /// The process whose exit stops the cluster; this process if `None`.
    pub owner: Option<u32>,
    /// Broker settings added to (or replacing) the harness's own.
    pub config: BTreeMap<String, String>,
    /// JVM options after the harness's own (a later option wins: `-XX:TieredStopAtLevel=4`
    /// puts the optimising compiler back, for benches).
    pub jvm_options: Vec<String>,
    /// How long to wait for the cluster to answer Metadata with every node.
    pub ready_timeout: Duration,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            nodes: 1,
            dir: None,
            ports: None,
            owner: None,
            config: BTreeMap::new(),
            jvm_options: Vec::new(),
            ready_timeout: Duration::from_secs(120),
        }
    }
}

impl Setup {
    /// `nodes` nodes, everything else the default.
    pub fn nodes(nodes: usize) -> Setup {
        Setup {
            nodes,
            ..Setup::default()
        }
    }

    /// Adds or replaces one broker setting.
    pub fn config(mut self, key: &str, value: impl ToString) -> Setup {
        self.config.insert(key.to_owned(), value.to_string());
        self
    }
}

/// One node of the cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Node {
    pub node_id: i32,
    pub rack: String,
    pub plaintext: SocketAddr,
    pub sasl_ssl: SocketAddr,
    /// TLS without SASL; a client certificate is asked for, not required (without one the
    /// principal is ANONYMOUS).
    pub ssl: SocketAddr,
    pub controller: SocketAddr,
    /// Its `server.properties`.
    pub config: PathBuf,
    /// Its console log (Kafka's log4j output), appended to across restarts.
    pub log: PathBuf,
}

/// What a started cluster is: written to `<dir>/cluster.json` for the other processes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub kafka_version: String,
    pub cluster_id: String,
    pub dir: PathBuf,
    pub nodes: Vec<Node>,
    pub users: Vec<User>,
    pub tls: Tls,
    /// `host:port,...` of every node's PLAINTEXT listener.
    pub bootstrap: String,
    /// `host:port,...` of every node's SASL_SSL listener.
    pub sasl_ssl_bootstrap: String,
    pub ssl_bootstrap: String,
    /// The watchdog's process id (also its process group).
    pub watchdog: u32,
    /// Whether stopping removes `dir` (a temporary folder the harness made).
    pub remove_dir: bool,
    /// JVM options after the harness's own ([`Setup::jvm_options`]).
    #[serde(default)]
    pub jvm_options: Vec<String>,
}

/// A running cluster. Dropping it stops every node (unless it was [`attach`]ed).
///
/// [`attach`]: KafkaCluster::attach
#[derive(Debug)]
pub struct KafkaCluster {
    state: State,
    /// Started here: stop on drop. An attached cluster belongs to whoever started it.
    owned: bool,
}

impl KafkaCluster {
    /// Formats storage and starts `setup.nodes` nodes, returning once each of them answers
    /// Metadata listing all of them and a controller.
    pub fn start(setup: Setup) -> Result<KafkaCluster> {
        // Free ports are found by binding port 0 and letting go, so another process (a host
        // under test binding its own port 0) can take one before Kafka binds it: a node then
        // dies with a BindException. Ports of the harness's own choosing are chosen again.
        const ATTEMPTS: usize = 3;
        let mut attempt = 1;
        loop {
            match KafkaCluster::start_once(&setup) {
                Err(error)
                    if attempt < ATTEMPTS
                        && setup.ports.is_none()
                        && setup.dir.is_none()
                        && port_taken(&error) =>
                {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once(setup: &Setup) -> Result<KafkaCluster> {
        let libs = install::kafka_libs()?;
        anyhow::ensure!(
            (1..=9).contains(&setup.nodes),
            "nodes: {} (1 to 9)",
            setup.nodes
        );
        let (dir, remove_dir) = match &setup.dir {
            Some(dir) => (dir.clone(), false),
            None => (
                tempfile::Builder::new().prefix("kafka-").tempdir()?.keep(),
                true,
            ),
        };
        fs::create_dir_all(dir.join("pids"))?;
        let dir = dir.canonicalize()?;
        // The watchdog first, so nothing started below outlives a failed start either.
        let owner = setup.owner.unwrap_or_else(std::process::id);
        let watchdog = process::watchdog(owner, &dir, remove_dir)?;
        let ports = match &setup.ports {
            Some(ports) => {
                anyhow::ensure!(
                    ports.len() == PORTS * setup.nodes,
                    "{} ports given, {} needed (PLAINTEXT, SASL_SSL, CONTROLLER, SSL per node)",
                    ports.len(),
                    PORTS * setup.nodes
                );
                ports.clone()
            }
            None => free_ports(PORTS * setup.nodes)?,
        };
        let nodes: Vec<Node> = (0..setup.nodes)
            .map(|i| {
                let node_id = i as i32 + 1;
                let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
                Node {
                    node_id,
                    rack: format!("rack-{node_id}"),
                    plaintext: at(ports[PORTS * i]),
                    sasl_ssl: at(ports[PORTS * i + 1]),
                    controller: at(ports[PORTS * i + 2]),
                    ssl: at(ports[PORTS * i + 3]),
                    config: dir.join(format!("node-{node_id}/server.properties")),
                    log: dir.join(format!("node-{node_id}/console.log")),
                }
            })
            .collect();
        let users: Vec<User> = USERS
            .iter()
            .map(|&(name, password, super_user)| User {
                name: name.to_owned(),
                password: password.to_owned(),
                super_user,
            })
            .collect();
        let tls = Tls::make(&dir.join("tls"))?;
        let join = |addr: fn(&Node) -> SocketAddr| {
            nodes
                .iter()
                .map(|n| addr(n).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let state = State {
            kafka_version: KAFKA_VERSION.to_owned(),
            cluster_id: process::cluster_id(),
            bootstrap: join(|n| n.plaintext),
            sasl_ssl_bootstrap: join(|n| n.sasl_ssl),
            ssl_bootstrap: join(|n| n.ssl),
            dir: dir.clone(),
            nodes,
            users,
            tls,
            watchdog,
            remove_dir,
            jvm_options: setup.jvm_options.clone(),
        };
        let cluster = KafkaCluster { state, owned: true };
        cluster.save()?;
        fs::write(dir.join("log4j2.properties"), properties::LOG4J2)?;
        for node in &cluster.state.nodes {
            fs::create_dir_all(node.config.parent().expect("node folder"))?;
            fs::write(
                &node.config,
                properties::server(&cluster.state, node, &setup.config),
            )?;
        }
        process::format(&libs, &cluster.state)?;
        for node in &cluster.state.nodes {
            process::spawn(&libs, &cluster.state, node)?;
        }
        cluster.wait_ready(setup.ready_timeout)?;
        Ok(cluster)
    }

    /// The cluster another process started in `dir` (`kafka-cluster start`); dropping the
    /// handle leaves it running.
    pub fn attach(dir: &Path) -> Result<KafkaCluster> {
        let path = dir.join("cluster.json");
        let text = fs::read_to_string(&path)
            .with_context(|| format!("{}: no cluster was started here", path.display()))?;
        let state = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
        Ok(KafkaCluster {
            state,
            owned: false,
        })
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// `host:port,...` of the PLAINTEXT listeners (super user, no ACLs in the way).
    pub fn bootstrap(&self) -> &str {
        &self.state.bootstrap
    }

    /// `host:port,...` of the SASL_SSL listeners.
    pub fn sasl_ssl_bootstrap(&self) -> &str {
        &self.state.sasl_ssl_bootstrap
    }

    /// The SSL listeners, `host:port,...`.
    pub fn ssl_bootstrap(&self) -> &str {
        &self.state.ssl_bootstrap
    }

    pub fn nodes(&self) -> &[Node] {
        &self.state.nodes
    }

    pub fn node(&self, node_id: i32) -> &Node {
        self.state
            .nodes
            .iter()
            .find(|n| n.node_id == node_id)
            .unwrap_or_else(|| panic!("no node {node_id} in this cluster"))
    }

    /// Stops one node as an operator does (SIGTERM: a controlled shutdown that moves its
    /// leaderships away first), waiting up to 60 s before killing it.
    pub fn stop_node(&self, node_id: i32) -> Result<()> {
        process::stop(&self.state.dir, node_id, Duration::from_secs(60))
    }

    /// Kills one node (SIGKILL), as a crash would.
    pub fn kill_node(&self, node_id: i32) -> Result<()> {
        process::stop(&self.state.dir, node_id, Duration::ZERO)
    }

    /// Starts a stopped node again on its config, ports and data, returning once every node
    /// answers Metadata listing all of them.
    pub fn start_node(&self, node_id: i32) -> Result<()> {
        let libs = install::kafka_libs()?;
        process::spawn(&libs, &self.state, self.node(node_id))?;
        self.wait_ready(Duration::from_secs(120))
    }

    /// The last `lines` lines of a node's console log.
    pub fn log_tail(&self, node_id: i32, lines: usize) -> String {
        let text = fs::read_to_string(&self.node(node_id).log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Kills every node and the watchdog; removes the folder if the harness made it.
    pub fn stop(&self) {
        for node in &self.state.nodes {
            let _ = process::stop(&self.state.dir, node.node_id, Duration::ZERO);
        }
        process::stop_watchdog(self.state.watchdog);
        if self.state.remove_dir {
            let _ = fs::remove_dir_all(&self.state.dir);
        }
    }

    fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.state)?;
        fs::write(self.state.dir.join("cluster.json"), text)?;
        Ok(())
    }

    /// Waits until every node answers Metadata naming every node and a controller; fails at
    /// once, with its log, if a node's process exits meanwhile.
    fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let want = self.state.nodes.len();
        for node in &self.state.nodes {
            let mut last;
            loop {
                if !process::running(&self.state.dir, node.node_id) {
                    bail!(
                        "Kafka node {} exited while starting; its log ends:\n{}",
                        node.node_id,
                        self.log_tail(node.node_id, 40)
                    );
                }
                match probe::metadata(node.plaintext) {
                    Ok(seen) if seen.brokers.len() == want && seen.controller_id >= 0 => break,
                    Ok(seen) => last = format!("{seen:?}"),
                    Err(e) => last = format!("{e:#}"),
                }
                if Instant::now() >= deadline {
                    bail!(
                        "Kafka node {} at {} not ready after {timeout:?}: last saw {last}; its log ends:\n{}",
                        node.node_id,
                        node.plaintext,
                        self.log_tail(node.node_id, 40)
                    );
                }
                thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }
}

impl Drop for KafkaCluster {
    fn drop(&mut self) {
        if self.owned {
            self.stop();
        }
    }
}

/// This process's single-node cluster, started on first use and stopped by its watchdog when
/// the process exits. For tests that need *a* Kafka and use names of their own in it.
pub fn shared() -> &'static KafkaCluster {
    static SHARED: OnceLock<KafkaCluster> = OnceLock::new();
    SHARED.get_or_init(|| {
        KafkaCluster::start(Setup::default())
            .unwrap_or_else(|e| panic!("starting the shared Kafka cluster: {e:#}"))
    })
}

/// [`shared`] from async code: the first call starts the node on a blocking thread, so the
/// runtime's workers keep serving meanwhile (a start takes seconds). The one way async tests
/// reach the shared node.
pub async fn shared_async() -> &'static KafkaCluster {
    tokio::task::spawn_blocking(shared)
        .await
        .unwrap_or_else(|e| panic!("starting the shared Kafka cluster: {e}"))
}

/// [`KafkaCluster::start`] from async code, on a blocking thread: a cluster of the test's own
/// (its own listeners or settings, or one it stops), stopped when dropped.
pub async fn start_async(setup: Setup) -> Result<KafkaCluster> {
    tokio::task::spawn_blocking(move || KafkaCluster::start(setup))
        .await
        .map_err(|e| anyhow::anyhow!("the Kafka start task failed: {e}"))?
}

/// Whether a failed start is a node that could not bind a listener's port.
fn port_taken(error: &anyhow::Error) -> bool {
    let text = format!("{error:#}");
    [
        "Address already in use",
        "BindException",
        "Unable to start acceptor",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// `count` distinct ports that nothing listens on now (the kernel's ephemeral choices, all
/// held until every one is chosen so none repeats).
fn free_ports(count: usize) -> Result<Vec<u16>> {
    let held: Vec<TcpListener> = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()?;
    Ok(held
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()?)
}

/// An unsigned JWT (`alg: none`) naming `subject`, expiring `expires_in` seconds from now
/// (negative: already expired), as the test cluster's OAUTHBEARER validator (Kafka's default,
/// for tests only) takes them.
pub fn unsigned_token(subject: &str, expires_in: i64) -> String {
    fn base64url(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let header = base64url(br#"{"alg":"none"}"#);
    let claims = format!(
        r#"{{"sub":"{subject}","iat":{},"exp":{}}}"#,
        now - 60,
        now + expires_in
    );
    format!("{header}.{}.", base64url(claims.as_bytes()))
}

#[cfg(test)]
mod port_tests {
    #[test]
    fn a_node_that_could_not_bind_is_a_taken_port_and_other_failures_are_not() {
        let bind = anyhow::anyhow!(
            "Kafka node 1 exited while starting; its log ends:\n\
             Caused by: java.net.BindException: Address already in use"
        );
        assert!(super::port_taken(&bind));
        let other = anyhow::anyhow!("Kafka node 1 at 127.0.0.1:1 not ready after 60s");
        assert!(!super::port_taken(&other));
    }
}
