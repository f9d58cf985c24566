//! One connection to an upstream broker, glued to one client connection: the client's
//! request frames go up byte for byte, with the client's correlation ids, as fast as the
//! client sends them ([`Link`], held by the connection's reader); the broker answers in order
//! (Kafka answers a connection's requests in order), and the connection's writer reads each
//! answer itself ([`Answers`]) when the client's next answer due is that one, after checking
//! that it carries that request's correlation id. The answers of the requests passed up come
//! in the same order as their slots in the writer's queue, so no task sits between the two
//! sockets: an answer goes from the broker's socket to the client's in one task, with one
//! wake-up (a reading task of its own would add a second wake-up and a hand-over to every
//! round trip; on loopback that was most of the time the host added to a Fetch).
//!
//! A request without an answer (Produce with `acks = 0`) waits for nothing. The link fails
//! as a whole: a broken connection, an answer with the wrong correlation id, or an answer
//! larger than the cap closes the client connection (clients reconnect, as from a broker
//! restart).

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::upstream::connection::{ConnectionError, LinkRead, LinkWrite, Security, open_link};

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

/// The sending side of a link, and (until the writer takes it) its answering side.
pub struct Link {
    addr: String,
    write: LinkWrite,
    answers: Option<Answers>,
}

impl Link {
    /// Connects to `addr` within `timeout`, with the upstream's TLS when it has one
    /// (`upstream::connection::open_link`).
    pub async fn connect(
        addr: &str,
        security: &Security,
        timeout: std::time::Duration,
    ) -> Result<Link, LinkError> {
        let (read, write) =
            open_link(addr, security, timeout)
                .await
                .map_err(|e| LinkError::Connect {
                    addr: addr.to_owned(),
                    reason: match e {
                        ConnectionError::Connect { reason, .. } => reason,
                        other => other.to_string(),
                    },
                })?;
        Ok(Link {
            addr: addr.to_owned(),
            write,
            answers: Some(Answers {
                addr: addr.to_owned(),
                read,
                buffer: BytesMut::with_capacity(BUFFER_BYTES),
            }),
        })
    }

    /// The broker's address, for logs.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The answering side, once: it goes to the writer with the first request that waits
    /// for an answer.
    pub fn take_answers(&mut self) -> Option<Answers> {
        self.answers.take()
    }

    /// Sends one request `frame` (without its size prefix).
    pub async fn send(&mut self, frame: &Bytes) -> Result<(), LinkError> {
        // The size and the frame in one write (vectored): two writes would be two packets on
        // a no-delay socket, and two wake-ups of the broker for one request.
        let size = Bytes::copy_from_slice(&(frame.len() as u32).to_be_bytes());
        let mut framed = size.chain(frame.clone());
        let broken = |e: std::io::Error| LinkError::Broken {
            addr: self.addr.clone(),
            reason: format!("write failed: {e}"),
        };
        self.write
            .write_all_buf(&mut framed)
            .await
            .map_err(broken)?;
        // TLS may hold the end of a record until flushed; a plain socket has nothing to flush.
        self.write.flush().await.map_err(broken)
    }
}

/// The answering side of a link: the broker's answers, read in order by the client
/// connection's writer.
pub struct Answers {
    addr: String,
    read: LinkRead,
    buffer: BytesMut,
}

impl Answers {
    /// The broker's next answer, which must be the one to the request with
    /// `correlation_id` (the oldest passed up and not yet answered).
    pub async fn next(&mut self, correlation_id: i32) -> Result<Bytes, LinkError> {
        let broken = |reason: String| LinkError::Broken {
            addr: self.addr.clone(),
            reason,
        };
        match read_frame(&mut self.read, &mut self.buffer).await {
            Ok(Some(frame)) => {
                let answered = frame
                    .get(..4)
                    .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                if answered == Some(correlation_id) {
                    Ok(frame)
                } else {
                    Err(broken(format!(
                        "answer with correlation id {answered:?} where {correlation_id} was due"
                    )))
                }
            }
            Ok(None) => Err(LinkError::Closed {
                addr: self.addr.clone(),
            }),
            Err(reason) => Err(broken(reason)),
        }
    }
}

