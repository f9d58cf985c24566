//! The contract with the wire layer: one [`GroupRequest`] for one group in, the matching
//! [`GroupResponse`] out, with the facts about the request that are not in its body
//! ([`RequestContext`]). Request bodies are the `kafka-protocol` structs, carried verbatim, so
//! field names are Kafka's.
//!
//! Requests that name several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+) are split
//! per group by the wire layer; ListGroups is fanned out to every shard by the driver.
//!
//! [`GroupCall`] ties each request type to its answer type, so a caller asks with a
//! `JoinGroupRequest` and gets a `JoinGroupResponse` back: the one place where an answer of
//! the wrong kind could be noticed is the driver, never the per-API files.

use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup as ConsumerDescribedGroup;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    SyncGroupRequest, SyncGroupResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};

/// Coordinator time in milliseconds (monotonic, from the driver's clock; a fake clock in tests).
pub type Millis = u64;

/// The group type ListGroups reports for every classic group (KIP-848's `GroupType`).
pub const CLASSIC: &str = "classic";
/// The group type of a consumer group, which is also its protocol type.
pub const CONSUMER: &str = "consumer";

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
    /// A transaction's offsets (proxy mode only): checked here, written by the upstream
    /// cluster inside the client's transaction, which also answers for its topics.
    TxnOffsetCommit(TxnOffsetCommitRequest),
    OffsetFetch(OffsetFetchQuery),
    /// Unknown topics and partitions are answered by the wire layer and never reach here.
    OffsetDelete(OffsetDeleteRequest),
    DescribeGroup(DescribeGroup),
    DeleteGroup(DeleteGroup),
    /// KIP-848's consumer protocol (API 68); boxed, as the largest request by far.
    ConsumerGroupHeartbeat(Box<ConsumerGroupHeartbeatRequest>),
    /// ConsumerGroupDescribe (API 69) for one group.
    ConsumerGroupDescribe(ConsumerGroupDescribe),
}

/// ConsumerGroupDescribe for one group (the group id travels beside the request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsumerGroupDescribe;

/// DescribeGroups for one group (the group id travels beside the request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DescribeGroup;

/// DeleteGroups for one group (the group id travels beside the request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeleteGroup;

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

/// The answer to one [`GroupRequest`], of the request's own kind.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupResponse {
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
    OffsetCommit(OffsetCommitResponse),
    TxnOffsetCommit(TxnOffsetCommitResponse),
    OffsetFetch(OffsetFetchResult),
    OffsetDelete(OffsetDeleteResponse),
    DescribeGroup(DescribedGroup),
    /// The error code for this group (NONE, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...).
    DeleteGroup(i16),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse),
    ConsumerGroupDescribe(ConsumerDescribedGroup),
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

/// A request type and the one answer type the coordinator gives it.
///
/// The coordinator answers every [`GroupRequest`] variant with the [`GroupResponse`] variant
/// of the same name (the tests check it for every kind); [`GroupCall::answer`] is where that
/// promise is unwrapped, so callers hold typed answers.
pub trait GroupCall: Sized {
    /// What the coordinator answers.
    type Answer;
    /// The request as the coordinator takes it.
    fn into_request(self) -> GroupRequest;
    /// The typed answer, or the response back if it is of another kind (a coordinator bug;
    /// boxed, as the rare path).
    fn answer(response: GroupResponse) -> Result<Self::Answer, Box<GroupResponse>>;
}

macro_rules! group_call {
    ($($request:ty => $variant:ident($answer:ty);)*) => {$(
        impl GroupCall for $request {
            type Answer = $answer;
            fn into_request(self) -> GroupRequest {
                GroupRequest::$variant(self)
            }
            fn answer(response: GroupResponse) -> Result<$answer, Box<GroupResponse>> {
                match response {
                    GroupResponse::$variant(answer) => Ok(answer),
                    other => Err(Box::new(other)),
                }
            }
        }
    )*};
}

group_call! {
    JoinGroupRequest => JoinGroup(JoinGroupResponse);
    SyncGroupRequest => SyncGroup(SyncGroupResponse);
    HeartbeatRequest => Heartbeat(HeartbeatResponse);
    LeaveGroupRequest => LeaveGroup(LeaveGroupResponse);
    OffsetCommitRequest => OffsetCommit(OffsetCommitResponse);
    TxnOffsetCommitRequest => TxnOffsetCommit(TxnOffsetCommitResponse);
    OffsetFetchQuery => OffsetFetch(OffsetFetchResult);
    OffsetDeleteRequest => OffsetDelete(OffsetDeleteResponse);
    DescribeGroup => DescribeGroup(DescribedGroup);
    DeleteGroup => DeleteGroup(i16);
    ConsumerGroupDescribe => ConsumerGroupDescribe(ConsumerDescribedGroup);
}

impl GroupCall for ConsumerGroupHeartbeatRequest {
    type Answer = ConsumerGroupHeartbeatResponse;
    fn into_request(self) -> GroupRequest {
        GroupRequest::ConsumerGroupHeartbeat(Box::new(self))
    }
    fn answer(response: GroupResponse) -> Result<Self::Answer, Box<GroupResponse>> {
        match response {
            GroupResponse::ConsumerGroupHeartbeat(answer) => Ok(answer),
            other => Err(Box::new(other)),
        }
    }
}

impl GroupResponse {
    /// The Kafka API this answers, for logs.
    pub fn api(&self) -> &'static str {
        match self {
            GroupResponse::JoinGroup(_) => "JoinGroup",
            GroupResponse::SyncGroup(_) => "SyncGroup",
            GroupResponse::Heartbeat(_) => "Heartbeat",
            GroupResponse::LeaveGroup(_) => "LeaveGroup",
            GroupResponse::OffsetCommit(_) => "OffsetCommit",
            GroupResponse::TxnOffsetCommit(_) => "TxnOffsetCommit",
            GroupResponse::OffsetFetch(_) => "OffsetFetch",
            GroupResponse::OffsetDelete(_) => "OffsetDelete",
            GroupResponse::DescribeGroup(_) => "DescribeGroups",
            GroupResponse::DeleteGroup(_) => "DeleteGroups",
            GroupResponse::ConsumerGroupHeartbeat(_) => "ConsumerGroupHeartbeat",
            GroupResponse::ConsumerGroupDescribe(_) => "ConsumerGroupDescribe",
        }
    }
}

impl GroupRequest {
    /// The Kafka API of this request, for logs.
    pub fn api(&self) -> &'static str {
        match self {
            GroupRequest::JoinGroup(_) => "JoinGroup",
            GroupRequest::SyncGroup(_) => "SyncGroup",
            GroupRequest::Heartbeat(_) => "Heartbeat",
            GroupRequest::LeaveGroup(_) => "LeaveGroup",
            GroupRequest::OffsetCommit(_) => "OffsetCommit",
            GroupRequest::TxnOffsetCommit(_) => "TxnOffsetCommit",
            GroupRequest::OffsetFetch(_) => "OffsetFetch",
            GroupRequest::OffsetDelete(_) => "OffsetDelete",
            GroupRequest::DescribeGroup(_) => "DescribeGroups",
            GroupRequest::DeleteGroup(_) => "DeleteGroups",
            GroupRequest::ConsumerGroupHeartbeat(_) => "ConsumerGroupHeartbeat",
            GroupRequest::ConsumerGroupDescribe(_) => "ConsumerGroupDescribe",
        }
    }
}
