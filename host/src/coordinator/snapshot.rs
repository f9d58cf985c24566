//! The persisted shape of a group and of its offsets: plain data the store writes and reads.
//! A snapshot is written at each installed generation and when a group becomes Empty, so a
//! restart resumes stable groups without a rebalance. The conversions from and to a live group
//! belong to its protocol (`classic/snapshot.rs`).

use serde::{Deserialize, Serialize};

use super::held::Held;
use super::record::{RebalanceRecord, RunRecord};

/// A group's metadata at one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSnapshot {
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
    pub members: Vec<MemberSnapshot>,
    /// The last assignor run (which module version, how it went). Snapshots written before
    /// it was kept read as none (`serde(default)`), as do the next two.
    #[serde(default)]
    pub last_run: Option<RunRecord>,
    /// The recent rebalances, oldest first, at most [`super::classic::HISTORY_LEN`].
    #[serde(default)]
    pub history: Vec<RebalanceRecord>,
    /// Set for a consumer group (KIP-848), whose state is all here; the classic fields above
    /// are then left empty. Snapshots written before consumer groups were kept read as none.
    #[serde(default)]
    pub consumer: Option<ConsumerSnapshot>,
    /// What the group's module asked the host to keep (ABI v2 input `state`), with the
    /// strategy it belongs to. Snapshots written before it was kept read as none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_state: Option<ModuleState>,
    /// A classic group's rebalance deferred by stabilisation: membership changed since this
    /// generation (members left; the members parked in JoinGroup are not written, their
    /// clients join again), so the restored group waits for quiet again and then rebalances,
    /// rather than resume an assignment that leaves partitions without an owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<DeferredRebalance>,
    /// Departed members' partitions nobody has been given since (either group type), for
    /// describe after a restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<Held>,
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

/// A consumer group's persisted state: its epochs and every member's (Kafka keeps the same in
/// its `ConsumerGroup*` records), so a restart resumes it without fencing anyone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerSnapshot {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: Vec<ConsumerMemberSnapshot>,
    /// The subscribed topics as the last target run saw them: `(name, topic id, partition
    /// count)`. A difference from the catalog at restore moves the epoch, as it would live.
    pub topics: Vec<(String, uuid::Uuid, i32)>,
}

/// A consumer-group member's persisted state. Partition sets are `(topic, partitions)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerMemberSnapshot {
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

/// A member's persisted state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSnapshot {
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

/// One committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}
