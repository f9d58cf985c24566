//! One client connection, pipelined: requests are read ahead, and their answers are written
//! back strictly in request order (Kafka clients match answers to requests by order; the Java
//! client fails on an answer out of order).
//!
//! Three parts run at once:
//! - the reader (this task) reads frames and gives each request a slot in the answer queue:
//!   the host's own requests go to the local worker, in proxy mode the others go up the
//!   connection's [`Link`] to its upstream broker (opened at the first such request; its
//!   answering side goes to the writer with the first slot that waits for an answer);
//! - the local worker answers the host's requests one at a time, in order, as Kafka's request
//!   handler does for one connection (a JoinGroup parked until the join phase ends holds the
//!   host's later answers, not the reading, nor the requests passed up meanwhile);
//! - the writer takes the slots in order and writes each answer when it is ready: the host's
//!   from the worker, the upstream's read by the writer itself from the link (they come in
//!   slot order), rewritten where they name brokers.
//!
//! Anything that cannot be served (a frame over the cap, an unknown API in standalone mode, an
//! API or version not advertised, a body that does not decode, an upstream that broke) closes
//! this connection only, once the answers before it are written, with a log line naming the
//! peer and the reason. One exception keeps the host's own APIs reachable while the upstream is
//! not: an ApiVersions whose upstream connection cannot be opened is answered with the host's
//! own table. The client closing its end, or shutdown, ends all three at once: a held
//! Fetch or a parked JoinGroup is dropped with the connection, never kept for a client that is
//! gone.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, warn};

use super::budget::Held;
use super::dispatch::{self, Outcome};
use super::proxy::answer;
use super::proxy::authorize::{Probe, Rights};
use super::proxy::link::{Answers, Link};
use super::proxy::{Proxy, Route, Target};
use super::sasl::{self, Gate, Session, Step};
use super::{Broker, Client, KafkaConfig, api_versions};
use assignor_wire::codec::{FrameCaps, FrameCodec, FrameError, Response};
use assignor_wire::request::{self, Inbound};

/// The connection's two directions, plaintext or TLS alike.
type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// Answers up to this size are copied behind their size prefix and written at once.
const COALESCE_BYTES: usize = 16 * 1024;

/// Initial size of the read buffer; it grows with larger frames.
const BUFFER_BYTES: usize = 8 * 1024;

/// One answer to come, in request order.
enum Slot {
    /// The host's own answer: an encoded frame, nothing (Produce with `acks = 0`), or a reason
    /// to close.
    Local(oneshot::Receiver<Result<Option<BytesMut>, String>>),
    /// The upstream's answer to the request with `correlation_id`, to rewrite when
    /// `rewrite` names the API; the first such slot of a link brings its answering side.
    Up {
        answers: Option<Answers>,
        correlation_id: i32,
        rewrite: Option<(ApiKey, i16)>,
        /// The request's API key and when it left, for the upstream metrics.
        api: i16,
        sent: std::time::Instant,
    },
    /// An authorization probe's answer (`proxy::authorize`): read from the link in its turn
    /// and handed to the local worker, never written to the client.
    Probe {
        answers: Option<Answers>,
        correlation_id: i32,
        reply: oneshot::Sender<Result<Bytes, String>>,
    },
    /// Close once the answers before are written.
    Close(String),
}

/// The cluster's decisions known when a request was read, and the probes sent for the rest
/// with the receivers of their answers.
type Checks = (
    Rights,
    Vec<(Probe, oneshot::Receiver<Result<Bytes, String>>)>,
);

/// A request for the local worker.
struct Job {
    request: request::Request,
    answer: oneshot::Sender<Result<Option<BytesMut>, String>>,
    /// The cluster's decisions known when the request was read, and the probes sent for the
    /// rest; `None`: nothing is checked.
    authorize: Option<Checks>,
    /// The request's share of `kafka.queued_max_request_bytes` (`budget.rs`).
    held: Option<Held>,
}

/// What one connection may take: its frame caps and how long it may sit idle or mid-frame.
#[derive(Debug, Clone)]
pub struct Limits {
    pub caps: FrameCaps,
    /// `kafka.connections_max_idle`: nothing in flight and nothing received for this long.
    pub idle: Duration,
    /// `kafka.frame_timeout`: from a frame's first byte to its last.
    pub frame: Duration,
    /// `kafka.max_in_flight_requests`: requests read ahead whose answers are not written
    /// yet; the reader waits beyond it.
    pub in_flight: usize,
}

impl Limits {
    /// The limits `config` sets; in proxy mode (`proxy`) the requests passed up are capped
    /// as bytes.
    pub fn new(config: &KafkaConfig, proxy: bool) -> Limits {
        Limits {
            caps: FrameCaps {
                bytes: config.max_frame_bytes,
                group: config.max_group_frame_bytes,
                local: config.max_local_frame_bytes,
                relayed: if proxy { Proxy::relayed } else { |_| false },
            },
            idle: config.connections_max_idle,
            frame: config.frame_timeout,
            in_flight: config.max_in_flight_requests.max(1),
        }
    }
}

