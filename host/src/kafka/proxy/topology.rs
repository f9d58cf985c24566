//! The host's own reads of the upstream's Metadata, at start and every
//! `upstream.metadata_refresh` (sooner when woken): every broker gets its listener here before
//! a client is told about it, and the catalog becomes the upstream's topics, with each
//! partition's replica racks (from the brokers' racks), so the coordinator rebalances a group
//! whose subscribed partition count changed upstream.
//!
//! The read is a Metadata request on a connection of the host's own to a bootstrap server
//! (`upstream::connection`, with the upstream's TLS and SASL), decoded by the same guard as the
//! clients' Metadata answers before they are rewritten: the listeners and the clients see one
//! topology. An unreachable upstream is logged, counted and
//! retried; the host keeps serving its groups meanwhile.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use assignor_sdk::Topic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse};

use super::Proxy;
use super::rewrite::Addresses;
use crate::upstream::connection::Connection;

/// The Metadata version of the host's own reads: racks, controller and `topics: null` for
/// every topic, spoken by every broker since Kafka 1.0.
const VERSION: i16 = 4;

/// Reads the upstream's Metadata until the task is dropped.
pub async fn run(proxy: Arc<Proxy>) {
    let mut backoff = Duration::from_millis(200);
    loop {
        let interval = match read(&proxy).await {
            Ok(topics) => {
                backoff = Duration::from_millis(200);
                tracing::debug!(topics, "upstream metadata read");
                proxy.settings.metadata_refresh
            }
            Err(error) => {
                tracing::warn!(%error, retry_in = ?backoff, "cannot read the upstream's metadata");
                let wait = backoff;
                backoff = (backoff * 2).min(proxy.settings.metadata_refresh);
                wait
            }
        };
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = proxy.refresh.notified() => {}
        }
    }
}

/// One read: brokers to listeners, topics to the catalog. Returns the number of topics.
pub async fn read(proxy: &Proxy) -> Result<usize, String> {
    let timeout = proxy.settings.request_timeout;
    let response = tokio::time::timeout(timeout, fetch(proxy))
        .await
        .map_err(|_| format!("no Metadata answer within {timeout:?}"))??;
    let mut racks: BTreeMap<i32, String> = BTreeMap::new();
    for broker in &response.brokers {
        proxy.node(broker.node_id.0, (broker.host.as_str(), broker.port));
        if let Some(rack) = &broker.rack {
            racks.insert(broker.node_id.0, rack.to_string());
        }
    }
    let mut topics = Vec::with_capacity(response.topics.len());
    for topic in &response.topics {
        let Some(name) = &topic.name else { continue };
        let mut partitions = topic.partitions.clone();
        partitions.sort_by_key(|p| p.partition_index);
        let count = partitions.len() as i32;
        // Racks only when every replica of every partition has one (the ABI's rule: empty or
        // one list per partition).
        let partition_racks: Option<Vec<Vec<String>>> = partitions
            .iter()
            .map(|p| {
                p.replica_nodes
                    .iter()
                    .map(|r| racks.get(&r.0).cloned())
                    .collect::<Option<Vec<String>>>()
            })
            .collect();
        topics.push(Topic {
            name: name.to_string(),
            partition_count: count,
            partition_racks: partition_racks.unwrap_or_default(),
        });
    }
    let count = topics.len();
    if proxy.catalog.mirror_topics(topics) {
        tracing::info!(topics = count, "upstream topics changed");
    }
    Ok(count)
}

/// A Metadata request for every topic, on a connection of the host's own to the first
/// bootstrap server that takes one, secured as `[upstream]` says.
async fn fetch(proxy: &Proxy) -> Result<MetadataResponse, String> {
    let request = MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false);
    let mut last = String::from("no bootstrap servers");
    for server in &proxy.settings.bootstrap {
        match Connection::open(server, &proxy.security, proxy.settings.connect_timeout).await {
            Ok(mut connection) => {
                return connection
                    .call(&request, VERSION)
                    .await
                    .map_err(|e| e.to_string());
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
