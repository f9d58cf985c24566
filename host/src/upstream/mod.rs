//! Proxy mode's view of the upstream cluster: the host in front of a Kafka-compatible cluster,
//! passing clients' data requests through to its brokers (the wire side is `kafka/proxy/`)
//! while it serves the group APIs itself and keeps committed offsets in the cluster.
//!
//! - `config`: the `[upstream]` section.
//! - [`client`]: the host's own client of the cluster (committed offsets, end offsets, topics),
//!   one librdkafka instance per host.
//! - [`connection`]: one connection of the host's own to a broker, with TLS and SASL.

pub mod client;
pub mod config;
pub mod connection;

pub use config::UpstreamConfig;
