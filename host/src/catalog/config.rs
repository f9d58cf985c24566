//! The `[catalog]` section: the topics the host serves at start, the defaults of new topics and
//! the auto-creation policy.

use serde::{Deserialize, Serialize};

/// The topic catalog: seeds, defaults and the auto-creation policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogConfig {
    /// Create a topic when a Metadata request names an unknown one and allows auto-creation
    /// (Kafka's `auto.create.topics.enable`). Off by default: the host holds no data, so a
    /// typo'd topic that silently appears with one partition helps nobody.
    pub auto_create_topics: bool,
    /// Partitions of a topic created with `num_partitions = -1` or auto-created
    /// (Kafka's `num.partitions`).
    pub default_partitions: i32,
    /// Upper bound on one topic's partition count, so one bad CreateTopics cannot make every
    /// Metadata answer enormous.
    pub max_partitions_per_topic: i32,
    /// Topics created at start if missing; an existing topic with fewer partitions grows to
    /// the configured count (partitions only ever increase, as in Kafka).
    pub topics: Vec<TopicSeed>,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            auto_create_topics: false,
            default_partitions: 1,
            max_partitions_per_topic: 1_000_000,
            topics: Vec::new(),
        }
    }
}

/// One topic in the config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSeed {
    /// Topic name (Kafka's rules: 1-249 of `[a-zA-Z0-9._-]`).
    pub name: String,
    /// Partition count; at start an existing topic grows to it, never shrinks.
    pub partitions: i32,
    /// Replica racks per partition, for rack-aware strategies: empty (unknown) or exactly one
    /// list per partition.
    #[serde(default)]
    pub partition_racks: Vec<Vec<String>>,
}
