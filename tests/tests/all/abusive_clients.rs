//! Abusive clients against a host serving a stable group, over real sockets (issue 14): slow
//! senders, a flood of connections over the limit, half-open connections, oversized frames, a
//! member that joins and never syncs, stale-generation heartbeats in a loop, thousands of groups
//! from one client, a member that joins and leaves in a tight loop.
//!
//! Each test runs the abuse while two bystanders (a stable `range` group on `orders`)
//! heartbeat without pause, and shows them unaffected: every heartbeat answered NONE, the
//! group at its generation, and none waiting as long as a client's heartbeat interval (3 s,
//! the point where a real client would start to fall behind: a liveness bound, not a speed
//! goal). Their latency before and during the abuse is printed, for the closing note.
#![allow(
    clippy::print_stdout,
    reason = "the bystanders' latency is printed for the record"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use assignor_host_tests::{KafkaClient, TestHost, str, subscription};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    ApiVersionsRequest, GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest,
};
use reqwest::StatusCode;

use crate::admin_support::{Admin, Member, two_members};

/// A client's heartbeat interval (Kafka's default, 3 s).
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);

async fn host_with(edit: impl FnOnce(&mut assignor_host::config::Config)) -> TestHost {
    TestHost::with_config(|c| {
        c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
            name: "orders".into(),
            partitions: 4,
            partition_racks: Vec::new(),
        }];
        c.coordinator.initial_rebalance_delay_ms = 0;
        edit(c);
    })
    .await
}

/// What the bystanders saw over a stretch of time.
struct Seen {
    latencies: Vec<Duration>,
    errors: Vec<i16>,
}

impl Seen {
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * p) as usize]
    }

    fn line(&self) -> String {
        format!(
            "{} heartbeats, p50 {:?}, p99 {:?}, max {:?}",
            self.latencies.len(),
            self.percentile(0.5),
            self.percentile(0.99),
            self.percentile(1.0)
        )
    }
}

/// Two members heartbeating back to back until [`Bystanders::stop`].
struct Bystanders {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<([Member; 2], Seen)>,
    generation: i32,
}

impl Bystanders {
    async fn start(host: &TestHost) -> Bystanders {
        let (members, _) = two_members(host, "bystanders", "range").await;
        Bystanders::resume(members)
    }

    fn resume(mut members: [Member; 2]) -> Bystanders {
        let generation = members[0].generation;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let task = tokio::spawn(async move {
            let mut seen = Seen {
                latencies: Vec::new(),
                errors: Vec::new(),
            };
            while !stopping.load(Ordering::SeqCst) {
                for member in &mut members {
                    let started = Instant::now();
                    let code = member.heartbeat().await;
                    seen.latencies.push(started.elapsed());
                    if code != 0 {
                        seen.errors.push(code);
                    }
                }
            }
            (members, seen)
        });
        Bystanders {
            stop,
            task,
            generation,
        }
    }

    async fn stop(self) -> ([Member; 2], Seen) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.expect("the bystanders' task")
    }
}

/// Runs `abuse` with the bystanders heartbeating, after a quiet second to compare with, and
/// checks they were unaffected.
async fn unaffected_by<F: std::future::Future<Output = ()>>(host: &TestHost, what: &str, abuse: F) {
    let bystanders = Bystanders::start(host).await;
    let generation = bystanders.generation;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (members, quiet) = bystanders.stop().await;
    let bystanders = Bystanders::resume(members);
    abuse.await;
    let (mut members, during) = bystanders.stop().await;
    println!("{what}: bystanders before: {}", quiet.line());
    println!("{what}: bystanders during: {}", during.line());
    assert!(quiet.errors.is_empty(), "before {what}: {:?}", quiet.errors);
    assert!(
        during.errors.is_empty(),
        "during {what} the bystanders got {:?}",
        during.errors
    );
    assert!(
        during.percentile(1.0) < HEARTBEAT_INTERVAL,
        "during {what} a heartbeat waited {:?}",
        during.percentile(1.0)
    );
    for member in &mut members {
        assert_eq!(member.generation, generation);
        assert_eq!(member.heartbeat().await, 0, "after {what}");
    }
}

