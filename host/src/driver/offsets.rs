//! Where committed offsets live, and how the shard executes the coordinator's offset effects.
//!
//! Standalone, a shard keeps its groups' offsets in an [`OffsetTable`] and writes them to the
//! store before it answers (the write blocks the shard, as a store write always did: a local
//! redb commit). In proxy mode they live in the upstream cluster, behind [`RemoteOffsets`]
//! (the host's client of the cluster, wired in by the server): the calls of one group run one
//! after another in a task of the group's own ([`RemoteQueues`]), with the waiting reply, so a
//! slow upstream delays that group and no other group of the shard, and a group's commits land
//! upstream in the order the coordinator accepted them (two in flight could otherwise overtake
//! each other and move an offset back). A failed write or read answers
//! COORDINATOR_NOT_AVAILABLE, which every client retries (it looks the coordinator up again).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    OffsetCommitResponse, OffsetDeleteResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};

use crate::coordinator::{OffsetFetchQuery, OffsetFetchResult, OffsetRecord};

/// A boxed future, as the trait objects below return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A Kafka error code for each partition an answer names, by `(topic, partition)`.
pub type PartitionCodes = Vec<((String, i32), i16)>;

/// Committed offsets kept outside this host (proxy mode: the upstream cluster). Every call is
/// bounded in time by the implementation; an `Err` is a message for the logs.
pub trait RemoteOffsets: Send + Sync + 'static {
    /// Commits `offsets` for `group`; one Kafka error code per record, in order.
    fn commit(
        &self,
        group: String,
        offsets: Vec<OffsetRecord>,
    ) -> BoxFuture<Result<Vec<i16>, String>>;
    /// Commits a transaction's offsets for `group` inside the client's transaction (`request`
    /// as the client sent it, at its `version`); the cluster's code for each partition it
    /// answered for, by `(topic, partition)`.
    fn commit_txn(
        &self,
        group: String,
        version: i16,
        request: TxnOffsetCommitRequest,
    ) -> BoxFuture<Result<PartitionCodes, String>>;
    /// The group's committed offsets for `query` (-1 for a partition never committed).
    fn fetch(
        &self,
        group: String,
        query: OffsetFetchQuery,
    ) -> BoxFuture<Result<OffsetFetchResult, String>>;
    /// Deletes some partitions' offsets; one Kafka error code per partition, in order.
    fn delete(
        &self,
        group: String,
        partitions: Vec<(String, i32)>,
    ) -> BoxFuture<Result<Vec<i16>, String>>;
    /// Deletes every offset of the group; the Kafka error code for the group.
    fn delete_group(&self, group: String) -> BoxFuture<Result<i16, String>>;
}

/// One group's upstream calls, in order: a task per group with work, gone after a quiet
/// while and started again by the next call.
pub(super) struct RemoteQueues {
    pub(super) remote: Arc<dyn RemoteOffsets>,
    workers: HashMap<String, mpsc::UnboundedSender<BoxFuture<()>>>,
}

/// How long a group's worker waits for more work before it ends.
const IDLE: Duration = Duration::from_secs(30);

impl RemoteQueues {
    pub(super) fn new(remote: Arc<dyn RemoteOffsets>) -> RemoteQueues {
        RemoteQueues {
            remote,
            workers: HashMap::new(),
        }
    }