pub struct Connection {
    socket: TcpStream,
    /// `Some`: the port speaks TLS, and the handshake comes first.
    tls: Option<tokio_rustls::TlsAcceptor>,
    client: Client,
    broker: Arc<Broker>,
    limits: Limits,
    shutdown: CancellationToken,
    target: Target,
}

impl Connection {
    pub fn new(
        socket: TcpStream,
        tls: Option<tokio_rustls::TlsAcceptor>,
        client: Client,
        broker: Arc<Broker>,
        limits: Limits,
        shutdown: CancellationToken,
        target: Target,
    ) -> Connection {
        Connection {
            socket,
            tls,
            client,
            broker,
            limits,
            shutdown,
            target,
        }
    }

    /// Serves the connection until the peer closes it, it breaks the protocol, or shutdown.
    pub async fn run(mut self) {
        let peer = self.client.peer;
        let _ = self.socket.set_nodelay(true);
        let (read, write): (ReadHalf, WriteHalf) = match self.tls {
            None => {
                let (read, write) = self.socket.into_split();
                (Box::new(read), Box::new(write))
            }
            // Within `kafka.frame_timeout`, as a frame: a client that opens a socket and says
            // nothing holds no permit for long.
            Some(acceptor) => {
                let handshake = acceptor.accept(self.socket);
                match tokio::time::timeout(self.limits.frame, handshake).await {
                    Ok(Ok(stream)) => {
                        // A client certificate names the principal (until a SASL login does).
                        let certificate = stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(|c| c.first());
                        if let Some(certificate) = certificate {
                            let named = super::principal::subject(certificate)
                                .ok_or_else(|| "its subject cannot be read".to_owned())
                                .and_then(|dn| self.broker.principals.map(&dn));
                            match named {
                                Ok(name) => {
                                    self.client.principal = Some(Arc::from(format!("User:{name}")))
                                }
                                Err(reason) => {
                                    warn!(%peer, %reason, "closing connection: client certificate refused");
                                    if let Some(m) = &self.broker.metrics {
                                        m.client_connection_closed("tls_handshake");
                                    }
                                    return;
                                }
                            }
                        }
                        let (read, write) = tokio::io::split(stream);
                        (Box::new(read), Box::new(write))
                    }
                    Ok(Err(error)) => {
                        debug!(%peer, %error, "TLS handshake failed");
                        if let Some(m) = &self.broker.metrics {
                            m.client_connection_closed("tls_handshake");
                        }
                        return;
                    }
                    Err(_) => {
                        debug!(%peer, "TLS handshake not done within kafka.frame_timeout");
                        if let Some(m) = &self.broker.metrics {
                            m.client_connection_closed("tls_handshake");
                        }
                        return;
                    }
                }
            }
        };
        let (slots, queue) = mpsc::channel(self.limits.in_flight);
        let (jobs, work) = mpsc::channel(self.limits.in_flight);
        let in_flight = Arc::new(AtomicUsize::new(0));
        // The client's SASL session, when the cluster or the host authenticates the clients:
        // the reader gates requests on it; in proxy mode the writer learns the exchange's
        // outcome from the cluster's answers, standalone the reader from the host's own.
        let session = (self.broker.login.is_some()
            || self
                .broker
                .mode
                .proxy()
                .is_some_and(|p| p.authenticates_clients()))
        .then(|| Arc::new(parking_lot::Mutex::new(Session::default())));
        let mut writer = tokio::spawn(
            write_answers(
                write,
                queue,
                self.broker.clone(),
                in_flight.clone(),
                session.clone(),
            )
            .in_current_span(),
        );
        let mut worker = tokio::spawn(
            answer_locally(
                work,
                self.broker.clone(),
                self.client.clone(),
                session.clone(),
            )
            .in_current_span(),
        );
        let reader = Reader {
            read,
            buffer: BytesMut::with_capacity(BUFFER_BYTES),
            codec: FrameCodec::new(self.limits.caps.clone()),
            unauthenticated: FrameCodec::new(FrameCaps::uniform(
                sasl::MAX_UNAUTHENTICATED_FRAME_BYTES,
            )),
            session,
            exchange: None,
            next_probe: i32::MIN,
            idle: self.limits.idle,
            frame_timeout: self.limits.frame,
            in_flight,
            broker: self.broker.clone(),
            target: self.target,
            link: None,
            slots,
            jobs,
            held: None,
            asked: false,
        };
        let shutdown = self.shutdown.clone();
        let ended = tokio::select! {
            biased;
            () = shutdown.cancelled() => Ended::Shutdown,
            read = reader.run() => Ended::Reader(read),
            written = &mut writer => {
                Ended::Writer(written.unwrap_or_else(|e| Err(format!("writer failed: {e}"))))
            }
        };
        let finished = match ended {
            Ended::Shutdown | Ended::Reader(Ok(())) => Ok(()),
            Ended::Writer(result) => result,
            Ended::Reader(Err(Stop::Now(reason))) => Err(reason),
            // Write the answers read before the request that stopped the reader (its close
            // slot ends the writer), unless the host is stopping.
            Ended::Reader(Err(Stop::Flush(reason))) => {
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    _ = &mut writer => {}
                }
                Err(reason)
            }
        };
        writer.abort();
        worker.abort();
        let _ = (&mut worker).await;
        match finished {
            Ok(()) => debug!(%peer, "connection closed"),
            Err(reason) => warn!(%peer, %reason, "closing connection"),
        }
    }
}

