//! Proxy mode's data path against the same upstream reached directly, in one run: Apache Kafka
//! 4.4 (one node of tests/kafka, with the JVM's optimising compiler) started here, the host in
//! front of it in this process. `PROXY_UPSTREAM=noida` puts noida-db 0.2.3 there instead
//! (`NOIDA_DB`: `cargo install noida-db --version 0.2.3 --no-default-features --features
//! kafka --locked`), the upstream of the numbers before 2026-12-06.
//!
//! - **Added latency**: raw Produce (v9, acks=1, one 100-byte record) and Fetch (v12,
//!   `max_wait_ms` 0) round trips, alternating direct and through the host on one connection
//!   each, so both see the same machine; p50 and p99 of each path and of the difference.
//! - **Throughput**: librdkafka (the `rdkafka` crate) producing `RECORDS` records of
//!   `RECORD_BYTES` (100 by default) to
//!   a 6-partition topic, then a consumer reading them back (assigned partitions, no group),
//!   direct and through the host in alternating rounds; records per second, median of the
//!   rounds, and through/direct. The consumer's rate runs from `assign` to its last record
//!   (see `consume_rate` for why); the time to its first record (connection set-up) is
//!   reported beside it. Each round and path has a topic of its own.
//!
//! `PROXY_TLS=1` runs it over TLS: Kafka's SSL listener (the harness's test CA)
//! reached directly by a client speaking TLS, against the same client speaking TLS to the host
//! (`kafka.tls_certificate_location`, the same test certificate), whose own connections and
//! glued links speak TLS upstream (`upstream.security_protocol = "SSL"`): TLS on both hops,
//! as a deployment in front of a TLS cluster runs. It also times connection set-up, the
//! handshake's cost: TCP connect, TLS handshake and one ApiVersions, direct and through the
//! host (which opens its TLS link upstream at that first request), `PROXY_CONNECTIONS` of each
//! (200). The throughput part runs over TLS too: librdkafka speaking TLS to Kafka's SSL
//! listener, against the same to the host's TLS ports.
//!
//! `cargo bench -p assignor-host --bench proxy` (`PROXY_RECORDS`, `PROXY_ROUNDS`,
//! `PROXY_SAMPLES`, `PROXY_RECORD_BYTES` override the sizes). Results also go to
//! `target/bench/proxy.jsonl` (`proxy-tls.jsonl` with `PROXY_TLS=1`).
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a bench prints its table"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use assignor_host::config::Config;
use assignor_host::kafka::KafkaConfig;
use assignor_host::server::Server;
use assignor_host::upstream::client::{ClientSettings, UpstreamClient};
use assignor_host::upstream::connection::{Security, SecurityProtocol, SecuritySettings};
use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, ProduceRequest, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The throughput topics' prefix: each round and path writes and reads a topic of its own
/// (`proxy-bench-<round>-<path>`), so no read meets another run's records and no log grows past
/// what noida-db 0.2.3 serves (one topic holding 300,000 records of 100 B, or 100,000 of 1 KB,
/// fails *directly* against it: librdkafka reads "Bad message format"; Kafka has no such
/// limit, but the rounds stay comparable).
const TOPIC: &str = "proxy-bench";
/// The raw round trips' own topic: librdkafka reads `TOPIC` from its start, and the bench's
/// hand-built batches are not its business.
const LATENCY_TOPIC: &str = "proxy-bench-latency";
const PARTITIONS: i32 = 6;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The upstream, stopped on drop: Kafka, or noida-db with `PROXY_UPSTREAM=noida`.
struct Upstream {
    name: &'static str,
    addr: SocketAddr,
    /// With `PROXY_TLS=1`: the CA file that signs the listener's certificate.
    tls_ca: Option<PathBuf>,
    /// With `PROXY_TLS=1`: the listener's key and certificate chain (one PEM file), which the
    /// host presents on its own ports too.
    tls_keystore: Option<PathBuf>,
    _kafka: Option<kafka_harness::KafkaCluster>,
    noida: Option<(Child, tempfile::TempDir)>,
}

impl Upstream {
    fn start() -> Upstream {
        match std::env::var("PROXY_UPSTREAM").as_deref() {
            Err(_) | Ok("kafka") => Upstream::kafka(),
            Ok("noida") => Upstream::noida(),
            Ok(other) => panic!("PROXY_UPSTREAM={other}: expected kafka or noida"),
        }
    }

