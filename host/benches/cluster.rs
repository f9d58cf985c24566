//! A cluster of host nodes on this machine, against one node: how long `CLUSTER_GROUPS` groups
//! of `CLUSTER_MEMBERS` members take to be assigned through one node and through three, the
//! Heartbeat round trip once they are, and, with three, the time from SIGKILLing the node that
//! coordinates the most groups until every group is assigned again.
//!
//! The nodes are the release binary (child processes) in front of Apache Kafka 4.4 (one node of
//! tests/kafka, with the JVM's optimising compiler), with
//! the short timings of `tests/clients/test_cluster.py` (session 6 s, lease 4.5 s). The members
//! are synthetic classic consumers over kafka-protocol, one connection each, doing what
//! librdkafka's state machine does: FindCoordinator through any node, JoinGroup (with the
//! member id the host asks for), SyncGroup, a Heartbeat every second, and on
//! NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or a dead connection, FindCoordinator again
//! and a new join. `range` over one 4-partition topic. A group counts as assigned when every
//! member has synced the same generation from the same coordinator. One node is a cluster of
//! one, so both runs pay the same lease and gate. Every member connects from 127.0.0.1, so the
//! nodes allow 100,000 connections per address (`kafka.max_connections_per_address`, 1,000
//! by default, Kafka's `max.connections.per.ip` is unlimited).
//!
//! `cargo bench -p assignor-host --bench cluster` (`CLUSTER_GROUPS`, default 300;
//! `CLUSTER_MEMBERS`, default 3; `CLUSTER_UPSTREAM=noida-db` with `NOIDA_DB=/path` or
//! `CLUSTER_UPSTREAM=tansu` with `TANSU=/path/to/tansu` put those upstream instead of Kafka,
//! the earlier runs' upstreams). Results also go to `target/bench/cluster.jsonl`.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its table"
)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, RequestHeader, ResponseHeader,
    SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOPIC: &str = "cluster-bench";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn wait_listening(addr: SocketAddr, what: &str, child: &mut Child) {
    let started = Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(child.try_wait().unwrap().is_none(), "{what} exited");
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{what} never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `CLUSTER_UPSTREAM`: `kafka` (the default), `noida-db` or `tansu`.
fn upstream_name() -> &'static str {
    match std::env::var("CLUSTER_UPSTREAM").ok().as_deref() {
        None | Some("kafka") => "kafka",
        Some("noida-db") => "noida-db",
        Some("tansu") => "tansu",
        Some(other) => panic!("CLUSTER_UPSTREAM: `{other}` is not kafka, noida-db or tansu"),
    }
}