/// Which part ended the connection first.
enum Ended {
    Shutdown,
    Reader(Result<(), Stop>),
    Writer(Result<(), String>),
}

/// Why the reader stopped.
enum Stop {
    /// Write the answers read so far (the last slot closes), then close.
    Flush(String),
    /// Close at once.
    Now(String),
}

struct Reader {
    read: ReadHalf,
    buffer: BytesMut,
    codec: FrameCodec,
    /// The codec of a client that has not authenticated yet: every frame capped small.
    unauthenticated: FrameCodec,
    session: Option<Arc<parking_lot::Mutex<Session>>>,
    /// Standalone's own authentication: the SASL exchange under way (`login.rs`).
    exchange: Option<super::login::Exchange>,
    /// The correlation id of the next authorization probe (the host's own, counted from
    /// `i32::MIN`; answers are matched by order, the id only checks them).
    next_probe: i32,
    idle: Duration,
    frame_timeout: Duration,
    /// Slots queued and not yet written (the writer counts them down): while any is, the
    /// connection is not idle, however long a JoinGroup or a Fetch is held.
    in_flight: Arc<AtomicUsize>,
    broker: Arc<Broker>,
    target: Target,
    link: Option<Link>,
    slots: mpsc::Sender<Slot>,
    jobs: mpsc::Sender<Job>,
    /// The share of `kafka.queued_max_request_bytes` of the frame being read, and whether the
    /// budget was asked for it yet (a small frame takes nothing).
    held: Option<Held>,
    asked: bool,
}

impl Reader {
    /// Reads requests until the peer closes (`Ok`) or the connection must close.
    async fn run(mut self) -> Result<(), Stop> {
        loop {
            let frame = match self.read_frame().await {
                Ok(Some(frame)) => frame.freeze(),
                Ok(None) => return Ok(()),
                Err(e) => return self.close(e.to_string()).await,
            };
            // Given back when dropped: by this iteration, unless the frame's request takes it.
            let held = self.held.take();
            if frame.len() < 8 {
                let reason = format!(
                    "frame of {} bytes is too short for a request header",
                    frame.len()
                );
                return self.close(reason).await;
            }
            let api_key = i16::from_be_bytes([frame[0], frame[1]]);
            let api_version = i16::from_be_bytes([frame[2], frame[3]]);
            let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            let route = match self.broker.mode.proxy() {
                Some(proxy) => proxy.route(api_key, api_version, &frame),
                None => standalone_route(api_key),
            };
            if let Some(login) = self.broker.login.clone()
                && matches!(
                    ApiKey::try_from(api_key),
                    Ok(ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)
                )
            {
                self.login(&login, &frame, api_key, api_version, correlation_id)
                    .await?;
                continue;
            }
            if self.broker.mode.proxy().is_some()
                && let Some(refused) = self.sasl(&frame, api_key, api_version, correlation_id)?
            {
                return self.refuse_sasl(refused).await;
            }
            if let Some(session) = &self.session {
                let local = route == Route::Local;
                let gate = session
                    .lock()
                    .gate(api_key, local, std::time::Instant::now());
                if let Gate::Close(reason, why) = gate {
                    if let Some(m) = &self.broker.metrics {
                        m.client_connection_closed(why);
                    }
                    return self.close(reason).await;
                }
            }
            match route {
                Route::Local => self.local(frame, held).await?,
                Route::Up { rewrite } => {
                    match super::proxy::reserved::refusal(&frame, api_key, api_version) {
                        None => {
                            self.up(frame, api_key, api_version, correlation_id, rewrite, held)
                                .await?
                        }
                        Some(refused) => {
                            self.refuse_reserved(
                                refused,
                                &frame,
                                api_key,
                                api_version,
                                correlation_id,
                            )
                            .await?
                        }
                    }
                }
                Route::Refuse => {
                    let mode = self.broker.mode.describe();
                    let reason = format!(
                        "{:?} v{api_version} is not served {mode} (not advertised)",
                        ApiKey::try_from(api_key).map_err(|()| api_key)
                    );
                    return self.close(reason).await;
                }
            }
        }
    }