/// Initial size of a link's read buffer; it grows to the largest answer in flight.
const BUFFER_BYTES: usize = 64 * 1024;

/// The next size-prefixed frame (without its prefix) from `read`, through `buffer`; `None` at
/// a clean end between frames.
///
/// Buffered: one read takes whatever the broker has sent (several small answers, or a size
/// prefix with its body), where reading the prefix and then the body exactly would cost two
/// system calls per answer; and the buffer is never zeroed first (a Fetch answer of megabytes
/// would be written twice).
async fn read_frame(read: &mut LinkRead, buffer: &mut BytesMut) -> Result<Option<Bytes>, String> {
    loop {
        if buffer.len() >= 4 {
            let size = i32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]);
            let size = usize::try_from(size).map_err(|_| format!("negative answer size {size}"))?;
            if size > MAX_RESPONSE_BYTES {
                return Err(format!(
                    "answer of {size} bytes is over the {MAX_RESPONSE_BYTES}-byte cap"
                ));
            }
            if buffer.len() >= 4 + size {
                buffer.advance(4);
                return Ok(Some(buffer.split_to(size).freeze()));
            }
            buffer.reserve(4 + size - buffer.len());
        } else if buffer.capacity() - buffer.len() < 4 {
            buffer.reserve(BUFFER_BYTES);
        }
        let read_now = read
            .read_buf(buffer)
            .await
            .map_err(|e| format!("read failed: {e}"))?;
        if read_now == 0 {
            if buffer.is_empty() {
                return Ok(None);
            }
            return Err(format!(
                "answer cut short: the broker closed with {} bytes of a frame unread",
                buffer.len()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;

    fn framed(correlation_id: i32, body: &[u8]) -> Vec<u8> {
        let mut out = ((4 + body.len()) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&correlation_id.to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    /// A link to a broker that writes `script` (each part one write, a pause between), then
    /// closes.
    async fn link_to(script: Vec<Vec<u8>>) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            for part in script {
                socket.write_all(&part).await.unwrap();
                socket.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        });
        let plaintext = crate::upstream::connection::Security::plaintext();
        Link::connect(&addr, &plaintext, std::time::Duration::from_secs(5))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn answers_sharing_a_read_or_split_across_reads_come_out_whole_and_in_order() {
        let mut together = framed(1, b"one");
        together.extend(framed(2, b"two"));
        let split = framed(3, &[7; 100_000]);
        let script = vec![
            together,
            split[..2].to_vec(),
            split[2..50].to_vec(),
            split[50..].to_vec(),
        ];
        let mut answers = link_to(script).await.take_answers().unwrap();
        assert_eq!(&answers.next(1).await.unwrap()[4..], b"one");
        assert_eq!(&answers.next(2).await.unwrap()[4..], b"two");
        let big = answers.next(3).await.unwrap();
        assert_eq!(big.len(), 4 + 100_000);
        assert!(big[4..].iter().all(|&b| b == 7));
        assert!(matches!(
            answers.next(4).await,
            Err(LinkError::Closed { .. })
        ));
    }

    #[tokio::test]
    async fn an_answer_out_of_order_or_cut_short_breaks_the_link() {
        let mut answers = link_to(vec![framed(9, b"x")]).await.take_answers().unwrap();
        let error = answers.next(1).await.unwrap_err().to_string();
        assert!(
            error.contains("correlation id Some(9) where 1 was due"),
            "{error}"
        );

        let cut = framed(1, b"abcdef");
        let mut answers = link_to(vec![cut[..7].to_vec()])
            .await
            .take_answers()
            .unwrap();
        let error = answers.next(1).await.unwrap_err().to_string();
        assert!(error.contains("answer cut short"), "{error}");
    }

    #[tokio::test]
    async fn an_answer_over_the_cap_breaks_the_link_before_it_is_read() {
        let size = ((MAX_RESPONSE_BYTES + 1) as u32).to_be_bytes().to_vec();
        let mut answers = link_to(vec![size]).await.take_answers().unwrap();
        let error = answers.next(1).await.unwrap_err().to_string();
        assert!(error.contains("over the"), "{error}");
    }
}
