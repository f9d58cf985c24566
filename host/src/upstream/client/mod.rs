//! The host's own client of the upstream cluster, shared by every group, for the calls the
//! host makes on its own behalf (committed offsets, end offsets, topics). Clients' data
//! requests never go through it.
//!
//! Every call goes over the host's own connections (`pool.rs`, secured as `[upstream]` says,
//! `upstream::connection`), with Kafka's request types: the group calls to the group's
//! coordinator (`groups.rs`, which also says why not librdkafka), end offsets to each
//! partition's leader and topic creation to the controller (`topics.rs`). Each call is bounded
//! by `request_timeout`: a dead cluster costs the caller the timeout, never a hang, and
//! nothing of a call runs on after it. The client runs no thread and no task of its own.

mod error;
mod groups;
mod pool;
#[cfg(test)]
pub(crate) mod tests;
mod topics;
mod types;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::delete_groups_response::DeleteGroupsResponse;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, DescribeGroupsResponse, GroupId, LeaveGroupRequest,
    LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;

pub use error::ClientError;
pub use types::{ClientSettings, CommittedOffset, EndOffset, PartitionError};

use crate::coordinator::OffsetRecord;

/// The versions of the group calls the host sends (`groups.rs`): OffsetCommit from v2 (Kafka
/// 4 refuses older ones), OffsetFetch up to v7 (v8 batches groups).
const OFFSET_COMMIT: (i16, i16) = (2, 9);
const OFFSET_FETCH: (i16, i16) = (2, 7);
/// OffsetFetch with `require_stable`, which comes with v7.
const OFFSET_FETCH_STABLE: (i16, i16) = (7, 7);
const OFFSET_DELETE: (i16, i16) = (0, 0);
const DELETE_GROUPS: (i16, i16) = (0, 2);
const DESCRIBE_GROUPS: (i16, i16) = (0, 5);
/// LeaveGroup from v3, where it names the members to remove.
const LEAVE_GROUP: (i16, i16) = (3, 5);

/// A handle on the host's client of the cluster; clones share the one instance, which lives
/// until the last clone is dropped.
#[derive(Clone)]
pub struct UpstreamClient {
    inner: Arc<Inner>,
}

struct Inner {
    /// The host's open connections to the brokers.
    pool: Arc<pool::Pool>,
    /// The group calls, to the groups' coordinators.
    groups: groups::Groups,
    settings: ClientSettings,
}

impl fmt::Debug for UpstreamClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.inner.settings;
        f.debug_struct("UpstreamClient")
            .field("bootstrap", &s.bootstrap)
            .field("request_timeout", &s.request_timeout)
            .finish_non_exhaustive()
    }
}

impl UpstreamClient {
    /// Checks the settings. Connects nothing: each call opens what it needs, so the cluster
    /// need not be up, and calls made while it is down fail within `request_timeout`.
    pub fn connect(settings: ClientSettings) -> Result<UpstreamClient, ClientError> {
        if settings.bootstrap.is_empty() {
            return Err(ClientError::Create("no bootstrap address".to_owned()));
        }
        let timeout = settings.request_timeout;
        if timeout < Duration::from_millis(1) || timeout > Duration::from_secs(3600) {
            let message = format!("request timeout {timeout:?} not within 1 ms..1 h");
            return Err(ClientError::Create(message));
        }
        let pool = Arc::new(pool::Pool::new(settings.security.clone(), timeout));
        let inner = Inner {
            groups: groups::Groups::new(settings.bootstrap.clone(), timeout, pool.clone()),
            pool,
            settings,
        };
        Ok(UpstreamClient {
            inner: Arc::new(inner),
        })
    }

    /// How the client's connections are secured, and whether the upstream takes them.
    pub fn security(&self) -> &Arc<crate::upstream::connection::Security> {
        &self.inner.settings.security
    }

    /// The bootstrap servers.
    pub fn bootstrap(&self) -> &[String] {
        &self.inner.settings.bootstrap
    }