    /// Proxy mode's look at the client's SASL requests on their way up: SaslHandshake v0
    /// (after which the client would send SASL tokens unframed, which cannot be relayed) and a
    /// mechanism whose end the host cannot tell are answered here with an error, then the
    /// connection closes (`Some`: the answer); the first SaslAuthenticate of an exchange names
    /// the principal.
    fn sasl(
        &mut self,
        frame: &Bytes,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    ) -> Result<Option<(BytesMut, String)>, Stop> {
        use kafka_protocol::messages::{
            SaslAuthenticateRequest, SaslHandshakeRequest, SaslHandshakeResponse,
        };
        use kafka_protocol::protocol::StrBytes;
        let key = match ApiKey::try_from(api_key) {
            Ok(key @ (ApiKey::SaslHandshake | ApiKey::SaslAuthenticate)) => key,
            _ => return Ok(None),
        };
        let refuse = |code: i16, reason: String| {
            let mechanisms = sasl::MECHANISMS
                .iter()
                .map(|m| StrBytes::from_static_str(m))
                .collect();
            let body = SaslHandshakeResponse::default()
                .with_error_code(code)
                .with_mechanisms(mechanisms);
            let mut out = BytesMut::new();
            FrameCodec::encoder()
                .encode(
                    Response {
                        correlation_id,
                        api_version,
                        body: ResponseKind::SaslHandshake(body),
                    },
                    &mut out,
                )
                .map_err(|e| Stop::Now(e.to_string()))?;
            Ok(Some((out, reason)))
        };
        if key == ApiKey::SaslHandshake && api_version == 0 {
            return refuse(
                35,
                "SaslHandshake v0 (unframed SASL tokens) cannot be relayed; clients since Kafka                  1.0 use v1"
                    .into(),
            );
        }
        let Some(session) = self.session.clone() else {
            return Ok(None);
        };
        if key == ApiKey::SaslHandshake {
            let request: SaslHandshakeRequest = sasl_request(frame, key, api_version)?;
            let mechanism = request.mechanism.to_string();
            if let Err(code) = session.lock().handshake(&mechanism) {
                if let Some(m) = &self.broker.metrics {
                    m.client_authentication(&mechanism, "unsupported");
                }
                return refuse(
                    code,
                    format!(
                        "SASL mechanism {mechanism:?} is not relayed (the host relays {}: it                          must tell when an exchange ends)",
                        sasl::MECHANISMS.join(", ")
                    ),
                );
            }
        } else {
            let request: SaslAuthenticateRequest = sasl_request(frame, key, api_version)?;
            session.lock().request(&request.auth_bytes);
        }
        Ok(None)
    }

    /// The rights `request` needs (`proxy::authorize`): those the session decided lately, and
    /// a probe up the client's own link for the others, whose answer comes in its slot.
    async fn probe(
        &mut self,
        session: &parking_lot::Mutex<Session>,
        request: &request::Request,
    ) -> Result<Checks, Stop> {
        use super::proxy::authorize::needs;
        let now = std::time::Instant::now();
        let mut needed = needs(&request.body, request.version());
        let cluster = super::proxy::authorize::Right::describe_cluster();
        let sees_all = session.lock().decided(&cluster, now) == Some(true);
        if matches!(request.body, RequestKind::ListGroups(_)) && !sees_all {
            // DESCRIBE on each group the host lists: the filter where DESCRIBE CLUSTER is not
            // allowed (a group made after this list is left out of the answer: fail closed).
            let listed = self.broker.driver.list_groups(&[], &[]).await;
            needed.groups(listed.iter().map(|g| g.group_id.as_str()));
        }
        let mut known = Rights::default();
        {
            let session = session.lock();
            for right in &needed.rights {
                if let Some(allowed) = session.decided(right, now) {
                    known.insert(right.clone(), allowed);
                }
            }
        }
        let plan = Probe::plan(&needed, |r| known.decided(r));
        let mut probes = Vec::new();
        // No link: nothing can be asked, and whatever is undecided is refused.
        let Some(link) = self.link.as_mut() else {
            return Ok((known, probes));
        };
        for probe in plan {
            let correlation_id = self.next_probe;
            self.next_probe = self.next_probe.wrapping_add(1);
            let frame = probe.frame(correlation_id).map_err(Stop::Now)?;
            if let Err(e) = link.send(&frame).await {
                return Err(Stop::Now(e.to_string()));
            }
            let (reply, receiver) = oneshot::channel();
            let answers = link.take_answers();
            self.in_flight.fetch_add(1, Ordering::SeqCst);
            self.slots
                .send(Slot::Probe {
                    answers,
                    correlation_id,
                    reply,
                })
                .await
                .map_err(|_| Stop::Now("the writer stopped".into()))?;
            probes.push((probe, receiver));
        }
        Ok((known, probes))
    }