/// The upstream on a free port, stopped on drop: Kafka, or noida-db (`NOIDA_DB`) or Tansu
/// (`TANSU`, memory storage), the second implementations.
struct Upstream {
    addr: SocketAddr,
    _kafka: Option<kafka_harness::KafkaCluster>,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl Upstream {
    fn start() -> Upstream {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let dir = tempfile::tempdir().unwrap();
        let name = upstream_name();
        let mut command = match name {
            "kafka" => {
                let setup = kafka_harness::Setup {
                    // The harness runs C1 only, for fast test starts; a bench wants C2.
                    jvm_options: vec!["-XX:TieredStopAtLevel=4".into()],
                    ..kafka_harness::Setup::default()
                };
                let kafka = kafka_harness::KafkaCluster::start(setup)
                    .unwrap_or_else(|e| panic!("starting Kafka: {e:#}"));
                return Upstream {
                    addr: kafka.nodes()[0].plaintext,
                    _kafka: Some(kafka),
                    child: None,
                    _dir: dir,
                };
            }
            "tansu" => {
                let binary = std::env::var("TANSU").expect(
                    "CLUSTER_UPSTREAM=tansu needs TANSU=/path/to/tansu (docs/operating.md says how)",
                );
                let url = format!("tcp://{addr}");
                let mut command = Command::new(binary);
                command
                    .args(["broker", "--listener-url", &url])
                    .args(["--advertised-listener-url", &url])
                    .args(["--storage-engine", "memory://tansu/"]);
                command
            }
            _ => {
                let binary = std::env::var("NOIDA_DB").expect(
                    "CLUSTER_UPSTREAM=noida-db needs NOIDA_DB, a noida-db 0.2.3 binary (cargo install noida-db --version 0.2.3 --no-default-features --features kafka --locked)",
                );
                let mut command = Command::new(binary);
                command
                    .args(["start", "--only", "kafka", "--host", "127.0.0.1"])
                    .arg("--kafka-port")
                    .arg(addr.port().to_string())
                    .arg("--data-dir")
                    .arg(dir.path());
                command
            }
        };
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        wait_listening(addr, name, &mut child);
        Upstream {
            addr,
            _kafka: None,
            child: Some(child),
            _dir: dir,
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A host node of the cluster "bench" (the release binary); killed on drop.
struct Node {
    child: Child,
    addr: SocketAddr,
}

impl Node {
    fn start(dir: &Path, upstream: SocketAddr, cache: &Path) -> Node {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        // Nodes share compiled built-ins, as the client suite's hosts do.
        #[cfg(unix)]
        std::os::unix::fs::symlink(cache, data.join("cache")).unwrap();
        let config = format!(
            "data_dir = {data:?}\n[kafka]\nlisten = \"{addr}\"\n\
             max_connections_per_address = 100000\n[admin]\nlisten = \
             \"127.0.0.1:{admin}\"\n[coordinator]\ninitial_rebalance_delay_ms = 0\n\
             [upstream]\nbroker_ports_from = 0\nmetadata_refresh = \"1s\"\n[cluster]\nname = \
             \"bench\"\nsession_timeout = \"6s\"\nheartbeat_interval = \"500ms\"\n\
             rebalance_timeout = \"8s\"\nfence_margin = \"1s\"\nrenew_interval = \"500ms\"\n\
             probe_interval = \"500ms\"\n",
            admin = free_port()
        );
        let path = dir.join("host.toml");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.join("host.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_assignor-host"))
            .arg("serve")
            .arg("--config")
            .arg(&path)
            .arg("--upstream")
            .arg(upstream.to_string())
            .env("RUST_LOG", "warn")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("assignor-host starts");
        wait_listening(addr, "a node", &mut child);
        Node { child, addr }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One connection, one request at a time.
struct Conn {
    socket: TcpStream,
    correlation: i32,
}

type Io<T> = Result<T, String>;

impl Conn {
    async fn open(addr: SocketAddr) -> Io<Conn> {
        let socket = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr))
            .await
            .map_err(|_| "connect timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        socket.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Conn {
            socket,
            correlation: 0,
        })
    }

    async fn call<Q: Encodable, A: Decodable>(&mut self, api: ApiKey, v: i16, q: &Q) -> Io<A> {
        self.correlation += 1;
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&[0; 4]);
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(v)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("cluster-bench")))
            .encode(&mut frame, api.request_header_version(v))
            .map_err(|e| e.to_string())?;
        q.encode(&mut frame, v).map_err(|e| e.to_string())?;
        let size = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let exchange = async {
            self.socket.write_all(&frame).await?;
            let size = self.socket.read_u32().await? as usize;
            let mut answer = BytesMut::zeroed(size);
            self.socket.read_exact(&mut answer).await?;
            Ok::<_, std::io::Error>(answer.freeze())
        };
        // Longer than a JoinGroup may park (the rebalance timeout, 15 s here at most).
        let mut answer = tokio::time::timeout(Duration::from_secs(30), exchange)
            .await
            .map_err(|_| "no answer".to_owned())?
            .map_err(|e| e.to_string())?;
        ResponseHeader::decode(&mut answer, api.response_header_version(v))
            .map_err(|e| e.to_string())?;
        A::decode(&mut answer, v).map_err(|e| e.to_string())
    }
}

/// What each member reports: per group, per member, the (generation, coordinator port) it
/// last synced, `None` while it is between coordinators or generations.
type Board = Arc<Mutex<HashMap<String, Vec<Option<(i32, u16)>>>>>;

fn subscription() -> Bytes {
    let mut out = BytesMut::new();
    out.extend_from_slice(&0_i16.to_be_bytes());
    ConsumerProtocolSubscription::default()
        .with_topics(vec![StrBytes::from_static_str(TOPIC)])
        .encode(&mut out, 0)
        .unwrap();
    out.freeze()
}

