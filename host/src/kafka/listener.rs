//! The Kafka listener: accept connections, one task each, with a connection limit and a
//! shutdown that drains (mini-redis's `server::run`).
//!
//! A permit from a semaphore is taken before each accept, so at most `max_connections` sockets
//! are open; further clients wait in the kernel's accept queue. An address that already has
//! `max_connections_per_address` open gets its new connection closed at once (`addresses.rs`),
//! so one client cannot take every slot. Transient accept errors (out of
//! file descriptors, a connection reset before accept) are logged and retried with a backoff
//! capped at one second, so a burst never stops the listener. On shutdown the listener stops
//! accepting, tells every connection, and returns once all of them have ended.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, error, info, warn};

use super::connection::{Connection, Limits};
use super::proxy::Target;
use super::{Broker, Client, KafkaConfig};

/// Serves Kafka on `listener` until `shutdown` completes, then drains every connection. Its
/// connections pass requests up to `target` in proxy mode. Every listener of the host takes
/// its connection permits from `broker.connections`, so `kafka.max_connections` bounds them
/// all together.
pub async fn run(
    listener: TcpListener,
    broker: Arc<Broker>,
    config: KafkaConfig,
    target: Target,
    shutdown: impl Future,
) {
    let stop = CancellationToken::new();
    let limit = broker.connections.clone();
    let mut connections = JoinSet::new();
    let local = listener.local_addr().ok();
    info!(addr = ?local, ?target, max_connections = config.max_connections, "kafka listener up");

    let accept_loop = async {
        let mut backoff = Duration::from_millis(10);
        loop {
            let Ok(permit) = limit.clone().acquire_owned().await else {
                return;
            };
            let (socket, peer) = match listener.accept().await {
                Ok(accepted) => {
                    backoff = Duration::from_millis(10);
                    accepted
                }
                Err(e) => {
                    error!(error = %e, "accept failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            let Some(address) = broker
                .addresses
                .admit(peer.ip(), config.max_connections_per_address)
            else {
                warn!(%peer, max = config.max_connections_per_address,
                    "closing a connection: its address has kafka.max_connections_per_address open");
                drop(socket);
                continue;
            };
            // Kafka clients send small requests and wait for each answer.
            let _ = socket.set_nodelay(true);
            let client = Client {
                host: format!("/{}", peer.ip()),
                peer,
                rights: None,
                api: -1,
                principal: None,
                metrics: broker.metrics.clone(),
                acls: broker.acls.clone(),
            };
            let connection = Connection::new(
                socket,
                broker.tls.as_ref().map(|t| t.acceptor()),
                client,
                broker.clone(),
                Limits::new(&config, broker.mode.proxy().is_some()),
                stop.child_token(),
                target,
            );
            let span = tracing::info_span!("connection", %peer);
            connections.spawn(async move {
                connection.run().instrument(span).await;
                drop(address);
                drop(permit);
            });
            // Reap finished connections so the set holds only live ones.
            while connections.try_join_next().is_some() {}
        }
    };

    tokio::select! {
        () = accept_loop => {}
        _ = shutdown => info!("kafka listener shutting down"),
    }
    drop(listener);
    stop.cancel();
    while connections.join_next().await.is_some() {}
    info!("kafka listener stopped");
}