    /// Answers a relayed request that names the host's own topics (`proxy::reserved`) with
    /// its refusal, and tells each refused right. A Produce with `acks=0` expects no answer:
    /// the connection closes instead, as Kafka closes it on such a Produce's error.
    async fn refuse_reserved(
        &mut self,
        refused: Result<(ResponseKind, Vec<super::proxy::authorize::Right>), String>,
        frame: &Bytes,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    ) -> Result<(), Stop> {
        let (body, rights) = match refused {
            Ok(refused) => refused,
            Err(reason) => return self.close(format!("undecodable request: {reason}")).await,
        };
        let principal = self
            .session
            .as_ref()
            .and_then(|s| s.lock().principal().map(str::to_owned));
        for right in &rights {
            super::proxy::authorize::denied(
                api_key,
                principal.as_deref(),
                right,
                self.broker.metrics.as_deref(),
            );
        }
        if api_key == ApiKey::Produce as i16 && answer::acks_zero(frame, api_version) {
            return self
                .close("a Produce with acks=0 to a topic of the host's own".into())
                .await;
        }
        self.answer_now(correlation_id, api_version, body).await
    }

    /// Queues an answer the reader made itself, in its turn among the connection's answers
    /// (an encoding failure reaches the writer, which closes the connection).
    async fn answer_now(
        &mut self,
        correlation_id: i32,
        api_version: i16,
        body: ResponseKind,
    ) -> Result<(), Stop> {
        let mut out = BytesMut::new();
        let encoded = FrameCodec::encoder().encode(
            Response {
                correlation_id,
                api_version,
                body,
            },
            &mut out,
        );
        let (sender, receiver) = oneshot::channel();
        let _ = sender.send(encoded.map(|()| Some(out)).map_err(|e| e.to_string()));
        self.slot(Slot::Local(receiver)).await
    }

    /// Writes the host's refusal of a SASL request, then closes.
    /// Standalone's own authentication (`kafka.authentication = "local"`): SaslHandshake and
    /// SaslAuthenticate answered here, in their turn among the connection's answers, by
    /// `sasl_handshake.rs` and `sasl_authenticate.rs`; after a refusal the connection closes.
    async fn login(
        &mut self,
        login: &super::login::Login,
        frame: &Bytes,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
    ) -> Result<(), Stop> {
        use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
        let Some(session) = self.session.clone() else {
            return Err(Stop::Now("local authentication without a session".into()));
        };
        let metrics = self.broker.metrics.as_deref();
        let (body, close) = if api_key == ApiKey::SaslHandshake as i16 {
            let request: SaslHandshakeRequest =
                sasl_request(frame, ApiKey::SaslHandshake, api_version)?;
            let (answer, close) = super::sasl_handshake::handle(
                login,
                &mut session.lock(),
                &mut self.exchange,
                &request,
                api_version,
                metrics,
            );
            (ResponseKind::SaslHandshake(answer), close)
        } else {
            let request: SaslAuthenticateRequest =
                sasl_request(frame, ApiKey::SaslAuthenticate, api_version)?;
            let (answer, close) = super::sasl_authenticate::handle(
                login,
                &mut session.lock(),
                &mut self.exchange,
                &request,
                std::time::Instant::now(),
                metrics,
            );
            (ResponseKind::SaslAuthenticate(answer), close)
        };
        self.answer_now(correlation_id, api_version, body).await?;
        match close {
            Some(reason) => self.close(reason).await,
            None => Ok(()),
        }
    }

    async fn refuse_sasl(&mut self, (answer, reason): (BytesMut, String)) -> Result<(), Stop> {
        let (sender, receiver) = oneshot::channel();
        let _ = sender.send(Ok(Some(answer)));
        self.slot(Slot::Local(receiver)).await?;
        self.close(reason).await
    }

    /// A request the host answers: decoded here, answered by the local worker.
    async fn local(&mut self, frame: Bytes, held: Option<Held>) -> Result<(), Stop> {
        let request = match request::parse(frame) {
            Ok(Inbound::Request(request)) => request,
            Ok(Inbound::UnsupportedApiVersions(header)) => {
                debug!(
                    version = header.request_api_version,
                    "ApiVersions at an unknown version; answering v0"
                );
                let body = ResponseKind::ApiVersions(api_versions::unsupported_version());
                return self.answer_now(header.correlation_id, 0, body).await;
            }
            Err(e) => return self.close(e.to_string()).await,
        };
        // Proxy mode asks the cluster before the worker answers; standalone's ACLs are asked
        // by the API's file itself (`Client::allows`).
        let authorize = match self.session.clone() {
            Some(session) if self.broker.mode.proxy().is_some() => {
                Some(self.probe(&session, &request).await?)
            }
            _ => None,
        };
        let (answer, receiver) = oneshot::channel();
        self.slot(Slot::Local(receiver)).await?;
        self.jobs
            .send(Job {
                request,
                answer,
                authorize,
                held,
            })
            .await
            .map_err(|_| Stop::Now("the local worker stopped".into()))
    }

