//! Black-box test harness: a real host in-process on port 0 with a temporary data directory,
//! and a small raw Kafka client built on `kafka-protocol`'s client-side encoders.
//!
//! [`TestHost`] starts the same assembly `assignor-host serve` runs ([`Server::start`]), so the
//! tests speak real Kafka bytes to the real listener. [`KafkaClient`] sends any request at any
//! version and decodes the answer with the header version the protocol prescribes, or sends raw
//! bytes for the malformed-input tests. Every read has a generous deadline so a host that never
//! answers fails the test instead of hanging it; no test asserts how fast anything is (the fake
//! cluster's own tests only check that a delay was waited for, a bound that cannot flake).
//!
//! [`fake_cluster`] is a scripted Kafka cluster of several brokers on loopback, the upstream
//! of the proxy-mode tests; [`proxy`] starts a host in front of it. [`conformance`] runs one
//! scenario against Apache Kafka itself and the host, and compares the answers.

pub mod conformance;
pub mod fake_cluster;
pub mod proxy;
pub mod secured;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use assignor_host::catalog::TopicSeed;
use assignor_host::config::Config;
use assignor_host::kafka::KafkaConfig;
use assignor_host::server::Server;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest a test waits for one answer before failing (a hang is a failure, not a pass).
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A host running in this process on an ephemeral port, with its own data directory.
pub struct TestHost {
    server: Server,
    dir: tempfile::TempDir,
}

impl TestHost {
    /// A host with no topics.
    pub async fn start() -> TestHost {
        TestHost::with_config(|_| {}).await
    }

    /// A host whose catalog is seeded with `(name, partitions)`.
    pub async fn with_topics(topics: &[(&str, i32)]) -> TestHost {
        TestHost::with_config(|config| config.catalog.topics = seeds(topics)).await
    }

    /// A host on the data directory `dir` (which outlives it, to restart on the same store),
    /// seeded with `topics` as [`TestHost::with_topics`].
    pub async fn with_topics_in(dir: &std::path::Path, topics: &[(&str, i32)]) -> TestHost {
        let dir = dir.to_path_buf();
        TestHost::with_config(|config| {
            config.data_dir = dir;
            config.catalog.topics = seeds(topics);
        })
        .await
    }

    /// A host from the default configuration, both listeners bound to 127.0.0.1:0, changed by
    /// `edit`.
    pub async fn with_config(edit: impl FnOnce(&mut Config)) -> TestHost {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config {
            data_dir: dir.path().to_path_buf(),
            kafka: KafkaConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                ..KafkaConfig::default()
            },
            ..Config::default()
        };
        config.admin.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        edit(&mut config);
        share_the_precompiled_cache(&config.data_dir);
        let server = Server::start(config).await.expect("host starts");
        TestHost { server, dir }
    }

    /// The Kafka listener's address.
    pub fn addr(&self) -> SocketAddr {
        self.server.kafka_addr()
    }

    /// The admin API's base URL, e.g. `http://127.0.0.1:41234`.
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.server.admin_addr())
    }

    /// The running server (catalog, node).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The data directory, e.g. to restart a host on the same store.
    pub fn data_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// A new connection to the host.
    pub async fn client(&self) -> KafkaClient {
        KafkaClient::connect(self.addr()).await.expect("connect")
    }

    /// Stops the host and waits for every connection to end.
    pub async fn stop(self) {
        self.server.shutdown().await.expect("clean shutdown");
    }
}

/// Catalog seeds for `(name, partitions)`.
fn seeds(topics: &[(&str, i32)]) -> Vec<TopicSeed> {
    topics
        .iter()
        .map(|&(name, partitions)| TopicSeed {
            name: name.to_owned(),
            partitions,
            partition_racks: Vec::new(),
        })
        .collect()
}

/// Points `data_dir/cache` (the host's precompiled modules) at one directory every host of
/// this test process shares, unless the data dir has a cache already (a restarted host keeps
/// its own). Each host would otherwise compile every built-in again, and the hosts of the
/// socket tests were most of their binary's time. The cache is keyed by module content and
/// engine and written atomically, so sharing it between hosts running at once is its design
/// (docs/operating.md); the client suite shares one the same way.
fn share_the_precompiled_cache(data_dir: &std::path::Path) {
    static SHARED: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let link = data_dir.join("cache");
    if link.exists() {
        return;
    }
    let shared = SHARED.get_or_init(|| tempfile::tempdir().expect("a shared cache dir"));
    std::fs::create_dir_all(data_dir).expect("the data dir");
    std::os::unix::fs::symlink(shared.path(), &link).expect("the cache link");
}

/// A raw Kafka connection: one request at a time, or raw frames.
pub struct KafkaClient {
    stream: TcpStream,
    next_correlation_id: i32,
    client_id: String,
}

