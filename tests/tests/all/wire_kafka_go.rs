//! kafka-go's JoinGroup metadata over real sockets (segmentio/kafka-go#1156): every kafka-go
//! release marks its Subscription version 1 but writes only version 0's fields (topics, user
//! data), no owned partitions. The host reads those bytes as version 0, as sarama does, so a
//! kafka-go member gets the partitions of the topics it names. Before, the host took the
//! metadata for "not a Subscription", assigned the member nothing, and kafka-go, finding its
//! assignment empty, rejoined about a thousand times a second.

use assignor_host_tests::{KafkaClient, TestHost, decode_assignment, str, subscription};
use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{GroupId, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest};

/// Version 1, one topic "t", null user data, then nothing: what kafka-go sends.
const KAFKA_GO_METADATA: [u8; 13] = [0, 1, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];

async fn host() -> TestHost {
    TestHost::with_config(|c| {
        c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
            name: "t".into(),
            partitions: 3,
            partition_racks: Vec::new(),
        }];
        c.coordinator.initial_rebalance_delay_ms = 0;
    })
    .await
}

fn join(group: &str, member_id: &str, metadata: Bytes) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(str(member_id))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(str("range"))
                .with_metadata(metadata),
        ])
}

/// Joins `group` alone with `metadata` (the KIP-394 two-step join) and syncs: the member's
/// decoded assignment.
async fn join_alone(
    client: &mut KafkaClient,
    group: &str,
    metadata: Bytes,
) -> Vec<(String, Vec<i32>)> {
    let first: JoinGroupResponse = client
        .call(&join(group, "", metadata.clone()), 5)
        .await
        .unwrap();
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    let member_id = first.member_id.to_string();
    let joined = client
        .call(&join(group, &member_id, metadata), 5)
        .await
        .unwrap();
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    let synced = client
        .call(
            &SyncGroupRequest::default()
                .with_group_id(GroupId(str(group)))
                .with_generation_id(joined.generation_id)
                .with_member_id(str(&member_id)),
            3,
        )
        .await
        .unwrap();
    assert_eq!(synced.error_code, 0);
    decode_assignment(synced.assignment).unwrap()
}

#[tokio::test]
async fn a_kafka_go_member_gets_the_partitions_of_its_topic() {
    let host = host().await;
    let mut client = host.client().await;
    let every_partition = [("t".to_owned(), vec![0, 1, 2])];
    assert_eq!(
        join_alone(
            &mut client,
            "kafka-go",
            Bytes::from_static(&KAFKA_GO_METADATA)
        )
        .await,
        every_partition,
        "kafka-go's version-1 metadata without owned partitions"
    );
    // The same member as a conforming client writes it, version 0: the same answer.
    assert_eq!(
        join_alone(&mut client, "version-0", subscription(&["t"], 0)).await,
        every_partition
    );
    host.stop().await;
}