    /// A request passed up the link, byte for byte; its share of the budget (`held`) comes
    /// back once it is written up.
    async fn up(
        &mut self,
        frame: Bytes,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
        rewrite: Option<ApiKey>,
        held: Option<Held>,
    ) -> Result<(), Stop> {
        let Some(proxy) = self.broker.mode.proxy().cloned() else {
            return self.close("no upstream".into()).await;
        };
        let metrics = self.broker.metrics.clone();
        if self.link.is_none() {
            match proxy.connect(self.target).await {
                Ok(link) => {
                    if let Some(m) = &metrics {
                        m.upstream_connected();
                    }
                    self.link = Some(link);
                }
                Err(e) => {
                    if let Some(m) = &metrics {
                        m.upstream_error("connect");
                    }
                    // Clients open every connection with ApiVersions; closing it would keep
                    // them from the host's own APIs for as long as the upstream is away. The
                    // host's own table answers it instead (the upstream's comes with the
                    // client's next connection); any other request closes the connection.
                    if api_key == ApiKey::ApiVersions as i16 {
                        debug!(error = %e, "upstream unreachable; ApiVersions answered by the host");
                        return self.local(frame, held).await;
                    }
                    return self.close(e.to_string()).await;
                }
            }
        }
        let frame = if api_key == ApiKey::Metadata as i16 {
            answer::metadata_request(&proxy, frame, api_version)
        } else {
            frame
        };
        let answered =
            !(api_key == ApiKey::Produce as i16 && answer::acks_zero(&frame, api_version));
        let link = self.link.as_mut().expect("connected above");
        let sent = std::time::Instant::now();
        match link.send(&frame).await {
            Ok(()) => {}
            Err(e) => {
                if let Some(m) = &metrics {
                    m.upstream_error("link");
                }
                return self.close(e.to_string()).await;
            }
        };
        drop(held);
        if let Some(m) = &metrics {
            m.upstream_passed_up(api_key, frame.len() + 4);
        }
        if !answered {
            return Ok(());
        }
        let slot = Slot::Up {
            answers: link.take_answers(),
            correlation_id,
            rewrite: rewrite.map(|key| (key, api_version)),
            api: api_key,
            sent,
        };
        self.slot(slot).await
    }

    async fn slot(&mut self, slot: Slot) -> Result<(), Stop> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.slots
            .send(slot)
            .await
            .map_err(|_| Stop::Now("the writer stopped".into()))
    }

    /// Queues a close after the answers read so far.
    async fn close(&mut self, reason: String) -> Result<(), Stop> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let _ = self.slots.send(Slot::Close(reason.clone())).await;
        Err(Stop::Flush(reason))
    }

    /// The next request frame; `None` when the peer closed cleanly between frames. A frame
    /// must arrive whole within `frame_timeout` of its first byte; between frames, a
    /// connection with nothing in flight may wait `idle` for the next one.
    async fn read_frame(&mut self) -> Result<Option<BytesMut>, FrameError> {
        let mut frame_deadline = None;
        loop {
            let authenticated = self
                .session
                .as_ref()
                .is_none_or(|s| s.lock().authenticated());
            let codec = if authenticated {
                &mut self.codec
            } else {
                &mut self.unauthenticated
            };
            let frame = codec.decode(&mut self.buffer)?;
            // The frame's share of the budget, asked before its body is read, once its size
            // and API key are in (so the codec has checked the size against that API's cap,
            // not only the widest); waiting for it is not the client's stall, so the frame's
            // clock starts again after.
            let size = match &frame {
                Some(frame) => Some(frame.len()),
                None if self.buffer.len() >= 6 => Some(prefix(&self.buffer)),
                None => None,
            };
            if let (Some(size), Some(budget), false) = (size, &self.broker.budget, self.asked) {
                self.asked = true;
                self.held = budget.take(size).await;
                frame_deadline = None;
            }
            if let Some(frame) = frame {
                self.asked = false;
                return Ok(Some(frame));
            }
            if self.buffer.capacity() == self.buffer.len() {
                self.buffer.reserve(BUFFER_BYTES);
            }
            let deadline = if self.buffer.is_empty() {
                tokio::time::Instant::now() + self.idle
            } else {
                *frame_deadline
                    .get_or_insert_with(|| tokio::time::Instant::now() + self.frame_timeout)
            };
            let read = tokio::time::timeout_at(deadline, self.read.read_buf(&mut self.buffer));
            let Ok(read) = read.await else {
                if !self.buffer.is_empty() {
                    return Err(FrameError::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "a frame stalled: {} bytes in {:?} (kafka.frame_timeout)",
                            self.buffer.len(),
                            self.frame_timeout
                        ),
                    )));
                }
                if self.in_flight.load(Ordering::SeqCst) > 0 {
                    continue;
                }
                return Err(FrameError::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("idle for {:?} (kafka.connections_max_idle)", self.idle),
                )));
            };
            if read? == 0 {
                if self.buffer.is_empty() {
                    return Ok(None);
                }
                return Err(FrameError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("peer closed mid-frame ({} bytes unread)", self.buffer.len()),
                )));
            }
        }
    }
}

