//! The adapter from the host's client of the upstream cluster to the driver: committed offsets
//! kept upstream in proxy mode ([`RemoteOffsets`]), committed with generation -1 and an empty
//! member id, as Kafka's admin clients commit to a group they are not members of.
//!
//! The one upstream refusal with a meaning of its own is UNKNOWN_MEMBER_ID: the upstream group
//! has members, so somebody joined that group id on the cluster directly, and its offsets are
//! theirs. Nothing is overwritten; the operator gets an error line naming the group and the
//! `assignor_host_upstream_group_conflicts_total` count, and the client
//! GROUP_AUTHORIZATION_FAILED, which its logs show by name and which no client retries into a
//! rejoin loop (UNKNOWN_MEMBER_ID would tell it that it left the host's group, which it did
//! not).
//!
//! A transaction's offsets (TxnOffsetCommit) go up inside the client's transaction, also as a
//! producer outside group management sends them. Kafka checks no membership for those (a
//! transactional commit without member id and generation is accepted even by a group with
//! members), so on this path a group id joined on the cluster directly goes unnoticed unless
//! the cluster refuses the group outright; the codes that say so are mapped as for OffsetCommit.
//! Every other code is the transaction's (PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, ...) and
//! reaches the client as the cluster answered it.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::TxnOffsetCommitRequest;

use crate::coordinator::{OffsetFetchQuery, OffsetFetchResult, OffsetRecord, PartitionOffset};
use crate::driver::{BoxFuture, PartitionCodes, RemoteOffsets};
use crate::metrics::Metrics;
use crate::upstream::client::{ClientError, CommittedOffset, PartitionError, UpstreamClient};

/// Offsets in the upstream cluster, through the host's client of it.
pub(super) struct UpstreamOffsets {
    pub(super) client: UpstreamClient,
    pub(super) metrics: Arc<Metrics>,
}

const UNKNOWN_MEMBER_ID: i16 = ResponseError::UnknownMemberId.code();

/// The cluster's answers to a transactional commit that mean its group of this id is not the
/// host's simple group: membership checks (which Kafka skips for a commit without member and
/// generation, so these come only from a group of another kind, e.g. a share group, or a
/// broker that checks more than Kafka), or no such consumer group.
const NOT_OURS: [i16; 4] = [
    UNKNOWN_MEMBER_ID,
    ResponseError::IllegalGeneration.code(),
    ResponseError::FencedInstanceId.code(),
    ResponseError::GroupIdNotFound.code(),
];

impl RemoteOffsets for UpstreamOffsets {
    fn commit(
        &self,
        group: String,
        offsets: Vec<OffsetRecord>,
    ) -> BoxFuture<Result<Vec<i16>, String>> {
        let (client, metrics) = (self.client.clone(), self.metrics.clone());
        Box::pin(async move {
            let results = match client.commit_offsets(&group, &offsets).await {
                Err(e) if denied(&group, &e) => return Ok(vec![GROUP_DENIED; offsets.len()]),
                other => other.map_err(|e| e.to_string())?,
            };
            let mut codes = in_order(&offsets, &results);
            if codes.contains(&UNKNOWN_MEMBER_ID) {
                tracing::error!(group = %group,
                    "the upstream group has members: somebody joined this group id on the cluster directly; its offsets are not overwritten");
                metrics.upstream_group_conflict(&group);
                for code in &mut codes {
                    if *code == UNKNOWN_MEMBER_ID {
                        *code = ResponseError::GroupAuthorizationFailed.code();
                    }
                }
            }
            Ok(codes)
        })
    }

