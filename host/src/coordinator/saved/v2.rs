//! Version 2, the one written: a record per group type.

use serde::{Deserialize, Serialize};

use crate::coordinator::held::Held;
use crate::coordinator::record::{RebalanceRecord, RunRecord};

/// A group as kept: its group type's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SavedGroup {
    Classic(ClassicGroupRecord),
    Consumer(ConsumerGroupRecord),
}

impl SavedGroup {
    /// The group the record is about.
    pub fn group_id(&self) -> &str {
        match self {
            SavedGroup::Classic(group) => &group.group_id,
            SavedGroup::Consumer(group) => &group.group_id,
        }
    }

    /// What is kept of the group's assignor, whatever its type.
    pub fn assignor(&self) -> &AssignorRecord {
        match self {
            SavedGroup::Classic(group) => &group.assignor,
            SavedGroup::Consumer(group) => &group.assignor,
        }
    }

    /// The classic group's record; `None` for a consumer group.
    pub fn classic(&self) -> Option<&ClassicGroupRecord> {
        match self {
            SavedGroup::Classic(group) => Some(group),
            SavedGroup::Consumer(_) => None,
        }
    }

    /// The consumer group's record; `None` for a classic group.
    pub fn consumer(&self) -> Option<&ConsumerGroupRecord> {
        match self {
            SavedGroup::Consumer(group) => Some(group),
            SavedGroup::Classic(_) => None,
        }
    }
}

/// What the host keeps of a group's assignor, whatever the group type: its last run, recent
/// rebalances, the module's kept bytes and the departed members' held partitions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssignorRecord {
    /// The last assignor run (which module version, how it went).
    pub last_run: Option<RunRecord>,
    /// The recent rebalances, oldest first, at most [`crate::coordinator::classic::HISTORY_LEN`].
    pub history: Vec<RebalanceRecord>,
    /// What the group's module asked the host to keep (ABI v2 input `state`), with the
    /// strategy it belongs to.
    pub module_state: Option<ModuleState>,
    /// Departed members' partitions nobody has been given since, for describe after a
    /// restart.
    pub held: Vec<Held>,
}

/// A classic group at one generation (Kafka's `GroupMetadataValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassicGroupRecord {
    pub group_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_key: Option<String>,
    /// `None` for relay mode (a client leader assigned).
    pub strategy: Option<String>,
    pub pinned_version: Option<u32>,
    pub cooperative: bool,
    pub leader_id: Option<String>,
    pub topic_counts: Vec<(String, i32)>,
    pub members: Vec<ClassicMemberRecord>,
    /// A rebalance deferred by stabilisation: membership changed since this generation
    /// (members left; the members parked in JoinGroup are not written, their clients join
    /// again), so the restored group waits for quiet again and then rebalances, rather than
    /// resume an assignment that leaves partitions without an owner.
    pub deferred: Option<DeferredRebalance>,
    pub assignor: AssignorRecord,
}

/// What a deferred rebalance had seen when its group was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeferredRebalance {
    pub joined: usize,
    pub left: usize,
}

/// A module's kept bytes for one group (ABI v2 `state`), sent back only to the strategy that
/// returned them: a group whose strategy changes starts the new one without state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleState {
    /// The strategy name (the module) whose answer kept the bytes.
    pub strategy: String,
    pub bytes: serde_bytes::ByteBuf,
}

impl ModuleState {
    /// The bytes, if they belong to `strategy`.
    pub fn for_strategy(&self, strategy: &str) -> Option<&[u8]> {
        (self.strategy == strategy).then_some(self.bytes.as_slice())
    }

    /// What a group's next request to `strategy` carries of `kept`.
    pub fn request_bytes(kept: Option<&ModuleState>, strategy: &str) -> Option<Vec<u8>> {
        kept.and_then(|s| s.for_strategy(strategy))
            .map(<[u8]>::to_vec)
    }

    /// What the group keeps after an answer of `strategy` carrying `state`: the new bytes
    /// replace the old, and an answer without any keeps nothing.
    pub fn from_answer(strategy: &str, state: Option<Vec<u8>>) -> Option<ModuleState> {
        state.map(|bytes| ModuleState {
            strategy: strategy.to_owned(),
            bytes: serde_bytes::ByteBuf::from(bytes),
        })
    }
}

/// A consumer group (KIP-848): its epochs and every member's, as Kafka keeps them in its
/// `ConsumerGroupMetadataValue`, `ConsumerGroupMemberMetadataValue`,
/// `ConsumerGroupCurrentMemberAssignmentValue` and `ConsumerGroupTargetAssignmentMemberValue`
/// records, so a restart resumes it without fencing anyone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerGroupRecord {
    pub group_id: String,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: Vec<ConsumerMemberRecord>,
    /// The subscribed topics as the last target run saw them: `(name, topic id, partition
    /// count)`. A difference from the catalog at restore moves the epoch, as it would live.
    pub topics: Vec<(String, uuid::Uuid, i32)>,
    pub assignor: AssignorRecord,
}

/// A consumer-group member. Partition sets are `(topic, partitions)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerMemberRecord {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topic_names: Vec<String>,
    pub topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState` name (`stable`, `unrevoked_partitions`, `unreleased_partitions`).
    pub state: String,
    pub assigned: Vec<(String, Vec<i32>)>,
    pub pending_revocation: Vec<(String, Vec<i32>)>,
    pub target: Vec<(String, Vec<i32>)>,
    /// A classic member of the group: its session timeout, protocol names and Subscription
    /// version.
    pub classic: Option<(i32, Vec<String>, i16)>,
}

/// A classic group's member (Kafka's `MemberMetadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassicMemberRecord {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, serde_bytes::ByteBuf)>,
    pub protocol_name: Option<String>,
    pub assignment: serde_bytes::ByteBuf,
    pub given: Vec<(String, Vec<i32>)>,
}
