//! Response shapes that depend on the request version (Kafka's version semantics live here so
//! the wire layer stays thin): ProtocolName "" below JoinGroup v7 and null from v7 on errors,
//! SyncGroup protocol fields from v5, LeaveGroup v0-2 folding, OffsetFetch v0-1 copying a
//! group error into every partition; and [`error_response`] for any request.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup as ConsumerDescribedGroup;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatResponse, GroupId, HeartbeatResponse, JoinGroupResponse,
    LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteResponse,
    SyncGroupResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{
    GroupRequest, GroupResponse, OffsetFetchQuery, OffsetFetchResult, PartitionOffset,
};

pub(crate) fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

/// A JoinGroup error: generation -1, no leader, no members; ProtocolName "" below v7, null
/// from v7.
pub fn join_error(api_version: i16, member_id: &str, error: ResponseError) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(error.code())
        .with_generation_id(-1)
        .with_member_id(s(member_id))
        .with_leader(StrBytes::default())
        .with_protocol_type(None)
        .with_protocol_name(protocol_name(api_version, None))
}

/// The wire value of a ProtocolName: below v7 the field is not nullable and null reads "".
pub fn protocol_name(api_version: i16, name: Option<&str>) -> Option<StrBytes> {
    match name {
        Some(n) => Some(s(n)),
        None if api_version < 7 => Some(StrBytes::default()),
        None => None,
    }
}

/// A successful JoinGroup answer.
pub struct JoinOk<'a> {
    pub member_id: &'a str,
    pub generation_id: i32,
    pub protocol_type: Option<&'a str>,
    pub protocol_name: Option<&'a str>,
    pub leader: &'a str,
    pub skip_assignment: bool,
    /// Only for a client leader (relay mode): every member with its metadata.
    pub members: Vec<(String, Option<String>, Bytes)>,
}

pub fn join_ok(api_version: i16, ok: JoinOk<'_>) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(0)
        .with_generation_id(ok.generation_id)
        .with_protocol_type(ok.protocol_type.map(s))
        .with_protocol_name(protocol_name(api_version, ok.protocol_name))
        .with_leader(s(ok.leader))
        .with_skip_assignment(ok.skip_assignment && api_version >= 9)
        .with_member_id(s(ok.member_id))
        .with_members(
            ok.members
                .into_iter()
                .map(|(id, instance, metadata)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string(id))
                        .with_group_instance_id(instance.map(StrBytes::from_string))
                        .with_metadata(metadata)
                })
                .collect(),
        )
}

/// A SyncGroup answer; the protocol fields exist from v5.
pub fn sync(
    api_version: i16,
    error: i16,
    protocol_type: Option<&str>,
    protocol_name: Option<&str>,
    assignment: Bytes,
) -> SyncGroupResponse {
    let v5 = api_version >= 5;
    SyncGroupResponse::default()
        .with_error_code(error)
        .with_protocol_type(protocol_type.filter(|_| v5).map(s))
        .with_protocol_name(protocol_name.filter(|_| v5).map(s))
        .with_assignment(assignment)
}

pub fn sync_error(error: ResponseError) -> SyncGroupResponse {
    SyncGroupResponse::default().with_error_code(error.code())
}

pub fn heartbeat(error: i16) -> HeartbeatResponse {
    HeartbeatResponse::default().with_error_code(error)
}

/// A LeaveGroup answer. v0-2 carry one identity: its error folds into the top-level code when
/// that is NONE, and there is no member array.
pub fn leave(api_version: i16, top_level: i16, members: Vec<MemberResponse>) -> LeaveGroupResponse {
    if api_version < 3 {
        let folded = if top_level == 0 {
            members.first().map_or(0, |m| m.error_code)
        } else {
            top_level
        };
        LeaveGroupResponse::default().with_error_code(folded)
    } else {
        LeaveGroupResponse::default()
            .with_error_code(top_level)
            .with_members(members)
    }
}

