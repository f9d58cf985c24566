//! One member of a classic group (`ClassicGroupMember`): identity, timeouts, the protocols it
//! proposed, its current assignment and its parked JoinGroup / SyncGroup.

use std::sync::Arc;

use assignor_sdk::TopicPartitions;
use bytes::Bytes;

use crate::coordinator::context::Parked;

/// A member of a group.
#[derive(Debug, Clone)]
pub struct Member {
    pub(in crate::coordinator) id: Arc<str>,
    pub(in crate::coordinator) group_instance_id: Option<Arc<str>>,
    pub(in crate::coordinator) client_id: String,
    pub(in crate::coordinator) client_host: String,
    pub(in crate::coordinator) rebalance_timeout_ms: i32,
    pub(in crate::coordinator) session_timeout_ms: i32,
    pub(in crate::coordinator) protocol_type: String,
    /// Proposed protocols in the member's order of preference: (its spelling, metadata).
    pub(in crate::coordinator) protocols: Vec<(String, Bytes)>,
    /// For each entry of `protocols`, the key it counts under in the vote: the canonical
    /// strategy name when a module serves it (aliases normalised), else the spelling itself.
    pub(in crate::coordinator) keys: Vec<String>,
    /// The spelling of the selected protocol this member proposed; what it gets back.
    pub(in crate::coordinator) protocol_name: Option<String>,
    /// The assignment bytes served by SyncGroup in the current generation (empty = none yet).
    pub(in crate::coordinator) assignment: Bytes,
    /// The partitions the host gave this member in the last installed generation
    /// (`AssignRequest.previous_assignment`).
    pub(in crate::coordinator) given: Vec<TopicPartitions>,
    pub(in crate::coordinator) awaiting_join: Option<Parked>,
    pub(in crate::coordinator) awaiting_sync: Option<Parked>,
    /// True from the moment the member is added until its first JoinGroup answer: a new member
    /// can expire even while its JoinGroup is parked.
    pub(in crate::coordinator) is_new: bool,
}

impl Member {
    /// Whether the proposed protocols equal the stored ones (names and bytes, in order): the
    /// only rejoin that changes nothing.
    pub fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// The metadata this member sent for the protocol counted under `key`.
    pub fn metadata_for(&self, key: &str) -> Option<&Bytes> {
        self.keys
            .iter()
            .position(|k| k == key)
            .map(|i| &self.protocols[i].1)
    }

    /// The member's own spelling of the protocol counted under `key`.
    pub fn spelling_for(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .position(|k| k == key)
            .map(|i| self.protocols[i].0.as_str())
    }

    /// Kafka's "satisfied heartbeat": a member that is not new and is waiting in JoinGroup or
    /// SyncGroup is not expected to heartbeat.
    pub fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }
}
