//! The admin API over TLS (`admin.tls_certificate_location`): an `axum::serve::Listener` whose
//! connections are TLS streams. Each handshake runs in a task of its own, bounded in time and
//! in number, so a client that opens a socket and says nothing holds up nobody else; axum then
//! serves the streams whose handshake finished.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::server::TlsStream;

use crate::tls::ServerTls;

/// How long a client may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way at once; further connections wait in the kernel's backlog.
const HANDSHAKES: usize = 256;

/// Connections whose TLS handshake finished, in the order they finished.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    /// Starts accepting on `socket`; the accept task ends when the listener is dropped.
    pub fn new(socket: TcpListener, tls: Arc<ServerTls>) -> std::io::Result<TlsListener> {
        let local = socket.local_addr()?;
        let (done, ready) = mpsc::channel(HANDSHAKES);
        tokio::spawn(accept(socket, tls, done));
        Ok(TlsListener { local, ready })
    }
}

async fn accept(
    socket: TcpListener,
    tls: Arc<ServerTls>,
    done: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let handshakes = Arc::new(Semaphore::new(HANDSHAKES));
    loop {
        let Ok(permit) = handshakes.clone().acquire_owned().await else {
            return;
        };
        let accepted = tokio::select! {
            accepted = socket.accept() => accepted,
            () = done.closed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: as axum's own listener, pause and go on.
                tracing::warn!(%error, "the admin listener could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = tls.acceptor();
        let done = done.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    let _ = done.send((stream, peer)).await;
                }
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "admin API: TLS handshake failed");
                }
                Err(_) => {
                    tracing::debug!(%peer, "admin API: TLS handshake timed out");
                }
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(ready) => ready,
            // The accept task holds a sender for as long as the listener lives, so this is
            // never reached; were it, there is nothing more to serve.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