/// The size a frame's prefix announces (the codec has refused a negative one).
fn prefix(buffer: &BytesMut) -> usize {
    let size = i32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]);
    usize::try_from(size).unwrap_or(0)
}

/// Standalone, every request is the host's to decode, but the APIs served in proxy mode only
/// (TxnOffsetCommit: standalone has no transaction coordinator) are refused before their
/// frame is decoded, as in proxy mode the APIs it does not offer.
fn standalone_route(api_key: i16) -> Route {
    match ApiKey::try_from(api_key) {
        Ok(key) if assignor_wire::versions::is_proxy_only(key) => Route::Refuse,
        _ => Route::Local,
    }
}

/// Answers the host's own requests, one at a time, in order.
async fn answer_locally(
    mut work: mpsc::Receiver<Job>,
    broker: Arc<Broker>,
    client: Client,
    session: Option<Arc<parking_lot::Mutex<Session>>>,
) {
    let mut codec = FrameCodec::encoder();
    while let Some(Job {
        request,
        answer,
        authorize,
        held,
    }) = work.recv().await
    {
        // The cluster's decisions, for the API's file to consult where Kafka's handler does.
        let client = match (authorize, &session) {
            (Some((mut rights, probes)), Some(session)) => {
                for (probe, reply) in probes {
                    let frame = reply
                        .await
                        .unwrap_or_else(|_| Err("the connection's writer stopped".into()));
                    let now = std::time::Instant::now();
                    for (right, allowed) in probe.decide(frame) {
                        session.lock().decide(right.clone(), allowed, now);
                        rights.insert(right, allowed);
                    }
                }
                Client {
                    rights: Some(Arc::new(rights)),
                    api: request.api_key as i16,
                    principal: session.lock().principal().map(Arc::from),
                    ..client.clone()
                }
            }
            _ => Client {
                api: request.api_key as i16,
                principal: session
                    .as_ref()
                    .and_then(|s| s.lock().principal().map(Arc::from))
                    .or_else(|| client.principal.clone()),
                ..client.clone()
            },
        };
        let correlation_id = request.header.correlation_id;
        let api_version = request.version();
        // Group APIs fill `group`, `member` and `generation` in (see `Driver::request`).
        let span = tracing::debug_span!(
            "request",
            api = ?request.api_key,
            version = api_version,
            correlation_id,
            group = tracing::field::Empty,
            member = tracing::field::Empty,
            generation = tracing::field::Empty,
        );
        span.in_scope(|| {
            let client_id = request.header.client_id.as_deref().unwrap_or("");
            debug!(client_id, "request");
        });
        let outcome = dispatch::handle(&broker, &client, request, held)
            .instrument(span)
            .await;
        let result = match outcome {
            Outcome::Reply(body) => {
                let mut out = BytesMut::new();
                let response = Response {
                    correlation_id,
                    api_version,
                    body,
                };
                match codec.encode(response, &mut out) {
                    Ok(()) => Ok(Some(out)),
                    Err(e) => {
                        tracing::error!(error = %e, "response encoding failed (a bug in the host)");
                        Err(e.to_string())
                    }
                }
            }
            Outcome::NoReply => Ok(None),
            Outcome::Close(reason) => Err(reason),
        };
        let _ = answer.send(result);
    }
}

/// A SaslHandshake or SaslAuthenticate request's body, past its header (both decoded through
/// the guard; a request that does not decode closes the connection).
fn sasl_request<T: kafka_protocol::protocol::Decodable>(
    frame: &Bytes,
    key: ApiKey,
    version: i16,
) -> Result<T, Stop> {
    use kafka_protocol::messages::RequestHeader;
    let mut body = frame.clone();
    assignor_wire::guard::decode_from::<RequestHeader>(
        &mut body,
        key.request_header_version(version),
    )
    .and_then(|_| assignor_wire::guard::decode::<T>(&body, version))
    .map_err(|e| Stop::Now(format!("{key:?} v{version}: {e}")))
}

