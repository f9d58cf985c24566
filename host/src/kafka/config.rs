//! The `[kafka]` section: the Kafka listener and how the host presents itself as a broker.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// The Kafka listener and how the host presents itself as a broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// Address the Kafka listener binds.
    pub listen: SocketAddr,
    /// `host:port` clients are told to connect to (Metadata brokers, FindCoordinator). `None`
    /// advertises the bound listen address, which must then not be a wildcard address
    /// (Kafka refuses `advertised.listeners` on 0.0.0.0 for the same reason: clients would
    /// be sent to an address they cannot reach).
    pub advertised: Option<String>,
    /// The host's broker id in Metadata, FindCoordinator and partition leaders.
    pub node_id: i32,
    /// `cluster_id` in Metadata v2+.
    pub cluster_id: String,
    /// Largest request frame accepted, in bytes (Kafka's `socket.request.max.bytes`, same
    /// default). A larger or negative size prefix closes the connection before the body is read.
    pub max_frame_bytes: usize,
    /// Open connections at most; further clients wait in the accept queue until one closes.
    pub max_connections: usize,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertised: None,
            node_id: 1,
            cluster_id: "assignor-host".to_owned(),
            max_frame_bytes: 100 * 1024 * 1024,
            max_connections: 10_000,
        }
    }
}
