//! One connection to an upstream broker, glued to one client connection: the client's
//! request frames go up byte for byte, with the client's correlation ids, as fast as the
//! client sends them; the broker answers in order (Kafka answers a connection's requests in
//! order), and each answer completes the oldest request still waiting, after checking that it
//! carries that request's correlation id. The connection's writer hands the answers back to the
//! client in the client's order, between the host's own answers.
//!
//! A request without an answer (Produce with `acks = 0`) waits for nothing. The link fails
//! as a whole: a broken connection, an answer with the wrong correlation id, or an answer
//! larger than the cap fails every waiting request, and the client connection closes (clients
//! reconnect, as from a broker restart).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::oneshot;

/// Largest answer accepted from upstream (a Fetch answer is bounded by the client's
/// `fetch.max.bytes`, 50 MiB by default in Kafka's clients).
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// Why an upstream request got no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    #[error("cannot connect to upstream broker {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("upstream broker {addr} closed the connection")]
    Closed { addr: String },
    #[error("upstream broker {addr}: {reason}")]
    Broken { addr: String, reason: String },
}

/// An answer, or why there is none.
pub type Answer = Result<Bytes, LinkError>;

struct Waiting {
    correlation_id: i32,
    answer: oneshot::Sender<Answer>,
}

/// The client side of a link: send requests, get a receiver for each answer.
pub struct Link {
    addr: String,
    write: OwnedWriteHalf,
    waiting: Arc<Mutex<Waiters>>,
    reader: tokio::task::JoinHandle<()>,
}

/// Requests still waiting, oldest first; `failed` once the link broke.
#[derive(Default)]
struct Waiters {
    queue: VecDeque<Waiting>,
    failed: Option<LinkError>,
}

impl Link {
    /// Connects to `addr` within `timeout`.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Link, LinkError> {
        let connect = |reason: String| LinkError::Connect {
            addr: addr.to_owned(),
            reason,
        };
        let socket = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| connect(format!("no connection within {timeout:?}")))?
            .map_err(|e| connect(e.to_string()))?;
        let _ = socket.set_nodelay(true);
        let (read, write) = socket.into_split();
        let waiting = Arc::new(Mutex::new(Waiters::default()));
        let reader = tokio::spawn(read_answers(addr.to_owned(), read, waiting.clone()));
        Ok(Link {
            addr: addr.to_owned(),
            write,
            waiting,
            reader,
        })
    }

    /// The broker's address, for logs.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends one request `frame` (without its size prefix); the answer arrives on the
    /// returned receiver, or `None` for a request the broker does not answer.
    pub async fn send(
        &mut self,
        frame: &Bytes,
        correlation_id: i32,
        answered: bool,
    ) -> Result<Option<oneshot::Receiver<Answer>>, LinkError> {
        let receiver = if answered {
            let (answer, receiver) = oneshot::channel();
            let mut waiting = self.waiting.lock();
            if let Some(error) = &waiting.failed {
                return Err(error.clone());
            }
            // Queued before the bytes leave, so the answer always finds its request.
            waiting.queue.push_back(Waiting {
                correlation_id,
                answer,
            });
            Some(receiver)
        } else {
            None
        };
        let size = (frame.len() as u32).to_be_bytes();
        let written = async {
            self.write.write_all(&size).await?;
            self.write.write_all(frame).await
        }
        .await;
        written.map_err(|e| LinkError::Broken {
            addr: self.addr.clone(),
            reason: format!("write failed: {e}"),
        })?;
        Ok(receiver)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Reads answers and completes the waiting requests in order, until the link breaks.
async fn read_answers(addr: String, mut read: OwnedReadHalf, waiting: Arc<Mutex<Waiters>>) {
    let error = loop {
        match read_frame(&mut read).await {
            Ok(Some(frame)) => {
                let correlation_id = frame
                    .get(..4)
                    .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                let mut waiters = waiting.lock();
                let Some(next) = waiters.queue.pop_front() else {
                    break LinkError::Broken {
                        addr,
                        reason: "an answer to no request".into(),
                    };
                };
                if correlation_id != Some(next.correlation_id) {
                    break LinkError::Broken {
                        addr,
                        reason: format!(
                            "answer with correlation id {correlation_id:?} where {} was due",
                            next.correlation_id
                        ),
                    };
                }
                // A client that went away dropped its receiver; nothing to do.
                let _ = next.answer.send(Ok(frame));
            }
            Ok(None) => break LinkError::Closed { addr },
            Err(reason) => break LinkError::Broken { addr, reason },
        }
    };
    let mut waiters = waiting.lock();
    for waiting in waiters.queue.drain(..) {
        let _ = waiting.answer.send(Err(error.clone()));
    }
    waiters.failed = Some(error);
}

/// One size-prefixed frame (without its prefix); `None` at a clean end between frames.
async fn read_frame(read: &mut OwnedReadHalf) -> Result<Option<Bytes>, String> {
    let mut size = [0u8; 4];
    match read.read_exact(&mut size).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.to_string()),
    }
    let size = i32::from_be_bytes(size);
    let size = usize::try_from(size).map_err(|_| format!("negative answer size {size}"))?;
    if size > MAX_RESPONSE_BYTES {
        return Err(format!(
            "answer of {size} bytes is over the {MAX_RESPONSE_BYTES}-byte cap"
        ));
    }
    let mut frame = BytesMut::zeroed(size);
    read.read_exact(&mut frame)
        .await
        .map_err(|e| format!("answer cut short: {e}"))?;
    Ok(Some(frame.freeze()))
}
