//! The group calls of [`super::UpstreamClient`] (commit, fetch and delete offsets, delete a
//! group), sent by the host itself to the group's upstream coordinator over its own
//! connections, with Kafka's own request types (kafka-protocol).
//!
//! **Why not librdkafka.** librdkafka 2.12.1 (the newest rdkafka-sys, 4.10.0) aborts the whole
//! process (`rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed`) when
//! a coordinator-targeted admin request (AlterConsumerGroupOffsets, ListConsumerGroupOffsets,
//! DeleteConsumerGroupOffsets, DeleteGroups) outlives its deadline while it waits for the
//! coordinator and the coordinator then answers or comes back (confluentinc/librdkafka#4605,
//! the fix in #5397 is not released). In proxy mode that is any upstream coordinator that is
//! slow or restarting: the host's tests reproduced it every time (`proxy_faults`). The calls
//! here do what librdkafka's do (FindCoordinator, then the request at the highest version
//! both sides speak, again on NOT_COORDINATOR and its kin until the deadline) with nothing
//! left running after the deadline. Topics and end offsets stay with librdkafka.
//!
//! One connection per coordinator, one request at a time on it (answers come back in order;
//! the host's own commits are a few per group every few seconds). A connection that fails is
//! dropped and opened again at the next call. Plaintext only, as the host's own Metadata
//! reads (`kafka::proxy::topology`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest, RequestHeader,
    ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::ClientError;

/// Largest answer read (an OffsetFetch of every partition of a large group is a few MiB).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// Pause between attempts while the coordinator moves or loads.
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// Versions of FindCoordinator spoken here: one key per request (v4 batches keys).
const FIND_COORDINATOR: (i16, i16) = (1, 3);

/// The codes that mean "ask again, maybe elsewhere": the coordinator moved, is loading, or is
/// not there yet.
fn moved(code: i16) -> bool {
    code == ResponseError::NotCoordinator.code()
        || code == ResponseError::CoordinatorNotAvailable.code()
        || code == ResponseError::CoordinatorLoadInProgress.code()
}

/// Whether any of `codes` means the request should go to the coordinator again.
pub(super) fn any_moved(codes: impl IntoIterator<Item = i16>) -> bool {
    codes.into_iter().any(moved)
}

/// The connections to the group coordinators and which broker coordinates which group.
pub(super) struct Groups {
    bootstrap: Vec<String>,
    timeout: Duration,
    /// Open connections by `host:port`.
    connections: Mutex<HashMap<String, Arc<Connection>>>,
    /// The coordinator of each group asked so far, `host:port`.
    coordinators: Mutex<HashMap<String, String>>,
}

/// Why one attempt failed.
enum Failure {
    /// The connection failed (connect, read, write, a frame that does not decode).
    Io(String),
    /// The coordinator moved or is loading: ask again.
    Moved,
    /// An answer that ends the call.
    Final(ClientError),
}

impl Groups {
    pub(super) fn new(bootstrap: Vec<String>, timeout: Duration) -> Groups {
        Groups {
            bootstrap,
            timeout,
            connections: Mutex::new(HashMap::new()),
            coordinators: Mutex::new(HashMap::new()),
        }
    }

