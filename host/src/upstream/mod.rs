//! Proxy mode: the host in front of a real Kafka-compatible cluster (the upstream), passing
//! clients' data requests through to its brokers while it serves the group APIs itself and keeps
//! committed offsets in the cluster.
//!
//! - [`client`]: the host's own client of the cluster (committed offsets, end offsets, topics),
//!   one librdkafka instance per host.

pub mod client;
