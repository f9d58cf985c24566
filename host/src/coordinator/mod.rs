//! Sans-io group coordinator: Kafka's classic group protocol with host-side assignment.
//!
//! The coordinator decides; the [`crate::driver`] acts. One [`Coordinator`] owns the groups of
//! one shard and exposes a single entry point, `handle(now, Event) -> Vec<Effect>`. It never
//! reads a clock, touches a socket, spawns a thread or calls wasmtime: time is an argument,
//! parked responses are stored [`ReplyTo`] tokens answered later by [`Effect::Respond`], running
//! an assignor is [`Effect::RunAssignor`] and its result comes back as [`Event::AssignorDone`].
//!
//! # Contract with the wire layer (`kafka/`)
//!
//! The per-API files decode a request and hand the driver one [`GroupRequest`] per group, with
//! a [`RequestContext`]; the driver answers with the matching [`GroupResponse`]. Requests that
//! name several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+) are split per group by
//! the wire layer; ListGroups is fanned out to every shard by the driver. Request bodies are the
//! `kafka-protocol` structs, carried verbatim, so field names are Kafka's.

pub mod admin;
pub mod assignment;
pub mod checks;
pub mod config;
mod describe;
pub mod event;
pub mod group;
mod heartbeat;
mod ids;
mod join_group;
mod leave_group;
pub mod member;
mod offsets;
pub mod protocol;
mod rebalance;
pub mod responses;
mod shard;
pub mod snapshot;
pub mod state;
pub mod subscription;
mod sync_group;
pub mod view;

#[cfg(test)]
pub(crate) mod tests;

pub use admin::{AdminError, GroupDetail, GroupSummary, MemberDetail};
pub use config::{CoordinatorConfig, GroupConfig};
pub use event::{
    AssignorDone, AssignorFailure, AssignorOutput, AssignorRun, Effect, Event, Notice,
    RemovalReason, RestoredGroup, RunOutcome, TimerKey,
};
pub use group::HOST_LEADER;
pub use responses::error_response;
pub use shard::Coordinator;
pub use snapshot::{GroupSnapshot, MemberSnapshot, OffsetRecord};
pub use state::GroupState;

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse, SyncGroupRequest,
    SyncGroupResponse,
};

/// Coordinator time in milliseconds (monotonic, from the driver's clock; a fake clock in tests).
pub type Millis = u64;

/// A token naming a caller waiting for a [`GroupResponse`]. The driver allocates it and maps it
/// back to the waiting connection; the coordinator only stores and returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplyTo(pub u64);

/// Facts about a request that are not in its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    /// The negotiated version of the request (behaviour differs by version, e.g.
    /// MEMBER_ID_REQUIRED from JoinGroup v4).
    pub api_version: i16,
    /// `client_id` from the request header.
    pub client_id: String,
    /// The peer address of the connection, as Kafka reports it (`/127.0.0.1`).
    pub client_host: String,
}

/// One request for one group.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupRequest {
    JoinGroup(JoinGroupRequest),
    SyncGroup(SyncGroupRequest),
    Heartbeat(HeartbeatRequest),
    LeaveGroup(LeaveGroupRequest),
    /// Unknown topics and partitions are answered by the wire layer and never reach here.
    OffsetCommit(OffsetCommitRequest),
    OffsetFetch(OffsetFetchQuery),
    DescribeGroup,
    DeleteGroup,
}

/// OffsetFetch for one group, in the shape shared by every version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchQuery {
    /// `None` asks for every committed partition of the group.
    pub topics: Option<Vec<(String, Vec<i32>)>>,
    pub require_stable: bool,
    /// v9+: the member asking, checked for KIP-848 groups only.
    pub member_id: Option<String>,
    pub member_epoch: i32,
}

/// The answer to one [`GroupRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum GroupResponse {
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetFetch(OffsetFetchResult),
    DescribeGroup(DescribedGroup),
    /// The error code for this group (NONE, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...).
    DeleteGroup(i16),
    ListGroups(Vec<ListedGroup>),
}

/// Committed offsets of one group, in the shape shared by every OffsetFetch version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetFetchResult {
    /// Group-level error (top-level in v2-7, per group in v8+, copied per partition in v0-1).
    pub error_code: i16,
    pub topics: Vec<(String, Vec<PartitionOffset>)>,
}

/// One partition's committed offset; `committed_offset` is -1 when nothing was committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffset {
    pub partition_index: i32,
    pub committed_offset: i64,
    pub committed_leader_epoch: i32,
    pub metadata: Option<String>,
    pub error_code: i16,
}
