//! Metadata and FindCoordinator over a real socket at every version: the host is the only
//! broker, the controller, the coordinator of every group and the leader of every partition.

use assignor_host_tests::{TestHost, str, topic_name};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, MetadataRequest, MetadataResponse,
};

fn named(names: &[&str]) -> MetadataRequest {
    MetadataRequest::default().with_topics(Some(
        names
            .iter()
            .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
            .collect(),
    ))
}

fn topics(response: &MetadataResponse) -> Vec<(String, i16, usize)> {
    response
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map(|n| n.to_string()).unwrap_or_default(),
                t.error_code,
                t.partitions.len(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_version_describes_the_host_as_the_only_broker_and_leader() {
    let host = TestHost::with_topics(&[("orders", 3), ("audit", 1)]).await;
    let addr = host.addr();
    let mut client = host.client().await;
    for version in 0..=13 {
        let response = client.call(&named(&["orders"]), version).await.unwrap();
        assert_eq!(response.brokers.len(), 1, "v{version}");
        let broker = &response.brokers[0];
        assert_eq!(broker.node_id, BrokerId(1));
        assert_eq!(broker.host.as_str(), "127.0.0.1");
        assert_eq!(broker.port, i32::from(addr.port()));
        if version >= 1 {
            assert_eq!(response.controller_id, BrokerId(1), "v{version}");
        }
        if version >= 2 {
            assert_eq!(response.cluster_id.as_deref(), Some("assignor-host"));
        }
        assert_eq!(
            topics(&response),
            [("orders".to_owned(), 0, 3)],
            "v{version}"
        );
        for (index, partition) in response.topics[0].partitions.iter().enumerate() {
            assert_eq!(partition.partition_index, index as i32);
            assert_eq!(partition.error_code, 0);
            assert_eq!(partition.leader_id, BrokerId(1));
            assert_eq!(partition.replica_nodes, [BrokerId(1)]);
            assert_eq!(partition.isr_nodes, [BrokerId(1)]);
            if version >= 7 {
                assert_eq!(partition.leader_epoch, -1, "v{version}");
            }
        }
        let id = host.server().catalog().topics().id("orders").unwrap();
        if version >= 10 {
            assert!(!id.is_nil());
            assert_eq!(
                response.topics[0].topic_id, id,
                "v{version}: the catalog's id"
            );
        }
    }
    host.stop().await;
}

#[tokio::test]
async fn topics_are_found_by_id_from_v12_with_their_names() {
    let host = TestHost::with_topics(&[("orders", 3), ("audit", 1)]).await;
    let mut client = host.client().await;
    let id = host.server().catalog().topics().id("audit").unwrap();
    let by_id = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default()
            .with_topic_id(id)
            .with_name(None),
    ]));
    for version in 12..=13 {
        let response = client.call(&by_id, version).await.unwrap();
        assert_eq!(
            topics(&response),
            [("audit".to_owned(), 0, 1)],
            "v{version}"
        );
        assert_eq!(response.topics[0].topic_id, id);
    }
    // Every topic at v10+: each with its own id.
    let all = client
        .call(&MetadataRequest::default().with_topics(None), 10)
        .await
        .unwrap();
    let ids: Vec<_> = all.topics.iter().map(|t| t.topic_id).collect();
    assert_eq!(ids.len(), 2);
    assert!(
        ids.iter().all(|id| !id.is_nil()) && ids[0] != ids[1],
        "{ids:?}"
    );
    host.stop().await;
}

/// The Java client (kafka-clients 4.1+) asks for a broker-side regex's assigned topics with
/// `MetadataRequest.Builder.forTopicIds`, whose topics carry the id and an *empty* name (the
/// schema's default, not null). Kafka looks such a topic up by its id and ignores the name; the
/// host looked the empty name up and answered UNKNOWN_TOPIC_OR_PARTITION for "", so a Java
/// consumer subscribed with a `SubscriptionPattern` never resolved its assignment and consumed
/// nothing (tests/clients/test_java_client.py, the regex test).
#[tokio::test]
async fn a_topic_id_with_an_empty_name_is_looked_up_by_its_id_as_the_java_client_asks() {
    let host = TestHost::with_topics(&[("orders", 3), ("audit", 1)]).await;
    let mut client = host.client().await;
    let id = host.server().catalog().topics().id("orders").unwrap();
    let unknown = uuid::Uuid::from_u128(7);
    let as_java_asks = MetadataRequest::default()
        .with_topics(Some(
            [id, unknown]
                .into_iter()
                .map(|id| {
                    MetadataRequestTopic::default()
                        .with_topic_id(id)
                        .with_name(Some(topic_name("")))
                })
                .collect(),
        ))
        .with_allow_auto_topic_creation(false);
    for version in 12..=13 {
        let response = client.call(&as_java_asks, version).await.unwrap();
        assert_eq!(
            topics(&response),
            [("orders".to_owned(), 0, 3), (String::new(), 100, 0)],
            "v{version}: the known id by its name, the unknown one UNKNOWN_TOPIC_ID"
        );
        assert_eq!(response.topics[0].topic_id, id);
        assert_eq!(response.topics[1].topic_id, unknown);
        assert_eq!(response.topics[1].name, None, "v{version}");
    }
    host.stop().await;
}