    fn kafka() -> Upstream {
        let setup = kafka_harness::Setup {
            // The harness's nodes run C1 only, for fast starts in tests; a bench wants the
            // broker at full speed.
            jvm_options: vec!["-XX:TieredStopAtLevel=4".into()],
            ..kafka_harness::Setup::default()
        };
        let kafka = kafka_harness::KafkaCluster::start(setup)
            .unwrap_or_else(|e| panic!("starting Kafka: {e:#}"));
        let tls = std::env::var("PROXY_TLS").is_ok_and(|v| v == "1");
        Upstream {
            name: "kafka",
            addr: if tls {
                kafka.nodes()[0].ssl
            } else {
                kafka.nodes()[0].plaintext
            },
            tls_ca: tls.then(|| kafka.state().tls.ca.clone()),
            tls_keystore: tls.then(|| kafka.state().tls.broker_keystore.clone()),
            _kafka: Some(kafka),
            noida: None,
        }
    }

    fn noida() -> Upstream {
        let binary = std::env::var("NOIDA_DB").unwrap_or_else(|_| {
            panic!(
                "PROXY_UPSTREAM=noida needs NOIDA_DB, a noida-db 0.2.3 binary (cargo install \
                 noida-db --version 0.2.3 --no-default-features --features kafka --locked)"
            )
        });
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = tempfile::tempdir().expect("temp dir");
        let child = Command::new(binary)
            .args([
                "start",
                "--only",
                "kafka",
                "--host",
                "127.0.0.1",
                "--kafka-port",
            ])
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("noida-db starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "noida-db never listened"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Upstream {
            name: "noida-db",
            addr,
            tls_ca: None,
            tls_keystore: None,
            _kafka: None,
            noida: Some((child, dir)),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some((child, _)) = &mut self.noida {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

trait Socket: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Socket for T {}

/// A raw connection: one request at a time, answers decoded at the request's version.
struct Raw {
    socket: Box<dyn Socket>,
    correlation: i32,
}

impl Raw {
    /// Plaintext, or TLS trusting the PEM CA file `tls_ca`.
    async fn connect(addr: SocketAddr, tls_ca: Option<&PathBuf>) -> Raw {
        let socket = TcpStream::connect(addr).await.expect("connects");
        socket.set_nodelay(true).unwrap();
        let socket: Box<dyn Socket> = match tls_ca {
            None => Box::new(socket),
            Some(ca) => {
                use rustls::pki_types::pem::PemObject;
                let mut roots = rustls::RootCertStore::empty();
                for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
                    roots.add(cert.unwrap()).unwrap();
                }
                // The host's provider (ring), so both paths run the same TLS code.
                #[allow(deprecated)]
                let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
                let config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                let name = rustls::pki_types::ServerName::try_from(addr.ip().to_string()).unwrap();
                let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
                    .connect(name, socket)
                    .await
                    .expect("TLS handshake");
                Box::new(tls)
            }
        };
        Raw {
            socket,
            correlation: 0,
        }
    }

    /// One round trip; the answer's body.
    async fn call<R: Encodable>(&mut self, api: ApiKey, version: i16, body: &R) -> Bytes {
        self.correlation += 1;
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&[0; 4]);
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("bench")))
            .encode(&mut frame, api.request_header_version(version))
            .unwrap();
        body.encode(&mut frame, version).unwrap();
        let size = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        self.socket.write_all(&frame).await.unwrap();
        self.socket.flush().await.unwrap();
        let size = self.socket.read_u32().await.unwrap() as usize;
        let mut answer = BytesMut::zeroed(size);
        self.socket.read_exact(&mut answer).await.unwrap();
        let mut answer = answer.freeze();
        ResponseHeader::decode(&mut answer, api.response_header_version(version)).unwrap();
        answer
    }
}

fn one_record() -> Bytes {
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 0,
        key: None,
        value: Some(Bytes::from(vec![b'x'; 100])),
        headers: IndexMap::new(),
    };
    let mut batch = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut batch, [&record], &options).unwrap();
    batch.freeze()
}

fn produce(batch: &Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str(LATENCY_TOPIC)))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(batch.clone())),
                ]),
        ])
}

fn fetch() -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(64 * 1024)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str(LATENCY_TOPIC)))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(16 * 1024),
                ]),
        ])
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

