//! Committed offsets as the coordinator keeps them: by group id, apart from the groups
//! themselves (Kafka's `OffsetMetadataManager` beside its `GroupMetadataManager`), so every
//! group protocol commits into the same place and a group holding only offsets (a "simple"
//! group, committed to with generation -1) needs no members.

use std::collections::BTreeMap;

use super::snapshot::OffsetRecord;

/// One committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// One group's committed offsets by `(topic, partition)`, sorted (OffsetFetch answers in
/// this order).
pub type Offsets = BTreeMap<(String, i32), Committed>;

impl From<&OffsetRecord> for Committed {
    fn from(record: &OffsetRecord) -> Committed {
        Committed {
            offset: record.offset,
            leader_epoch: record.leader_epoch,
            metadata: record.metadata.clone(),
        }
    }
}

impl OffsetRecord {
    /// The record of `(topic, partition)` committed at `committed`.
    pub fn of(topic: &str, partition: i32, committed: &Committed) -> OffsetRecord {
        OffsetRecord {
            topic: topic.to_owned(),
            partition,
            offset: committed.offset,
            leader_epoch: committed.leader_epoch,
            metadata: committed.metadata.clone(),
        }
    }
}