    fn commit_txn(
        &self,
        group: String,
        version: i16,
        request: TxnOffsetCommitRequest,
    ) -> BoxFuture<Result<PartitionCodes, String>> {
        let (client, metrics) = (self.client.clone(), self.metrics.clone());
        Box::pin(async move {
            let results = match client.commit_txn_offsets(version, &request).await {
                Err(e) if denied(&group, &e) => {
                    return Ok(request
                        .topics
                        .iter()
                        .flat_map(|t| {
                            t.partitions
                                .iter()
                                .map(|p| ((t.name.to_string(), p.partition_index), GROUP_DENIED))
                        })
                        .collect());
                }
                other => other.map_err(|e| e.to_string())?,
            };
            let mut codes: PartitionCodes = results
                .into_iter()
                .map(|r| ((r.topic, r.partition), r.error))
                .collect();
            if codes.iter().any(|(_, code)| NOT_OURS.contains(code)) {
                tracing::error!(group = %group,
                    "the upstream refused a transactional offset commit for a group of its own under this id: somebody uses this group id on the cluster directly");
                metrics.upstream_group_conflict(&group);
                for (_, code) in &mut codes {
                    if NOT_OURS.contains(code) {
                        *code = ResponseError::GroupAuthorizationFailed.code();
                    }
                }
            }
            Ok(codes)
        })
    }

    fn fetch(
        &self,
        group: String,
        query: OffsetFetchQuery,
    ) -> BoxFuture<Result<OffsetFetchResult, String>> {
        let client = self.client.clone();
        Box::pin(async move {
            let topics = query.topics.as_deref();
            let committed = if query.require_stable {
                client.fetch_stable_offsets(&group, topics).await
            } else {
                client.fetch_offsets(&group, topics).await
            };
            match committed {
                Err(e) if denied(&group, &e) => Ok(OffsetFetchResult {
                    error_code: GROUP_DENIED,
                    topics: Vec::new(),
                }),
                other => Ok(fetch_result(&query, other.map_err(|e| e.to_string())?)),
            }
        })
    }

    fn delete(
        &self,
        group: String,
        partitions: Vec<(String, i32)>,
    ) -> BoxFuture<Result<Vec<i16>, String>> {
        let client = self.client.clone();
        Box::pin(async move {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (topic, partition) in &partitions {
                by_topic.entry(topic.clone()).or_default().push(*partition);
            }
            let asked: Vec<(String, Vec<i32>)> = by_topic.into_iter().collect();
            let results = match client.delete_offsets(&group, &asked).await {
                Err(e) if denied(&group, &e) => return Ok(vec![GROUP_DENIED; partitions.len()]),
                other => other.map_err(|e| e.to_string())?,
            };
            Ok(partitions
                .iter()
                .map(|(topic, partition)| code_of(&results, topic, *partition))
                .collect())
        })
    }

    fn delete_group(&self, group: String) -> BoxFuture<Result<i16, String>> {
        let client = self.client.clone();
        Box::pin(async move {
            match client.delete_group(&group).await {
                Err(e) if denied(&group, &e) => Ok(GROUP_DENIED),
                other => other.map_err(|e| e.to_string()),
            }
        })
    }
}

/// GROUP_AUTHORIZATION_FAILED: the cluster's authorizer refuses the host's principal this
/// group.
const GROUP_DENIED: i16 = ResponseError::GroupAuthorizationFailed.code();

/// Whether the cluster refused the whole call for `group` by its ACLs (FindCoordinator, or
/// the request itself, answered GROUP_AUTHORIZATION_FAILED). The client gets that code, as
/// from Kafka, rather than a retriable one it would retry forever; the operator a line saying
/// which ACL the host's user lacks (docs/operating.md lists the set).
fn denied(group: &str, error: &ClientError) -> bool {
    let denied = error.kafka_code() == Some(GROUP_DENIED);
    if denied {
        tracing::warn!(group = %group,
            "the upstream's authorizer refuses the host this group: grant the host's user READ (and DELETE) on it");
    }
    denied
}

/// One code per record, in the records' order (a partition the upstream did not answer for
/// reads UNKNOWN_SERVER_ERROR: the commit is not known to be stored).
fn in_order(offsets: &[OffsetRecord], results: &[PartitionError]) -> Vec<i16> {
    offsets
        .iter()
        .map(|o| code_of(results, &o.topic, o.partition))
        .collect()
}

fn code_of(results: &[PartitionError], topic: &str, partition: i32) -> i16 {
    results
        .iter()
        .find(|r| r.topic == topic && r.partition == partition)
        .map_or(ResponseError::UnknownServerError.code(), |r| r.error)
}

