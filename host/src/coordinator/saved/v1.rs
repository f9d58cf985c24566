//! Version 1: the one shape hosts wrote for both group types before records were versioned
//! (no `version` key), read so that a host upgraded over an existing store resumes its groups.
//! Never written. Its member records are those of version 2, field for field.

use serde::Deserialize;

use super::v2::{
    AssignorRecord, ClassicGroupRecord, ClassicMemberRecord, ConsumerGroupRecord,
    ConsumerMemberRecord, DeferredRebalance, ModuleState, SavedGroup,
};
use crate::coordinator::held::Held;
use crate::coordinator::record::{RebalanceRecord, RunRecord};

/// A group's metadata at one generation; a consumer group's state is all in `consumer`, the
/// classic fields then left empty. The `serde(default)` fields were added over time: a row
/// written before each reads with none.
#[derive(Debug, Deserialize)]
pub(super) struct GroupSnapshot {
    group_id: String,
    generation_id: i32,
    protocol_type: Option<String>,
    protocol_key: Option<String>,
    strategy: Option<String>,
    pinned_version: Option<u32>,
    cooperative: bool,
    leader_id: Option<String>,
    topic_counts: Vec<(String, i32)>,
    members: Vec<ClassicMemberRecord>,
    #[serde(default)]
    last_run: Option<RunRecord>,
    #[serde(default)]
    history: Vec<RebalanceRecord>,
    #[serde(default)]
    consumer: Option<ConsumerSnapshot>,
    #[serde(default)]
    module_state: Option<ModuleState>,
    #[serde(default)]
    deferred: Option<DeferredRebalance>,
    #[serde(default)]
    held: Vec<Held>,
}

/// Version 1's consumer-group part.
#[derive(Debug, Deserialize)]
struct ConsumerSnapshot {
    group_epoch: i32,
    assignment_epoch: i32,
    members: Vec<ConsumerMemberRecord>,
    topics: Vec<(String, uuid::Uuid, i32)>,
}

impl GroupSnapshot {
    /// The same group as the current version's record of its type.
    pub(super) fn upgrade(self) -> SavedGroup {
        let assignor = AssignorRecord {
            last_run: self.last_run,
            history: self.history,
            module_state: self.module_state,
            held: self.held,
        };
        match self.consumer {
            Some(consumer) => SavedGroup::Consumer(ConsumerGroupRecord {
                group_id: self.group_id,
                group_epoch: consumer.group_epoch,
                assignment_epoch: consumer.assignment_epoch,
                members: consumer.members,
                topics: consumer.topics,
                assignor,
            }),
            None => SavedGroup::Classic(ClassicGroupRecord {
                group_id: self.group_id,
                generation_id: self.generation_id,
                protocol_type: self.protocol_type,
                protocol_key: self.protocol_key,
                strategy: self.strategy,
                pinned_version: self.pinned_version,
                cooperative: self.cooperative,
                leader_id: self.leader_id,
                topic_counts: self.topic_counts,
                members: self.members,
                deferred: self.deferred,
                assignor,
            }),
        }
    }
}
