//! Host nodes in one cluster in front of Apache Kafka (tests/kafka; each test a cluster name
//! of its own in the shared Kafka, or a Kafka of its own when it stops it): the shards split
//! between the nodes, FindCoordinator on any node names the shard's owner, the others refuse
//! the group with NOT_COORDINATOR, Metadata lists the other node, a node that leaves hands its
//! shards over, and a node that loses the upstream stops serving within its lease (its
//! requests then say COORDINATOR_LOAD_IN_PROGRESS); `cutoff.rs`: a node cut off from a living
//! upstream stops before another node starts.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, JoinGroupResponse, MetadataRequest,
    MetadataResponse,
};
use kafka_protocol::protocol::StrBytes;

mod cutoff;
mod forwarder;

use super::ClusterSettings;
use crate::config::Config;
use crate::coordinator::tests::context::Join;
use crate::server::Server;
use crate::upstream::client::tests::support::{self, Kafka, unique};

/// Short timings, so a test sees rebalances and fencing within seconds: the session timeout
/// is the shortest Kafka accepts by default (`group.min.session.timeout.ms`), and the lease
/// 6 s - 300 ms - 1 s = 4.7 s.
fn settings() -> ClusterSettings {
    ClusterSettings {
        name: Some("test".into()),
        session_timeout: Duration::from_secs(6),
        heartbeat_interval: Duration::from_millis(300),
        rebalance_timeout: Duration::from_secs(8),
        fence_margin: Duration::from_secs(1),
        renew_interval: Duration::from_millis(300),
        probe_interval: Duration::from_millis(300),
        ..ClusterSettings::default()
    }
}

/// A node of the cluster `name` in front of `kafka`.
async fn node(kafka: &Kafka, name: &str, data: &tempfile::TempDir) -> Server {
    node_at(kafka.bootstrap(), name, data).await
}

/// A node of the cluster `name` whose upstream is `bootstrap`.
async fn node_at(bootstrap: String, name: &str, data: &tempfile::TempDir) -> Server {
    node_with(bootstrap, name, data, |_| {}).await
}

/// [`node_at`], its configuration edited by `edit` last.
async fn node_with(
    bootstrap: String,
    name: &str,
    data: &tempfile::TempDir,
    edit: impl FnOnce(&mut Config),
) -> Server {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let mut config = Config {
        data_dir: data.path().to_path_buf(),
        cluster: ClusterSettings {
            name: Some(name.to_owned()),
            ..settings()
        },
        ..Config::default()
    };
    config.kafka.listen = "127.0.0.1:0".parse().unwrap();
    config.admin.listen = "127.0.0.1:0".parse().unwrap();
    // Every node signs the module log with one secret, as an operator sets them up.
    let secret = data.path().join("cluster-secret");
    std::fs::write(&secret, "the test cluster's shared secret\n").unwrap();
    config.cluster.secret_file = Some(secret);
    config.upstream.bootstrap = vec![bootstrap];
    config.upstream.broker_ports_from = Some(0);
    config.upstream.metadata_refresh = Duration::from_millis(300);
    config.coordinator.initial_rebalance_delay_ms = 0;
    if let Ok(debug) = std::env::var("CLUSTER_DEBUG") {
        config.upstream.client.insert("debug".into(), debug);
    }
    edit(&mut config);
    Server::start(config).await.expect("a cluster node starts")
}

/// Waits up to 30 s for `done`.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "not within 30 s: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `nodes` serve every shard between them, each some, none twice, and each knows
/// every node's shards.
fn split(nodes: &[&Server]) -> bool {
    let mut all: Vec<u32> = Vec::new();
    for node in nodes {
        let status = node.cluster().unwrap().status();
        let held = status.serving.clone();
        if held.is_empty() || held != status.held {
            return false;
        }
        let known: usize = status.nodes.iter().map(|n| n.shards.len()).sum();
        if status.nodes.len() != nodes.len() || known != 50 {
            return false;
        }
        all.extend(held);
    }
    all.sort_unstable();
    all == (0..50).collect::<Vec<u32>>()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn find_coordinator(at: SocketAddr, group: &str) -> FindCoordinatorResponse {
    let request = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_owned()))
        .with_key_type(0);
    blocking(move || support::call(at, &request, 3)).await
}

