//! What the brokers say about the cluster: Metadata at every version, DescribeCluster,
//! FindCoordinator, ApiVersions, and what is refused.

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, DescribeClusterRequest,
    FindCoordinatorRequest, HeartbeatRequest, MetadataRequest,
};
use uuid::Uuid;

use super::{all_topics, connect, metadata, three_brokers};
use crate::fake_cluster::{API_VERSIONS, CLUSTER_ID, topic_id};
use crate::{str, topic_name};

#[tokio::test]
async fn metadata_names_every_broker_and_spreads_leaders_at_every_version() {
    let cluster = three_brokers().await;
    for version in 0..=12 {
        let response = metadata(&cluster, 2, &all_topics(version), version).await;
        let brokers: Vec<(i32, String, i32, Option<String>)> = response
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id.0,
                    b.host.to_string(),
                    b.port,
                    b.rack.as_ref().map(|r| r.to_string()),
                )
            })
            .collect();
        let expected: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&id| {
                let port = i32::from(cluster.broker_addr(id).port());
                let rack = (version >= 1).then(|| format!("rack-{id}"));
                (id, "127.0.0.1".to_owned(), port, rack)
            })
            .collect();
        assert_eq!(brokers, expected, "v{version}");
        assert_eq!(*response.controller_id, if version >= 1 { 1 } else { -1 });
        let cluster_id = response.cluster_id.as_ref().map(|c| c.to_string());
        assert_eq!(cluster_id, (version >= 2).then(|| CLUSTER_ID.to_owned()));
        let topics: Vec<(String, Uuid, Vec<i32>)> = response
            .topics
            .iter()
            .map(|t| {
                assert_eq!(t.error_code, 0);
                for p in &t.partitions {
                    assert_eq!(
                        p.replica_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
                        [1, 2, 3]
                    );
                    assert_eq!(p.isr_nodes, p.replica_nodes);
                    assert_eq!(p.leader_epoch, if version >= 7 { 0 } else { -1 });
                }
                let leaders = t.partitions.iter().map(|p| p.leader_id.0).collect();
                (t.name.as_ref().unwrap().to_string(), t.topic_id, leaders)
            })
            .collect();
        let id = |name| {
            if version >= 10 {
                topic_id(name)
            } else {
                Uuid::nil()
            }
        };
        assert_eq!(
            topics,
            [
                ("audit".to_owned(), id("audit"), vec![1, 2]),
                ("orders".to_owned(), id("orders"), vec![1, 2, 3, 1, 2, 3]),
            ],
            "v{version}"
        );
    }
    assert_ne!(topic_id("orders"), Uuid::nil());
    assert_ne!(topic_id("orders"), topic_id("audit"));
}

#[tokio::test]
async fn metadata_answers_topics_by_name_and_by_id() {
    let cluster = three_brokers().await;
    let by_name = |name: &str| MetadataRequestTopic::default().with_name(Some(topic_name(name)));
    let request =
        MetadataRequest::default().with_topics(Some(vec![by_name("audit"), by_name("nope")]));
    for version in [1, 4, 9, 12] {
        let response = metadata(&cluster, 3, &request, version).await;
        let answers: Vec<(String, i16, usize)> = response
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.as_ref().unwrap().to_string(),
                    t.error_code,
                    t.partitions.len(),
                )
            })
            .collect();
        assert_eq!(
            answers,
            [("audit".into(), 0, 2), ("nope".into(), 3, 0)],
            "v{version}"
        );
    }
    let by_id = |id| {
        MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(id)
    };
    let request = MetadataRequest::default().with_topics(Some(vec![
        by_id(topic_id("orders")),
        by_id(Uuid::from_u128(7)),
    ]));
    let response = metadata(&cluster, 1, &request, 12).await;
    assert_eq!(
        response.topics[0].name.as_ref().map(|n| n.as_str()),
        Some("orders")
    );
    assert_eq!(response.topics[0].partitions.len(), 6);
    assert_eq!(response.topics[1].error_code, 100, "UNKNOWN_TOPIC_ID");
    let none = MetadataRequest::default().with_topics(Some(Vec::new()));
    assert!(metadata(&cluster, 1, &none, 5).await.topics.is_empty());
}

