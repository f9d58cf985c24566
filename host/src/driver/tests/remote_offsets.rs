//! Offsets kept upstream (proxy mode), through a fake [`RemoteOffsets`]: a group's commits land
//! in the order they were accepted even when the earlier ones are slower (transactional ones
//! too, at the client's version), a failed write is answered COORDINATOR_NOT_AVAILABLE, reads
//! come from the remote, and a slow group delays no other group of its shard.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetCommitResponse, TopicName, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::coordinator::{OffsetFetchResult, OffsetRecord, OffsetTable};

/// What the fake upstream holds: the offsets, the order commits were applied in, and the
/// delay of each group's next commits.
#[derive(Default)]
struct Upstream {
    table: Mutex<OffsetTable>,
    applied: Mutex<Vec<(String, i64)>>,
    delays: Mutex<BTreeMap<String, Vec<Duration>>>,
    fail: bool,
    /// The version each transactional commit was sent at.
    txn_versions: Mutex<Vec<i16>>,
}

/// A [`RemoteOffsets`] over [`Upstream`]; each commit waits its group's next delay first.
#[derive(Clone, Default)]
struct FakeRemote(Arc<Upstream>);

impl RemoteOffsets for FakeRemote {
    fn commit(
        &self,
        group: String,
        offsets: Vec<OffsetRecord>,
    ) -> BoxFuture<Result<Vec<i16>, String>> {
        let upstream = self.0.clone();
        Box::pin(async move {
            let delay = {
                let mut delays = upstream.delays.lock().unwrap();
                let queue = delays.entry(group.clone()).or_default();
                if queue.is_empty() {
                    Duration::ZERO
                } else {
                    queue.remove(0)
                }
            };
            tokio::time::sleep(delay).await;
            if upstream.fail {
                return Err("upstream unreachable".into());
            }
            upstream.table.lock().unwrap().commit(&group, &offsets);
            let mut applied = upstream.applied.lock().unwrap();
            applied.extend(offsets.iter().map(|o| (group.clone(), o.offset)));
            Ok(vec![0; offsets.len()])
        })
    }

    /// Applies at once, as `(group, offset)` with the offset negated (to tell it from a plain
    /// commit), and answers PRODUCER_FENCED for partition 1, as a cluster whose transaction
    /// coordinator fenced the producer there would.
    fn commit_txn(
        &self,
        group: String,
        version: i16,
        request: TxnOffsetCommitRequest,
    ) -> BoxFuture<Result<crate::driver::PartitionCodes, String>> {
        let upstream = self.0.clone();
        Box::pin(async move {
            upstream.txn_versions.lock().unwrap().push(version);
            let mut applied = upstream.applied.lock().unwrap();
            let mut codes = Vec::new();
            for t in &request.topics {
                for p in &t.partitions {
                    applied.push((group.clone(), -p.committed_offset));
                    let code = if p.partition_index == 1 { 90 } else { 0 };
                    codes.push(((t.name.to_string(), p.partition_index), code));
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
        let upstream = self.0.clone();
        Box::pin(async move {
            if upstream.fail {
                return Err("upstream unreachable".into());
            }
            Ok(upstream.table.lock().unwrap().fetch(&group, &query))
        })
    }

    fn delete(
        &self,
        group: String,
        partitions: Vec<(String, i32)>,
    ) -> BoxFuture<Result<Vec<i16>, String>> {
        let upstream = self.0.clone();
        Box::pin(async move {
            upstream.table.lock().unwrap().delete(&group, &partitions);
            Ok(vec![0; partitions.len()])
        })
    }

    fn delete_group(&self, group: String) -> BoxFuture<Result<i16, String>> {
        let upstream = self.0.clone();
        Box::pin(async move {
            upstream.table.lock().unwrap().delete_group(&group);
            Ok(0)
        })
    }
}

fn start_remote(remote: FakeRemote) -> Driver {
    let (_topics, topics_rx) = watch::channel(default_topics());
    let (_strategies, strategies_rx) = watch::channel(default_strategies());
    let config = DriverConfig {
        settings: DriverSettings {
            shards: Some(1),
            ..DriverSettings::default()
        },
        random_seed: false,
        remote_offsets: Some(Arc::new(remote)),
        ..DriverConfig::default()
    };
    // The senders may drop: a closed view channel only stops view updates.
    Driver::start(config, FakeRunner::native(), strategies_rx, topics_rx, None).unwrap()
}

/// A commit with generation -1 of `offset` for partition 0 of `t`.
fn commit(group: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ]),
        ])
}

