//! The module log against Apache Kafka (tests/kafka), with one registry per "node" (no Kafka listener: the
//! log is all they share): a change on either node is applied on both with the same numbers,
//! a node started later has every version when its start returns, the first record of a
//! number wins everywhere, a refused upload writes nothing, and a log that cannot be written
//! is a clear error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use super::mac::Secret;
use super::record::Record;
use super::{ModuleLog, ModuleLogError};
use crate::catalog::{Catalog, CatalogConfig};
use crate::driver::{Driver, DriverConfig, DriverSettings};
use crate::registry::{
    BuiltinSource, Registry, RegistryConfig, RegistryError, UploadError, UploadOptions, sha256_hex,
};
use crate::sandbox::Sandbox;
use crate::upstream::UpstreamConfig;
use crate::upstream::client::tests::support::{Kafka, unique};

/// A module log topic of the test's own in the shared cluster.
fn topic() -> String {
    format!("__assignor_host.{}.modules", unique("test"))
}

fn sandbox() -> Sandbox {
    Sandbox::shared_default()
}

/// The wasm of a built-in, to upload under other names.
fn wasm(builtin: &str) -> Vec<u8> {
    BuiltinSource::embedded()
        .into_iter()
        .find(|b| b.name == builtin)
        .expect("a built-in")
        .wasm
        .into_owned()
}

/// A registry with only the `range` built-in, and its log in `topic`.
async fn node(kafka: &Kafka, topic: &str) -> (Arc<Registry>, ModuleLog) {
    signed_node(kafka, topic, None).await
}

/// [`node`], signing and checking records with `secret`.
async fn signed_node(
    kafka: &Kafka,
    topic: &str,
    secret: Option<Secret>,
) -> (Arc<Registry>, ModuleLog) {
    let upstream = UpstreamConfig {
        bootstrap: vec![kafka.bootstrap()],
        request_timeout: Duration::from_secs(3),
        ..UpstreamConfig::default()
    };
    node_with(kafka, topic, secret, upstream).await
}

/// A node whose log's librdkafka clients reach Kafka as `upstream` says (the topic is made by
/// `kafka`'s own client).
async fn node_with(
    kafka: &Kafka,
    topic: &str,
    secret: Option<Secret>,
    upstream: UpstreamConfig,
) -> (Arc<Registry>, ModuleLog) {
    let config = RegistryConfig {
        builtins: BuiltinSource::embedded()
            .into_iter()
            .filter(|b| b.name == "range")
            .collect(),
        ..RegistryConfig::default()
    };
    let registry = Arc::new(Registry::open(sandbox(), None, config).expect("registry"));
    let catalog = Catalog::open(&CatalogConfig::default(), None).unwrap();
    let driver = Driver::start(
        DriverConfig {
            settings: DriverSettings {
                shards: Some(1),
                ..DriverSettings::default()
            },
            ..DriverConfig::default()
        },
        registry.clone(),
        registry.subscribe(),
        catalog.subscribe(),
        None,
    )
    .unwrap();
    let log = ModuleLog::start(
        topic.into(),
        -1,
        &upstream,
        &kafka.client(),
        registry.clone(),
        driver,
        secret,
    )
    .await
    .expect("the module log starts");
    (registry, log)
}

/// Every name with its active version and each version's number and sha256.
type Seen = Vec<(String, u32, Vec<(u32, String)>)>;

fn seen(registry: &Registry) -> Seen {
    registry
        .list()
        .into_iter()
        .map(|m| {
            let versions = registry.versions(&m.name).unwrap();
            let versions = versions
                .into_iter()
                .map(|v| (v.version, v.meta.sha256))
                .collect();
            (m.name, m.active_version, versions)
        })
        .collect()
}