    /// Sends the request `build` makes (given the version) to `group`'s coordinator and returns
    /// the answer, again while the coordinator moves (`moved` says so from the answer) or the
    /// connection fails, until `request_timeout` has passed.
    pub(super) async fn call<R: Request>(
        &self,
        call: &'static str,
        group: &str,
        versions: (i16, i16),
        build: impl Fn(i16) -> R,
        moved: impl Fn(&R::Response) -> bool,
    ) -> Result<R::Response, ClientError> {
        let deadline = Instant::now() + self.timeout;
        let mut last_io: Option<String> = None;
        loop {
            let attempt = async {
                let connection = self.coordinator(call, group).await?;
                let version = connection.version(call, R::KEY, versions)?;
                match connection.call(&build(version), version).await {
                    Ok(answer) if moved(&answer) => Err(Failure::Moved),
                    Ok(answer) => Ok(answer),
                    Err(e) => {
                        self.drop_connection(&connection);
                        Err(Failure::Io(e))
                    }
                }
            };
            match tokio::time::timeout_at(deadline, attempt).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(Failure::Final(error))) => return Err(error),
                Ok(Err(Failure::Moved)) => self.forget(group),
                Ok(Err(Failure::Io(detail))) => {
                    self.forget(group);
                    last_io = Some(detail);
                }
                Err(_elapsed) => break,
            }
            if Instant::now() + RETRY_PAUSE >= deadline {
                break;
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        Err(match last_io {
            Some(detail) => ClientError::Unreachable { call, detail },
            None => ClientError::TimedOut {
                call,
                timeout: self.timeout,
            },
        })
    }

    /// The connection to `group`'s coordinator, found with FindCoordinator on a bootstrap
    /// server when not known.
    async fn coordinator(
        &self,
        call: &'static str,
        group: &str,
    ) -> Result<Arc<Connection>, Failure> {
        let known = self.coordinators.lock().unwrap().get(group).cloned();
        if let Some(addr) = known {
            return self.connection(&addr).await.map_err(Failure::Io);
        }
        let mut last = String::from("no bootstrap server");
        for server in &self.bootstrap {
            let connection = match self.connection(server).await {
                Ok(c) => c,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let version =
                connection.version(call, FindCoordinatorRequest::KEY, FIND_COORDINATOR)?;
            let request = FindCoordinatorRequest::default()
                .with_key(StrBytes::from_string(group.to_owned()))
                .with_key_type(0);
            let answer = match connection.call(&request, version).await {
                Ok(answer) => answer,
                Err(e) => {
                    self.drop_connection(&connection);
                    last = e;
                    continue;
                }
            };
            if moved(answer.error_code) {
                return Err(Failure::Moved);
            }
            if answer.error_code != 0 {
                return Err(Failure::Final(kafka_error(call, answer.error_code)));
            }
            let addr = format!("{}:{}", answer.host.as_str(), answer.port);
            self.coordinators
                .lock()
                .unwrap()
                .insert(group.to_owned(), addr.clone());
            return self.connection(&addr).await.map_err(Failure::Io);
        }
        Err(Failure::Io(last))
    }

    fn forget(&self, group: &str) {
        self.coordinators.lock().unwrap().remove(group);
    }

    /// The open connection to `addr`, or a new one.
    async fn connection(&self, addr: &str) -> Result<Arc<Connection>, String> {
        if let Some(open) = self.connections.lock().unwrap().get(addr) {
            return Ok(open.clone());
        }
        let connection = Arc::new(Connection::open(addr).await?);
        self.connections
            .lock()
            .unwrap()
            .insert(addr.to_owned(), connection.clone());
        Ok(connection)
    }

    fn drop_connection(&self, connection: &Arc<Connection>) {
        let mut open = self.connections.lock().unwrap();
        if open
            .get(&connection.addr)
            .is_some_and(|c| Arc::ptr_eq(c, connection))
        {
            open.remove(&connection.addr);
        }
    }
}

/// A [`ClientError::Kafka`] for `code`, named as Kafka names it.
pub(super) fn kafka_error(call: &'static str, code: i16) -> ClientError {
    let (name, message) = match ResponseError::try_from_code(code) {
        Some(e) => (format!("{e:?}"), e.to_string()),
        None => (format!("error {code}"), String::new()),
    };
    ClientError::Kafka {
        call,
        code,
        name,
        message,
    }
}

/// One connection of the host's own to a broker, with the versions it speaks.
struct Connection {
    addr: String,
    stream: tokio::sync::Mutex<Stream>,
    /// `(min, max)` by API key, from the broker's ApiVersions.
    versions: HashMap<i16, (i16, i16)>,
}

struct Stream {
    tcp: TcpStream,
    next_correlation_id: i32,
}

impl Connection {
    /// Connects and asks the broker's versions (ApiVersions v0, which every broker answers).
    async fn open(addr: &str) -> Result<Connection, String> {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let mut stream = Stream {
            tcp,
            next_correlation_id: 1,
        };
        let answer: ApiVersionsResponse = stream
            .call(&ApiVersionsRequest::default(), 0)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        if answer.error_code != 0 {
            return Err(format!(
                "{addr}: ApiVersions answered {}",
                answer.error_code
            ));
        }
        let versions = answer
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        Ok(Connection {
            addr: addr.to_owned(),
            stream: tokio::sync::Mutex::new(stream),
            versions,
        })
    }