async fn join(at: SocketAddr, group: &str) -> i16 {
    let request = Join::new(group).request();
    let answer: JoinGroupResponse = blocking(move || support::call(at, &request, 5)).await;
    answer.error_code
}

fn node_id(server: &Server) -> i32 {
    server.cluster().unwrap().me().node_id
}

// (noida-db 0.2.3 sometimes lost the second node's JoinGroup here, so against it this test
// was left out of `cargo test`; Kafka never did: docs/cluster.md.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_split_the_groups_and_one_takes_them_all_when_the_other_leaves() {
    let (kafka, name) = (Kafka::shared().await, unique("split"));
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node(&kafka, &name, &dir_a).await;
    let b = node(&kafka, &name, &dir_b).await;
    assert_ne!(node_id(&a), node_id(&b));
    wait_until("the 50 shards split between both nodes", || {
        split(&[&a, &b])
    })
    .await;

    let groups: Vec<String> = (0..40).map(|i| format!("group-{i}")).collect();
    let (mut on_a, mut on_b) = (0, 0);
    for group in &groups {
        let shard = a.cluster().unwrap().shard_of(group);
        let (owner, other) = if a.cluster().unwrap().holds(shard) {
            on_a += 1;
            (&a, &b)
        } else {
            on_b += 1;
            (&b, &a)
        };
        // Either node names the owner, at the owner's own endpoint.
        for asked in [&a, &b] {
            let found = find_coordinator(asked.kafka_addr(), group).await;
            assert_eq!(found.error_code, 0, "{group}: {:?}", found.error_message);
            assert_eq!(found.node_id.0, node_id(owner), "{group} (shard {shard})");
            assert_eq!(found.port, i32::from(owner.kafka_addr().port()), "{group}");
        }
        // The owner serves the group (a first JoinGroup is asked for its member id), the
        // other refuses it.
        let served = join(owner.kafka_addr(), group).await;
        assert_eq!(served, ResponseError::MemberIdRequired.code(), "{group}");
        let refused = join(other.kafka_addr(), group).await;
        assert_eq!(refused, ResponseError::NotCoordinator.code(), "{group}");
    }
    assert!(
        on_a > 0 && on_b > 0,
        "40 groups on one node only: {on_a} / {on_b}"
    );

    // Metadata through either node lists the other's coordinator, so a client whose node dies
    // can reach the rest.
    let metadata = MetadataRequest::default().with_topics(Some(Vec::new()));
    let at = a.kafka_addr();
    let answer: MetadataResponse = blocking(move || support::call(at, &metadata, 9)).await;
    let b_port = i32::from(b.kafka_addr().port());
    assert!(
        answer
            .brokers
            .iter()
            .any(|broker| broker.node_id.0 == node_id(&b) && broker.port == b_port),
        "node b missing from a's Metadata: {:?}",
        answer.brokers
    );

    // b leaves: its groups are released and a takes every shard.
    b.shutdown().await.unwrap();
    wait_until("a serves every shard", || {
        a.cluster().unwrap().status().serving.len() == 50
    })
    .await;
    for group in &groups {
        let found = find_coordinator(a.kafka_addr(), group).await;
        assert_eq!(
            (found.error_code, found.node_id.0),
            (0, node_id(&a)),
            "{group}"
        );
        let served = join(a.kafka_addr(), group).await;
        assert_eq!(served, ResponseError::MemberIdRequired.code(), "{group}");
    }
    a.shutdown().await.unwrap();
}