fn codes(r: &OffsetCommitResponse) -> Vec<i16> {
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

async fn fetch(driver: &Driver, group: &str) -> OffsetFetchResult {
    let query = OffsetFetchQuery {
        topics: Some(vec![("t".into(), vec![0])]),
        require_stable: false,
        member_id: None,
        member_epoch: -1,
    };
    driver.call(group, ctx(8), query).await
}

#[tokio::test(start_paused = true)]
async fn driver_remote_commits_of_one_group_land_upstream_in_the_order_accepted() {
    let remote = FakeRemote::default();
    // The first commit is the slowest: started at once, it would land last.
    remote.0.delays.lock().unwrap().insert(
        "g".into(),
        (0..5).map(|i| Duration::from_millis(50 - 10 * i)).collect(),
    );
    let driver = start_remote(remote.clone());
    let mut answers = Vec::new();
    for offset in 1..=5 {
        let driver = driver.clone();
        answers.push(tokio::spawn(async move {
            driver.call("g", ctx(8), commit("g", offset)).await
        }));
        // Each request reaches the shard before the next is sent.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for answer in answers {
        assert_eq!(codes(&answer.await.unwrap()), vec![0]);
    }
    let applied: Vec<i64> = remote
        .0
        .applied
        .lock()
        .unwrap()
        .iter()
        .map(|(_, o)| *o)
        .collect();
    assert_eq!(applied, vec![1, 2, 3, 4, 5]);
    let read = fetch(&driver, "g").await;
    assert_eq!(
        read.topics[0].1[0].committed_offset, 5,
        "read from the remote"
    );
}

/// A TxnOffsetCommit of `offset` for partitions 0 and 1 of `t`, by no member (generation -1).
fn txn_commit(group: &str, offset: i64) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest::default()
        .with_transactional_id(StrBytes::from_static_str("tx").into())
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_producer_id(7.into())
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(
                    (0..2)
                        .map(|p| {
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                        })
                        .collect(),
                ),
        ])
}

fn txn_codes(r: &TxnOffsetCommitResponse) -> Vec<i16> {
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn driver_a_transactional_commit_goes_up_after_the_groups_earlier_commits() {
    let remote = FakeRemote::default();
    // The plain commit before it is slow: the transactional one must not overtake it.
    (remote.0.delays.lock().unwrap()).insert("g".into(), vec![Duration::from_millis(50)]);
    let driver = start_remote(remote.clone());
    let plain = {
        let driver = driver.clone();
        tokio::spawn(async move { driver.call("g", ctx(8), commit("g", 3)).await })
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    let txn = driver.call("g", ctx(4), txn_commit("g", 9)).await;
    // The cluster's own code for each partition reaches the client.
    assert_eq!(txn_codes(&txn), vec![0, 90]);
    assert_eq!(codes(&plain.await.unwrap()), vec![0]);
    let applied: Vec<i64> = (remote.0.applied.lock().unwrap())
        .iter()
        .map(|(_, o)| *o)
        .collect();
    assert_eq!(applied, vec![3, -9, -9]);
    assert_eq!(*remote.0.txn_versions.lock().unwrap(), vec![4]);
}

#[tokio::test(start_paused = true)]
async fn driver_a_failed_upstream_commit_is_answered_coordinator_not_available() {
    let remote = FakeRemote(Arc::new(Upstream {
        fail: true,
        ..Upstream::default()
    }));
    let driver = start_remote(remote);
    let answer = driver.call("g", ctx(8), commit("g", 7)).await;
    assert_eq!(
        codes(&answer),
        vec![ResponseError::CoordinatorNotAvailable.code()]
    );
    let read = fetch(&driver, "g").await;
    assert_eq!(
        read.error_code,
        ResponseError::CoordinatorNotAvailable.code()
    );
}

#[tokio::test(start_paused = true)]
async fn driver_a_slow_upstream_group_delays_no_other_group_of_its_shard() {
    let remote = FakeRemote::default();
    remote
        .0
        .delays
        .lock()
        .unwrap()
        .insert("slow".into(), vec![Duration::from_secs(10)]);
    let driver = start_remote(remote.clone());
    let slow = {
        let driver = driver.clone();
        tokio::spawn(async move { driver.call("slow", ctx(8), commit("slow", 1)).await })
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    let started = tokio::time::Instant::now();
    let fast = driver.call("fast", ctx(8), commit("fast", 2)).await;
    assert_eq!(codes(&fast), vec![0]);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the fast group waited for the slow one"
    );
    assert!(!slow.is_finished(), "the slow commit is still upstream");
    assert_eq!(codes(&slow.await.unwrap()), vec![0]);
}