struct Latency {
    direct: Vec<f64>,
    through: Vec<f64>,
}

impl Latency {
    fn report(mut self, api: &str, out: &mut Vec<String>) {
        self.direct.sort_by(f64::total_cmp);
        self.through.sort_by(f64::total_cmp);
        let (d50, d99) = (
            percentile(&self.direct, 0.5),
            percentile(&self.direct, 0.99),
        );
        let (t50, t99) = (
            percentile(&self.through, 0.5),
            percentile(&self.through, 0.99),
        );
        println!(
            "{api:<8} direct p50 {d50:>7.1} us p99 {d99:>7.1} us | through the host p50 {t50:>7.1} us p99 {t99:>7.1} us | added p50 {:>6.1} us p99 {:>6.1} us",
            t50 - d50,
            t99 - d99
        );
        out.push(format!(
            "{{\"bench\":\"proxy\",\"kind\":\"latency\",\"api\":\"{api}\",\"samples\":{},\"direct_p50_us\":{d50:.1},\"direct_p99_us\":{d99:.1},\"through_p50_us\":{t50:.1},\"through_p99_us\":{t99:.1},\"added_p50_us\":{:.1},\"added_p99_us\":{:.1}}}",
            self.direct.len(),
            t50 - d50,
            t99 - d99
        ));
    }
}

async fn latency(
    direct: SocketAddr,
    tls_ca: Option<&PathBuf>,
    through: SocketAddr,
    samples: usize,
    out: &mut Vec<String>,
) {
    let batch = one_record();
    let (mut d, mut t) = (
        Raw::connect(direct, tls_ca).await,
        Raw::connect(through, tls_ca).await,
    );
    // Warm both paths (connections, the host's link, the upstream's partition).
    for _ in 0..200 {
        d.call(ApiKey::Produce, 9, &produce(&batch)).await;
        t.call(ApiKey::Produce, 9, &produce(&batch)).await;
    }
    let mut produce_times = Latency {
        direct: Vec::with_capacity(samples),
        through: Vec::with_capacity(samples),
    };
    let mut fetch_times = Latency {
        direct: Vec::with_capacity(samples),
        through: Vec::with_capacity(samples),
    };
    for _ in 0..samples {
        for (raw, times) in [
            (&mut d, &mut produce_times.direct),
            (&mut t, &mut produce_times.through),
        ] {
            let started = Instant::now();
            raw.call(ApiKey::Produce, 9, &produce(&batch)).await;
            times.push(started.elapsed().as_secs_f64() * 1e6);
        }
        for (raw, times) in [
            (&mut d, &mut fetch_times.direct),
            (&mut t, &mut fetch_times.through),
        ] {
            let started = Instant::now();
            raw.call(ApiKey::Fetch, 12, &fetch()).await;
            times.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    produce_times.report("Produce", out);
    fetch_times.report("Fetch", out);
}

/// Connection set-up, the handshake's cost: TCP connect, TLS handshake and one ApiVersions
/// (v3, as clients open every connection), `count` times direct and through the host in
/// turn. Through the host the ApiVersions also opens the connection's TLS link upstream.
async fn set_up(
    direct: SocketAddr,
    tls_ca: Option<&PathBuf>,
    through: SocketAddr,
    count: usize,
    out: &mut Vec<String>,
) {
    let versions = kafka_protocol::messages::ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("bench"))
        .with_client_software_version(StrBytes::from_static_str("1"));
    let mut times = Latency {
        direct: Vec::with_capacity(count),
        through: Vec::with_capacity(count),
    };
    for _ in 0..count {
        for (addr, samples) in [(direct, &mut times.direct), (through, &mut times.through)] {
            let started = Instant::now();
            let mut raw = Raw::connect(addr, tls_ca).await;
            raw.call(ApiKey::ApiVersions, 3, &versions).await;
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    times.report("Connect+TLS+ApiVersions", out);
}

/// The client settings for `bootstrap`, speaking TLS and trusting `tls_ca` when given.
fn client_config(bootstrap: &str, tls_ca: Option<&PathBuf>) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap);
    if let Some(ca) = tls_ca {
        config
            .set("security.protocol", "ssl")
            .set("ssl.ca.location", ca.display().to_string());
    }
    config
}

/// Records per second producing `records` to `bootstrap`.
fn produce_rate(
    bootstrap: &str,
    tls_ca: Option<&PathBuf>,
    topic: &str,
    records: usize,
    record_bytes: usize,
) -> f64 {
    let producer: BaseProducer = client_config(bootstrap, tls_ca)
        .set("linger.ms", "5")
        .set("acks", "1")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .expect("producer");
    let payload = vec![b'x'; record_bytes];
    let started = Instant::now();
    for i in 0..records {
        let key = (i as u64).to_be_bytes();
        let mut record = BaseRecord::to(topic)
            .key(&key[..])
            .payload(&payload[..])
            .partition((i % PARTITIONS as usize) as i32);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(1));
                }
            }
        }
    }
    producer.flush(Duration::from_secs(120)).expect("flushed");
    records as f64 / started.elapsed().as_secs_f64()
}