/// Every partition of a TxnOffsetCommit with one error code (Kafka's
/// `TxnOffsetCommitRequest.getErrorResponse`).
pub fn txn_offset_commit_all(
    request: &TxnOffsetCommitRequest,
    error: i16,
) -> TxnOffsetCommitResponse {
    TxnOffsetCommitResponse::default().with_topics(
        request
            .topics
            .iter()
            .map(|t| {
                TxnOffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                TxnOffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(error)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// Every partition of an OffsetCommit with one error code.
pub fn offset_commit_all(request: &OffsetCommitRequest, error: i16) -> OffsetCommitResponse {
    OffsetCommitResponse::default().with_topics(
        request
            .topics
            .iter()
            .map(|t| {
                OffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_topic_id(t.topic_id)
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(error)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// An offset that was never committed.
pub fn no_offset(partition_index: i32, error_code: i16) -> PartitionOffset {
    PartitionOffset {
        partition_index,
        committed_offset: -1,
        committed_leader_epoch: -1,
        metadata: Some(String::new()),
        error_code,
    }
}

/// A group-level OffsetFetch error, as Kafka's `OffsetFetchResponse.groupError`: from v2 the
/// code alone, no partitions; v0-1 have no group-level field, so the code is also copied into
/// every requested partition (offset -1, metadata "", epoch -1).
pub fn offset_fetch_error(
    api_version: i16,
    query: &OffsetFetchQuery,
    error: i16,
) -> OffsetFetchResult {
    if api_version >= 2 {
        return OffsetFetchResult {
            error_code: error,
            topics: Vec::new(),
        };
    }
    OffsetFetchResult {
        error_code: error,
        topics: query
            .topics
            .iter()
            .flatten()
            .map(|(topic, partitions)| {
                (
                    topic.clone(),
                    partitions.iter().map(|p| no_offset(*p, error)).collect(),
                )
            })
            .collect(),
    }
}

/// A DescribeGroups entry for a group that is not a classic group (none, or a consumer group):
/// state "Dead", with GROUP_ID_NOT_FOUND from v6 and no error before, as Kafka 4.4's
/// `GroupMetadataManager.describeGroups` answers its `GroupIdNotFoundException`.
pub fn described_not_found(group_id: &str, api_version: i16) -> DescribedGroup {
    let error = if api_version >= 6 {
        ResponseError::GroupIdNotFound.code()
    } else {
        0
    };
    described_dead(group_id, error)
}

/// A DescribeGroups entry in state "Dead" with `error`.
pub fn described_dead(group_id: &str, error: i16) -> DescribedGroup {
    DescribedGroup::default()
        .with_error_code(error)
        .with_group_id(GroupId(s(group_id)))
        .with_group_state(StrBytes::from_static_str("Dead"))
        .with_protocol_type(StrBytes::default())
        .with_protocol_data(StrBytes::default())
}

/// A ConsumerGroupHeartbeat error: the code and a message, nothing else (Kafka's
/// `getErrorResponse`; librdkafka stops reading after the error fields).
pub fn consumer_heartbeat_error(
    error: ResponseError,
    message: Option<String>,
) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(error.code())
        .with_error_message(message.map(StrBytes::from_string))
}

/// A ConsumerGroupDescribe entry for a group that cannot be described.
pub fn consumer_described_error(
    group_id: &str,
    error: ResponseError,
    message: Option<String>,
) -> ConsumerDescribedGroup {
    ConsumerDescribedGroup::default()
        .with_error_code(error.code())
        .with_error_message(message.map(StrBytes::from_string))
        .with_group_id(GroupId(s(group_id)))
}

/// The answer to `request` when the whole request fails with `error` (shutdown, Dead group).
pub fn error_response(
    api_version: i16,
    group_id: &str,
    request: &GroupRequest,
    error: ResponseError,
) -> GroupResponse {
    let code = error.code();
    match request {
        GroupRequest::JoinGroup(r) => {
            GroupResponse::JoinGroup(join_error(api_version, &r.member_id, error))
        }
        GroupRequest::SyncGroup(_) => GroupResponse::SyncGroup(sync_error(error)),
        GroupRequest::Heartbeat(_) => GroupResponse::Heartbeat(heartbeat(code)),
        GroupRequest::LeaveGroup(_) => {
            GroupResponse::LeaveGroup(LeaveGroupResponse::default().with_error_code(code))
        }
        GroupRequest::OffsetCommit(r) => GroupResponse::OffsetCommit(offset_commit_all(r, code)),
        GroupRequest::TxnOffsetCommit(r) => {
            GroupResponse::TxnOffsetCommit(txn_offset_commit_all(r, code))
        }
        GroupRequest::OffsetFetch(q) => {
            GroupResponse::OffsetFetch(offset_fetch_error(api_version, q, code))
        }
        GroupRequest::OffsetDelete(_) => {
            GroupResponse::OffsetDelete(OffsetDeleteResponse::default().with_error_code(code))
        }
        GroupRequest::DescribeGroup(_) => {
            GroupResponse::DescribeGroup(described_dead(group_id, code))
        }
        GroupRequest::DeleteGroup(_) => GroupResponse::DeleteGroup(code),
        GroupRequest::ConsumerGroupHeartbeat(_) => {
            GroupResponse::ConsumerGroupHeartbeat(consumer_heartbeat_error(error, None))
        }
        GroupRequest::ConsumerGroupDescribe(_) => {
            GroupResponse::ConsumerGroupDescribe(consumer_described_error(group_id, error, None))
        }
    }
}