/// Learns the outcome of a SaslAuthenticate step from the cluster's answer (before the client
/// reads it, so its next request finds the session as the answer left it).
fn authenticated(
    session: &parking_lot::Mutex<Session>,
    broker: &Broker,
    version: i16,
    frame: &Bytes,
) -> Result<(), String> {
    use kafka_protocol::messages::{ResponseHeader, SaslAuthenticateResponse};
    let key = ApiKey::SaslAuthenticate;
    let mut body = frame.clone();
    assignor_wire::guard::decode_from::<ResponseHeader>(
        &mut body,
        key.response_header_version(version),
    )
    .map_err(|e| format!("upstream SaslAuthenticate v{version} answer: {e}"))?;
    let answer = assignor_wire::guard::decode::<SaslAuthenticateResponse>(&body, version)
        .map_err(|e| format!("upstream SaslAuthenticate v{version} answer: {e}"))?;
    let step = session.lock().answer(
        answer.error_code,
        !answer.auth_bytes.is_empty(),
        answer.session_lifetime_ms,
        std::time::Instant::now(),
    );
    match step {
        Step::Continues => {}
        Step::Authenticated {
            principal,
            mechanism,
            lifetime,
            again,
        } => {
            debug!(%principal, %mechanism, ?lifetime, again, "client authenticated by the upstream");
            if let Some(m) = &broker.metrics {
                m.client_authentication(&mechanism, "success");
                if again {
                    m.client_reauthentication(&mechanism);
                }
            }
        }
        Step::Failed { mechanism, code } => {
            debug!(%mechanism, code, "the upstream refused the client's SASL authentication");
            if let Some(m) = &broker.metrics {
                m.client_authentication(&mechanism, "failure");
            }
        }
    }
    Ok(())
}

/// Counts one slot down when dropped.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Writes the answers in slot order until a slot closes or the queue ends.
async fn write_answers(
    mut write: WriteHalf,
    mut queue: mpsc::Receiver<Slot>,
    broker: Arc<Broker>,
    in_flight: Arc<AtomicUsize>,
    session: Option<Arc<parking_lot::Mutex<Session>>>,
) -> Result<(), String> {
    let mut upstream: Option<Answers> = None;
    while let Some(slot) = queue.recv().await {
        // Counted down once this slot is written (or skipped): see `Reader::in_flight`.
        let _written = InFlight(&in_flight);
        let bytes = match slot {
            Slot::Local(answer) => match answer.await {
                Ok(Ok(Some(frame))) => frame.freeze(),
                Ok(Ok(None)) => continue,
                Ok(Err(reason)) => return Err(reason),
                Err(_) => return Err("the local worker stopped".into()),
            },
            Slot::Up {
                answers,
                correlation_id,
                rewrite,
                api,
                sent,
            } => {
                if answers.is_some() {
                    upstream = answers;
                }
                let Some(link) = upstream.as_mut() else {
                    return Err("an upstream answer is due on a connection with no link".into());
                };
                let frame = match link.next(correlation_id).await {
                    Ok(frame) => frame,
                    Err(e) => {
                        if let Some(m) = &broker.metrics {
                            m.upstream_error("link");
                        }
                        return Err(e.to_string());
                    }
                };
                if let Some(m) = &broker.metrics {
                    m.upstream_answered(api, sent.elapsed().as_secs_f64(), frame.len() + 4);
                }
                if api == ApiKey::SaslAuthenticate as i16
                    && let (Some(session), Some((_, version))) = (&session, rewrite)
                {
                    authenticated(session, &broker, version, &frame)?;
                }
                let frame = match (rewrite, broker.mode.proxy()) {
                    (Some((api, version)), Some(proxy)) => {
                        answer::rewrite(proxy, api, version, frame)?
                    }
                    _ => frame,
                };
                // The size, then the answer as it came: a small answer copied behind its size
                // into one write (one TLS record, one syscall, whatever the stream does with
                // vectored writes), a large one (a Fetch) not copied.
                let size = (frame.len() as u32).to_be_bytes();
                if frame.len() <= COALESCE_BYTES {
                    let mut framed = BytesMut::with_capacity(4 + frame.len());
                    framed.extend_from_slice(&size);
                    framed.extend_from_slice(&frame);
                    write
                        .write_all(&framed)
                        .await
                        .map_err(|e| format!("write failed: {e}"))?;
                } else {
                    let mut framed = Bytes::copy_from_slice(&size).chain(frame);
                    write
                        .write_all_buf(&mut framed)
                        .await
                        .map_err(|e| format!("write failed: {e}"))?;
                }
                continue;
            }
            Slot::Probe {
                answers,
                correlation_id,
                reply,
            } => {
                if answers.is_some() {
                    upstream = answers;
                }
                let Some(link) = upstream.as_mut() else {
                    return Err("a probe's answer is due on a connection with no link".into());
                };
                let frame = link.next(correlation_id).await.map_err(|e| e.to_string())?;
                let _ = reply.send(Ok(frame));
                continue;
            }
            Slot::Close(reason) => return Err(reason),
        };
        write
            .write_all(&bytes)
            .await
            .map_err(|e| format!("write failed: {e}"))?;
    }
    Ok(())
}