/// The node group and the module log (librdkafka) reach a SASL_SSL upstream as the host's own
/// connections do: two nodes logged in as Kafka's `admin`, one by SCRAM-SHA-512 and one by
/// OAUTHBEARER (a token file librdkafka is handed through its refresh callback), trusting the
/// harness's CA, split the shards and each serves its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_over_sasl_ssl_split_the_groups() {
    use crate::upstream::connection::security::SaslMechanism;
    use crate::upstream::connection::{Secret, SecurityProtocol};
    let (kafka, name) = (Kafka::shared().await, unique("sasl"));
    let bootstrap = kafka.cluster().sasl_ssl_bootstrap().to_owned();
    let ca = kafka.cluster().state().tls.ca.clone();
    let secured = |config: &mut Config| {
        let upstream = &mut config.upstream;
        upstream.security_protocol = SecurityProtocol::SaslSsl;
        upstream.ssl_ca_location = Some(ca.clone());
        // This test's raw requests do not log in: the node group is under test, not the
        // clients' SASL (`proxy_client_sasl.rs`).
        config.kafka.authentication = Some(crate::kafka::Authentication::None);
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node_with(bootstrap.clone(), &name, &dir_a, |config| {
        secured(config);
        let upstream = &mut config.upstream;
        upstream.sasl_mechanism = Some(SaslMechanism::ScramSha512);
        upstream.sasl_username = Some("admin".into());
        upstream.sasl_password = Some(Secret::new("admin-secret".into()));
    })
    .await;
    let token = dir_b.path().join("token");
    std::fs::write(&token, kafka_harness::unsigned_token("admin", 3600) + "\n").unwrap();
    let b = node_with(bootstrap, &name, &dir_b, |config| {
        secured(config);
        config.upstream.sasl_mechanism = Some(SaslMechanism::OauthBearer);
        config.upstream.sasl_oauthbearer_token_file = Some(token.clone());
    })
    .await;
    wait_until("the two nodes split the shards over SASL_SSL", || {
        split(&[&a, &b])
    })
    .await;
    let group = "orders-app";
    let found = find_coordinator(a.kafka_addr(), group).await;
    let owner = if found.node_id.0 == node_id(&a) {
        &a
    } else {
        &b
    };
    assert_eq!(
        join(owner.kafka_addr(), group).await,
        ResponseError::MemberIdRequired.code()
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_loses_the_upstream_stops_serving_within_its_lease() {
    // A Kafka of the test's own: it is stopped half-way.
    let kafka = Kafka::own().await;
    let dir = tempfile::tempdir().unwrap();
    let a = node(&kafka, "lost", &dir).await;
    wait_until("a serves every shard", || {
        a.cluster().unwrap().status().serving.len() == 50
    })
    .await;
    let group = "orders-app";
    assert_eq!(
        join(a.kafka_addr(), group).await,
        ResponseError::MemberIdRequired.code()
    );

    // The upstream dies. No renewal is accepted from now on, so the lease (4.7 s from the
    // sending of the last accepted one, which was before this instant) runs out, and the node
    // refuses the group although it still holds its shard: the upstream could hand the shard
    // to another node only a session timeout (6 s) after the last heartbeat it received.
    let lost = Instant::now();
    drop(kafka);
    let lease = settings().lease();
    loop {
        // When the request left, not when its answer came: a slow answer to a request sent in
        // time is no late service.
        let sent = lost.elapsed();
        let code = join(a.kafka_addr(), group).await;
        // Held, no longer served: "loading", so its clients retry here.
        if code == ResponseError::CoordinatorLoadInProgress.code() {
            break;
        }
        assert_eq!(code, ResponseError::MemberIdRequired.code());
        assert!(
            sent < settings().session_timeout,
            "served a request sent {sent:?} after the upstream died (lease {lease:?})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ownership = a.cluster().unwrap();
    assert!(!ownership.leased());
    assert_eq!(
        ownership.held().len(),
        50,
        "still assigned, no longer served"
    );
    // FindCoordinator still names this node, the shard's holder, whose requests say "loading".
    let found = find_coordinator(a.kafka_addr(), group).await;
    assert_eq!((found.error_code, found.node_id.0), (0, node_id(&a)));
    a.shutdown().await.unwrap();
}
