//! TLS on the host's Kafka ports (`kafka.tls_certificate_location`): every port speaks TLS
//! with the configured certificate, a plaintext client gets nothing, a client certificate is
//! asked for and checked as `tls_client_auth` says, a rotated certificate serves the next
//! connections, and in proxy mode a client speaks SASL_SSL to the host (bootstrap port and a
//! broker's port) while the host speaks SASL_SSL to Kafka.
//!
//! Certificates are made by the Kafka harness with the `openssl` command (`kafka_harness::Tls`:
//! a CA, a server certificate for 127.0.0.1 and a client certificate for alice). The clients
//! are the host's own Kafka connection type (`upstream::connection`), which speaks rustls.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use assignor_host::config::Config;
use assignor_host::tls::ClientAuth;
use assignor_host::upstream::connection::security::{SaslMechanism, Security, SecuritySettings};
use assignor_host::upstream::connection::{Connection, Secret, SecurityProtocol};
use assignor_host_tests::proxy::{batch, produce};
use assignor_host_tests::{KafkaClient, TestHost, str};
use kafka_harness::Tls;
use kafka_protocol::messages::{FindCoordinatorRequest, MetadataRequest};

use super::admin_support::{Admin, sample};
use super::proxy_support::{create_on_kafka, shared_kafka};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A CA and its certificates in a folder of their own.
pub(super) fn certificates(dir: &Path) -> Tls {
    Tls::make(dir).expect("openssl makes the test certificates")
}

/// The host's certificate and key in `dir` (copies: a test rewrites them).
pub(super) fn install(tls: &Tls, dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("host.pem"), dir.join("host.key"));
    let pem = |name: &str| tls.ca.with_file_name(name);
    std::fs::copy(pem("broker.pem"), &cert).unwrap();
    std::fs::copy(pem("broker.key"), &key).unwrap();
    (cert, key)
}

pub(super) fn tls_settings(config: &mut Config, cert: &Path, key: &Path) {
    config.kafka.tls_certificate_location = Some(cert.to_path_buf());
    config.kafka.tls_key_location = Some(key.to_path_buf());
}

/// A client of `addr` over TLS trusting `ca`, with alice's certificate if `client_cert`.
pub(super) async fn connect(
    addr: &str,
    ca: &Tls,
    client_cert: Option<&Tls>,
    sasl: Option<(SaslMechanism, &str, &str)>,
) -> Result<Connection, String> {
    let mut settings = SecuritySettings {
        security_protocol: if sasl.is_some() {
            SecurityProtocol::SaslSsl
        } else {
            SecurityProtocol::Ssl
        },
        ssl_ca_location: Some(ca.ca.clone()),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    };
    if let Some(tls) = client_cert {
        settings.ssl_certificate_location = Some(tls.client_cert.clone());
        settings.ssl_key_location = Some(tls.client_key.clone());
    }
    if let Some((mechanism, user, password)) = sasl {
        settings.sasl_mechanism = Some(mechanism);
        settings.sasl_username = Some(user.to_owned());
        settings.sasl_password = Some(Secret::new(password.to_owned()));
    }
    let security: Arc<Security> = Security::load(&settings).expect("client settings");
    Connection::open(addr, &security, TIMEOUT)
        .await
        .map_err(|e| e.to_string())
}

