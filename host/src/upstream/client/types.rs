//! The client's settings and the plain values its calls answer with.

use std::time::Duration;

/// How to reach the cluster.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `host:port` of one or more brokers; librdkafka discovers the rest.
    pub bootstrap: Vec<String>,
    /// The bound on every call, from the call to its answer or error (1 ms to 1 h).
    pub request_timeout: Duration,
    /// How the host's own connections are secured (TLS, SASL).
    pub security: std::sync::Arc<crate::upstream::connection::Security>,
}

impl ClientSettings {
    /// Settings for `bootstrap`, a 5 s request timeout, plaintext.
    pub fn new(bootstrap: Vec<String>) -> ClientSettings {
        ClientSettings {
            bootstrap,
            request_timeout: Duration::from_secs(5),
            security: crate::upstream::connection::Security::plaintext(),
        }
    }
}

/// One partition's committed offset. `offset` is -1 for a partition never committed (or whose
/// offset was deleted), as Kafka's OffsetFetch answers; `leader_epoch` is -1 when the cluster
/// keeps none; `metadata` is `None` when it is empty or absent (Kafka stores an absent one as
/// empty, and librdkafka reads an empty one as none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// Kafka's error code for this partition (0: none).
    pub error: i16,
}

/// One partition's outcome: Kafka's error code, 0 for done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionError {
    pub topic: String,
    pub partition: i32,
    pub error: i16,
}

/// One partition's end: the offset the next record will get (the high watermark, so the lag of
/// a committed offset `c` is `offset - c`), and the leader epoch if the cluster gives one (-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    /// Kafka's error code for this partition (0: none; then `offset` is meaningless).
    pub error: i16,
}
