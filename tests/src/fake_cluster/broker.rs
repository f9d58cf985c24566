//! One broker's listener and connections: read ahead, answer in order.
//!
//! Each connection has a reader and a writer. The reader takes frames off the socket as fast
//! as they come, records each request in the broker's log the moment it arrives, and queues it
//! with its due time (arrival plus the broker's delay then). The writer takes the queue in
//! order: it waits until the request is due, answers it from the shared state, and writes the
//! answer. So a pipelining client gets every answer in request order, delays overlap instead of
//! adding up, and a request sees the effects of every request before it.
//!
//! A request the fake does not serve closes the connection once the answers before it are
//! written. End of stream from the client lets the writer finish the queue first. The listener
//! owns its connections: aborting its task (kill, stop, drop) closes the listener and every
//! connection of the broker.

#![allow(
    clippy::print_stderr,
    reason = "a test broker says on the test's stderr why it closed a connection"
)]

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::Encodable;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::answer::Answer;
use super::apis::{self, Request};
use super::state::Shared;

/// Frames larger than this close the connection (Kafka's `socket.request.max.bytes`).
const MAX_FRAME_BYTES: usize = 100 * 1024 * 1024;

/// Accepts connections for broker `id` until the task is aborted.
pub async fn serve(shared: Arc<Shared>, id: i32, listener: TcpListener) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((socket, _)) = accepted else { continue };
                let _ = socket.set_nodelay(true);
                connections.spawn(connection(shared.clone(), id, socket));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A queued request, or the point where the connection closes.
enum Queued {
    Request { request: Request, due: Instant },
    Close(String),
}

async fn connection(shared: Arc<Shared>, id: i32, socket: TcpStream) {
    let (read, write) = socket.into_split();
    let (queue, queued) = mpsc::unbounded_channel();
    let reader = async {
        read_requests(&shared, id, read, queue).await;
        // The queue is closed; the writer finishes it and ends the connection.
        std::future::pending::<()>().await
    };
    tokio::select! {
        () = reader => {}
        () = write_answers(&shared, id, write, queued) => {}
    }
}

async fn read_requests(
    shared: &Shared,
    id: i32,
    mut read: OwnedReadHalf,
    queue: mpsc::UnboundedSender<Queued>,
) {
    loop {
        let frame = match read_frame(&mut read).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                let _ = queue.send(Queued::Close(e.to_string()));
                return;
            }
        };
        let request = match apis::parse(frame) {
            Ok(request) => request,
            Err(reason) => {
                let _ = queue.send(Queued::Close(reason));
                return;
            }
        };
        let due = {
            let mut state = shared.lock();
            let broker = state.broker_mut(id);
            broker.received.push(request.received());
            let client_id = request.header.client_id.as_ref().map(|c| c.to_string());
            broker.client_ids.push(client_id);
            Instant::now() + broker.delay
        };
        shared.received.notify_waiters();
        if queue.send(Queued::Request { request, due }).is_err() {
            return;
        }
    }
}

/// The next frame without its size prefix; `None` at a clean end of stream.
async fn read_frame(read: &mut OwnedReadHalf) -> std::io::Result<Option<Bytes>> {
    let mut size = [0u8; 4];
    match read.read_exact(&mut size).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let size = usize::try_from(i32::from_be_bytes(size))
        .ok()
        .filter(|&size| size <= MAX_FRAME_BYTES)
        .ok_or_else(|| std::io::Error::other("frame size out of bounds"))?;
    let mut frame = vec![0u8; size];
    read.read_exact(&mut frame).await?;
    Ok(Some(Bytes::from(frame)))
}

async fn write_answers(
    shared: &Shared,
    id: i32,
    mut write: OwnedWriteHalf,
    mut queued: mpsc::UnboundedReceiver<Queued>,
) {
    loop {
        let (request, due) = match queued.recv().await {
            Some(Queued::Request { request, due }) => (request, due),
            Some(Queued::Close(reason)) => {
                eprintln!("fake broker {id}: closing connection: {reason}");
                break;
            }
            None => break,
        };
        tokio::time::sleep_until(due).await;
        let correlation_id = request.header.correlation_id;
        let frame = match apis::answer(shared, id, request).await {
            Answer::Reply { version, body } => match encode(correlation_id, version, &body) {
                Ok(frame) => frame,
                Err(e) => {
                    // A bug in the fake, not in the code under test: say so in the test output.
                    eprintln!("fake broker {id}: cannot encode answer v{version}: {e}");
                    break;
                }
            },
            Answer::Silent => continue,
            Answer::Close(reason) => {
                eprintln!("fake broker {id}: closing connection: {reason}");
                break;
            }
        };
        if write.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = write.shutdown().await;
}

/// A response frame: size, header (at the version the response prescribes), body.
fn encode(
    correlation_id: i32,
    version: i16,
    body: &kafka_protocol::messages::ResponseKind,
) -> anyhow::Result<BytesMut> {
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0; 4]);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut frame, body.header_version(version))?;
    body.encode(&mut frame, version)?;
    let size = i32::try_from(frame.len() - 4)?;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    Ok(frame)
}
