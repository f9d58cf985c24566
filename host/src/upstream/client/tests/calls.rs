//! End offsets, topics, a cluster that is not there, bad arguments, and the client's threads.

use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;

use super::support::{Kafka, free_port, unique};
use super::{cluster, parts, record};
use crate::upstream::client::{ClientError, ClientSettings, EndOffset, UpstreamClient};

#[tokio::test]
async fn end_offsets_are_the_number_of_records_produced_to_each_partition() {
    let (kafka, client, n) = cluster(3).await;
    kafka.produce(&n.t, &[5, 0, 3]);
    let asked: Vec<(String, i32)> = (0..3).map(|p| (n.t.clone(), p)).collect();
    let mut ends = client.end_offsets(&asked).await.expect("end offsets");
    ends.sort_by_key(|e| e.partition);
    // Kafka answers with the partition's leader epoch, 0 for a new topic (noida-db 0.2.3 sent
    // -1, "none").
    let end = |partition, offset| EndOffset {
        topic: n.t.clone(),
        partition,
        offset,
        leader_epoch: 0,
        error: 0,
    };
    assert_eq!(ends, [end(0, 5), end(1, 0), end(2, 3)]);
}

#[tokio::test]
async fn create_topic_and_create_partitions_change_the_metadata_and_report_kafka_codes() {
    let kafka = Kafka::shared().await;
    let client = kafka.client();
    let (orders, nope) = (unique("orders"), unique("nope"));
    assert_eq!(client.create_topic(&orders, 3, 1).await.expect("create"), 0);
    kafka.wait_for_partitions(&orders, 3);
    let exists = ResponseError::TopicAlreadyExists.code();
    assert_eq!(exists, 36);
    assert_eq!(
        client
            .create_topic(&orders, 3, 1)
            .await
            .expect("create again"),
        exists
    );

    assert_eq!(client.create_partitions(&orders, 5).await.expect("grow"), 0);
    kafka.wait_for_partitions(&orders, 5);
    let no_increase = ResponseError::InvalidPartitions.code();
    assert_eq!(
        client
            .create_partitions(&orders, 5)
            .await
            .expect("grow to the same"),
        no_increase
    );
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!(
        client
            .create_partitions(&nope, 2)
            .await
            .expect("grow unknown"),
        unknown
    );
    assert_eq!(kafka.partition_count(&nope), None);
}

#[tokio::test]
async fn with_nothing_listening_every_call_fails_within_its_timeout() {
    let timeout = Duration::from_secs(1);
    let mut settings = ClientSettings::new(vec![format!("127.0.0.1:{}", free_port())]);
    settings.request_timeout = timeout;
    let client = UpstreamClient::connect(settings).expect("connect needs no cluster");
    let offsets = [record("t", 0, 1, -1, "")];
    let bounded = |result: Result<(), ClientError>, started: Instant, call: &str| {
        let elapsed = started.elapsed();
        assert!(elapsed <= 3 * timeout, "{call} took {elapsed:?}");
        let error = result.expect_err(call);
        assert!(
            matches!(
                error,
                ClientError::Unreachable { .. } | ClientError::TimedOut { .. }
            ),
            "{call}: {error}"
        );
        error
    };
    let started = Instant::now();
    let (commit, fetch, delete_offsets, delete_group, ends, topic, grow) = tokio::join!(
        async {
            bounded(
                client.commit_offsets("g", &offsets).await.map(drop),
                started,
                "commit",
            )
        },
        async {
            bounded(
                client.fetch_offsets("g", None).await.map(drop),
                started,
                "fetch",
            )
        },
        async {
            bounded(
                client
                    .delete_offsets("g", &parts("t", &[0]))
                    .await
                    .map(drop),
                started,
                "delete offsets",
            )
        },
        async {
            bounded(
                client.delete_group("g").await.map(drop),
                started,
                "delete group",
            )
        },
        async {
            bounded(
                client.end_offsets(&[("t".to_owned(), 0)]).await.map(drop),
                started,
                "end offsets",
            )
        },
        async {
            bounded(
                client.create_topic("t", 1, 1).await.map(drop),
                started,
                "create topic",
            )
        },
        async {
            bounded(
                client.create_partitions("t", 2).await.map(drop),
                started,
                "grow",
            )
        },
    );
    // Every call saw the refused connections, so the errors say so.
    for error in [
        commit,
        fetch,
        delete_offsets,
        delete_group,
        ends,
        topic,
        grow,
    ] {
        assert!(matches!(error, ClientError::Unreachable { .. }), "{error}");
    }
}

#[tokio::test]
async fn bad_settings_and_arguments_fail_at_once() {
    let error = UpstreamClient::connect(ClientSettings::new(Vec::new())).expect_err("no bootstrap");
    assert!(matches!(error, ClientError::Create(_)), "{error}");

    let mut settings = ClientSettings::new(vec![format!("127.0.0.1:{}", free_port())]);
    settings.request_timeout = Duration::from_millis(300);
    let client = UpstreamClient::connect(settings).expect("connect");
    // A group call goes on the host's own connection: nothing listens, so it is unreachable,
    // with the refusal named.
    let error = client
        .commit_offsets("g", &[record("t", 0, 1, -1, "")])
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(&error, ClientError::Unreachable { call: "commit_offsets", detail } if detail.contains("refused")),
        "{error}"
    );
    // Counts no cluster takes are refused before anything is sent: at once, although nothing
    // listens.
    let started = Instant::now();
    let error = client
        .create_partitions("t", -1)
        .await
        .expect_err("negative count");
    assert!(
        matches!(&error, ClientError::InvalidArgument { call: "create_partitions", message } if message.contains("-1")),
        "{error}"
    );
    let error = client
        .create_topic("t", 0, 1)
        .await
        .expect_err("no partitions");
    assert!(
        matches!(
            &error,
            ClientError::InvalidArgument {
                call: "create_topic",
                ..
            }
        ),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}