fn find(group: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest::default()
        .with_key(str(group))
        .with_key_type(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_goes_over_tls_and_a_plaintext_client_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tls = certificates(&dir.path().join("a"));
    let (cert, key) = install(&tls, dir.path());
    let host = TestHost::with_config(|config| tls_settings(config, &cert, &key)).await;
    let addr = host.addr().to_string();

    let mut client = connect(&addr, &tls, None, None)
        .await
        .unwrap_or_else(|e| panic!("a TLS client of the host: {e}"));
    let found = client.call(&find("over-tls"), 3).await.unwrap();
    assert_eq!(
        (found.error_code, found.port),
        (0, host.addr().port() as i32)
    );

    // A plaintext ApiVersions is no TLS ClientHello: no answer, the connection closes.
    let mut plain = KafkaClient::connect(host.addr()).await.unwrap();
    plain
        .send(&assignor_host_tests::proxy::api_versions(), 3)
        .await
        .unwrap();
    assert_eq!(plain.read_frame().await.unwrap_or(None), None);

    // A client that trusts another CA refuses the host's certificate (both test CAs have one
    // name, so rustls finds the other CA and its signature does not verify).
    let other = certificates(&dir.path().join("b"));
    let error = connect(&addr, &other, None, None).await.err();
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("invalid peer certificate: BadSignature")),
        "{error:?}"
    );
    let metrics = Admin::new(&host).scrape().await;
    let closed = sample(
        &metrics,
        "assignor_host_client_connections_closed_total{reason=\"tls_handshake\"}",
    );
    assert!(closed >= 2.0, "{metrics}");
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_client_certificate_must_be_signed_by_the_configured_ca() {
    let dir = tempfile::tempdir().unwrap();
    let tls = certificates(&dir.path().join("a"));
    let stranger = certificates(&dir.path().join("b"));
    let (cert, key) = install(&tls, dir.path());
    let ca = tls.ca.clone();
    let host = TestHost::with_config(|config| {
        tls_settings(config, &cert, &key);
        config.kafka.tls_client_auth = ClientAuth::Required;
        config.kafka.tls_ca_location = Some(ca);
    })
    .await;
    let addr = host.addr().to_string();

    let mut alice = connect(&addr, &tls, Some(&tls), None)
        .await
        .unwrap_or_else(|e| panic!("alice's certificate, signed by the CA: {e}"));
    assert_eq!(alice.call(&find("mtls"), 3).await.unwrap().error_code, 0);
    // TLS 1.3 clients learn of the refusal at their first read, after the handshake.
    for (who, cert) in [("no certificate", None), ("another CA's", Some(&stranger))] {
        let refused = match connect(&addr, &tls, cert, None).await {
            Err(_) => true,
            Ok(mut c) => c.call(&find("mtls"), 3).await.is_err(),
        };
        assert!(refused, "{who}: served");
    }
    host.stop().await;
}

