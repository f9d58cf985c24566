//! How a proxy-mode host of the tests reaches Apache Kafka: `UPSTREAM_SECURITY` chooses, as in
//! the real-client suite (`tests/clients/harness/security.py`, docs/testing.md, "The upstream
//! secured"), for every test that starts its host with [`TestHost::proxy_to`]:
//!
//! - `plaintext` (unset): Kafka's PLAINTEXT listener, a super user.
//! - `sasl_ssl`: the SASL_SSL listener, the host logged in as the harness's `assignor-host` by
//!   SCRAM-SHA-512; the test's raw clients of that host then log in through it (PLAIN as
//!   `admin`, relayed to Kafka on their own links) without each test saying so.
//! - `mtls`: the SSL listener, the host presenting its own client certificate; the raw
//!   clients' links go up without it, as ANONYMOUS (the listener only asks for one).
//!
//! In both secured modes the host's principals hold only the ACLs docs/operating.md lists for
//! the host's user ([`grant_host_acls`]).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Mutex;

use assignor_host::config::Config;
use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host::upstream::connection::{Secret, SecurityProtocol};
use kafka_harness::KafkaCluster;
use kafka_protocol::messages::CreateAclsRequest;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::protocol::StrBytes;

use crate::{KafkaClient, TestHost};

/// The upstream's security in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plaintext,
    SaslSsl,
    Mtls,
}

/// `UPSTREAM_SECURITY`; a value it does not know fails the test saying which.
pub fn mode() -> Mode {
    match std::env::var("UPSTREAM_SECURITY").as_deref() {
        Err(_) | Ok("") | Ok("plaintext") => Mode::Plaintext,
        Ok("sasl_ssl") => Mode::SaslSsl,
        Ok("mtls") => Mode::Mtls,
        Ok(other) => panic!("UPSTREAM_SECURITY={other}: plaintext, sasl_ssl or mtls"),
    }
}

/// The harness's user for a host under test, and its certificate's principal.
pub const HOST_USER: &str = "assignor-host";
pub const HOST_CERT_PRINCIPAL: &str = "User:CN=assignor-host,O=assignor-host tests";

/// The host's ports whose raw clients log in ([`KafkaClient::connect`] asks).
static LOGIN_AT: Mutex<Option<HashSet<SocketAddr>>> = Mutex::new(None);

/// The PLAIN login a raw client of `addr` sends, if `addr` is a port of a host that wants it.
pub fn login_for(addr: SocketAddr) -> Option<(&'static str, &'static str)> {
    let at = LOGIN_AT.lock().unwrap();
    at.as_ref()
        .is_some_and(|set| set.contains(&addr))
        .then_some(("admin", "admin-secret"))
}

fn logs_in(addr: SocketAddr) {
    LOGIN_AT
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(addr);
}

/// docs/operating.md's ACLs for the host's user, for both of its principals, on `kafka`
/// (over its PLAINTEXT listener, a super user's): READ and ALTER on topics, READ and DELETE on
/// groups, CREATE on the cluster, WRITE on transactional ids, WRITE on `__assignor_host.*`.
pub async fn grant_host_acls(kafka: &KafkaCluster) {
    const LITERAL: i8 = 3;
    const PREFIXED: i8 = 4;
    const ALLOW: i8 = 3;
    // resource types: TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5; operations: READ 3,
    // WRITE 4, CREATE 5, DELETE 6, ALTER 7.
    let set: [(i8, &str, i8, i8); 7] = [
        (2, "*", LITERAL, 3),
        (2, "*", LITERAL, 7),
        (3, "*", LITERAL, 3),
        (3, "*", LITERAL, 6),
        (4, "kafka-cluster", LITERAL, 5),
        (5, "*", LITERAL, 4),
        (2, "__assignor_host.", PREFIXED, 4),
    ];
    let creations = [format!("User:{HOST_USER}"), HOST_CERT_PRINCIPAL.to_owned()]
        .into_iter()
        .flat_map(|principal| {
            set.iter().map(move |&(kind, name, pattern, operation)| {
                AclCreation::default()
                    .with_resource_type(kind)
                    .with_resource_name(StrBytes::from_string(name.to_owned()))
                    .with_resource_pattern_type(pattern)
                    .with_principal(StrBytes::from_string(principal.clone()))
                    .with_host(StrBytes::from_static_str("*"))
                    .with_operation(operation)
                    .with_permission_type(ALLOW)
            })
        })
        .collect();
    let mut direct = KafkaClient::connect(kafka.nodes()[0].plaintext)
        .await
        .expect("Kafka's PLAINTEXT listener");
    let answer = direct
        .call(&CreateAclsRequest::default().with_creations(creations), 3)
        .await
        .expect("CreateAcls answered");
    for result in &answer.results {
        assert_eq!(
            result.error_code, 0,
            "CreateAcls: {:?}",
            result.error_message
        );
    }
}

impl TestHost {
    /// A host in proxy mode in front of `kafka`, reaching it as `UPSTREAM_SECURITY` says (with
    /// only the host's ACLs in a secured run), changed by `edit`; in a `sasl_ssl` run its
    /// raw clients log in through it.
    pub async fn proxy_to(kafka: &KafkaCluster, edit: impl FnOnce(&mut Config)) -> TestHost {
        let mode = mode();
        let tls = &kafka.state().tls;
        let bootstrap = match mode {
            Mode::Plaintext => kafka.bootstrap(),
            Mode::SaslSsl => kafka.sasl_ssl_bootstrap(),
            Mode::Mtls => kafka.ssl_bootstrap(),
        };
        if mode != Mode::Plaintext {
            grant_host_acls(kafka).await;
        }
        let host = TestHost::proxy_with(bootstrap, |config| {
            let upstream = &mut config.upstream;
            match mode {
                Mode::Plaintext => {}
                Mode::SaslSsl => {
                    upstream.security_protocol = SecurityProtocol::SaslSsl;
                    upstream.sasl_mechanism = Some(SaslMechanism::ScramSha512);
                    upstream.sasl_username = Some(HOST_USER.into());
                    upstream.sasl_password = Some(Secret::new("assignor-host-secret".into()));
                    upstream.ssl_ca_location = Some(tls.ca.clone());
                }
                Mode::Mtls => {
                    upstream.security_protocol = SecurityProtocol::Ssl;
                    upstream.ssl_ca_location = Some(tls.ca.clone());
                    upstream.ssl_certificate_location = Some(tls.host_cert.clone());
                    upstream.ssl_key_location = Some(tls.host_key.clone());
                }
            }
            edit(config);
        })
        .await;
        if mode == Mode::SaslSsl {
            logs_in(host.addr());
            // Each broker's port, once the host has read the cluster's Metadata.
            let deadline = std::time::Instant::now() + crate::DEADLINE;
            for node in kafka.nodes() {
                let port = loop {
                    if let Some(port) = host.broker_port(node.node_id) {
                        break port;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the host never served a port for node {}",
                        node.node_id
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                };
                logs_in(SocketAddr::from(([127, 0, 0, 1], port)));
            }
        }
        host
    }
}
