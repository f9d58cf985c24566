//! One client connection: read a frame, answer it, write the answer, repeat.
//!
//! Requests are handled one at a time, so answers leave in request order (Kafka clients match
//! answers to requests by order as well as by correlation id). Anything the host cannot serve
//! (a frame size over the cap, an unknown API, an unsupported version, a body that does not
//! decode) closes this connection only, with a log line naming the peer and the reason; every
//! other connection is untouched. Shutdown is observed between requests and while one waits
//! (a held Fetch or a parked JoinGroup is abandoned and the socket closed; clients reconnect).

use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::messages::ResponseKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, warn};

use super::codec::{FrameCodec, FrameError, Response};
use super::dispatch::{self, Outcome};
use super::request::{self, Inbound};
use super::{Broker, Client, api_versions};

/// Initial size of the read and write buffers; they grow with larger frames.
const BUFFER_BYTES: usize = 8 * 1024;

pub struct Connection {
    socket: TcpStream,
    codec: FrameCodec,
    read: BytesMut,
    write: BytesMut,
    client: Client,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
}

impl Connection {
    pub fn new(
        socket: TcpStream,
        client: Client,
        broker: Arc<Broker>,
        max_frame_bytes: usize,
        shutdown: CancellationToken,
    ) -> Connection {
        Connection {
            socket,
            codec: FrameCodec::new(max_frame_bytes),
            read: BytesMut::with_capacity(BUFFER_BYTES),
            write: BytesMut::with_capacity(BUFFER_BYTES),
            client,
            broker,
            shutdown,
        }
    }

    /// Serves the connection until the peer closes it, it breaks the protocol, or shutdown.
    pub async fn run(mut self) {
        let peer = self.client.peer;
        match self.serve().await {
            Ok(()) => debug!(%peer, "connection closed"),
            Err(reason) => warn!(%peer, %reason, "closing connection"),
        }
    }

    async fn serve(&mut self) -> Result<(), String> {
        let shutdown = self.shutdown.clone();
        loop {
            let frame = tokio::select! {
                biased;
                () = shutdown.cancelled() => return Ok(()),
                frame = self.read_frame() => frame,
            };
            let frame = match frame {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            };
            let request = match request::parse(frame.freeze()).map_err(|e| e.to_string())? {
                Inbound::UnsupportedApiVersions(header) => {
                    debug!(
                        version = header.request_api_version,
                        "ApiVersions at an unknown version; answering v0"
                    );
                    self.send(Response {
                        correlation_id: header.correlation_id,
                        api_version: 0,
                        body: ResponseKind::ApiVersions(api_versions::unsupported_version()),
                    })
                    .await?;
                    continue;
                }
                Inbound::Request(request) => request,
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
            let outcome = tokio::select! {
                biased;
                () = shutdown.cancelled() => return Ok(()),
                outcome = dispatch::handle(&self.broker, &self.client, request).instrument(span) => outcome,
            };
            match outcome {
                Outcome::Reply(body) => {
                    self.send(Response {
                        correlation_id,
                        api_version,
                        body,
                    })
                    .await?
                }
                Outcome::NoReply => {}
                Outcome::Close(reason) => return Err(reason),
            }
        }
    }

    /// The next request frame; `None` when the peer closed cleanly between frames.
    async fn read_frame(&mut self) -> Result<Option<BytesMut>, FrameError> {
        loop {
            if let Some(frame) = self.codec.decode(&mut self.read)? {
                return Ok(Some(frame));
            }
            if self.read.capacity() == self.read.len() {
                self.read.reserve(BUFFER_BYTES);
            }
            if self.socket.read_buf(&mut self.read).await? == 0 {
                if self.read.is_empty() {
                    return Ok(None);
                }
                return Err(FrameError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("peer closed mid-frame ({} bytes unread)", self.read.len()),
                )));
            }
        }
    }

    async fn send(&mut self, response: Response) -> Result<(), String> {
        if let Err(e) = self.codec.encode(response, &mut self.write) {
            tracing::error!(error = %e, "response encoding failed (a bug in the host)");
            return Err(e.to_string());
        }
        let written = self.socket.write_all(&self.write).await;
        self.write.clear();
        written.map_err(|e| format!("write failed: {e}"))
    }
}
