//! Clients authenticated by the cluster itself (`kafka.authentication = "upstream"`, the
//! default in front of a SASL listener): a client's SASL exchange goes up its own glued
//! connection to Apache Kafka's SASL_SSL listener, Kafka checks the client's own credentials
//! and holds its data requests to the client's own ACLs, and the host answers nothing but
//! ApiVersions, SaslHandshake and SaslAuthenticate before that (it never acts with its own
//! credentials for a client Kafka has not accepted), nor anything of its own after the
//! session Kafka gave the client ran out.
//!
//! The client here is the host's own Kafka connection type (`upstream::connection`) pointed
//! at the host with SASL_PLAINTEXT: it speaks SaslHandshake v1 and SaslAuthenticate with
//! rsasl's PLAIN and SCRAM, and the verdict on each exchange is Kafka's.

use std::time::{Duration, Instant};

use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host_tests::proxy::{batch, produce};
use assignor_host_tests::{KafkaClient, TestHost, str};
use bytes::{BufMut, BytesMut};
use kafka_harness::{KafkaCluster, Setup};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, FindCoordinatorRequest, JoinGroupRequest, MetadataRequest,
    SaslHandshakeRequest, SaslHandshakeResponse,
};

use super::admin_support::{Admin, sample};
use super::proxy_support::{create_on_kafka, login, sasl_host, shared_kafka};

async fn kafka(setup: Setup) -> KafkaCluster {
    kafka_harness::start_async(setup)
        .await
        .unwrap_or_else(|e| panic!("starting a Kafka node: {e:#}"))
}

fn allow_alice(topic: &str, operation: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(2) // TOPIC
        .with_resource_name(str(topic))
        .with_resource_pattern_type(3) // LITERAL
        .with_principal(str("User:alice"))
        .with_host(str("*"))
        .with_operation(operation)
        .with_permission_type(3) // ALLOW
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_served_once_kafka_accepted_its_own_credentials_and_keeps_its_own_acls() {
    let kafka = shared_kafka().await;
    let mut direct = create_on_kafka(kafka, "sasl-orders", 1, 1).await;
    create_on_kafka(kafka, "sasl-secret", 1, 1).await;
    // alice may write and read `orders`, and nothing else.
    const READ: i8 = 3;
    const WRITE: i8 = 4;
    let acls = CreateAclsRequest::default().with_creations(vec![
        allow_alice("sasl-orders", WRITE),
        allow_alice("sasl-orders", READ),
    ]);
    let created = direct.call(&acls, 3).await.unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );
    let host = sasl_host(kafka).await;
    host.wait_for_topic("sasl-orders", 1).await;

    for mechanism in [SaslMechanism::ScramSha512, SaslMechanism::Plain] {
        let mut client = login(&host, mechanism, "alice", "alice-secret")
            .await
            .unwrap_or_else(|e| panic!("{mechanism:?}: alice's login through the host: {e}"));
        // The data path carries alice's identity: Kafka takes her Produce to `orders` and
        // refuses the one to `secret` with TOPIC_AUTHORIZATION_FAILED (29).
        for (topic, expected) in [("sasl-orders", 0), ("sasl-secret", 29)] {
            let answer = client
                .call(&produce(topic, 0, batch(&["a"])), 7)
                .await
                .unwrap_or_else(|e| panic!("{mechanism:?}: Produce to {topic}: {e}"));
            let code = answer.responses[0].partition_responses[0].error_code;
            assert_eq!(code, expected, "{mechanism:?}: Produce to {topic}");
        }
        // And the host's own answers are hers now, held to her ACLs on Kafka: she may use no
        // group (proxy_authorization.rs tests each API).
        let found = client
            .call(
                &FindCoordinatorRequest::default()
                    .with_key(str("shop"))
                    .with_key_type(0),
                3,
            )
            .await
            .unwrap();
        assert_eq!(found.error_code, 30, "{mechanism:?}: {found:?}");
    }

    // A wrong password: Kafka refuses it, and the client hears Kafka's reason.
    for mechanism in [SaslMechanism::ScramSha512, SaslMechanism::Plain] {
        let error = login(&host, mechanism, "alice", "not-alices")
            .await
            .err()
            .unwrap_or_else(|| panic!("{mechanism:?}: a wrong password was accepted"));
        assert!(
            error.contains("Authentication failed"),
            "{mechanism:?}: {error}"
        );
    }

    let metrics = Admin::new(&host).scrape().await;
    for (mechanism, result, at_least) in [
        ("SCRAM-SHA-512", "success", 1.0),
        ("PLAIN", "success", 1.0),
        ("SCRAM-SHA-512", "failure", 1.0),
        ("PLAIN", "failure", 1.0),
    ] {
        let name = format!(
            "assignor_host_client_authentications_total{{mechanism=\"{mechanism}\",result=\"{result}\"}}"
        );
        assert!(sample(&metrics, &name) >= at_least, "{name} in\n{metrics}");
    }
    host.stop().await;
}

