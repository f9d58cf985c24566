//! Held partitions: what a departed member had, kept while nobody has been given it since (a
//! module holding it for its owner, `hold-departed`). Both group types keep these records for
//! `group describe`, and write them with the group so a restart shows them too.

use std::collections::HashSet;

use assignor_sdk::TopicPartitions;
use serde::{Deserialize, Serialize};

use super::api::Millis;
use super::view::TopicsView;

/// One departed member's partitions that nobody has been given since it left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// The member id it had; a returning consumer comes back under a new one.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub partitions: Vec<TopicPartitions>,
    /// When it left, in milliseconds since the Unix epoch (`Env::clock_ms`): the same after a
    /// restart.
    pub since_ms: Millis,
}

/// Keeps of each record only the partitions that still exist and that nobody in `owned`
/// (topic, partition) has; empty records go.
pub fn refresh<'a>(
    held: &mut Vec<Held>,
    owned: impl IntoIterator<Item = (&'a str, i32)>,
    topics: &TopicsView,
) {
    if held.is_empty() {
        return;
    }
    let owned: HashSet<(&str, i32)> = owned.into_iter().collect();
    for record in held.iter_mut() {
        for tp in &mut record.partitions {
            let count = topics.get(&tp.topic).map_or(0, |t| t.partition_count);
            tp.partitions
                .retain(|&p| p < count && !owned.contains(&(tp.topic.as_str(), p)));
        }
        record.partitions.retain(|tp| !tp.partitions.is_empty());
    }
    held.retain(|record| !record.partitions.is_empty());
}
