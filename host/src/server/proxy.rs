//! Proxy mode's moving parts, started beside the Kafka listener: the reader of the upstream's
//! Metadata (listeners and catalog, `kafka::proxy::topology`), the task that serves a
//! listener for every upstream broker as the proxy opens them, and the re-commit of live
//! groups' offsets ([`recommit`]). All stop with the host.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::driver::Driver;
use crate::kafka::proxy::{Proxy, Target, topology};
use crate::kafka::{Broker, KafkaConfig, listener};
use crate::upstream::client::UpstreamClient;

/// The running parts of proxy mode.
pub(super) struct ProxyTasks {
    topology: JoinHandle<()>,
    listeners: JoinHandle<()>,
    recommit: JoinHandle<()>,
}

impl ProxyTasks {
    /// Starts the topology reader and the broker listeners' task; the listeners stop when
    /// `stop` is cancelled.
    pub(super) fn start(
        proxy: Arc<Proxy>,
        broker: Arc<Broker>,
        kafka: KafkaConfig,
        new_listeners: mpsc::UnboundedReceiver<(i32, std::net::TcpListener)>,
        client: UpstreamClient,
        stop: CancellationToken,
    ) -> ProxyTasks {
        let interval = proxy.settings().recommit_interval;
        let driver = broker.driver.clone();
        ProxyTasks {
            topology: tokio::spawn(topology::run(proxy)),
            listeners: tokio::spawn(serve_brokers(broker, kafka, new_listeners, stop)),
            recommit: tokio::spawn(recommit(driver, client, interval)),
        }
    }

    /// Waits for the broker listeners to drain (after the stop was cancelled) and ends the
    /// topology reader.
    pub(super) async fn stop(self) {
        self.topology.abort();
        self.recommit.abort();
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

/// Every `interval`, commits each live group's offsets again, unchanged, so the upstream never
/// expires them. Upstream every host group is an Empty "simple" group (the host commits with
/// generation -1), and Kafka expires a simple group's offsets `offsets.retention.minutes`
/// after their last commit (`ClassicGroup.offsetExpirationCondition`), even while the host's
/// group is consuming: a partition that receives no records for a week would lose its offset.
/// A live group is one with members on this host; a group nobody consumes expires upstream as
/// Kafka would expire it.
async fn recommit(driver: Driver, client: UpstreamClient, interval: std::time::Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let live: Vec<String> = driver
            .groups()
            .await
            .into_iter()
            .filter(|g| g.members > 0)
            .map(|g| g.group_id)
            .collect();
        let mut partitions = 0usize;
        for group in &live {
            match recommit_group(&client, group).await {
                Ok(n) => partitions += n,
                Err(error) => tracing::warn!(group = %group, %error,
                    "cannot commit a live group's offsets again upstream; retrying next interval"),
            }
        }
        tracing::info!(
            groups = live.len(),
            partitions,
            "live groups' offsets committed again upstream"
        );
    }
}

/// Reads `group`'s committed offsets upstream and commits the same values again; the number of
/// partitions committed.
async fn recommit_group(client: &UpstreamClient, group: &str) -> Result<usize, String> {
    let committed = client
        .fetch_offsets(group, None)
        .await
        .map_err(|e| e.to_string())?;
    let records: Vec<crate::coordinator::OffsetRecord> = committed
        .into_iter()
        .filter(|c| c.offset >= 0 && c.error == 0)
        .map(|c| crate::coordinator::OffsetRecord {
            topic: c.topic,
            partition: c.partition,
            offset: c.offset,
            leader_epoch: c.leader_epoch,
            metadata: c.metadata,
        })
        .collect();
    if records.is_empty() {
        return Ok(0);
    }
    let results = client
        .commit_offsets(group, &records)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(refused) = results.iter().find(|r| r.error != 0) {
        return Err(format!(
            "{}-{} refused with {}",
            refused.topic,
            refused.partition,
            crate::metrics::error_name(refused.error)
        ));
    }
    Ok(records.len())
}