fn api_versions_frame() -> Vec<u8> {
    use kafka_protocol::messages::RequestHeader;
    use kafka_protocol::protocol::Encodable;
    let mut body = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(18)
        .with_request_api_version(2)
        .with_correlation_id(1)
        .encode(&mut body, 1)
        .unwrap();
    ApiVersionsRequest::default().encode(&mut body, 2).unwrap();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

#[tokio::test]
async fn slow_senders_are_answered_and_slow_nobody_else() {
    let host = host_with(|_| {}).await;
    let frame = api_versions_frame();
    let addr = host.addr();
    unaffected_by(&host, "slow senders", async {
        // Ten clients each send an ApiVersions a byte every 40 ms (about a second per frame).
        let senders: Vec<_> = (0..10)
            .map(|_| {
                let frame = frame.clone();
                tokio::spawn(async move {
                    let mut client = KafkaClient::connect(addr).await.unwrap();
                    for byte in frame {
                        client.send_raw(&[byte]).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(40)).await;
                    }
                    let answer = client.read_frame().await.unwrap().expect("an answer");
                    assert_eq!(&answer[..4], &1i32.to_be_bytes(), "its correlation id");
                })
            })
            .collect();
        for sender in senders {
            sender.await.expect("a slow sender is answered");
        }
    })
    .await;
    host.stop().await;
}

#[tokio::test]
async fn a_flood_of_connections_over_the_limit_waits_and_takes_no_slot() {
    let host = host_with(|c| c.kafka.max_connections = 20).await;
    let addr = host.addr();
    unaffected_by(&host, "a flood of connections", async {
        // 200 clients each ask ApiVersions. The host serves 18 (20 slots, two of them the
        // bystanders'); the others wait unaccepted, as at Kafka's `max.connections`.
        let flood: Vec<_> = (0..200)
            .map(|_| {
                tokio::spawn(async move {
                    let mut client = KafkaClient::connect(addr).await.ok()?;
                    client.send(&ApiVersionsRequest::default(), 2).await.ok()?;
                    let answered =
                        tokio::time::timeout(Duration::from_secs(5), client.read_frame())
                            .await
                            .is_ok_and(|frame| frame.is_ok_and(|f| f.is_some()));
                    Some((client, answered))
                })
            })
            .collect();
        let mut clients = Vec::new();
        for task in flood {
            if let Some(done) = task.await.unwrap() {
                clients.push(done);
            }
        }
        let answered = clients.iter().filter(|(_, a)| *a).count();
        assert_eq!(answered, 18, "the free slots, and no more");
        drop(clients);
        // Their slots are free again.
        let mut client = host.client().await;
        let answer = client
            .call(&ApiVersionsRequest::default(), 2)
            .await
            .unwrap();
        assert_eq!(answer.error_code, 0);
    })
    .await;
    host.stop().await;
}

#[tokio::test]
async fn half_open_connections_are_closed_at_the_frame_timeout() {
    let host = host_with(|c| {
        c.kafka.max_connections = 20;
        c.kafka.frame_timeout = Duration::from_millis(500);
    })
    .await;
    unaffected_by(&host, "half-open connections", async {
        let mut held = Vec::new();
        for _ in 0..15 {
            let mut client = host.client().await;
            // Half of an ApiVersions frame, then silence with the socket left open.
            let frame = api_versions_frame();
            client.send_raw(&frame[..frame.len() / 2]).await.unwrap();
            held.push(client);
        }
        for client in &mut held {
            assert!(client.is_closed_by_host().await.unwrap(), "closed");
        }
        // Their slots serve new clients.
        let mut fresh = Vec::new();
        for _ in 0..15 {
            let mut client = host.client().await;
            let answer = client
                .call(&ApiVersionsRequest::default(), 2)
                .await
                .unwrap();
            assert_eq!(answer.error_code, 0);
            fresh.push(client);
        }
    })
    .await;
    host.stop().await;
}

#[tokio::test]
async fn oversized_frames_are_refused_before_they_are_read() {
    let host = host_with(|_| {}).await;
    unaffected_by(&host, "oversized frames", async {
        for size in [i32::MAX, 200 << 20, -1] {
            for _ in 0..10 {
                let mut client = host.client().await;
                let mut bytes = size.to_be_bytes().to_vec();
                bytes.extend_from_slice(&[0; 64]);
                client.send_raw(&bytes).await.unwrap();
                assert!(client.is_closed_by_host().await.unwrap(), "size {size}");
            }
        }
    })
    .await;
    host.stop().await;
}

fn join(group: &str, member_id: &str, rebalance_timeout_ms: i32) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(rebalance_timeout_ms)
        .with_member_id(str(member_id))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(str("range"))
                .with_metadata(subscription(&["orders"], 3)),
        ])
}