/// One synthetic member, until the runtime is dropped.
async fn member(nodes: Arc<Vec<SocketAddr>>, group: String, index: usize, board: Board) {
    let set = |state: Option<(i32, u16)>| board.lock().get_mut(&group).unwrap()[index] = state;
    let gid = GroupId(StrBytes::from_string(group.clone()));
    let mut member_id = String::new();
    let mut asked = index;
    loop {
        set(None);
        // FindCoordinator through any node, the next one after a failure.
        asked += 1;
        let via = nodes[asked % nodes.len()];
        let find = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(group.clone()))
            .with_key_type(0);
        let found: Io<FindCoordinatorResponse> = match Conn::open(via).await {
            Ok(mut c) => c.call(ApiKey::FindCoordinator, 3, &find).await,
            Err(e) => Err(e),
        };
        let Ok(found) = found
            .map_err(drop)
            .and_then(|f| if f.error_code == 0 { Ok(f) } else { Err(()) })
        else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let port = u16::try_from(found.port).unwrap_or(0);
        let Ok(mut conn) = Conn::open(SocketAddr::from(([127, 0, 0, 1], port))).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        // Join and sync until a generation sticks; then heartbeat until it does not.
        'join: loop {
            let join = JoinGroupRequest::default()
                .with_group_id(gid.clone())
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(15_000)
                .with_member_id(StrBytes::from_string(member_id.clone()))
                .with_protocol_type(StrBytes::from_static_str("consumer"))
                .with_protocols(vec![
                    JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_static_str("range"))
                        .with_metadata(subscription()),
                ]);
            let Ok(joined) = conn
                .call::<_, JoinGroupResponse>(ApiKey::JoinGroup, 5, &join)
                .await
            else {
                break 'join;
            };
            match joined.error_code {
                0 => {}
                79 => {
                    member_id = joined.member_id.to_string(); // MEMBER_ID_REQUIRED
                    continue 'join;
                }
                25 => {
                    member_id.clear(); // UNKNOWN_MEMBER_ID
                    continue 'join;
                }
                27 => continue 'join, // REBALANCE_IN_PROGRESS
                _ => break 'join,     // NOT_COORDINATOR, LOAD_IN_PROGRESS, ...
            }
            member_id = joined.member_id.to_string();
            let generation = joined.generation_id;
            let sync = SyncGroupRequest::default()
                .with_group_id(gid.clone())
                .with_generation_id(generation)
                .with_member_id(StrBytes::from_string(member_id.clone()))
                .with_protocol_type(Some(StrBytes::from_static_str("consumer")))
                .with_protocol_name(Some(StrBytes::from_static_str("range")));
            let Ok(synced) = conn
                .call::<_, SyncGroupResponse>(ApiKey::SyncGroup, 5, &sync)
                .await
            else {
                break 'join;
            };
            match synced.error_code {
                0 => {}
                27 | 22 => continue 'join,
                25 => {
                    member_id.clear();
                    continue 'join;
                }
                _ => break 'join,
            }
            set(Some((generation, port)));
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let beat = HeartbeatRequest::default()
                    .with_group_id(gid.clone())
                    .with_generation_id(generation)
                    .with_member_id(StrBytes::from_string(member_id.clone()));
                let started = Instant::now();
                let Ok(beat) = conn
                    .call::<_, HeartbeatResponse>(ApiKey::Heartbeat, 3, &beat)
                    .await
                else {
                    break 'join;
                };
                RTTS.lock().push(started.elapsed());
                match beat.error_code {
                    0 => {}
                    27 | 22 => {
                        set(None);
                        continue 'join;
                    }
                    25 => {
                        member_id.clear();
                        set(None);
                        continue 'join;
                    }
                    _ => break 'join,
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Heartbeat round trips of every member, for the window the bench samples.
static RTTS: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

/// Groups whose members all synced the same generation from the same coordinator not in
/// `not`, and those groups' coordinators.
fn assigned(board: &Board, not: Option<u16>) -> (usize, HashMap<u16, usize>) {
    let board = board.lock();
    let mut by_node = HashMap::new();
    let mut done = 0;
    for members in board.values() {
        let first = members[0];
        if let Some((_, port)) = first
            && members.iter().all(|m| *m == first)
            && Some(port) != not
        {
            done += 1;
            *by_node.entry(port).or_insert(0) += 1;
        }
    }
    (done, by_node)
}

async fn wait_assigned(board: &Board, groups: usize, not: Option<u16>, limit: Duration) -> bool {
    let started = Instant::now();
    while assigned(board, not).0 < groups {
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

struct Run {
    nodes: usize,
    formed_s: f64,
    rtt_p50_ms: f64,
    rtt_p99_ms: f64,
    takeover_s: Option<f64>,
    victim_groups: usize,
}

fn run(nodes_n: usize, groups: usize, members: usize, cache: &Path) -> Run {
    let upstream = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (0..nodes_n)
        .map(|i| Node::start(&dir.path().join(format!("node{i}")), upstream.addr, cache))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let admin = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", upstream.addr.to_string())
        .create::<rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext>>()
        .unwrap();
    runtime.block_on(async {
        let topic =
            rdkafka::admin::NewTopic::new(TOPIC, 4, rdkafka::admin::TopicReplication::Fixed(1));
        let _ = admin
            .create_topics([&topic], &rdkafka::admin::AdminOptions::new())
            .await;
    });
    let board: Board = Arc::default();
    let names: Vec<String> = (0..groups).map(|g| format!("bench-{g}")).collect();
    for name in &names {
        board.lock().insert(name.clone(), vec![None; members]);
    }
    let addrs = Arc::new(nodes.iter().map(|n| n.addr).collect::<Vec<_>>());
    // Wait for the nodes to serve (FindCoordinator names a node, whose JoinGroup answers once
    // its shards are past their wait); the clock starts when the members do.
    let started = Instant::now();
    runtime.block_on(async {
        for name in &names {
            for m in 0..members {
                tokio::spawn(member(addrs.clone(), name.clone(), m, board.clone()));
            }
        }
    });
    let formed = runtime.block_on(wait_assigned(
        &board,
        groups,
        None,
        Duration::from_secs(300),
    ));
    assert!(
        formed,
        "{nodes_n} node(s): not every group assigned in 300 s: {:?}",
        assigned(&board, None)
    );
    let formed_s = started.elapsed().as_secs_f64();
    RTTS.lock().clear();
    runtime.block_on(async { tokio::time::sleep(Duration::from_secs(10)).await });
    let mut rtts = std::mem::take(&mut *RTTS.lock());
    rtts.sort_unstable();
    let (mut takeover_s, mut victim_groups) = (None, 0);
    if nodes_n > 1 {
        let (_, by_node) = assigned(&board, None);
        let (&port, &count) = by_node.iter().max_by_key(|(_, c)| **c).unwrap();
        victim_groups = count;
        let victim = nodes.iter().position(|n| n.addr.port() == port).unwrap();
        nodes[victim].kill();
        let killed = Instant::now();
        let back = runtime.block_on(wait_assigned(
            &board,
            groups,
            Some(port),
            Duration::from_secs(180),
        ));
        assert!(
            back,
            "not every group assigned again in 180 s: {:?}",
            assigned(&board, Some(port))
        );
        takeover_s = Some(killed.elapsed().as_secs_f64());
    }
    runtime.shutdown_background();
    drop(nodes);
    Run {
        nodes: nodes_n,
        formed_s,
        rtt_p50_ms: percentile(&rtts, 0.5),
        rtt_p99_ms: percentile(&rtts, 0.99),
        takeover_s,
        victim_groups,
    }
}

fn main() {
    let groups = env_usize("CLUSTER_GROUPS", 300);
    let members = env_usize("CLUSTER_MEMBERS", 3);
    let cache = tempfile::tempdir().unwrap();
    println!(
        "cluster of host nodes: {groups} groups x {members} members (synthetic classic \
         consumers, range, one 4-partition topic), {} upstream, session 6 s, lease 4.5 s",
        upstream_name()
    );
    println!(
        "{:>5} {:>12} {:>12} {:>12} {:>14} {:>12}",
        "nodes", "assigned s", "hb p50 ms", "hb p99 ms", "takeover s", "its groups"
    );
    let mut out = Vec::new();
    for nodes in [1, 3] {
        let r = run(nodes, groups, members, cache.path());
        let takeover = r.takeover_s.map_or("-".to_owned(), |t| format!("{t:.1}"));
        println!(
            "{:>5} {:>12.1} {:>12.2} {:>12.2} {:>14} {:>12}",
            r.nodes, r.formed_s, r.rtt_p50_ms, r.rtt_p99_ms, takeover, r.victim_groups
        );
        out.push(format!(
            "{{\"bench\":\"cluster\",\"nodes\":{},\"groups\":{groups},\"members\":{members},\
             \"assigned_s\":{:.3},\"heartbeat_p50_ms\":{:.3},\"heartbeat_p99_ms\":{:.3},\
             \"takeover_s\":{},\"victim_groups\":{},\"upstream\":\"{}\"}}",
            r.nodes,
            r.formed_s,
            r.rtt_p50_ms,
            r.rtt_p99_ms,
            r.takeover_s
                .map_or("null".to_owned(), |t| format!("{t:.3}")),
            r.victim_groups,
            upstream_name()
        ));
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    let _ = std::fs::create_dir_all(&dir);
    if let Err(e) = std::fs::write(dir.join("cluster.jsonl"), out.join("\n") + "\n") {
        eprintln!("cannot write target/bench/cluster.jsonl: {e}");
    }
}
