//! Produce, Fetch and ListOffsets: stored on the leader only, read back byte for byte, and the
//! KIP-951 leader hints a non-leader gives.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ListOffsetsRequest, MetadataRequest};

use super::{batch, connect, decode, fetch, produce, three_brokers};
use crate::fake_cluster::MAX_FETCH_WAIT;
use crate::topic_name;

#[tokio::test]
async fn a_produce_to_the_leader_is_fetched_back_byte_for_byte() {
    let cluster = three_brokers().await;
    assert_eq!(cluster.leader("orders", 1), 2);
    let mut leader = connect(&cluster, 2).await;
    let first = batch(&["a", "b", "c"]);
    for version in [3, 9, 11] {
        let records = if version == 3 {
            first.clone()
        } else {
            batch(&["d"])
        };
        let response = leader
            .call(&produce("orders", 1, records, -1), version)
            .await
            .unwrap();
        let p = &response.responses[0].partition_responses[0];
        let expected_base = match version {
            3 => 0,
            9 => 3,
            _ => 4,
        };
        assert_eq!(
            (p.error_code, p.base_offset),
            (0, expected_base),
            "v{version}"
        );
    }
    for version in [4, 11, 12, 13, 16] {
        let response = leader
            .call(&fetch("orders", 1, 0, version), version)
            .await
            .unwrap();
        let p = &response.responses[0].partitions[0];
        assert_eq!((p.error_code, p.high_watermark), (0, 5), "v{version}");
        let records = p.records.clone().unwrap();
        assert_eq!(
            &records[..first.len()],
            &first[..],
            "the first batch as produced"
        );
        let values = decode(&records);
        let expected = [(0, "a"), (1, "b"), (2, "c"), (3, "d"), (4, "d")];
        let expected: Vec<(i64, String)> = expected.iter().map(|&(o, v)| (o, v.into())).collect();
        assert_eq!(values, expected, "v{version}");
        if version >= 13 {
            assert_eq!(response.responses[0].topic_id, super::topic_id("orders"));
        } else {
            assert_eq!(response.responses[0].topic.as_str(), "orders");
        }
    }
    let later = leader.call(&fetch("orders", 1, 4, 16), 16).await.unwrap();
    let values = decode(later.responses[0].partitions[0].records.as_ref().unwrap());
    assert_eq!(
        values,
        [(4, "d".to_owned())],
        "from the batch holding the offset"
    );
    let past = leader.call(&fetch("orders", 1, 6, 16), 16).await.unwrap();
    assert_eq!(
        past.responses[0].partitions[0].error_code, 1,
        "OFFSET_OUT_OF_RANGE"
    );
    assert_eq!(cluster.records("orders", 1).len(), 3);
    assert!(cluster.records("orders", 0).is_empty());
}

#[tokio::test]
async fn a_produce_to_a_follower_names_the_leader_from_v10() {
    let cluster = three_brokers().await;
    let leader_port = i32::from(cluster.broker_addr(2).port());
    let mut follower = connect(&cluster, 1).await;
    let hinted = follower
        .call(&produce("orders", 4, batch(&["x"]), 1), 10)
        .await
        .unwrap();
    let p = &hinted.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 6, "NOT_LEADER_OR_FOLLOWER");
    assert_eq!(
        (*p.current_leader.leader_id, p.current_leader.leader_epoch),
        (2, 0)
    );
    let endpoints: Vec<(i32, String, i32, Option<String>)> = hinted
        .node_endpoints
        .iter()
        .map(|e| {
            (
                *e.node_id,
                e.host.to_string(),
                e.port,
                e.rack.as_ref().map(|r| r.to_string()),
            )
        })
        .collect();
    assert_eq!(
        endpoints,
        [(2, "127.0.0.1".into(), leader_port, Some("rack-2".into()))]
    );
    let plain = follower
        .call(&produce("orders", 4, batch(&["x"]), 1), 9)
        .await
        .unwrap();
    let p = &plain.responses[0].partition_responses[0];
    assert_eq!(
        (p.error_code, *p.current_leader.leader_id),
        (6, -1),
        "no hint before v10"
    );
    assert!(
        cluster.records("orders", 4).is_empty(),
        "nothing stored off the leader"
    );
    cluster.set_leader("orders", 4, 3);
    let moved = follower
        .call(&produce("orders", 4, batch(&["x"]), 1), 11)
        .await
        .unwrap();
    let p = &moved.responses[0].partition_responses[0];
    assert_eq!(
        (*p.current_leader.leader_id, p.current_leader.leader_epoch),
        (3, 1)
    );
    assert_eq!(
        moved.node_endpoints[0].port,
        i32::from(cluster.broker_addr(3).port())
    );
}

