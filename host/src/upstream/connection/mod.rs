//! One connection of the host's own to an upstream broker: TCP, then TLS and a SASL login as
//! [`Security`] says, then ApiVersions, then one request at a time with Kafka's request types
//! (kafka-protocol), answers decoded through the same guard as everything else the host
//! decodes (`assignor_wire::guard`), checked against their correlation id and a size cap.
//!
//! **Re-authentication (KIP-368).** A broker with `connections.max.reauth.ms` closes a
//! connection whose SASL session outlived the `session_lifetime_ms` it announced at login.
//! Kafka's clients log in again on the open connection; a connection here is instead reported
//! [`Connection::expired`] a little before that, and its owner opens a new one: the host's own
//! calls are a few per group every few seconds, so a reconnect once per session lifetime costs
//! nothing, and there is one login path instead of two.
//!
//! - `security`: the `[upstream]` security settings, loaded once into a [`Security`].
//! - `tls`: rustls' configuration, and handshake failures in words naming the setting.
//! - `sasl`: SaslHandshake and SaslAuthenticate around rsasl's mechanisms.
//! - `error`: what fails, in words naming the setting to change.
//! - `health`: whether the upstream takes the host's connections, for the admin API and the
//!   metrics.

mod error;
mod health;
mod sasl;
pub mod security;
mod tls;

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
    SaslAuthenticateRequest,
};
use kafka_protocol::protocol::{Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

pub use error::{ConnectionError, error_name};
pub use health::Health;
pub use security::{Secret, Security, SecurityProtocol, SecuritySettings};

/// Largest answer read (an OffsetFetch of every partition of a large group is a few MiB; a
/// Metadata answer of a cluster with 100,000 partitions about 10 MiB).
const MAX_ANSWER_BYTES: usize = 64 << 20;
/// How long before the broker's `session_lifetime_ms` runs out a connection counts as expired.
const REAUTH_MARGIN: Duration = Duration::from_secs(5);

/// A plain or TLS socket.
enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// An open, logged-in connection to one broker, with the versions it speaks.
pub struct Connection {
    addr: String,
    stream: Stream,
    next_correlation_id: i32,
    /// `(min, max)` by API key, from the broker's ApiVersions.
    versions: HashMap<i16, (i16, i16)>,
    /// When the SASL session must be renewed (a new connection), if the broker bounds it.
    expires: Option<Instant>,
}

impl Connection {
    /// Connects to `addr` (`host:port`), secures the connection as `security` says and asks
    /// the broker's versions, all within `timeout`.
    pub async fn open(
        addr: &str,
        security: &Security,
        timeout: Duration,
    ) -> Result<Connection, ConnectionError> {
        let opened = match tokio::time::timeout(timeout, Connection::open_now(addr, security)).await
        {
            Ok(result) => result,
            Err(_elapsed) => Err(ConnectionError::Connect {
                addr: addr.to_owned(),
                reason: format!("not connected and logged in within {timeout:?}"),
            }),
        };
        match &opened {
            Ok(_) => security.health.opened(),
            Err(error) => security.health.failed(error),
        }
        opened
    }

    async fn open_now(addr: &str, security: &Security) -> Result<Connection, ConnectionError> {
        let stream = stream(addr, security.tls()).await?;
        let mut connection = Connection {
            addr: addr.to_owned(),
            stream,
            next_correlation_id: 1,
            versions: HashMap::new(),
            expires: None,
        };
        connection.versions = connection.api_versions().await?;
        if let Some(credentials) = &security.sasl {
            let lifetime = connection.login(credentials).await?;
            connection.expires = lifetime.map(|l| Instant::now() + l.saturating_sub(REAUTH_MARGIN));
        }
        Ok(connection)
    }

    /// ApiVersions v3 (with the host's name and version, which brokers show in their
    /// metrics), again at v0 when the broker answers UNSUPPORTED_VERSION (it then answers in
    /// v0's layout, as KIP-511 says).
    async fn api_versions(&mut self) -> Result<HashMap<i16, (i16, i16)>, ConnectionError> {
        let v3 = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("assignor-host"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let answer: ApiVersionsResponse = match self.call(&v3, 3).await {
            Ok(answer) if answer.error_code != ResponseError::UnsupportedVersion.code() => answer,
            _ => self.call(&ApiVersionsRequest::default(), 0).await?,
        };
        if answer.error_code != 0 {
            return Err(self.broken(format!(
                "ApiVersions answered {}",
                error_name(answer.error_code)
            )));
        }
        Ok(answer
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect())
    }

    /// Logs in with `credentials` (`sasl.rs` says how); returns the session's lifetime when
    /// the broker bounds it.
    async fn login(
        &mut self,
        credentials: &security::Credentials,
    ) -> Result<Option<Duration>, ConnectionError> {
        let addr = self.addr.clone();
        let mut login = sasl::Login::new(&addr, credentials);
        let answer = self.call(&login.handshake(), 1).await?;
        login.handshake_answered(&answer)?;
        let version = self
            .version(SaslAuthenticateRequest::KEY, sasl::SASL_AUTHENTICATE)
            .ok_or_else(|| login.refused("the broker does not speak SaslAuthenticate".into()))?;
        let mut input: Option<Bytes> = None;
        while let Some(message) = login.step(input.as_deref())? {
            let request = SaslAuthenticateRequest::default().with_auth_bytes(message);
            let answer = self.call(&request, version).await?;
            input = login.answered(answer)?;
            if input.is_none() {
                break;
            }
        }
        Ok(login.lifetime())
    }

    /// The broker's address, `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the SASL session is about to run out: open a new connection instead.
    pub fn expired(&self) -> bool {
        self.expires.is_some_and(|at| Instant::now() >= at)
    }

    /// How long until [`Connection::expired`], when the broker bounds the session.
    pub fn renew_in(&self) -> Option<Duration> {
        self.expires
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// The broker's `(min, max)` versions of API `key`.
    pub fn versions(&self, key: i16) -> Option<(i16, i16)> {
        self.versions.get(&key).copied()
    }

    /// The highest version of `key` within `ours` that the broker speaks.
    pub fn version(&self, key: i16, ours: (i16, i16)) -> Option<i16> {
        let (min, max) = self.versions(key)?;
        let best = max.min(ours.1);
        (best >= min.max(ours.0)).then_some(best)
    }

    fn broken(&self, reason: String) -> ConnectionError {
        ConnectionError::Broken {
            addr: self.addr.clone(),
            reason,
        }
    }

    /// A failed read or write: a TLS alert from the broker is a refusal that names the
    /// setting to change (under TLS 1.3 a broker that refuses the host's client certificate
    /// says so only after the handshake, on the first request), anything else breaks the
    /// connection.
    fn io_failed(&self, what: &str, error: io::Error) -> ConnectionError {
        if tls::is_alert(&error) {
            return ConnectionError::Tls {
                addr: self.addr.clone(),
                reason: tls::explain(&error),
            };
        }
        self.broken(format!("{what}: {error}"))
    }

    /// Writes `request` at `version` and reads its answer. A failure leaves the connection
    /// unusable: drop it.
    pub async fn call<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, ConnectionError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let key = ApiKey::try_from(R::KEY)
            .map_err(|()| self.broken(format!("unknown API {}", R::KEY)))?;
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&[0; 4]);
        RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("assignor-host")))
            .encode(&mut frame, key.request_header_version(version))
            .and_then(|()| request.encode(&mut frame, version))
            .map_err(|e| self.broken(format!("cannot encode {key:?} v{version}: {e}")))?;
        let size = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        let written = self.stream.write_all(&frame).await;
        let flushed = match written {
            Ok(()) => self.stream.flush().await,
            Err(e) => Err(e),
        };
        flushed.map_err(|e| self.io_failed("write", e))?;

        let size = self.stream.read_u32().await.map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                self.broken(format!(
                    "closed the connection instead of answering {key:?} v{version}"
                ))
            } else {
                self.io_failed("read", e)
            }
        })? as usize;
        if size > MAX_ANSWER_BYTES {
            return Err(self.broken(format!("answer of {size} bytes is over {MAX_ANSWER_BYTES}")));
        }
        let mut body = BytesMut::zeroed(size);
        self.stream
            .read_exact(&mut body)
            .await
            .map_err(|e| self.io_failed("read", e))?;
        let mut body = body.freeze();
        let header_version = <R::Response as HeaderVersion>::header_version(version);
        let header: ResponseHeader =
            assignor_wire::guard::decode_from(&mut body, header_version)
                .map_err(|e| self.broken(format!("{key:?} answer header: {e}")))?;
        if header.correlation_id != correlation_id {
            return Err(self.broken(format!(
                "answer for correlation id {}, expected {correlation_id}",
                header.correlation_id
            )));
        }
        let answer = assignor_wire::guard::decode_from(&mut body, version)
            .map_err(|e| self.broken(format!("{key:?} v{version} answer: {e}")))?;
        if body.has_remaining() {
            return Err(self.broken(format!(
                "{} bytes after the {key:?} answer",
                body.remaining()
            )));
        }
        Ok(answer)
    }
}