/// Waits until `other` shows what `first` shows (the other node applies within a poll).
async fn converged(first: &Registry, other: &Registry) -> Seen {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (a, b) = (seen(first), seen(other));
        if a == b {
            return a;
        }
        assert!(Instant::now() < deadline, "never converged:\n{a:?}\n{b:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn inactive() -> UploadOptions {
    UploadOptions {
        activate: false,
        ..UploadOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_on_either_node_is_applied_on_both_with_the_same_numbers() {
    let (kafka, topic) = (Kafka::shared().await, topic());
    let (a, log_a) = node(&kafka, &topic).await;
    let (b, log_b) = node(&kafka, &topic).await;
    let (range, roundrobin) = (wasm("range"), wasm("roundrobin"));

    let first = log_a
        .upload("spread".into(), range.clone(), UploadOptions::default())
        .await
        .expect("an upload on a");
    assert_eq!(
        (first.version, first.created, first.active),
        (1, true, true)
    );
    let state = converged(&a, &b).await;
    assert!(state.contains(&("spread".into(), 1, vec![(1, sha256_hex(&range))])));

    let second = log_b
        .upload("spread".into(), roundrobin.clone(), inactive())
        .await
        .expect("an upload on b");
    assert_eq!((second.version, second.active), (2, false));
    let state = converged(&a, &b).await;
    let spread = state.iter().find(|m| m.0 == "spread").unwrap();
    assert_eq!(
        spread.1, 1,
        "an inactive upload changes no node's active version"
    );
    assert_eq!(spread.2.len(), 2);

    // The same bytes again: no new version, they become active everywhere.
    let again = log_a
        .upload(
            "spread".into(),
            roundrobin.clone(),
            UploadOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        (again.version, again.created, again.active),
        (2, false, true)
    );
    assert_eq!(converged(&a, &b).await, seen(&a));
    assert!(b.versions("spread").unwrap()[1].active);

    assert_eq!(
        log_b.rollback("spread").await.unwrap(),
        ("spread".into(), 1)
    );
    converged(&a, &b).await;
    assert_eq!(log_a.activate("spread", 2).await.unwrap(), "spread");
    converged(&a, &b).await;
    assert!(matches!(
        log_a.delete_version("spread", 2).await,
        Err(ModuleLogError::Registry(
            RegistryError::ActiveVersion { .. }
        ))
    ));
    log_b.activate("spread", 1).await.unwrap();
    log_b.delete_version("spread", 2).await.unwrap();
    let state = converged(&a, &b).await;
    let spread = state.iter().find(|m| m.0 == "spread").unwrap();
    assert_eq!(spread.2, vec![(1, sha256_hex(&range))]);

    // A deleted version's number is never given again, on either node.
    let third = log_b
        .upload("spread".into(), roundrobin.clone(), inactive())
        .await
        .unwrap();
    assert_eq!(third.version, 3);
    converged(&a, &b).await;

    // An upload over a built-in, then deleting it, returns both nodes to the built-in.
    let over = log_a
        .upload("range".into(), roundrobin.clone(), UploadOptions::default())
        .await
        .unwrap();
    assert_eq!((over.version, over.active), (1, true));
    assert_eq!(converged(&a, &b).await, seen(&b));
    let deleted = log_b.delete("range").await.unwrap();
    assert_eq!(
        (deleted.removed_versions, deleted.active),
        (vec![1], Some(0))
    );
    log_a.delete("spread").await.unwrap();
    let state = converged(&a, &b).await;
    assert_eq!(state.len(), 1, "only the built-in is left: {state:?}");
    assert_eq!(state[0].0, "range");
    assert_eq!(state[0].1, 0);

    // A node started later has it all when its start returns, and numbers on from there.
    log_a
        .upload("late".into(), range.clone(), UploadOptions::default())
        .await
        .unwrap();
    let (c, log_c) = node(&kafka, &topic).await;
    assert_eq!(
        seen(&c),
        seen(&a),
        "a late node replays the log before it serves"
    );
    let next = log_c
        .upload("spread".into(), range.clone(), UploadOptions::default())
        .await
        .unwrap();
    assert_eq!(
        next.version, 4,
        "numbers go on after every version the log has seen"
    );
    converged(&a, &c).await;
    converged(&b, &c).await;
}

/// The log's producer and reader (librdkafka) over SASL_SSL, logged in as Kafka's `admin`,
/// on one node with SCRAM-SHA-512 and on the other with OAUTHBEARER: an upload on the second
/// reaches both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_runs_over_sasl_ssl_by_scram_and_by_oauthbearer() {
    use crate::upstream::connection::security::SaslMechanism;
    use crate::upstream::connection::{Secret as Password, SecurityProtocol};
    let (kafka, topic) = (Kafka::shared().await, topic());
    let upstream = UpstreamConfig {
        bootstrap: vec![kafka.cluster().sasl_ssl_bootstrap().to_owned()],
        request_timeout: Duration::from_secs(3),
        security_protocol: SecurityProtocol::SaslSsl,
        sasl_mechanism: Some(SaslMechanism::ScramSha512),
        sasl_username: Some("admin".into()),
        sasl_password: Some(Password::new("admin-secret".into())),
        ssl_ca_location: Some(kafka.cluster().state().tls.ca.clone()),
        ..UpstreamConfig::default()
    };
    // b logs in by OAUTHBEARER: its producer and reader get the token file's token through
    // librdkafka's refresh callback.
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, kafka_harness::unsigned_token("admin", 3600) + "\n").unwrap();
    let oauth = UpstreamConfig {
        sasl_mechanism: Some(SaslMechanism::OauthBearer),
        sasl_username: None,
        sasl_password: None,
        sasl_oauthbearer_token_file: Some(token),
        ..upstream.clone()
    };
    let (a, _log_a) = node_with(&kafka, &topic, None, upstream).await;
    let (b, log_b) = node_with(&kafka, &topic, None, oauth).await;
    let range = wasm("range");
    log_b
        .upload("spread".into(), range.clone(), UploadOptions::default())
        .await
        .expect("an upload on b, written over SASL_SSL by OAUTHBEARER");
    let state = converged(&a, &b).await;
    assert!(state.contains(&("spread".into(), 1, vec![(1, sha256_hex(&range))])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_record_of_a_version_number_wins_on_every_node() {
    let (kafka, topic) = (Kafka::shared().await, topic());
    let (a, log_a) = node(&kafka, &topic).await;
    let (range, roundrobin) = (wasm("range"), wasm("roundrobin"));
    // Two nodes' records of version 1 with different bytes, as a race would leave them.
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", kafka.bootstrap())
        .set("message.max.bytes", (8 << 20).to_string())
        .create()
        .unwrap();
    for bytes in [&range, &roundrobin] {
        let (key, value) = Record::Version {
            name: "raced".into(),
            version: 1,
            sha256: sha256_hex(bytes),
            wasm: bytes.to_vec(),
            uploaded_ms: 0,
        }
        .encode();
        let record = FutureRecord::to(&topic)
            .key(&key)
            .payload(value.as_deref().unwrap())
            .partition(0);
        producer.send(record, Duration::from_secs(5)).await.unwrap();
    }
    let (b, _log_b) = node(&kafka, &topic).await;
    let state = converged(&a, &b).await;
    let raced = state.iter().find(|m| m.0 == "raced").unwrap();
    assert_eq!(
        raced.2,
        vec![(1, sha256_hex(&range))],
        "the first record is kept"
    );
    // The loser's upload, retried, gets the next number.
    let retried = log_a
        .upload("raced".into(), roundrobin.clone(), inactive())
        .await
        .unwrap();
    assert_eq!((retried.version, retried.created), (2, true));
    converged(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_upload_writes_nothing_and_a_dead_log_is_a_clear_error() {
    // A cluster of the test's own: it is stopped half-way.
    let (kafka, topic) = (Kafka::own().await, topic());
    let (a, log_a) = node(&kafka, &topic).await;
    let refused = log_a
        .upload(
            "broken".into(),
            b"\0asm\x01\0\0\0garbage".to_vec(),
            UploadOptions::default(),
        )
        .await;
    assert!(
        matches!(refused, Err(ModuleLogError::Upload(UploadError::Load(_)))),
        "{refused:?}"
    );
    assert_eq!(
        log_a.end_offset().await.unwrap(),
        0,
        "nothing reached the log"
    );
    assert!(a.versions("broken").is_err());

    drop(kafka);
    let error = log_a
        .upload("spread".into(), wasm("range"), UploadOptions::default())
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, ModuleLogError::Log(_)), "{error:?}");
    assert!(
        message.contains("refused a record") && message.contains("nothing was changed"),
        "{message}"
    );
    assert!(a.versions("spread").is_err(), "not applied here either");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_secret_only_records_a_node_signed_are_applied_and_the_rest_are_counted() {
    let (kafka, topic) = (Kafka::shared().await, topic());
    let secret = Secret::from_bytes(b"this cluster's secret, 32 bytes!");
    let (a, log_a) = signed_node(&kafka, &topic, Some(secret.clone())).await;
    let (range, roundrobin) = (wasm("range"), wasm("roundrobin"));
    // A node's upload: signed, applied.
    let uploaded = log_a
        .upload("spread".into(), range.clone(), UploadOptions::default())
        .await
        .unwrap();
    assert_eq!(uploaded.version, 1);
    // Records written straight to the topic: one unsigned, one signed with another secret,
    // both claiming a module under a built-in's name.
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", kafka.bootstrap())
        .set("message.max.bytes", (8 << 20).to_string())
        .create()
        .unwrap();
    let forged = Secret::from_bytes(b"not this cluster's secret at all");
    for signer in [None, Some(&forged)] {
        let (key, value) = Record::Version {
            name: "range".into(),
            version: 2,
            sha256: sha256_hex(&roundrobin),
            wasm: roundrobin.clone(),
            uploaded_ms: 0,
        }
        .encode();
        let mut record = FutureRecord::to(&topic)
            .key(&key)
            .payload(value.as_deref().unwrap())
            .partition(0);
        let tag = signer.map(|s| s.sign(key.as_bytes(), value.as_deref()));
        if let Some(tag) = &tag {
            record = record.headers(OwnedHeaders::new().insert(Header {
                key: super::mac::HEADER,
                value: Some(tag),
            }));
        }
        producer.send(record, Duration::from_secs(5)).await.unwrap();
    }
    // A node started now replays all of it: the signed upload, not the forged versions.
    let (b, log_b) = signed_node(&kafka, &topic, Some(secret)).await;
    assert_eq!(log_b.rejected(), 2, "both forged records counted");
    assert!(b.versions("spread").is_ok(), "the signed upload applied");
    assert_eq!(
        b.versions("range").unwrap().len(),
        1,
        "no forged version of range"
    );
    // The running node skips them too.
    let deadline = Instant::now() + Duration::from_secs(15);
    while log_a.rejected() < 2 {
        assert!(
            Instant::now() < deadline,
            "node a counted {} forged records",
            log_a.rejected()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.versions("range").unwrap().len(), 1);
}