    /// Commits `offsets` for `group` as an admin would (Kafka's AlterConsumerGroupOffsets:
    /// generation -1, member "", no instance id), one OffsetCommit to the group's coordinator
    /// (sent by the host itself: `groups.rs` says why). The answer has one entry per partition:
    /// 0 = committed. UNKNOWN_MEMBER_ID (25) on every partition means the group has members on
    /// the cluster itself, and nothing was written.
    pub async fn commit_offsets(
        &self,
        group: &str,
        offsets: &[OffsetRecord],
    ) -> Result<Vec<PartitionError>, ClientError> {
        if offsets.is_empty() {
            return Ok(Vec::new());
        }
        let build = |_version: i16| {
            let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
            for r in offsets {
                let partition = OffsetCommitRequestPartition::default()
                    .with_partition_index(r.partition)
                    .with_committed_offset(r.offset)
                    .with_committed_leader_epoch(r.leader_epoch)
                    .with_committed_metadata(Some(StrBytes::from_string(
                        r.metadata.clone().unwrap_or_default(),
                    )));
                match topics.last_mut() {
                    Some(t) if t.name.as_str() == r.topic => t.partitions.push(partition),
                    _ => topics.push(
                        OffsetCommitRequestTopic::default()
                            .with_name(TopicName(StrBytes::from_string(r.topic.clone())))
                            .with_partitions(vec![partition]),
                    ),
                }
            }
            OffsetCommitRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
                .with_generation_id_or_member_epoch(-1)
                .with_retention_time_ms(-1)
                .with_topics(topics)
        };
        let moved = |r: &OffsetCommitResponse| {
            groups::any_moved(
                r.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code),
            )
        };
        let answer = self
            .inner
            .groups
            .call("commit_offsets", group, OFFSET_COMMIT, build, moved)
            .await?;
        Ok(answer
            .topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.name.0.to_string();
                t.partitions.into_iter().map(move |p| PartitionError {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    error: p.error_code,
                })
            })
            .collect())
    }

    /// Commits a transaction's offsets for `request`'s group inside the client's transaction:
    /// TxnOffsetCommit to the group's coordinator with the client's transactional id, producer
    /// id and epoch and topics, but generation -1, an empty member id and no instance id, as a
    /// producer outside group management sends it (the cluster sees the host's groups as
    /// empty "simple" groups, and Kafka checks no membership for such a commit). Sent at
    /// `version`, the client's own: from v5 a Kafka coordinator adds the offsets to the
    /// transaction itself (KIP-890's transaction v2), below it the client has done so with
    /// AddOffsetsToTxn. One entry per partition as the cluster answered: 0 = written into the
    /// transaction, visible once it commits.
    pub async fn commit_txn_offsets(
        &self,
        version: i16,
        request: &TxnOffsetCommitRequest,
    ) -> Result<Vec<PartitionError>, ClientError> {
        let group = request.group_id.as_str();
        let build = |_version: i16| {
            let mut up = request.clone();
            up.generation_id = -1;
            up.member_id = StrBytes::default();
            up.group_instance_id = None;
            up
        };
        let moved = |r: &TxnOffsetCommitResponse| {
            groups::any_moved(
                r.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code),
            )
        };
        let answer = self
            .inner
            .groups
            .call(
                "commit_txn_offsets",
                group,
                (version, version),
                build,
                moved,
            )
            .await?;
        Ok(answer
            .topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.name.0.to_string();
                t.partitions.into_iter().map(move |p| PartitionError {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    error: p.error_code,
                })
            })
            .collect())
    }

    /// The committed offsets of `group`: every committed partition for `None`, else each asked
    /// partition, -1 for one never committed. An unknown group has no committed partitions.
    pub async fn fetch_offsets(
        &self,
        group: &str,
        partitions: Option<&[(String, Vec<i32>)]>,
    ) -> Result<Vec<CommittedOffset>, ClientError> {
        self.fetch(group, partitions, false).await
    }

    /// [`UpstreamClient::fetch_offsets`] with `require_stable` (KIP-447, OffsetFetch v7): a
    /// partition whose offset a transaction has written and not yet committed or aborted
    /// answers UNSTABLE_OFFSET_COMMIT (88) in its `error`, offset -1, as Kafka's coordinator
    /// answers a consumer with `isolation.level=read_committed`, which asks again.
    pub async fn fetch_stable_offsets(
        &self,
        group: &str,
        partitions: Option<&[(String, Vec<i32>)]>,
    ) -> Result<Vec<CommittedOffset>, ClientError> {
        self.fetch(group, partitions, true).await
    }

    async fn fetch(
        &self,
        group: &str,
        partitions: Option<&[(String, Vec<i32>)]>,
        require_stable: bool,
    ) -> Result<Vec<CommittedOffset>, ClientError> {
        if partitions.is_some_and(|p| p.iter().all(|(_, numbers)| numbers.is_empty())) {
            return Ok(Vec::new());
        }
        let build = |_version: i16| {
            let topics = partitions.map(|asked| {
                asked
                    .iter()
                    .filter(|(_, numbers)| !numbers.is_empty())
                    .map(|(topic, numbers)| {
                        OffsetFetchRequestTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic.clone())))
                            .with_partition_indexes(numbers.clone())
                    })
                    .collect()
            });
            OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
                .with_topics(topics)
                .with_require_stable(require_stable)
        };
        let versions = if require_stable {
            OFFSET_FETCH_STABLE
        } else {
            OFFSET_FETCH
        };
        let moved = |r: &OffsetFetchResponse| {
            let partitions = r.topics.iter().flat_map(|t| &t.partitions);
            groups::any_moved(std::iter::once(r.error_code).chain(partitions.map(|p| p.error_code)))
        };
        let answer = self
            .inner
            .groups
            .call("fetch_offsets", group, versions, build, moved)
            .await?;
        if answer.error_code != 0 {
            return Err(groups::kafka_error("fetch_offsets", answer.error_code));
        }
        Ok(answer
            .topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.name.0.to_string();
                t.partitions.into_iter().map(move |p| CommittedOffset {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    offset: if p.committed_offset < 0 {
                        -1
                    } else {
                        p.committed_offset
                    },
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.metadata.map(|m| m.to_string()).filter(|m| !m.is_empty()),
                    error: p.error_code,
                })
            })
            .collect())
    }

    /// Deletes the committed offsets of the named partitions of `group` (OffsetDelete), one
    /// entry per partition. A group unknown to the cluster is a [`ClientError::Kafka`]
    /// (GROUP_ID_NOT_FOUND, 69), as is a group with members on the cluster itself.
    pub async fn delete_offsets(
        &self,
        group: &str,
        partitions: &[(String, Vec<i32>)],
    ) -> Result<Vec<PartitionError>, ClientError> {
        if partitions.iter().all(|(_, numbers)| numbers.is_empty()) {
            return Ok(Vec::new());
        }
        let build = |_version: i16| {
            let topics = partitions
                .iter()
                .filter(|(_, numbers)| !numbers.is_empty())
                .map(|(topic, numbers)| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.clone())))
                        .with_partitions(
                            numbers
                                .iter()
                                .map(|&n| {
                                    OffsetDeleteRequestPartition::default().with_partition_index(n)
                                })
                                .collect(),
                        )
                })
                .collect();
            OffsetDeleteRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
                .with_topics(topics)
        };
        let moved = |r: &OffsetDeleteResponse| groups::any_moved([r.error_code]);
        let answer = self
            .inner
            .groups
            .call("delete_offsets", group, OFFSET_DELETE, build, moved)
            .await?;
        if answer.error_code != 0 {
            return Err(groups::kafka_error("delete_offsets", answer.error_code));
        }
        Ok(answer
            .topics
            .into_iter()
            .flat_map(|t| {
                let topic = t.name.0.to_string();
                t.partitions.into_iter().map(move |p| PartitionError {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    error: p.error_code,
                })
            })
            .collect())
    }

    /// Deletes `group` on the cluster, and with it its committed offsets. Kafka's code for the
    /// group: 0 deleted, NON_EMPTY_GROUP (68) while it has members there, GROUP_ID_NOT_FOUND
    /// (69) for a group the cluster does not know.
    pub async fn delete_group(&self, group: &str) -> Result<i16, ClientError> {
        let build = |_version: i16| {
            DeleteGroupsRequest::default()
                .with_groups_names(vec![GroupId(StrBytes::from_string(group.to_owned()))])
        };
        let moved =
            |r: &DeleteGroupsResponse| groups::any_moved(r.results.iter().map(|g| g.error_code));
        let answer = self
            .inner
            .groups
            .call("delete_group", group, DELETE_GROUPS, build, moved)
            .await?;
        match answer.results.as_slice() {
            [one] => Ok(one.error_code),
            _ => Err(unexpected("delete_group")),
        }
    }

    /// DescribeGroups of one group on the cluster: its state, protocol and members, each with
    /// its client id and the assignment its leader gave it (a cluster of host nodes reads its
    /// own group of nodes this way, `crate::cluster`).
    pub async fn describe_group(&self, group: &str) -> Result<DescribedGroup, ClientError> {
        let build = |_version: i16| {
            DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(StrBytes::from_string(group.to_owned()))])
        };
        let moved =
            |r: &DescribeGroupsResponse| groups::any_moved(r.groups.iter().map(|g| g.error_code));
        let answer = self
            .inner
            .groups
            .call("describe_group", group, DESCRIBE_GROUPS, build, moved)
            .await?;
        match answer.groups.into_iter().next() {
            Some(one) if one.error_code != 0 => {
                Err(groups::kafka_error("describe_group", one.error_code))
            }
            Some(one) => Ok(one),
            None => Err(unexpected("describe_group")),
        }
    }

    /// Removes the member `member_id` from `group` on the cluster (LeaveGroup v3+, on the
    /// member's behalf, as Kafka's admin `removeMembersFromConsumerGroup` does for static
    /// members): the cluster rebalances the group at once. Kafka's code for the member: 0
    /// removed, UNKNOWN_MEMBER_ID (25) for one already gone.
    pub async fn remove_member(&self, group: &str, member_id: &str) -> Result<i16, ClientError> {
        let build = |_version: i16| {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
                .with_members(vec![
                    MemberIdentity::default()
                        .with_member_id(StrBytes::from_string(member_id.to_owned()))
                        .with_reason(Some(StrBytes::from_static_str(
                            "assignor-host: the node's endpoint is dead",
                        ))),
                ])
        };
        let moved = |r: &LeaveGroupResponse| groups::any_moved([r.error_code]);
        let answer = self
            .inner
            .groups
            .call("remove_member", group, LEAVE_GROUP, build, moved)
            .await?;
        if answer.error_code != 0 {
            return Ok(answer.error_code);
        }
        match answer.members.as_slice() {
            [one] => Ok(one.error_code),
            _ => Err(unexpected("remove_member")),
        }
    }
}

pub(super) fn unexpected(call: &'static str) -> ClientError {
    ClientError::Kafka {
        call,
        code: -199,
        name: "_BAD_MSG".to_owned(),
        message: "not the result this request has".to_owned(),
    }
}