impl KafkaClient {
    /// A connection to `addr`; logged in first when `addr` is a port of a host whose clients
    /// log in (a proxy in an `UPSTREAM_SECURITY=sasl_ssl` run, [`secured`]).
    pub async fn connect(addr: SocketAddr) -> anyhow::Result<KafkaClient> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut client = KafkaClient {
            stream,
            next_correlation_id: 1,
            client_id: "assignor-host-tests".to_owned(),
        };
        if let Some((user, password)) = secured::login_for(addr) {
            client.login_plain(user, password).await?;
        }
        Ok(client)
    }

    /// SASL PLAIN as clients log in (KIP-152: SaslHandshake v1, then SaslAuthenticate).
    pub async fn login_plain(&mut self, user: &str, password: &str) -> anyhow::Result<()> {
        use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
        let handshake = self
            .call(
                &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
                1,
            )
            .await?;
        ensure!(
            handshake.error_code == 0,
            "SaslHandshake PLAIN: error {}",
            handshake.error_code
        );
        let token = format!("\0{user}\0{password}");
        let answer = self
            .call(
                &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token)),
                1,
            )
            .await?;
        ensure!(
            answer.error_code == 0,
            "SaslAuthenticate as {user}: error {} {:?}",
            answer.error_code,
            answer.error_message
        );
        Ok(())
    }

    /// Sends `request` at `version` and returns its answer, checking the correlation id.
    pub async fn call<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> anyhow::Result<R::Response> {
        let correlation_id = self.send(request, version).await?;
        self.receive::<R>(correlation_id, version).await
    }

    /// Writes one request frame; returns its correlation id.
    pub async fn send<R: Request>(&mut self, request: &R, version: i16) -> anyhow::Result<i32> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let key = ApiKey::try_from(R::KEY).map_err(|()| anyhow::anyhow!("unknown key"))?;
        let mut body = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.client_id.clone())))
            .encode(&mut body, key.request_header_version(version))?;
        request.encode(&mut body, version)?;
        self.send_frame(&body).await?;
        Ok(correlation_id)
    }

    /// Reads the answer to a request of type `R` sent at `version`.
    pub async fn receive<R: Request>(
        &mut self,
        correlation_id: i32,
        version: i16,
    ) -> anyhow::Result<R::Response> {
        let header_version = <R::Response as HeaderVersion>::header_version(version);
        let (got, body) = self
            .receive_as::<R::Response>(header_version, version)
            .await?;
        ensure!(
            got == correlation_id,
            "answer carries correlation id {got}, expected {correlation_id}"
        );
        Ok(body)
    }

    /// Reads one response frame and decodes it with explicit header and body versions (for
    /// answers whose version differs from the request's, like ApiVersions v0 fallbacks).
    /// Returns the correlation id and the body; the body must be consumed exactly.
    pub async fn receive_as<T: Decodable>(
        &mut self,
        header_version: i16,
        body_version: i16,
    ) -> anyhow::Result<(i32, T)> {
        let Some(mut frame) = self.read_frame().await? else {
            bail!("connection closed instead of an answer");
        };
        let header = ResponseHeader::decode(&mut frame, header_version)?;
        let body = T::decode(&mut frame, body_version)?;
        ensure!(
            !frame.has_remaining(),
            "{} bytes left after the response body",
            frame.remaining()
        );
        Ok((header.correlation_id, body))
    }

    /// Writes `payload` with its size prefix.
    pub async fn send_frame(&mut self, payload: &[u8]) -> anyhow::Result<()> {
        let mut frame = BytesMut::with_capacity(payload.len() + 4);
        frame.put_i32(payload.len() as i32);
        frame.put_slice(payload);
        self.send_raw(&frame).await
    }

    /// Writes bytes exactly as given (a size prefix included or not).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.stream.write_all(bytes).await?;
        Ok(())
    }

    /// Closes the write half (the host sees end of stream) and keeps reading possible.
    pub async fn shutdown_write(&mut self) -> anyhow::Result<()> {
        self.stream.shutdown().await?;
        Ok(())
    }

    /// The next response frame without its size prefix; `None` when the host closed the
    /// connection cleanly between frames.
    pub async fn read_frame(&mut self) -> anyhow::Result<Option<Bytes>> {
        tokio::time::timeout(DEADLINE, self.read_frame_now())
            .await
            .context("no answer before the deadline")?
    }

    async fn read_frame_now(&mut self) -> anyhow::Result<Option<Bytes>> {
        let mut size = [0u8; 4];
        match self.stream.read_exact(&mut size).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let size = i32::from_be_bytes(size);
        ensure!(size >= 0, "negative response size {size}");
        let mut body = vec![0u8; size as usize];
        self.stream.read_exact(&mut body).await?;
        Ok(Some(Bytes::from(body)))
    }

    /// Whether the host has closed this connection (reads end of stream, and no answer).
    pub async fn is_closed_by_host(&mut self) -> anyhow::Result<bool> {
        Ok(self.read_frame().await?.is_none())
    }
}

/// A topic name for requests.
pub fn topic_name(name: &str) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(StrBytes::from_string(name.to_owned()))
}

/// A string for requests.
pub fn str(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

/// `ConsumerProtocolSubscription` bytes as a consumer puts them in JoinGroup: the `int16`
/// version, then the body at that version.
pub fn subscription(topics: &[&str], version: i16) -> Bytes {
    use kafka_protocol::messages::ConsumerProtocolSubscription;
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    ConsumerProtocolSubscription::default()
        .with_topics(topics.iter().map(|t| str(t)).collect())
        .encode(&mut buf, version)
        .expect("subscription encodes");
    buf.freeze()
}

/// Decodes `ConsumerProtocolAssignment` bytes from SyncGroup as a client does (the version
/// prefix is read and clamped to the highest known, 3): `(topic, partitions)` sorted by topic.
pub fn decode_assignment(mut bytes: Bytes) -> anyhow::Result<Vec<(String, Vec<i32>)>> {
    use kafka_protocol::messages::ConsumerProtocolAssignment;
    ensure!(bytes.len() >= 2, "assignment of {} bytes", bytes.len());
    let version = bytes.get_i16();
    ensure!(version >= 0, "negative assignment version {version}");
    let assignment = ConsumerProtocolAssignment::decode(&mut bytes, version.min(3))?;
    ensure!(!bytes.has_remaining(), "bytes left after the assignment");
    let mut topics: Vec<(String, Vec<i32>)> = assignment
        .assigned_partitions
        .into_iter()
        .map(|tp| (tp.topic.to_string(), tp.partitions))
        .collect();
    topics.sort();
    Ok(topics)
}
