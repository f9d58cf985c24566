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
//!
//! # Where the host differs from Kafka, on purpose
//!
//! Everything else follows Kafka's classic coordinator (`GroupMetadataManager`); the checklist
//! tests in `tests/` are named after `kafka-coordinator-spec.md` section 13.
//! - **Host mode**: when a module serves the selected protocol, JoinGroup names
//!   [`HOST_LEADER`] (never a member id) and nobody gets the member list, so every client is
//!   a follower; a member's identical rejoin in Stable never forces a rebalance (there is no
//!   client leader to ask for one); the assignment comes from [`Effect::RunAssignor`]
//!   (`assignment.rs`), each member answered with its own protocol spelling and a complete
//!   Assignment (never zero bytes, only subscribed topics, written with the member's
//!   Subscription version).
//! - **Relay mode**: when no module serves the common protocol, a real member leads and its
//!   SyncGroup assignments are relayed exactly as Kafka does (`sync_group.rs`).
//! - **Strategy choice** (`protocol.rs`): Kafka's vote over alias-normalised names, restricted
//!   to names with a module; an operator override computes the assignment while members keep
//!   their voted spelling; ties go to the smallest name.
//! - **Fallback chain** (`assignment.rs`): module, then the configured fallback, then a native
//!   range, each step bounded so the chain ends within the rebalance timeout; results for an
//!   old generation or run are dropped.
//! - **Invalid consumer metadata** (`subscription.rs`): the member stays and subscribes to
//!   nothing (an empty, well-formed assignment); in relay mode the bytes are relayed untouched.
//! - **Host-started rebalances**: a subscribed topic's partition count changing, a topic the
//!   group subscribes to appearing, a module's `rebalance_after_ms`, an operator trigger.
//! - Parked requests superseded by a resent JoinGroup or SyncGroup are answered
//!   REBALANCE_IN_PROGRESS (Kafka drops them), so the driver never holds a dead reply.

pub mod admin;
pub mod assignment;
pub mod config;
mod describe;
pub mod event;
pub mod group;
mod heartbeat;
mod ids;
mod join_group;
mod leave_group;
pub mod member;
mod native_range;
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
