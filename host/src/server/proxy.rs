//! Proxy mode's moving parts, started beside the Kafka listener: the reader of the upstream's
//! Metadata (listeners and catalog, `kafka::proxy::topology`) and the task that serves a
//! listener for every upstream broker as the proxy opens them. Both stop with the host.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::kafka::proxy::{Proxy, Target, topology};
use crate::kafka::{Broker, KafkaConfig, listener};

/// The running parts of proxy mode.
pub(super) struct ProxyTasks {
    topology: JoinHandle<()>,
    listeners: JoinHandle<()>,
}

impl ProxyTasks {
    /// Starts the topology reader and the broker listeners' task; the listeners stop when
    /// `stop` is cancelled.
    pub(super) fn start(
        proxy: Arc<Proxy>,
        broker: Arc<Broker>,
        kafka: KafkaConfig,
        new_listeners: mpsc::UnboundedReceiver<(i32, std::net::TcpListener)>,
        stop: CancellationToken,
    ) -> ProxyTasks {
        ProxyTasks {
            topology: tokio::spawn(topology::run(proxy)),
            listeners: tokio::spawn(serve_brokers(broker, kafka, new_listeners, stop)),
        }
    }

    /// Waits for the broker listeners to drain (after the stop was cancelled) and ends the
    /// topology reader.
    pub(super) async fn stop(self) {
        self.topology.abort();
        let _ = self.listeners.await;
    }
}

/// Serves every broker listener the proxy opens until `stop`, then waits for them all.
async fn serve_brokers(
    broker: Arc<Broker>,
    kafka: KafkaConfig,
    mut new_listeners: mpsc::UnboundedReceiver<(i32, std::net::TcpListener)>,
    stop: CancellationToken,
) {
    let mut running = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            next = new_listeners.recv() => {
                let Some((node, socket)) = next else { break };
                match TcpListener::from_std(socket) {
                    Ok(socket) => {
                        running.spawn(listener::run(
                            socket,
                            broker.clone(),
                            kafka.clone(),
                            Target::Broker(node),
                            stop.clone().cancelled_owned(),
                        ));
                    }
                    Err(e) => tracing::error!(node, error = %e, "cannot serve an upstream broker's port"),
                }
            }
        }
    }
    while running.join_next().await.is_some() {}
}
