//! The host's own calls in front of Apache Kafka's SASL_SSL listener, logged in as `alice`
//! (SCRAM-SHA-512), who holds only the ACLs docs/operating.md lists for the host's user: the
//! host reads the topics, commits a group's offsets, reads their lag and creates a topic, and
//! Kafka's authorizer holds it to those ACLs (a group outside them is refused).

use assignor_host::kafka::Authentication;
use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host::upstream::connection::{Secret, SecurityProtocol};
use assignor_host_tests::TestHost;
use kafka_harness::Setup;
use kafka_protocol::messages::CreateAclsRequest;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::protocol::StrBytes;

use super::admin_support::{Admin, Member};
use super::proxy_support::{commit, commit_codes, create_on_kafka, fetched_offsets};

/// Kafka's ACL codes (`org.apache.kafka.common.acl`, `resource`).
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const READ: i8 = 3;
const CREATE: i8 = 5;
const DELETE: i8 = 6;
const ALTER: i8 = 7;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const ALLOW: i8 = 3;

fn allow(resource_type: i8, name: &str, pattern: i8, operation: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(StrBytes::from_string(name.to_owned()))
        .with_resource_pattern_type(pattern)
        .with_principal(StrBytes::from_static_str("User:alice"))
        .with_host(StrBytes::from_static_str("*"))
        .with_operation(operation)
        .with_permission_type(ALLOW)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logged_in_with_only_the_documented_acls_the_hosts_own_calls_work() {
    let kafka = kafka_harness::start_async(Setup::default())
        .await
        .unwrap_or_else(|e| panic!("starting a Kafka node: {e:#}"));
    // Set up on the PLAINTEXT listener, whose principal is a super user.
    let mut direct = create_on_kafka(&kafka, "orders", 2, 1).await;
    // The documented set, here for the topics and groups the test uses: READ on the topics
    // (implies DESCRIBE: Metadata, ListOffsets, OffsetFetch), READ and DELETE on the groups
    // (implies DESCRIBE: FindCoordinator, OffsetCommit, OffsetDelete, DeleteGroups), CREATE
    // on the cluster and ALTER on the topics (topics created and grown through the host).
    let acls = CreateAclsRequest::default().with_creations(vec![
        allow(TOPIC, "orders", LITERAL, READ),
        allow(TOPIC, "made-", PREFIXED, READ),
        allow(TOPIC, "made-", PREFIXED, ALTER),
        allow(GROUP, "shop-", PREFIXED, READ),
        allow(GROUP, "shop-", PREFIXED, DELETE),
        allow(CLUSTER, "kafka-cluster", LITERAL, CREATE),
    ]);
    let created = direct.call(&acls, 3).await.unwrap();
    for result in &created.results {
        assert_eq!(result.error_code, 0, "{:?}", result.error_message);
    }

    let host = TestHost::proxy_with(kafka.sasl_ssl_bootstrap(), |config| {
        let upstream = &mut config.upstream;
        upstream.security_protocol = SecurityProtocol::SaslSsl;
        upstream.sasl_mechanism = Some(SaslMechanism::ScramSha512);
        upstream.sasl_username = Some("alice".into());
        upstream.sasl_password = Some(Secret::new("alice-secret".into()));
        upstream.ssl_ca_location = Some(kafka.state().tls.ca.clone());
        // The test's clients are the host's own raw ones, which do not log in: this test is
        // about the host's calls (clients logging in through the host: proxy_client_sasl.rs).
        config.kafka.authentication = Some(Authentication::None);
    })
    .await;
    // Metadata, as alice: `orders` is visible to her.
    host.wait_for_topic("orders", 2).await;

    // A group in the granted prefix: its commit lands in Kafka.
    let mut member = Member::new(&host, "shop-1", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    assert_eq!(member.sync().await, [("orders".to_owned(), vec![0, 1])]);
    let mut client = host.client().await;
    let request = commit("shop-1", &member.id, member.generation, &[(0, 0), (1, 0)]);
    assert_eq!(commit_codes(&mut client, &request).await, [0, 0]);
    assert_eq!(
        fetched_offsets(&mut direct, "shop-1", &[0, 1]).await,
        [(0, 0, 0), (1, 0, 0)]
    );

    // Its lag: end offsets by ListOffsets, as alice.
    let admin = Admin::new(&host);
    let (status, group) = admin.get("/v1/groups/shop-1").await;
    assert_eq!(status, 200, "{group}");
    let ends: Vec<Option<i64>> = group["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["end"].as_i64())
        .collect();
    assert_eq!(ends, [Some(0), Some(0)], "{group}");

    // A topic created through the host, as alice (CREATE on the cluster).
    let (status, body) = admin
        .json(
            reqwest::Method::POST,
            "/v1/topics",
            serde_json::json!({"name": "made-here", "partitions": 3}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    // A group outside the granted prefix: Kafka's authorizer refuses alice, and the client
    // gets GROUP_AUTHORIZATION_FAILED (30), as from Kafka itself.
    let mut outsider = Member::new(&host, "other-1", "range").await;
    let joined = outsider.send_join().await;
    outsider.joined(joined).await;
    outsider.sync().await;
    let request = commit("other-1", &outsider.id, outsider.generation, &[(0, 0)]);
    assert_eq!(
        commit_codes(&mut client, &request).await,
        [30],
        "GROUP_AUTHORIZATION_FAILED"
    );
    host.stop().await;
}
