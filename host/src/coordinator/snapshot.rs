//! The persisted shape of a group and of its offsets: plain data the store writes and reads.
//! A snapshot is written at each installed generation and when a group becomes Empty, so a
//! restart resumes stable groups without a rebalance. The conversions from and to a live group
//! belong to its protocol (`classic/snapshot.rs`).

use serde::{Deserialize, Serialize};

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