/// One consumer's read of `records` records: records per second from `assign` to the last
/// record (what an application sees, set-up included: bootstrap, Metadata, ListOffsets, the
/// broker connection, and through the host the upstream connection behind each), and the time
/// to the first record (that set-up, about half a second either way, most of it librdkafka's
/// own start-up). Tried and dropped: a rate from the first record on, which flatters whichever
/// path starts later (librdkafka prefetches the topic ahead of the application, so after a late
/// first record the rate is the client queue's drain), and the same with the prefetch bounded,
/// which turned bimodal on both paths (about 90,000 or about 1,000,000 records per second from
/// one round to the next, with `fetch.wait.max.ms` pacing the fetches).
fn consume_rate(
    bootstrap: &str,
    tls_ca: Option<&PathBuf>,
    topic: &str,
    records: usize,
) -> (f64, Duration) {
    let consumer: BaseConsumer = client_config(bootstrap, tls_ca)
        .set("group.id", "proxy-bench-unused")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "10")
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        assignment
            .add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).expect("assigned");
    let started = Instant::now();
    let mut first = None;
    let mut read = 0;
    while read < records {
        match consumer.poll(Duration::from_secs(30)) {
            Some(Ok(_)) => {
                read += 1;
                first.get_or_insert_with(Instant::now);
            }
            Some(Err(e)) => panic!("consume failed: {e}"),
            None => panic!("no record for 30 s after {read} of {records}"),
        }
    }
    let first = first.expect("records > 0");
    (
        records as f64 / started.elapsed().as_secs_f64(),
        first - started,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let records = env_usize("PROXY_RECORDS", 100_000);
    let record_bytes = env_usize("PROXY_RECORD_BYTES", 100);
    let rounds = env_usize("PROXY_ROUNDS", 3);
    let samples = env_usize("PROXY_SAMPLES", 5_000);
    let upstream = Upstream::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let data = tempfile::tempdir().unwrap();
    let server = runtime.block_on(async {
        let mut config = Config {
            data_dir: data.path().to_path_buf(),
            kafka: KafkaConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                ..KafkaConfig::default()
            },
            ..Config::default()
        };
        config.admin.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        config.upstream.bootstrap = vec![upstream.addr.to_string()];
        config.upstream.broker_ports_from = Some(0);
        if let Some(ca) = &upstream.tls_ca {
            config.upstream.security_protocol = SecurityProtocol::Ssl;
            config.upstream.ssl_ca_location = Some(ca.clone());
        }
        if let Some(keystore) = &upstream.tls_keystore {
            config.kafka.tls_certificate_location = Some(keystore.clone());
            config.kafka.tls_key_location = Some(keystore.clone());
        }
        Server::start(config).await.expect("the host starts")
    });
    runtime.block_on(async {
        let mut settings = ClientSettings::new(vec![upstream.addr.to_string()]);
        if let Some(ca) = &upstream.tls_ca {
            settings.security = Security::load(&SecuritySettings {
                security_protocol: SecurityProtocol::Ssl,
                ssl_ca_location: Some(ca.clone()),
                ssl_endpoint_identification: true,
                ..SecuritySettings::default()
            })
            .unwrap();
        }
        let client = UpstreamClient::connect(settings).unwrap();
        for round in 0..rounds {
            for path in ["direct", "host"] {
                let topic = format!("{TOPIC}-{round}-{path}");
                assert_eq!(client.create_topic(&topic, PARTITIONS, 1).await.unwrap(), 0);
            }
        }
        assert_eq!(client.create_topic(LATENCY_TOPIC, 1, 1).await.unwrap(), 0);
    });
    // The host's port for the upstream's broker (node 1), once its Metadata read has named it.
    let proxy = server.proxy().expect("proxy mode").clone();
    let started = Instant::now();
    let broker_port = loop {
        if let Some((_, port, _)) = proxy.ports().first() {
            break *port;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the host never read the upstream"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let through = SocketAddr::from(([127, 0, 0, 1], broker_port));
    let host = server.kafka_addr().to_string();
    let direct = upstream.addr.to_string();
    let tls = upstream.tls_ca.is_some();
    let mut out = vec![format!(
        "{{\"bench\":\"proxy\",\"kind\":\"upstream\",\"upstream\":\"{}\",\"tls\":{tls}}}",
        upstream.name
    )];
    println!(
        "proxy bench: {} at {direct}{}, the host at {host} (broker 1 at {through})",
        upstream.name,
        if tls { " over TLS" } else { "" }
    );
    runtime.block_on(latency(
        upstream.addr,
        upstream.tls_ca.as_ref(),
        through,
        samples,
        &mut out,
    ));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    let _ = std::fs::create_dir_all(&dir);
    if tls {
        let connections = env_usize("PROXY_CONNECTIONS", 200);
        runtime.block_on(set_up(
            upstream.addr,
            upstream.tls_ca.as_ref(),
            through,
            connections,
            &mut out,
        ));
    }

    let (mut produce_direct, mut produce_through) = (Vec::new(), Vec::new());
    let (mut consume_direct, mut consume_through) = (Vec::new(), Vec::new());
    let (mut first_direct, mut first_through) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which goes first, so neither always meets a warmer (or fuller) broker.
        let order: [(&str, bool); 2] = if round % 2 == 0 {
            [(&direct, false), (&host, true)]
        } else {
            [(&host, true), (&direct, false)]
        };
        for (bootstrap, via_host) in order {
            let topic = format!(
                "{TOPIC}-{round}-{}",
                if via_host { "host" } else { "direct" }
            );
            let ca = upstream.tls_ca.as_ref();
            let produced = produce_rate(bootstrap, ca, &topic, records, record_bytes);
            let (consumed, first) = consume_rate(bootstrap, ca, &topic, records);
            let first = first.as_secs_f64() * 1e3;
            let path = if via_host {
                "through the host"
            } else {
                "direct"
            };
            println!(
                "round {round} {path:<16}: produce {produced:>9.0} rec/s, consume {consumed:>9.0} rec/s, first record after {first:.1} ms"
            );
            if via_host {
                produce_through.push(produced);
                consume_through.push(consumed);
                first_through.push(first);
            } else {
                produce_direct.push(produced);
                consume_direct.push(consumed);
                first_direct.push(first);
            }
        }
    }
    for (what, direct, through) in [
        ("produce", median(produce_direct), median(produce_through)),
        ("consume", median(consume_direct), median(consume_through)),
    ] {
        println!(
            "{what:<8} {records} x {record_bytes} B: direct {direct:>9.0} rec/s | through the host {through:>9.0} rec/s | {:.0} % of direct",
            100.0 * through / direct
        );
        out.push(format!(
            "{{\"bench\":\"proxy\",\"kind\":\"throughput\",\"what\":\"{what}\",\"records\":{records},\"record_bytes\":{record_bytes},\"rounds\":{rounds},\"direct_rps\":{direct:.0},\"through_rps\":{through:.0},\"ratio\":{:.3}}}",
            through / direct
        ));
    }
    let (first_direct, first_through) = (median(first_direct), median(first_through));
    println!(
        "consume  time to the first record (set-up): direct {first_direct:.1} ms | through the host {first_through:.1} ms"
    );
    out.push(format!(
        "{{\"bench\":\"proxy\",\"kind\":\"first_record\",\"rounds\":{rounds},\"direct_ms\":{first_direct:.1},\"through_ms\":{first_through:.1}}}"
    ));
    let file = if tls {
        "proxy-tls.jsonl"
    } else {
        "proxy.jsonl"
    };
    if let Err(e) = std::fs::write(dir.join(file), out.join("\n") + "\n") {
        eprintln!("cannot write target/bench/{file}: {e}");
    }
    runtime.block_on(server.shutdown()).unwrap();
}
