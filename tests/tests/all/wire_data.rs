//! The data APIs a consumer touches on a host that stores no messages: ListOffsets answers 0,
//! Fetch answers empty and holds for `max_wait_ms`, Produce is refused with its reason.

use assignor_host_tests::{TestHost, topic_name};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiVersionsRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};

fn list_offsets(topic: &str, queries: &[(i32, i64)]) -> ListOffsetsRequest {
    ListOffsetsRequest::default().with_topics(vec![
        ListOffsetsTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(
                queries
                    .iter()
                    .map(|&(partition, timestamp)| {
                        ListOffsetsPartition::default()
                            .with_partition_index(partition)
                            .with_timestamp(timestamp)
                    })
                    .collect(),
            ),
    ])
}

#[tokio::test]
async fn list_offsets_answers_an_empty_log_at_every_version() {
    let host = TestHost::with_topics(&[("t", 2)]).await;
    let mut client = host.client().await;
    for version in 1..=10 {
        // latest, earliest, a timestamp, a partition that does not exist
        let request = list_offsets("t", &[(0, -1), (1, -2), (0, 1_700_000_000_000), (5, -1)]);
        let response = client.call(&request, version).await.unwrap();
        let answers: Vec<(i32, i16, i64)> = response.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.error_code, p.offset))
            .collect();
        assert_eq!(
            answers,
            [(0, 0, 0), (1, 0, 0), (0, 0, -1), (5, 3, -1)],
            "v{version}"
        );
        if version >= 4 {
            assert!(
                response.topics[0]
                    .partitions
                    .iter()
                    .all(|p| p.leader_epoch == -1)
            );
        }
    }
    let unknown = client
        .call(&list_offsets("nope", &[(0, -2)]), 5)
        .await
        .unwrap();
    assert_eq!(unknown.topics[0].partitions[0].error_code, 3);
    host.stop().await;
}

fn fetch(topic: &str, partitions: &[i32], max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&p| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(1 << 20)
                        })
                        .collect(),
                ),
        ])
}

#[tokio::test]
async fn fetch_answers_well_formed_empty_partitions_at_every_version() {
    let host = TestHost::with_topics(&[("t", 2)]).await;
    let mut client = host.client().await;
    for version in 4..=12 {
        let response = client
            .call(&fetch("t", &[0, 1, 9], 1), version)
            .await
            .unwrap();
        if version >= 7 {
            assert_eq!(response.error_code, 0);
            assert_eq!(response.session_id, 0, "sessions are declined");
        }
        let partitions = &response.responses[0].partitions;
        let summary: Vec<(i32, i16, i64)> = partitions
            .iter()
            .map(|p| (p.partition_index, p.error_code, p.high_watermark))
            .collect();
        assert_eq!(summary, [(0, 0, 0), (1, 0, 0), (9, 3, -1)], "v{version}");
        for p in &partitions[..2] {
            assert_eq!(p.last_stable_offset, 0);
            assert_eq!(p.records.as_ref().map(|r| r.len()), Some(0));
            if version >= 5 {
                assert_eq!(p.log_start_offset, 0);
            }
        }
    }
    host.stop().await;
}

/// A consumer resuming from a committed offset is at the end of the (empty) partition there:
/// librdkafka raises "end of partition" (kcat `-e`, `enable.partition.eof`) only when its fetch
/// offset equals the high watermark, so a watermark of 0 kept such a consumer short of the end
/// forever.
#[tokio::test]
async fn fetch_from_a_committed_offset_is_at_the_end_of_the_partition_for_librdkafka_eof() {
    let host = TestHost::with_topics(&[("t", 2)]).await;
    let mut client = host.client().await;
    let mut request = fetch("t", &[0, 1], 1);
    request.topics[0].partitions[0].fetch_offset = 42;
    for version in 4..=12 {
        let response = client.call(&request, version).await.unwrap();
        let summary: Vec<(i32, i16, i64, i64)> = response.responses[0]
            .partitions
            .iter()
            .map(|p| {
                (
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                )
            })
            .collect();
        assert_eq!(summary, [(0, 0, 42, 42), (1, 0, 0, 0)], "v{version}");
        if version >= 5 {
            assert_eq!(response.responses[0].partitions[0].log_start_offset, 0);
        }
    }
    host.stop().await;
}

#[tokio::test]
async fn fetch_is_held_without_blocking_other_connections() {
    let host = TestHost::with_topics(&[("t", 1)]).await;
    let mut fetcher = host.client().await;
    // A fetch that would be held for a minute.
    fetcher.send(&fetch("t", &[0], 60_000), 12).await.unwrap();

    // Another connection is served meanwhile.
    let mut other = host.client().await;
    let metadata = other
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await
        .unwrap();
    assert_eq!(metadata.topics.len(), 1);
    let versions = other.call(&ApiVersionsRequest::default(), 2).await.unwrap();
    assert_eq!(versions.error_code, 0);

    // Shutting down ends the hold: the fetcher's connection closes without an answer, which
    // shows the fetch was still held after the other connection's answers.
    host.stop().await;
    assert!(fetcher.is_closed_by_host().await.unwrap());
}

#[tokio::test]
async fn a_held_fetch_is_answered_when_max_wait_elapses_and_sessions_are_declined() {
    let host = TestHost::with_topics(&[("t", 1)]).await;
    let mut client = host.client().await;
    let response = client.call(&fetch("t", &[0], 50), 12).await.unwrap();
    assert_eq!(response.responses[0].partitions[0].error_code, 0);

    let incremental = fetch("t", &[0], 50)
        .with_session_id(1234)
        .with_session_epoch(3);
    let response = client.call(&incremental, 12).await.unwrap();
    assert_eq!(response.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");
    host.stop().await;
}

fn produce(topic: &str, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(1000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(topic_name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(bytes::Bytes::from_static(b"not really records"))),
                ]),
        ])
}

#[tokio::test]
async fn produce_is_refused_per_partition_with_the_reason() {
    let host = TestHost::with_topics(&[("t", 1)]).await;
    let mut client = host.client().await;
    for version in 3..=12 {
        let response = client.call(&produce("t", -1), version).await.unwrap();
        let partition = &response.responses[0].partition_responses[0];
        assert_eq!(partition.index, 0);
        assert_eq!(partition.error_code, 44, "POLICY_VIOLATION, v{version}");
        if version >= 8 {
            let message = partition.error_message.as_ref().unwrap();
            assert!(message.contains("stores no messages"), "{message}");
        }
    }
    host.stop().await;
}

#[tokio::test]
async fn produce_with_acks_zero_gets_no_answer() {
    let host = TestHost::with_topics(&[("t", 1)]).await;
    let mut client = host.client().await;
    client.send(&produce("t", 0), 9).await.unwrap();
    // The next answer on the connection belongs to the next request: nothing was sent for
    // the produce (`call` checks the correlation id).
    let response = client
        .call(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(response.error_code, 0);
    host.stop().await;
}