/// The two-step join (KIP-394) of a new member of `group`; its member id and generation.
async fn joined(client: &mut KafkaClient, group: &str, rebalance_timeout_ms: i32) -> (String, i32) {
    let first = client
        .call(&join(group, "", rebalance_timeout_ms), 7)
        .await
        .unwrap();
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    let id = first.member_id.to_string();
    let second = client
        .call(&join(group, &id, rebalance_timeout_ms), 7)
        .await
        .unwrap();
    assert_eq!(second.error_code, 0, "{group}");
    (id, second.generation_id)
}

#[tokio::test]
async fn a_member_that_joins_and_never_syncs_is_removed_from_its_group_only() {
    let host = host_with(|_| {}).await;
    let admin = Admin::new(&host);
    unaffected_by(&host, "a member that never syncs", async {
        let mut lurker = host.client().await;
        joined(&mut lurker, "lurkers", 500).await;
        // No SyncGroup: the host stops waiting for it after its rebalance timeout.
        let mut members = usize::MAX;
        for _ in 0..100 {
            let (status, body) = admin.get("/v1/groups/lurkers").await;
            assert_eq!(status, StatusCode::OK, "{body}");
            members = body["members"].as_array().map_or(0, Vec::len);
            if members == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(members, 0, "the member that never synced was removed");
    })
    .await;
    host.stop().await;
}

#[tokio::test]
async fn heartbeats_with_a_stale_generation_in_a_loop_are_refused_and_change_nothing() {
    let host = host_with(|_| {}).await;
    let bystanders = Bystanders::start(&host).await;
    let generation = bystanders.generation;
    let (members, _) = bystanders.stop().await;
    let victim = members[0].id.clone();
    let bystanders = Bystanders::resume(members);
    // Another connection heartbeats as the first bystander, one generation behind, for 2 s.
    let mut abuser = host.client().await;
    let stale = HeartbeatRequest::default()
        .with_group_id(GroupId(str("bystanders")))
        .with_generation_id(generation - 1)
        .with_member_id(str(&victim));
    let started = Instant::now();
    let mut refused = 0;
    while started.elapsed() < Duration::from_secs(2) {
        let answer = abuser.call(&stale, 3).await.unwrap();
        assert_eq!(answer.error_code, 22, "ILLEGAL_GENERATION");
        refused += 1;
    }
    let (mut members, during) = bystanders.stop().await;
    println!(
        "stale heartbeats: {refused} refused; bystanders during: {}",
        during.line()
    );
    assert!(during.errors.is_empty(), "{:?}", during.errors);
    assert!(during.percentile(1.0) < HEARTBEAT_INTERVAL);
    for member in &mut members {
        assert_eq!(member.heartbeat().await, 0);
        assert_eq!(member.generation, generation);
    }
    host.stop().await;
}

#[tokio::test]
async fn thousands_of_groups_from_one_client_leave_other_groups_served() {
    const GROUPS: usize = 2_000;
    let host = host_with(|_| {}).await;
    unaffected_by(&host, "2,000 groups from one client", async {
        let mut client = host.client().await;
        for n in 0..GROUPS {
            joined(&mut client, &format!("spam-{n}"), 30_000).await;
        }
        let listed = client.call(&ListGroupsRequest::default(), 4).await.unwrap();
        assert_eq!(listed.error_code, 0);
        let spam = listed
            .groups
            .iter()
            .filter(|g| g.group_id.starts_with("spam-"))
            .count();
        assert_eq!(spam, GROUPS, "every group was formed");
    })
    .await;
    host.stop().await;
}

#[tokio::test]
async fn a_member_that_joins_and_leaves_in_a_tight_loop_churns_its_own_group_only() {
    let host = host_with(|_| {}).await;
    let admin = Admin::new(&host);
    unaffected_by(&host, "join and leave in a loop", async {
        let mut churner = host.client().await;
        let started = Instant::now();
        let mut rounds = 0;
        while started.elapsed() < Duration::from_secs(2) {
            let (id, _) = joined(&mut churner, "churn", 30_000).await;
            let leave = LeaveGroupRequest::default()
                .with_group_id(GroupId(str("churn")))
                .with_members(vec![MemberIdentity::default().with_member_id(str(&id))]);
            let answer = churner.call(&leave, 3).await.unwrap();
            assert_eq!(answer.error_code, 0);
            rounds += 1;
        }
        println!("join and leave: {rounds} rounds in 2 s");
        let (_, body) = admin.get("/v1/groups/churn").await;
        assert_eq!(body["state"], "Empty", "{body}");
    })
    .await;
    host.stop().await;
}