/// Standalone, a client certificate names the principal the ACLs decide for, as Kafka names
/// it: `User:` and the subject in RFC 2253 form (`CN=alice,O=assignor-host tests`), or what
/// `kafka.ssl_principal_mapping_rules` makes of it; a subject no rule matches is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_names_the_principal_the_acls_decide_for() {
    use assignor_host::acls::{AclBinding, AclOperation, PatternType, Permission, ResourceType};
    let dir = tempfile::tempdir().unwrap();
    let tls = certificates(&dir.path().join("a"));
    let (cert, key) = install(&tls, dir.path());
    let read_group = |principal: &str, group: &str| AclBinding {
        resource_type: ResourceType::Group,
        resource_name: group.to_owned(),
        pattern_type: PatternType::Literal,
        principal: principal.to_owned(),
        host: "*".to_owned(),
        operation: AclOperation::Read,
        permission: Permission::Allow,
    };
    for (rules, principal) in [
        ("DEFAULT", "User:CN=alice,O=assignor-host tests"),
        (r"RULE:^CN=([^,]*),O=.*$/$1/U,DEFAULT", "User:ALICE"),
    ] {
        let ca = tls.ca.clone();
        let host = TestHost::with_config(|config| {
            tls_settings(config, &cert, &key);
            config.kafka.tls_client_auth = ClientAuth::Required;
            config.kafka.tls_ca_location = Some(ca);
            config.kafka.ssl_principal_mapping_rules = rules.to_owned();
            config.kafka.allow_everyone_if_no_acl_found = false;
        })
        .await;
        let (status, body) = Admin::new(&host)
            .json(
                reqwest::Method::POST,
                "/v1/acls",
                serde_json::json!({ "acls": [read_group(principal, "mtls-mine")] }),
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
        let mut alice = connect(&host.addr().to_string(), &tls, Some(&tls), None)
            .await
            .unwrap_or_else(|e| panic!("alice's certificate: {e}"));
        for (group, expected) in [("mtls-mine", 0), ("mtls-other", 30)] {
            let found = alice.call(&find(group), 3).await.unwrap();
            assert_eq!(found.error_code, expected, "{rules}: {group}");
        }
        host.stop().await;
    }

    // A subject no rule matches: refused at the connection, as Kafka refuses it.
    let ca = tls.ca.clone();
    let host = TestHost::with_config(|config| {
        tls_settings(config, &cert, &key);
        config.kafka.tls_client_auth = ClientAuth::Required;
        config.kafka.tls_ca_location = Some(ca);
        config.kafka.ssl_principal_mapping_rules = "RULE:^CN=nobody$/x/".to_owned();
    })
    .await;
    let refused = match connect(&host.addr().to_string(), &tls, Some(&tls), None).await {
        Err(_) => true,
        Ok(mut c) => c.call(&find("mtls-mine"), 3).await.is_err(),
    };
    assert!(refused, "a subject no rule maps was served");
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_certificate_serves_the_next_connections() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (
        certificates(&dir.path().join("a")),
        certificates(&dir.path().join("b")),
    );
    let (cert, key) = install(&first, dir.path());
    let host = TestHost::with_config(|config| tls_settings(config, &cert, &key)).await;
    let addr = host.addr().to_string();
    let mut open = connect(&addr, &first, None, None).await.unwrap();

    // A half-written rotation (the certificate is garbage for a moment) keeps the old one.
    std::fs::write(&cert, "not a certificate").unwrap();
    let mut during = connect(&addr, &first, None, None)
        .await
        .unwrap_or_else(|e| panic!("during a broken rotation: {e}"));
    assert_eq!(during.call(&find("rotate"), 3).await.unwrap().error_code, 0);

    // The rotation done: the next connections get the second certificate.
    install(&second, dir.path());
    let mut next = connect(&addr, &second, None, None)
        .await
        .unwrap_or_else(|e| panic!("after the rotation: {e}"));
    assert_eq!(next.call(&find("rotate"), 3).await.unwrap().error_code, 0);
    assert!(connect(&addr, &first, None, None).await.is_err());
    // The connection opened before keeps its session.
    assert_eq!(open.call(&find("rotate"), 3).await.unwrap().error_code, 0);
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_mode_sasl_ssl_from_the_client_to_the_host_and_from_the_host_to_kafka() {
    let kafka = shared_kafka().await;
    create_on_kafka(kafka, "tls-orders", 1, 1).await;
    let tls = kafka.state().tls.clone();
    let host = TestHost::proxy_with(kafka.sasl_ssl_bootstrap(), |config| {
        let upstream = &mut config.upstream;
        upstream.security_protocol = SecurityProtocol::SaslSsl;
        upstream.sasl_mechanism = Some(SaslMechanism::ScramSha512);
        upstream.sasl_username = Some("admin".into());
        upstream.sasl_password = Some(Secret::new("admin-secret".into()));
        upstream.ssl_ca_location = Some(tls.ca.clone());
        // The host presents the same certificate as Kafka (Kafka's PEM keystore holds the key
        // and the chain in one file).
        tls_settings(config, &tls.broker_keystore, &tls.broker_keystore);
    })
    .await;
    host.wait_for_topic("tls-orders", 1).await;
    let login = Some((SaslMechanism::ScramSha512, "admin", "admin-secret"));
    let mut bootstrap = connect(&host.addr().to_string(), &tls, None, login)
        .await
        .unwrap_or_else(|e| panic!("SASL_SSL to the host's bootstrap port: {e}"));
    let metadata = bootstrap
        .call(
            &MetadataRequest::default().with_topics(Some(vec![
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(assignor_host_tests::topic_name("tls-orders"))),
            ])),
            9,
        )
        .await
        .unwrap();
    let leader = metadata.topics[0].partitions[0].leader_id;
    let broker = metadata
        .brokers
        .iter()
        .find(|b| b.node_id == leader)
        .expect("the leader is listed");
    // The leader's port on the host speaks TLS too, and the Produce reaches Kafka.
    let mut on_leader = connect(&format!("127.0.0.1:{}", broker.port), &tls, None, login)
        .await
        .unwrap_or_else(|e| panic!("SASL_SSL to the host's port for broker {leader:?}: {e}"));
    let answer = on_leader
        .call(&produce("tls-orders", 0, batch(&["over", "tls"])), 7)
        .await
        .unwrap();
    let partition = &answer.responses[0].partition_responses[0];
    assert_eq!((partition.error_code, partition.base_offset), (0, 0));
    host.stop().await;
}
