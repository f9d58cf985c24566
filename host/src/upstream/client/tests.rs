//! The client against a real noida-db (one per test, fresh data dir). Needs the `noida-db`
//! binary: `$NOIDA_DB` or on `PATH` (`support.rs` says how to install it).

mod calls;
mod offsets;
pub(crate) mod support;

use super::{CommittedOffset, PartitionError, UpstreamClient};
use crate::coordinator::OffsetRecord;
use support::Noida;

pub(super) fn record(
    topic: &str,
    partition: i32,
    offset: i64,
    leader_epoch: i32,
    metadata: &str,
) -> OffsetRecord {
    OffsetRecord {
        topic: topic.to_owned(),
        partition,
        offset,
        leader_epoch,
        metadata: Some(metadata.to_owned()),
    }
}

pub(super) fn committed(
    topic: &str,
    partition: i32,
    offset: i64,
    leader_epoch: i32,
    metadata: Option<&str>,
) -> CommittedOffset {
    CommittedOffset {
        topic: topic.to_owned(),
        partition,
        offset,
        leader_epoch,
        metadata: metadata.map(str::to_owned),
        error: 0,
    }
}

pub(super) fn codes(errors: &[PartitionError]) -> Vec<(i32, i16)> {
    let mut codes: Vec<_> = errors.iter().map(|e| (e.partition, e.error)).collect();
    codes.sort();
    codes
}

pub(super) fn sorted(mut offsets: Vec<CommittedOffset>) -> Vec<CommittedOffset> {
    offsets.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    offsets
}

pub(super) fn parts(topic: &str, partitions: &[i32]) -> Vec<(String, Vec<i32>)> {
    vec![(topic.to_owned(), partitions.to_vec())]
}

/// A noida with topic `t` of `partitions` partitions, and a client of it.
pub(super) async fn cluster(partitions: i32) -> (Noida, UpstreamClient) {
    let noida = Noida::start();
    let client = noida.client();
    assert_eq!(
        client
            .create_topic("t", partitions, 1)
            .await
            .expect("create t"),
        0
    );
    (noida, client)
}
