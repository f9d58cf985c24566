//! Proxy mode: the host in front of a Kafka-compatible cluster. Clients read and write records
//! through the host, which passes their requests to the upstream brokers byte for byte and
//! answers the group APIs itself, keeping committed offsets in the cluster.
//!
//! - `config`: the `[upstream]` section.

pub mod config;

pub use config::UpstreamConfig;
