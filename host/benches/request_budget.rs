//! `kafka.queued_max_request_bytes` under the load it exists for: `CONNECTIONS` (200)
//! connections each sending a maximal JoinGroup (just under `kafka.max_group_frame_bytes`,
//! 8 MiB, naming half a million protocols: the shape that costs most to decode) at once, to a
//! host process of its own, for each budget of the run (no bound, then the default 64 MiB,
//! then 16 MiB).
//!
//! Reported per budget: the host's peak memory above its idle level (`VmHWM` minus the
//! `VmRSS` before the flood, from `/proc`), the time until every JoinGroup is answered
//! (MEMBER_ID_REQUIRED: each decoded whole, then refused, as a first join is), the waits
//! counted by the host, and a bystander's round trips meanwhile (a connection sending
//! ApiVersions and Metadata one after another through the flood: its largest and median
//! wait), which shows every other client served.
//!
//! `cargo bench -p assignor-host --bench request_budget` (`BUDGET_CONNECTIONS`,
//! `BUDGET_PROTOCOLS` override the sizes). Release build; the host is this build's binary.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its table"
)]

use std::net::SocketAddr;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, GroupId, JoinGroupRequest, JoinGroupResponse, MetadataRequest,
    RequestHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn env_or(name: &str, default: usize) -> usize {
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

/// `VmRSS` and `VmHWM` of `pid`, in bytes.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("a memory field")
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Host {
    child: Child,
    addr: SocketAddr,
    admin: u16,
    _dir: tempfile::TempDir,
}

impl Host {
    fn start(budget: usize, connections: usize) -> Host {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let admin = free_port();
        let config = format!(
            "data_dir = {data:?}\n[kafka]\nlisten = \"{addr}\"\n\
             queued_max_request_bytes = {budget}\nmax_connections_per_address = {max}\n\
             [admin]\nlisten = \"127.0.0.1:{admin}\"\n",
            data = dir.path().join("data"),
            max = connections + 10,
        );
        let path = dir.path().join("host.toml");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("host.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_assignor-host"))
            .arg("serve")
            .arg("--config")
            .arg(&path)
            .env("RUST_LOG", "warn")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("assignor-host starts");
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(child.try_wait().unwrap().is_none(), "the host exited");
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Host {
            child,
            addr,
            admin,
            _dir: dir,
        }
    }

    /// The value of a sample of the host's own metrics.
    fn metric(&self, name: &str) -> f64 {
        use std::io::{Read, Write};
        let mut socket = std::net::TcpStream::connect(("127.0.0.1", self.admin)).unwrap();
        write!(
            socket,
            "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        socket.read_to_string(&mut text).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0.0)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A whole request frame, size prefix included.
fn frame<R: Encodable + HeaderVersion>(key: ApiKey, request: &R, version: i16, id: i32) -> Bytes {
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(id)
        .with_client_id(Some(StrBytes::from_static_str("budget-bench")))
        .encode(&mut body, key.request_header_version(version))
        .unwrap();
    request.encode(&mut body, version).unwrap();
    let mut out = BytesMut::with_capacity(body.len() + 4);
    out.put_i32(body.len() as i32);
    out.put_slice(&body);
    out.freeze()
}

async fn read_answer(socket: &mut TcpStream) -> Option<Bytes> {
    let size = socket.read_i32().await.ok()? as usize;
    let mut body = vec![0; size];
    socket.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

/// A JoinGroup v5 frame of `protocols` tiny protocols (a fresh member: no member id).
fn maximal_join(protocols: usize) -> Bytes {
    let request = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("budget-bench")))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(StrBytes::from_static_str(""))
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(
            (0..protocols)
                .map(|i| {
                    JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_string(format!("p{i:07}")))
                        .with_metadata(Bytes::from_static(b"ab"))
                })
                .collect(),
        );
    frame(ApiKey::JoinGroup, &request, 5, 1)
}

/// Above this the host is killed, its peak reported as "over": without a bound, two hundred
/// maximal JoinGroups would take the machine's memory.
const KILL_ABOVE: u64 = 12 << 30;

struct Run {
    budget: usize,
    killed: bool,
    peak_above_idle: u64,
    all_answered: Duration,
    waits: f64,
    bystander_max: Duration,
    bystander_median: Duration,
    bystander_calls: usize,
}

async fn run(budget: usize, connections: usize, join: Bytes) -> Run {
    let host = Host::start(budget, connections);
    // Let the start's own allocations (the built-ins' compilation) settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = host.child.id();
    let (idle, _) = memory(pid);
    let mut sockets = Vec::new();
    for _ in 0..connections {
        let socket = TcpStream::connect(host.addr).await.unwrap();
        socket.set_nodelay(true).unwrap();
        sockets.push(socket);
    }

    // The bystander: round trips one after another until the flood is answered.
    let done = Arc::new(AtomicBool::new(false));
    let bystander = tokio::spawn({
        let done = done.clone();
        let addr = host.addr;
        async move {
            let mut socket = TcpStream::connect(addr).await.unwrap();
            socket.set_nodelay(true).unwrap();
            let versions = frame(ApiKey::ApiVersions, &ApiVersionsRequest::default(), 2, 1);
            let metadata = frame(ApiKey::Metadata, &MetadataRequest::default(), 12, 2);
            let mut waits = Vec::new();
            while !done.load(Ordering::Relaxed) {
                for request in [&versions, &metadata] {
                    let sent = Instant::now();
                    socket.write_all(request).await.unwrap();
                    read_answer(&mut socket).await;
                    waits.push(sent.elapsed());
                }
            }
            waits
        }
    });

    // The watchdog: samples the host's memory, kills it beyond KILL_ABOVE.
    let watchdog = std::thread::spawn({
        let done = done.clone();
        move || {
            while !done.load(Ordering::Relaxed) {
                if memory(pid).0 > KILL_ABOVE {
                    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        }
    });

    let started = Instant::now();
    let mut floods = Vec::new();
    for mut socket in sockets {
        let join = join.clone();
        floods.push(tokio::spawn(async move {
            socket.write_all(&join).await.ok()?;
            let mut answer = read_answer(&mut socket).await?;
            let header = <JoinGroupResponse as HeaderVersion>::header_version(5);
            kafka_protocol::messages::ResponseHeader::decode(&mut answer, header).unwrap();
            let response = JoinGroupResponse::decode(&mut answer, 5).unwrap();
            assert_eq!(response.error_code, 79, "MEMBER_ID_REQUIRED");
            answer.advance(answer.remaining());
            Some(())
        }));
    }
    let mut answered = 0;
    for flood in floods {
        answered += usize::from(flood.await.unwrap().is_some());
    }
    let all_answered = started.elapsed();
    let killed = watchdog_result(&done, watchdog);
    let mut waits = if killed {
        bystander.abort();
        Vec::new()
    } else {
        assert_eq!(answered, connections, "every JoinGroup answered");
        bystander.await.unwrap()
    };
    waits.sort();
    let peak = if killed { KILL_ABOVE } else { memory(pid).1 };
    Run {
        budget,
        killed,
        peak_above_idle: peak.saturating_sub(idle),
        all_answered,
        waits: if killed {
            f64::NAN
        } else {
            host.metric("assignor_host_kafka_request_budget_waits_total")
        },
        bystander_max: waits.last().copied().unwrap_or_default(),
        bystander_median: waits.get(waits.len() / 2).copied().unwrap_or_default(),
        bystander_calls: waits.len(),
    }
}

/// Stops the watchdog; whether it killed the host.
fn watchdog_result(done: &AtomicBool, watchdog: std::thread::JoinHandle<bool>) -> bool {
    done.store(true, Ordering::Relaxed);
    watchdog.join().unwrap()
}

#[tokio::main]
async fn main() {
    let connections = env_or("BUDGET_CONNECTIONS", 200);
    let protocols = env_or("BUDGET_PROTOCOLS", 520_000);
    let join = maximal_join(protocols);
    println!(
        "{connections} connections, each one JoinGroup of {:.1} MiB ({protocols} protocols) at once",
        join.len() as f64 / (1 << 20) as f64
    );
    println!(
        "| queued_max_request_bytes | peak memory above idle | all answered | waits | bystander round trips: median / max (n) |"
    );
    println!("|---|---|---|---|---|");
    for budget in [0, 64 << 20, 16 << 20] {
        let run = run(budget, connections, join.clone()).await;
        let budget = match run.budget {
            0 => "0 (no bound)".to_owned(),
            b => format!("{} MiB", b >> 20),
        };
        if run.killed {
            println!(
                "| {budget} | over {} GiB: killed | - | - | - |",
                KILL_ABOVE >> 30
            );
            continue;
        }
        println!(
            "| {budget} | {:.0} MiB | {:.1} s | {} | {:.1} ms / {:.1} ms ({}) |",
            run.peak_above_idle as f64 / (1 << 20) as f64,
            run.all_answered.as_secs_f64(),
            run.waits,
            run.bystander_median.as_secs_f64() * 1e3,
            run.bystander_max.as_secs_f64() * 1e3,
            run.bystander_calls,
        );
    }
}
