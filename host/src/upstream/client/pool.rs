//! The host's open connections to the upstream's brokers, by address, shared by every call of
//! [`super::UpstreamClient`]: one request at a time on each (the host's own calls are a few
//! per group every few seconds), opened at first use, secured as `[upstream]` says, dropped
//! when they fail and opened again at the next call, and replaced before their SASL session
//! runs out (`upstream::connection`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Request;
use tokio::time::Instant;

use super::ClientError;
use crate::upstream::connection::{Connection, Security};

/// Pause between attempts while what a call needs moves or loads.
pub(super) const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Why one attempt of a call failed.
pub(super) enum Failure {
    /// The connection failed (connect, read, write, a frame that does not decode).
    Io(String),
    /// What the call needs moved or is loading (a coordinator, a leader): ask again.
    Moved,
    /// An answer, or a refusal, that ends the call.
    Final(ClientError),
}

pub(super) struct Pool {
    security: Arc<Security>,
    /// Bound on opening (and securing) one connection.
    open_timeout: Duration,
    open: Mutex<HashMap<String, Arc<Pooled>>>,
}

/// One open connection.
pub(super) struct Pooled {
    addr: String,
    connection: tokio::sync::Mutex<Connection>,
}

impl Pool {
    pub(super) fn new(security: Arc<Security>, open_timeout: Duration) -> Pool {
        Pool {
            security,
            open_timeout,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The open connection to `addr`, or a new one (also when the open one's SASL session is
    /// about to run out). The upstream refusing the host's TLS or login ends the call: a
    /// setting has to change, and the error says which.
    pub(super) async fn get(&self, addr: &str) -> Result<Arc<Pooled>, Failure> {
        let open = self.open.lock().unwrap().get(addr).cloned();
        if let Some(open) = open {
            let expired = open
                .connection
                .try_lock()
                .is_ok_and(|connection| connection.expired());
            if !expired {
                return Ok(open);
            }
            self.forget(&open);
        }
        let connection = Connection::open(addr, &self.security, self.open_timeout)
            .await
            .map_err(|e| {
                if e.is_refusal() {
                    Failure::Final(ClientError::Refused(e.to_string()))
                } else {
                    Failure::Io(e.to_string())
                }
            })?;
        let pooled = Arc::new(Pooled {
            addr: addr.to_owned(),
            connection: tokio::sync::Mutex::new(connection),
        });
        self.open
            .lock()
            .unwrap()
            .insert(addr.to_owned(), pooled.clone());
        Ok(pooled)
    }

    /// A connection to the first of `servers` that takes one.
    pub(super) async fn any(&self, servers: &[String]) -> Result<Arc<Pooled>, Failure> {
        let mut last = String::from("no bootstrap server");
        for server in servers {
            match self.get(server).await {
                Ok(pooled) => return Ok(pooled),
                Err(Failure::Io(e)) => last = e,
                Err(other) => return Err(other),
            }
        }
        Err(Failure::Io(last))
    }

    /// Drops `pooled` (it failed): the next call opens a new connection.
    pub(super) fn forget(&self, pooled: &Arc<Pooled>) {
        let mut open = self.open.lock().unwrap();
        if open
            .get(&pooled.addr)
            .is_some_and(|c| Arc::ptr_eq(c, pooled))
        {
            open.remove(&pooled.addr);
        }
    }

    /// Sends the request `build` makes on `pooled`, dropping the connection when it fails.
    pub(super) async fn call<R: Request>(
        &self,
        pooled: &Arc<Pooled>,
        call: &'static str,
        ours: (i16, i16),
        build: impl Fn(i16) -> R,
    ) -> Result<R::Response, Failure> {
        let answer = pooled.call(call, ours, build).await;
        if let Err(Failure::Io(_)) = &answer {
            self.forget(pooled);
        }
        answer
    }
}

impl Pooled {
    /// Sends the request `build` makes at the highest version within `ours` the broker speaks.
    async fn call<R: Request>(
        &self,
        call: &'static str,
        ours: (i16, i16),
        build: impl Fn(i16) -> R,
    ) -> Result<R::Response, Failure> {
        let mut connection = self.connection.lock().await;
        let Some(version) = connection.version(R::KEY, ours) else {
            return Err(Failure::Final(ClientError::Kafka {
                call,
                code: ResponseError::UnsupportedVersion.code(),
                name: "UnsupportedVersion".to_owned(),
                message: format!(
                    "{} speaks {:?} of API {} ({:?}), the host {ours:?}",
                    self.addr,
                    connection.versions(R::KEY),
                    R::KEY,
                    ApiKey::try_from(R::KEY).map_err(|()| R::KEY)
                ),
            }));
        };
        connection
            .call(&build(version), version)
            .await
            .map_err(|e| Failure::Io(e.to_string()))
    }
}

/// Runs `attempt` until it answers, ends the call, or `timeout` has passed, pausing
/// [`RETRY_PAUSE`] between attempts. Past the bound: [`ClientError::Unreachable`] with the
/// last connection failure if there was one, else [`ClientError::TimedOut`].
pub(super) async fn retry<T, F>(
    call: &'static str,
    timeout: Duration,
    mut attempt: impl FnMut() -> F,
) -> Result<T, ClientError>
where
    F: Future<Output = Result<T, Failure>>,
{
    let deadline = Instant::now() + timeout;
    let mut last_io: Option<String> = None;
    loop {
        match tokio::time::timeout_at(deadline, attempt()).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(Failure::Final(error))) => return Err(error),
            Ok(Err(Failure::Moved)) => {}
            Ok(Err(Failure::Io(detail))) => last_io = Some(detail),
            Err(_elapsed) => break,
        }
        if Instant::now() + RETRY_PAUSE >= deadline {
            break;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    Err(match last_io {
        Some(detail) => ClientError::Unreachable { call, detail },
        None => ClientError::TimedOut { call, timeout },
    })
}