/// Sends `request` at `version` on a new raw connection, and says whether the host answered
/// (`Some(frame)`) and then closed the connection.
async fn before_login<R: kafka_protocol::protocol::Request>(
    host: &TestHost,
    request: &R,
    version: i16,
) -> (Option<bytes::Bytes>, bool) {
    let mut client = KafkaClient::connect(host.addr()).await.unwrap();
    client.send(request, version).await.unwrap();
    let answer = client.read_frame().await.unwrap_or(None);
    let closed = match answer {
        None => true,
        Some(_) => client.is_closed_by_host().await.unwrap_or(true),
    };
    (answer, closed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_authentication_the_host_answers_nothing_but_the_sasl_apis() {
    let kafka = shared_kafka().await;
    let host = sasl_host(kafka).await;

    // ApiVersions is answered, with SaslHandshake 0-1 as Kafka advertises it (librdkafka
    // needs v0 in the range to log in at all, then sends v1; a v0 request is refused, below)
    // and SaslAuthenticate.
    let mut client = host.client().await;
    let versions = client
        .call(&assignor_host_tests::proxy::api_versions(), 3)
        .await
        .unwrap();
    let range = |key: ApiKey| {
        versions
            .api_keys
            .iter()
            .find(|v| v.api_key == key as i16)
            .map(|v| (v.min_version, v.max_version))
    };
    assert_eq!(range(ApiKey::SaslHandshake), Some((0, 1)));
    assert!(range(ApiKey::SaslAuthenticate).is_some());

    // A request the host would answer itself, and one it would pass up: no answer, the
    // connection closes (as Kafka closes a connection that skips authentication).
    let join = JoinGroupRequest::default()
        .with_group_id(kafka_protocol::messages::GroupId(str("before-login")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(str(""))
        .with_protocol_type(str("consumer"));
    assert_eq!(
        before_login(&host, &join, 5).await,
        (None, true),
        "JoinGroup"
    );
    let find = FindCoordinatorRequest::default()
        .with_key(str("before-login"))
        .with_key_type(0);
    assert_eq!(
        before_login(&host, &find, 3).await,
        (None, true),
        "FindCoordinator"
    );
    let metadata = MetadataRequest::default().with_topics(None);
    assert_eq!(
        before_login(&host, &metadata, 9).await,
        (None, true),
        "Metadata"
    );
    // ... and the JoinGroup formed nothing.
    let (status, _) = Admin::new(&host).get("/v1/groups/before-login").await;
    assert_eq!(status, 404, "a group formed for an unauthenticated client");

    // SaslHandshake v0 and a mechanism the host cannot follow: refused with Kafka's codes
    // (UNSUPPORTED_VERSION 35, UNSUPPORTED_SASL_MECHANISM 33), then closed.
    for (mechanism, version, code) in [("PLAIN", 0, 35), ("GSSAPI", 1, 33)] {
        let handshake = SaslHandshakeRequest::default().with_mechanism(str(mechanism));
        let (answer, closed) = before_login(&host, &handshake, version).await;
        let mut answer = answer.unwrap_or_else(|| panic!("{mechanism} v{version}: no answer"));
        let _correlation = bytes::Buf::get_i32(&mut answer);
        let decoded: SaslHandshakeResponse =
            kafka_protocol::protocol::Decodable::decode(&mut answer, version).unwrap();
        assert_eq!(decoded.error_code, code, "{mechanism} v{version}");
        assert!(
            decoded
                .mechanisms
                .iter()
                .any(|m| m.as_str() == "SCRAM-SHA-512"),
            "{decoded:?}"
        );
        assert!(closed, "{mechanism} v{version}: the connection stayed open");
    }

    // A frame over Kafka's 512 KiB cap for SASL, before authentication: closed unread.
    let mut big = KafkaClient::connect(host.addr()).await.unwrap();
    let mut frame = BytesMut::new();
    frame.put_i16(ApiKey::SaslAuthenticate as i16);
    frame.put_i16(2);
    frame.put_i32(1);
    frame.put_slice(&vec![0u8; 600 * 1024]);
    let _ = big.send_frame(&frame).await;
    assert!(big.is_closed_by_host().await.unwrap_or(true));

    let metrics = Admin::new(&host).scrape().await;
    let closed = sample(
        &metrics,
        "assignor_host_client_connections_closed_total{reason=\"unauthenticated\"}",
    );
    assert_eq!(closed, 3.0, "{metrics}");
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_past_the_lifetime_kafka_gave_it_gets_nothing_more_from_the_host() {
    // Kafka bounds every SASL session to 3 s (KIP-368's connections.max.reauth.ms).
    let kafka = kafka(Setup::default().config("connections.max.reauth.ms", 3000)).await;
    let host = sasl_host(&kafka).await;
    let mut client = login(&host, SaslMechanism::ScramSha512, "admin", "admin-secret")
        .await
        .unwrap();
    let logged_in = Instant::now();
    let find = FindCoordinatorRequest::default()
        .with_key(str("late"))
        .with_key_type(0);
    assert_eq!(
        client.call(&find, 3).await.unwrap().error_code,
        0,
        "within the session"
    );
    // Wait for the state the test is about: the session's end.
    tokio::time::sleep_until((logged_in + Duration::from_millis(3_500)).into()).await;
    let after = client.call(&find, 3).await;
    assert!(
        after.is_err(),
        "answered after the session expired: {after:?}"
    );
    let metrics = Admin::new(&host).scrape().await;
    let closed = sample(
        &metrics,
        "assignor_host_client_connections_closed_total{reason=\"expired\"}",
    );
    assert_eq!(closed, 1.0, "{metrics}");
    host.stop().await;
}