#[tokio::test]
async fn describe_cluster_and_find_coordinator_name_the_real_ports() {
    let cluster = three_brokers().await;
    let mut client = connect(&cluster, 3).await;
    for version in 0..=1 {
        let response = client
            .call(&DescribeClusterRequest::default(), version)
            .await
            .unwrap();
        assert_eq!(response.cluster_id.as_str(), CLUSTER_ID);
        assert_eq!(*response.controller_id, 1);
        let brokers: Vec<(i32, i32, String)> = response
            .brokers
            .iter()
            .map(|b| (b.broker_id.0, b.port, b.rack.as_ref().unwrap().to_string()))
            .collect();
        let expected: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&id| {
                (
                    id,
                    i32::from(cluster.broker_addr(id).port()),
                    format!("rack-{id}"),
                )
            })
            .collect();
        assert_eq!(brokers, expected);
    }
    let first_port = i32::from(cluster.broker_addr(1).port());
    for version in 0..=3 {
        // Key types (transactional ids) arrived in v1.
        for key_type in if version == 0 { vec![0] } else { vec![0, 1] } {
            let request = FindCoordinatorRequest::default()
                .with_key(str("g"))
                .with_key_type(key_type);
            let response = client.call(&request, version).await.unwrap();
            assert_eq!(
                (response.error_code, *response.node_id, response.port),
                (0, 1, first_port)
            );
            assert_eq!(response.host.as_str(), "127.0.0.1");
        }
    }
    let batched = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![str("tx-a"), str("tx-b")]);
    let response = client.call(&batched, 4).await.unwrap();
    let coordinators: Vec<(String, i32, i32)> = response
        .coordinators
        .iter()
        .map(|c| (c.key.to_string(), *c.node_id, c.port))
        .collect();
    assert_eq!(
        coordinators,
        [
            ("tx-a".into(), 1, first_port),
            ("tx-b".into(), 1, first_port)
        ]
    );
}

#[tokio::test]
async fn api_versions_is_the_fixed_table_and_a_newer_request_gets_v0() {
    let cluster = three_brokers().await;
    let mut client = connect(&cluster, 1).await;
    for version in 0..=3 {
        let response = client
            .call(&ApiVersionsRequest::default(), version)
            .await
            .unwrap();
        let table: Vec<(i16, i16, i16)> = response
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        let expected: Vec<_> = API_VERSIONS
            .iter()
            .map(|&(k, min, max)| (k as i16, min, max))
            .collect();
        assert_eq!(table, expected);
    }
    let range = |key: ApiKey| API_VERSIONS.iter().find(|e| e.0 == key).map(|e| (e.1, e.2));
    assert_eq!(range(ApiKey::Produce), Some((3, 11)));
    assert_eq!(range(ApiKey::Fetch), Some((4, 16)));
    assert_eq!(range(ApiKey::Metadata), Some((0, 12)));
    let correlation_id = client
        .send(&ApiVersionsRequest::default(), 4)
        .await
        .unwrap();
    let (got, response) = client
        .receive_as::<ApiVersionsResponse>(0, 0)
        .await
        .unwrap();
    assert_eq!((got, response.error_code), (correlation_id, 35));
    assert!(!response.api_keys.is_empty());
}

#[tokio::test]
async fn a_group_api_is_recorded_and_closes_the_connection() {
    let cluster = three_brokers().await;
    let mut client = connect(&cluster, 2).await;
    client
        .call(&ApiVersionsRequest::default(), 3)
        .await
        .unwrap();
    client.send(&HeartbeatRequest::default(), 4).await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap());
    assert_eq!(
        cluster.requests(2),
        [(ApiKey::ApiVersions, 3, 1), (ApiKey::Heartbeat, 4, 2)]
    );
    assert!(cluster.requests(1).is_empty());
}