    /// Runs `job` after every job submitted before it for `group`.
    pub(super) fn submit(&mut self, group: &str, job: BoxFuture<()>) {
        let job = match self.workers.get(group) {
            Some(queue) => match queue.send(job) {
                Ok(()) => return,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        if self.workers.len() >= 1024 {
            self.workers.retain(|_, queue| !queue.is_closed());
        }
        let (queue, jobs) = mpsc::unbounded_channel();
        let _ = queue.send(job);
        self.workers.insert(group.to_owned(), queue);
        tokio::spawn(work(jobs));
    }
}

async fn work(mut jobs: mpsc::UnboundedReceiver<BoxFuture<()>>) {
    loop {
        match tokio::time::timeout(IDLE, jobs.recv()).await {
            Ok(Some(job)) => job.await,
            Ok(None) => return,
            Err(_) => {
                // Closing first means no job is lost between the timeout and the end: a later
                // submit sees a closed queue and starts a new worker.
                jobs.close();
                while let Ok(job) = jobs.try_recv() {
                    job.await;
                }
                return;
            }
        }
    }
}

/// The error every partition gets when offsets could not be written or read.
pub(super) const UNAVAILABLE: i16 = ResponseError::CoordinatorNotAvailable.code();

/// `response` with the written partitions' codes: the coordinator made one record for each
/// partition it let through (code 0), in the response's order (`coordinator::offset_commit`), so
/// the `i`th such partition takes `codes[i]` (one code per record, as the write answered), or
/// `failed` for all of them (a write that did not happen). Partitions the coordinator refused
/// keep their code.
pub(super) fn merge_commit(
    mut response: OffsetCommitResponse,
    codes: Result<&[i16], i16>,
) -> OffsetCommitResponse {
    let mut written = 0;
    for topic in &mut response.topics {
        for partition in &mut topic.partitions {
            if partition.error_code != 0 {
                continue;
            }
            partition.error_code = match codes {
                Ok(codes) => codes.get(written).copied().unwrap_or(UNAVAILABLE),
                Err(code) => code,
            };
            written += 1;
        }
    }
    response
}

/// `response` with the cluster's codes for a transaction's offsets: the code it answered for
/// each partition the coordinator let through (`codes`), UNKNOWN_SERVER_ERROR for one it did
/// not answer for (not known to be written), or `failed` for all (no answer at all).
/// Partitions the coordinator refused keep their code.
pub(super) fn merge_txn_commit(
    mut response: TxnOffsetCommitResponse,
    codes: Result<&PartitionCodes, i16>,
) -> TxnOffsetCommitResponse {
    for topic in &mut response.topics {
        for partition in &mut topic.partitions {
            if partition.error_code != 0 {
                continue;
            }
            partition.error_code = match codes {
                Ok(codes) => codes
                    .iter()
                    .find(|((t, p), _)| t == topic.name.as_str() && *p == partition.partition_index)
                    .map_or(ResponseError::UnknownServerError.code(), |(_, code)| *code),
                Err(code) => code,
            };
        }
    }
    response
}

/// `response` with the deleted partitions' codes, as [`merge_commit`] does for commits.
pub(super) fn merge_delete(
    mut response: OffsetDeleteResponse,
    partitions: &[(String, i32)],
    codes: Result<&[i16], i16>,
) -> OffsetDeleteResponse {
    for topic in &mut response.topics {
        for partition in &mut topic.partitions {
            if partition.error_code != 0 {
                continue;
            }
            let index = partitions
                .iter()
                .position(|(t, p)| t == topic.name.as_str() && *p == partition.partition_index);
            partition.error_code = match (index, codes) {
                (Some(i), Ok(codes)) => codes.get(i).copied().unwrap_or(UNAVAILABLE),
                (Some(_), Err(code)) => code,
                (None, _) => 0,
            };
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::messages::offset_commit_response::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    };
    use kafka_protocol::protocol::StrBytes;

    use super::*;

    fn response(parts: &[(&str, i32, i16)]) -> OffsetCommitResponse {
        OffsetCommitResponse::default().with_topics(
            parts
                .iter()
                .map(|(t, p, e)| {
                    OffsetCommitResponseTopic::default()
                        .with_name(TopicName(StrBytes::from_string(t.to_string())))
                        .with_partitions(vec![
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(*p)
                                .with_error_code(*e),
                        ])
                })
                .collect(),
        )
    }

    fn codes(r: &OffsetCommitResponse) -> Vec<i16> {
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }

    #[test]
    fn a_transactional_commit_answer_takes_the_clusters_codes_and_keeps_the_refusals() {
        use kafka_protocol::messages::txn_offset_commit_response::{
            TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
        };
        let partition = |index: i32, code: i16| {
            TxnOffsetCommitResponsePartition::default()
                .with_partition_index(index)
                .with_error_code(code)
        };
        // a-2 was refused here (metadata too large); a-0 and a-1 went up.
        let asked = TxnOffsetCommitResponse::default().with_topics(vec![
            TxnOffsetCommitResponseTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("a")))
                .with_partitions(vec![partition(0, 0), partition(1, 0), partition(2, 12)]),
        ]);
        let txn_codes = |r: &TxnOffsetCommitResponse| -> Vec<i16> {
            r.topics[0]
                .partitions
                .iter()
                .map(|p| p.error_code)
                .collect()
        };
        // The cluster fenced the producer on a-0 and said nothing of a-1.
        let answered = [(("a".to_owned(), 0), 90)];
        let merged = merge_txn_commit(asked.clone(), Ok(&answered.to_vec()));
        assert_eq!(txn_codes(&merged), vec![90, -1, 12]);
        let failed = merge_txn_commit(asked, Err(UNAVAILABLE));
        assert_eq!(txn_codes(&failed), vec![UNAVAILABLE, UNAVAILABLE, 12]);
    }

    #[test]
    fn a_commit_answer_takes_the_writes_codes_and_keeps_the_coordinators_refusals() {
        // b-1 was written but refused upstream; c-2 was refused by the coordinator (12), so it
        // has no record and the two codes are a-0's and b-1's.
        let asked = response(&[("a", 0, 0), ("c", 2, 12), ("b", 1, 0)]);
        let merged = merge_commit(asked.clone(), Ok(&[0, 25]));
        assert_eq!(codes(&merged), vec![0, 12, 25]);
        let failed = merge_commit(asked.clone(), Err(UNAVAILABLE));
        assert_eq!(codes(&failed), vec![UNAVAILABLE, 12, UNAVAILABLE]);
        // A write that answered for fewer records than it was given: the rest are not known
        // to be written.
        let short = merge_commit(asked, Ok(&[0]));
        assert_eq!(codes(&short), vec![0, 12, UNAVAILABLE]);
    }
}