#[tokio::test]
async fn a_fetch_from_a_follower_names_the_leader_at_v16() {
    let cluster = three_brokers().await;
    let mut follower = connect(&cluster, 3).await;
    let hinted = follower.call(&fetch("audit", 0, 0, 16), 16).await.unwrap();
    let p = &hinted.responses[0].partitions[0];
    assert_eq!(p.error_code, 6);
    assert_eq!(
        (*p.current_leader.leader_id, p.current_leader.leader_epoch),
        (1, 0)
    );
    assert_eq!(hinted.node_endpoints.len(), 1);
    assert_eq!(*hinted.node_endpoints[0].node_id, 1);
    assert_eq!(
        hinted.node_endpoints[0].port,
        i32::from(cluster.broker_addr(1).port())
    );
    let plain = follower.call(&fetch("audit", 0, 0, 15), 15).await.unwrap();
    assert_eq!(plain.responses[0].partitions[0].error_code, 6);
    assert_eq!(
        *plain.responses[0].partitions[0].current_leader.leader_id,
        -1
    );
    assert!(plain.node_endpoints.is_empty());
}

#[tokio::test]
async fn an_empty_fetch_is_held_briefly_whatever_its_max_wait() {
    let cluster = three_brokers().await;
    let mut leader = connect(&cluster, 1).await;
    // Held for 60 s this would miss the client's 20 s deadline.
    let request = fetch("audit", 0, 0, 16).with_max_wait_ms(60_000);
    let started = tokio::time::Instant::now();
    let response = leader.call(&request, 16).await.unwrap();
    assert!(started.elapsed() >= MAX_FETCH_WAIT, "it was held");
    let p = &response.responses[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 0));
    assert!(p.records.as_ref().unwrap().is_empty());
}

#[tokio::test]
async fn an_acks_0_produce_is_unanswered_and_the_connection_goes_on() {
    let cluster = three_brokers().await;
    let mut leader = connect(&cluster, 3).await;
    let silent = leader
        .send(&produce("orders", 2, batch(&["quiet"]), 0), 11)
        .await
        .unwrap();
    let next = leader.send(&MetadataRequest::default(), 12).await.unwrap();
    let response = leader.receive::<MetadataRequest>(next, 12).await.unwrap();
    assert_eq!(response.brokers.len(), 3);
    leader
        .call(&ApiVersionsRequest::default(), 3)
        .await
        .unwrap();
    assert_eq!(cluster.records("orders", 2).len(), 1, "stored all the same");
    assert_eq!(
        cluster.requests(3),
        [
            (ApiKey::Produce, 11, silent),
            (ApiKey::Metadata, 12, next),
            (ApiKey::ApiVersions, 3, next + 1)
        ]
    );
}

#[tokio::test]
async fn list_offsets_answers_the_log_ends_on_the_leader() {
    let cluster = three_brokers().await;
    let mut leader = connect(&cluster, 3).await;
    leader
        .call(&produce("orders", 5, batch(&["a", "b"]), -1), 11)
        .await
        .unwrap();
    leader
        .call(&produce("orders", 5, batch(&["c"]), -1), 11)
        .await
        .unwrap();
    let request = |partition, timestamp| {
        ListOffsetsRequest::default().with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name("orders"))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ]),
        ])
    };
    for version in [1, 4, 7] {
        let answer = |r: kafka_protocol::messages::ListOffsetsResponse| {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.offset)
        };
        let latest = leader.call(&request(5, -1), version).await.unwrap();
        assert_eq!(answer(latest), (0, 3), "v{version}");
        let earliest = leader.call(&request(5, -2), version).await.unwrap();
        assert_eq!(answer(earliest), (0, 0));
        let by_time = leader.call(&request(5, 1001), version).await.unwrap();
        assert_eq!(answer(by_time), (0, 0), "the batch reaching 1001");
        let elsewhere = leader.call(&request(0, -1), version).await.unwrap();
        assert_eq!(answer(elsewhere), (6, -1));
    }
}