#[tokio::test]
async fn all_topics_null_list_and_empty_list_follow_the_version_rules() {
    let host = TestHost::with_topics(&[("b", 2), ("a", 1)]).await;
    let mut client = host.client().await;
    // v1+: null topics = all topics.
    let all = MetadataRequest::default().with_topics(None);
    let response = client.call(&all, 9).await.unwrap();
    assert_eq!(
        topics(&response),
        [("a".to_owned(), 0, 1), ("b".to_owned(), 0, 2)]
    );
    // v0: an empty list means all topics; v1+: it means none.
    let empty = MetadataRequest::default().with_topics(Some(Vec::new()));
    assert_eq!(client.call(&empty, 0).await.unwrap().topics.len(), 2);
    assert!(client.call(&empty, 1).await.unwrap().topics.is_empty());
    host.stop().await;
}

#[tokio::test]
async fn unknown_topics_and_topic_ids_are_errors_per_topic() {
    let host = TestHost::with_topics(&[("known", 1)]).await;
    let mut client = host.client().await;
    let request = named(&["known", "missing"]).with_allow_auto_topic_creation(false);
    let response = client.call(&request, 4).await.unwrap();
    assert_eq!(
        topics(&response),
        [("known".to_owned(), 0, 1), ("missing".to_owned(), 3, 0)]
    );

    let by_id = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default()
            .with_topic_id(uuid::Uuid::from_u128(7))
            .with_name(None),
    ]));
    let response = client.call(&by_id, 12).await.unwrap();
    assert_eq!(response.topics[0].error_code, 100, "UNKNOWN_TOPIC_ID");
    assert_eq!(response.topics[0].topic_id, uuid::Uuid::from_u128(7));
    assert_eq!(
        response.topics[0].name, None,
        "null name for an unknown id from v12"
    );
    host.stop().await;
}

#[tokio::test]
async fn auto_creation_needs_the_config_flag_and_the_request_flag() {
    let host = TestHost::with_config(|c| {
        c.catalog.auto_create_topics = true;
        c.catalog.default_partitions = 4;
    })
    .await;
    let mut client = host.client().await;
    // The request forbids it: unknown.
    let forbids = named(&["fresh"]).with_allow_auto_topic_creation(false);
    let response = client.call(&forbids, 9).await.unwrap();
    assert_eq!(topics(&response), [("fresh".to_owned(), 3, 0)]);
    // Allowed: created with the default partition count and returned ready.
    let response = client.call(&named(&["fresh"]), 9).await.unwrap();
    assert_eq!(topics(&response), [("fresh".to_owned(), 0, 4)]);
    assert_eq!(
        host.server()
            .catalog()
            .topic("fresh")
            .unwrap()
            .partition_count,
        4
    );
    // An illegal name is INVALID_TOPIC_EXCEPTION rather than created.
    let response = client.call(&named(&["no spaces"]), 9).await.unwrap();
    assert_eq!(response.topics[0].error_code, 17);
    host.stop().await;

    // Off by default, even when the request allows it (and always below v4).
    let host = TestHost::start().await;
    let mut client = host.client().await;
    assert_eq!(
        client.call(&named(&["fresh"]), 9).await.unwrap().topics[0].error_code,
        3
    );
    assert_eq!(
        client.call(&named(&["fresh"]), 3).await.unwrap().topics[0].error_code,
        3
    );
    assert!(host.server().catalog().topics().is_empty());
    host.stop().await;
}

#[tokio::test]
async fn find_coordinator_names_the_host_at_every_version() {
    let host = TestHost::start().await;
    let port = i32::from(host.addr().port());
    let mut client = host.client().await;
    for version in 0..=3 {
        let request = FindCoordinatorRequest::default().with_key(str("group-a"));
        let response = client.call(&request, version).await.unwrap();
        assert_eq!(response.error_code, 0, "v{version}");
        assert_eq!(response.node_id, BrokerId(1));
        assert_eq!(response.host.as_str(), "127.0.0.1");
        assert_eq!(response.port, port);
    }
    for version in 4..=6 {
        let request =
            FindCoordinatorRequest::default().with_coordinator_keys(vec![str("g1"), str("g2")]);
        let response = client.call(&request, version).await.unwrap();
        let keys: Vec<(&str, i32, i32, i16)> = response
            .coordinators
            .iter()
            .map(|c: &Coordinator| (c.key.as_str(), c.node_id.0, c.port, c.error_code))
            .collect();
        assert_eq!(keys, [("g1", 1, port, 0), ("g2", 1, port, 0)], "v{version}");
    }
    host.stop().await;
}

#[tokio::test]
async fn find_coordinator_refuses_key_types_the_host_does_not_coordinate() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    let transaction = FindCoordinatorRequest::default()
        .with_key(str("txn"))
        .with_key_type(1);
    let response = client.call(&transaction, 2).await.unwrap();
    assert_eq!(response.error_code, 15, "COORDINATOR_NOT_AVAILABLE");
    assert_eq!(response.node_id, BrokerId(-1));
    assert!(response.error_message.unwrap().contains("transaction"));

    let unknown = FindCoordinatorRequest::default()
        .with_coordinator_keys(vec![str("x")])
        .with_key_type(9);
    let response = client.call(&unknown, 4).await.unwrap();
    assert_eq!(response.coordinators[0].error_code, 42, "INVALID_REQUEST");
    host.stop().await;
}