/// A TCP connection to `addr`, with TLS of `tls` when set.
async fn stream(
    addr: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<Stream, ConnectionError> {
    let connect = |reason: String| ConnectionError::Connect {
        addr: addr.to_owned(),
        reason,
    };
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| connect(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let Some(config) = tls else {
        return Ok(Stream::Plain(tcp));
    };
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let name = rustls::pki_types::ServerName::try_from(host)
        .map_err(|e| connect(format!("not a name TLS can check: {e}")))?;
    let tls = TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| ConnectionError::Tls {
            addr: addr.to_owned(),
            reason: tls::explain(&e),
        })?;
    Ok(Stream::Tls(Box::new(tls)))
}

/// The reading side of a glued link.
pub type LinkRead = Box<dyn AsyncRead + Send + Unpin>;
/// The writing side of a glued link.
pub type LinkWrite = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection for a client's glued link (`kafka::proxy::link`): TCP, then TLS when the
/// upstream takes it, without the host's client certificate and without a login of the
/// host's, so the cluster never takes a client's requests for the host's. Split in two for
/// the link's reader and writer: a plain socket by halves of its own, a TLS one through a
/// shared lock (its reads and writes share one session).
pub async fn open_link(
    addr: &str,
    security: &Security,
    timeout: Duration,
) -> Result<(LinkRead, LinkWrite), ConnectionError> {
    let stream = tokio::time::timeout(timeout, stream(addr, security.link_tls()))
        .await
        .map_err(|_| ConnectionError::Connect {
            addr: addr.to_owned(),
            reason: format!("no connection within {timeout:?}"),
        })?
        .inspect_err(|error| security.health.failed(error))?;
    Ok(match stream {
        Stream::Plain(tcp) => {
            let (read, write) = tcp.into_split();
            (Box::new(read), Box::new(write))
        }
        Stream::Tls(tls) => {
            let (read, write) = tokio::io::split(*tls);
            (Box::new(read), Box::new(write))
        }
    })
}

#[cfg(test)]
mod tests;