    /// The highest version of `key` within `ours` that the broker speaks.
    fn version(&self, call: &'static str, key: i16, ours: (i16, i16)) -> Result<i16, Failure> {
        let theirs = self.versions.get(&key).copied();
        match theirs {
            Some((min, max)) if max.min(ours.1) >= min.max(ours.0) => Ok(max.min(ours.1)),
            _ => Err(Failure::Final(ClientError::Kafka {
                call,
                code: ResponseError::UnsupportedVersion.code(),
                name: "UnsupportedVersion".to_owned(),
                message: format!(
                    "{} speaks {:?} of API {key} ({:?}), the host {ours:?}",
                    self.addr,
                    theirs,
                    ApiKey::try_from(key).map_err(|()| key)
                ),
            })),
        }
    }

    async fn call<R: Request>(&self, request: &R, version: i16) -> Result<R::Response, String> {
        let mut stream = self.stream.lock().await;
        stream
            .call(request, version)
            .await
            .map_err(|e| format!("{}: {e}", self.addr))
    }
}

impl Stream {
    /// Writes `request` at `version` and reads its answer.
    async fn call<R: Request>(&mut self, request: &R, version: i16) -> Result<R::Response, String> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let key = ApiKey::try_from(R::KEY).map_err(|()| format!("unknown API {}", R::KEY))?;
        let mut frame = BytesMut::new();
        frame.extend_from_slice(&[0; 4]);
        RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("assignor-host")))
            .encode(&mut frame, key.request_header_version(version))
            .and_then(|()| request.encode(&mut frame, version))
            .map_err(|e| format!("cannot encode {key:?} v{version}: {e}"))?;
        let size = (frame.len() - 4) as u32;
        frame[..4].copy_from_slice(&size.to_be_bytes());
        self.tcp
            .write_all(&frame)
            .await
            .map_err(|e| format!("write: {e}"))?;

        let size = self
            .tcp
            .read_u32()
            .await
            .map_err(|e| format!("read: {e}"))? as usize;
        if size > MAX_ANSWER_BYTES {
            return Err(format!("answer of {size} bytes is over {MAX_ANSWER_BYTES}"));
        }
        let mut body = BytesMut::zeroed(size);
        self.tcp
            .read_exact(&mut body)
            .await
            .map_err(|e| format!("read: {e}"))?;
        let mut body = body.freeze();
        let header_version = <R::Response as HeaderVersion>::header_version(version);
        let header = ResponseHeader::decode(&mut body, header_version)
            .map_err(|e| format!("{key:?} answer header: {e}"))?;
        if header.correlation_id != correlation_id {
            return Err(format!(
                "answer for correlation id {}, expected {correlation_id}",
                header.correlation_id
            ));
        }
        let answer = R::Response::decode(&mut body, version)
            .map_err(|e| format!("{key:?} v{version} answer: {e}"))?;
        if body.has_remaining() {
            return Err(format!(
                "{} bytes after the {key:?} answer",
                body.remaining()
            ));
        }
        Ok(answer)
    }
}