/// The OffsetFetch answer from what the upstream holds: the partitions asked, in the order
/// asked (-1 for one never committed), or every committed partition by topic.
fn fetch_result(query: &OffsetFetchQuery, committed: Vec<CommittedOffset>) -> OffsetFetchResult {
    let offset = |c: &CommittedOffset| PartitionOffset {
        partition_index: c.partition,
        committed_offset: c.offset,
        committed_leader_epoch: c.leader_epoch,
        metadata: Some(c.metadata.clone().unwrap_or_default()),
        error_code: c.error,
    };
    let topics = match &query.topics {
        Some(asked) => asked
            .iter()
            .map(|(topic, partitions)| {
                let answers = partitions
                    .iter()
                    .map(|p| {
                        committed
                            .iter()
                            .find(|c| c.topic == *topic && c.partition == *p)
                            .map_or_else(|| never_committed(*p), offset)
                    })
                    .collect();
                (topic.clone(), answers)
            })
            .collect(),
        None => {
            let mut by_topic: BTreeMap<&str, Vec<PartitionOffset>> = BTreeMap::new();
            // A partition with an error (UNSTABLE_OFFSET_COMMIT under `require_stable`) is
            // listed with it, as Kafka lists it, though its offset reads -1.
            for c in committed.iter().filter(|c| c.offset >= 0 || c.error != 0) {
                by_topic.entry(&c.topic).or_default().push(offset(c));
            }
            by_topic
                .into_iter()
                .map(|(topic, mut partitions)| {
                    partitions.sort_by_key(|p| p.partition_index);
                    (topic.to_owned(), partitions)
                })
                .collect()
        }
    };
    OffsetFetchResult {
        error_code: 0,
        topics,
    }
}

fn never_committed(partition_index: i32) -> PartitionOffset {
    PartitionOffset {
        partition_index,
        committed_offset: -1,
        committed_leader_epoch: -1,
        metadata: Some(String::new()),
        error_code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(topic: &str, partition: i32, offset: i64) -> CommittedOffset {
        CommittedOffset {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: -1,
            metadata: None,
            error: 0,
        }
    }

    #[test]
    fn an_unstable_partition_is_answered_with_its_error_asked_or_not() {
        // Under require_stable, a partition with offsets pending in an open transaction
        // comes back from Kafka as UNSTABLE_OFFSET_COMMIT with offset -1.
        let unstable = CommittedOffset {
            error: ResponseError::UnstableOffsetCommit.code(),
            ..committed("a", 1, -1)
        };
        let upstream = vec![committed("a", 0, 5), unstable];
        let all = OffsetFetchQuery {
            topics: None,
            require_stable: true,
            member_id: None,
            member_epoch: -1,
        };
        let listed: Vec<(i32, i64, i16)> = fetch_result(&all, upstream.clone()).topics[0]
            .1
            .iter()
            .map(|p| (p.partition_index, p.committed_offset, p.error_code))
            .collect();
        assert_eq!(listed, vec![(0, 5, 0), (1, -1, 88)]);
        let asked = OffsetFetchQuery {
            topics: Some(vec![("a".into(), vec![1])]),
            ..all
        };
        assert_eq!(fetch_result(&asked, upstream).topics[0].1[0].error_code, 88);
    }

    #[test]
    fn an_upstream_answer_is_read_in_the_order_asked_and_all_committed_by_topic() {
        let upstream = vec![
            committed("b", 1, 7),
            committed("a", 0, 5),
            committed("a", 2, -1),
        ];
        let asked = OffsetFetchQuery {
            topics: Some(vec![("a".into(), vec![2, 0, 9])]),
            require_stable: false,
            member_id: None,
            member_epoch: -1,
        };
        let r = fetch_result(&asked, upstream.clone());
        let offsets: Vec<(i32, i64)> = r.topics[0]
            .1
            .iter()
            .map(|p| (p.partition_index, p.committed_offset))
            .collect();
        assert_eq!(offsets, vec![(2, -1), (0, 5), (9, -1)]);
        let all = fetch_result(
            &OffsetFetchQuery {
                topics: None,
                ..asked
            },
            upstream,
        );
        let listed: Vec<(String, Vec<i32>)> = all
            .topics
            .iter()
            .map(|(t, ps)| (t.clone(), ps.iter().map(|p| p.partition_index).collect()))
            .collect();
        assert_eq!(listed, vec![("a".into(), vec![0]), ("b".into(), vec![1])]);
    }
}
