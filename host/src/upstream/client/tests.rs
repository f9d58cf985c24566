//! The client against Apache Kafka 4.4 (tests/kafka): the process's shared cluster, each test
//! with topic and group names of its own.

mod calls;
mod offsets;
pub(crate) mod support;

use super::{CommittedOffset, PartitionError, UpstreamClient};
use crate::coordinator::OffsetRecord;
use support::{Kafka, unique};

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

/// The test's names in the shared cluster: a topic, made with the partitions asked for, and
/// a group.
pub(super) struct Names {
    pub t: String,
    pub g: String,
}

/// The shared Kafka with a new topic of `partitions` partitions, a client of it, and the
/// test's names.
pub(super) async fn cluster(partitions: i32) -> (Kafka, UpstreamClient, Names) {
    let kafka = Kafka::shared().await;
    let client = kafka.client();
    let names = Names {
        t: unique("t"),
        g: unique("g"),
    };
    assert_eq!(
        client
            .create_topic(&names.t, partitions, 1)
            .await
            .expect("create the topic"),
        0
    );
    // Kafka refuses a commit for a topic its Metadata does not list yet.
    kafka.wait_for_partitions(&names.t, partitions as usize);
    (kafka, client, names)
}
