//! CreateTopics, CreatePartitions and DeleteTopics over a real socket: Kafka's happy paths and
//! error codes, validate-only, and the catalog (and Metadata) reflecting every change.

use assignor_host_tests::{TestHost, topic_name};
use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{
    BrokerId, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest,
};

fn creatable(name: &str, partitions: i32, replication: i16) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(topic_name(name))
        .with_num_partitions(partitions)
        .with_replication_factor(replication)
}

fn create(topics: Vec<CreatableTopic>) -> CreateTopicsRequest {
    CreateTopicsRequest::default()
        .with_topics(topics)
        .with_timeout_ms(5000)
}

#[tokio::test]
async fn create_topics_creates_and_reports_at_every_version() {
    let host = TestHost::with_config(|c| c.catalog.default_partitions = 2).await;
    let mut client = host.client().await;
    for version in 2..=7 {
        let name = format!("t{version}");
        let response = client
            .call(&create(vec![creatable(&name, -1, -1)]), version)
            .await
            .unwrap();
        let result = &response.topics[0];
        assert_eq!(result.name.as_str(), name);
        assert_eq!(
            result.error_code, 0,
            "v{version}: {:?}",
            result.error_message
        );
        if version >= 5 {
            assert_eq!(result.num_partitions, 2);
            assert_eq!(result.replication_factor, 1);
        }
        assert_eq!(
            host.server()
                .catalog()
                .topic(&name)
                .unwrap()
                .partition_count,
            2
        );
    }
    // Metadata shows the new topic at once.
    let metadata = client
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await
        .unwrap();
    assert_eq!(metadata.topics.len(), 6);
    host.stop().await;
}

#[tokio::test]
async fn create_topics_errors_are_kafkas_per_topic() {
    let host = TestHost::with_topics(&[("exists", 1)]).await;
    let mut client = host.client().await;
    let manual_on_other_broker = CreatableTopic::default()
        .with_name(topic_name("manual"))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
        .with_assignments(vec![
            CreatableReplicaAssignment::default()
                .with_partition_index(0)
                .with_broker_ids(vec![BrokerId(2)]),
        ]);
    let request = create(vec![
        creatable("exists", 1, 1),
        creatable("bad name", 1, 1),
        creatable("zero", 0, 1),
        creatable("replicated", 1, 3),
        creatable("dup", 1, 1),
        creatable("dup", 2, 1),
        manual_on_other_broker,
        creatable("fine", 5, 1),
    ]);
    let response = client.call(&request, 7).await.unwrap();
    let codes: Vec<(&str, i16)> = response
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.error_code))
        .collect();
    assert_eq!(
        codes,
        [
            ("exists", 36),
            ("bad name", 17),
            ("zero", 37),
            ("replicated", 38),
            ("dup", 42),
            ("manual", 39),
            ("fine", 0),
        ]
    );
    let message = |name: &str| {
        response
            .topics
            .iter()
            .find(|t| t.name.as_str() == name)
            .and_then(|t| t.error_message.as_ref())
            .map(|m| m.to_string())
            .unwrap_or_default()
    };
    assert!(message("exists").contains("already exists"));
    assert!(message("replicated").contains("only 1 broker"));
    assert!(message("manual").contains("broker 2"));
    assert!(host.server().catalog().topic("dup").is_none());
    assert_eq!(
        host.server()
            .catalog()
            .topic("fine")
            .unwrap()
            .partition_count,
        5
    );
    host.stop().await;
}

#[tokio::test]
async fn manual_assignment_on_the_host_and_validate_only() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    let manual = CreatableTopic::default()
        .with_name(topic_name("manual"))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
        .with_assignments(
            (0..3)
                .map(|p| {
                    CreatableReplicaAssignment::default()
                        .with_partition_index(p)
                        .with_broker_ids(vec![BrokerId(1)])
                })
                .collect(),
        );
    let validate = create(vec![manual.clone()]).with_validate_only(true);
    let response = client.call(&validate, 5).await.unwrap();
    assert_eq!(response.topics[0].error_code, 0);
    assert_eq!(response.topics[0].num_partitions, 3);
    assert!(
        host.server().catalog().topic("manual").is_none(),
        "validate only"
    );

    let response = client.call(&create(vec![manual]), 5).await.unwrap();
    assert_eq!(response.topics[0].error_code, 0);
    assert_eq!(
        host.server()
            .catalog()
            .topic("manual")
            .unwrap()
            .partition_count,
        3
    );
    host.stop().await;
}

#[tokio::test]
async fn create_partitions_only_increases() {
    let host = TestHost::with_topics(&[("t", 2)]).await;
    let mut client = host.client().await;
    let grow = |name: &str, count: i32| {
        CreatePartitionsTopic::default()
            .with_name(topic_name(name))
            .with_count(count)
    };
    for version in 0..=3 {
        let count = 3 + version as i32;
        let request = CreatePartitionsRequest::default()
            .with_topics(vec![grow("t", count)])
            .with_timeout_ms(5000);
        let response = client.call(&request, version).await.unwrap();
        assert_eq!(response.results[0].error_code, 0, "v{version}");
        assert_eq!(
            host.server().catalog().topic("t").unwrap().partition_count,
            count
        );
    }
    let request = CreatePartitionsRequest::default().with_topics(vec![grow("t", 6), grow("t2", 9)]);
    let response = client.call(&request, 3).await.unwrap();
    let codes: Vec<(&str, i16)> = response
        .results
        .iter()
        .map(|r| (r.name.as_str(), r.error_code))
        .collect();
    assert_eq!(codes, [("t", 37), ("t2", 3)]);
    assert!(
        response.results[0]
            .error_message
            .as_ref()
            .unwrap()
            .contains("already has 6")
    );

    let shrink = CreatePartitionsRequest::default().with_topics(vec![grow("t", 2)]);
    let response = client.call(&shrink, 3).await.unwrap();
    assert_eq!(response.results[0].error_code, 37);

    let wrong_assignment =
        CreatePartitionsRequest::default().with_topics(vec![grow("t", 8).with_assignments(Some(
            vec![CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(1)])],
        ))]);
    let response = client.call(&wrong_assignment, 3).await.unwrap();
    assert_eq!(
        response.results[0].error_code, 39,
        "two new partitions, one assignment"
    );

    let validate = CreatePartitionsRequest::default()
        .with_topics(vec![grow("t", 10)])
        .with_validate_only(true);
    assert_eq!(
        client.call(&validate, 3).await.unwrap().results[0].error_code,
        0
    );
    assert_eq!(
        host.server().catalog().topic("t").unwrap().partition_count,
        6
    );
    host.stop().await;
}

#[tokio::test]
async fn delete_topics_by_name_at_every_version_and_by_id() {
    let names: Vec<String> = (1..=6).map(|v| format!("t{v}")).collect();
    let seeds: Vec<(&str, i32)> = names.iter().map(|n| (n.as_str(), 1)).collect();
    let host = TestHost::with_topics(&seeds).await;
    let mut client = host.client().await;
    for version in 1..=5 {
        let request = DeleteTopicsRequest::default()
            .with_topic_names(vec![topic_name(&format!("t{version}")), topic_name("nope")])
            .with_timeout_ms(5000);
        let response = client.call(&request, version).await.unwrap();
        let codes: Vec<i16> = response.responses.iter().map(|r| r.error_code).collect();
        assert_eq!(codes, [0, 3], "v{version}");
    }
    let request = DeleteTopicsRequest::default().with_topics(vec![
        DeleteTopicState::default().with_name(Some(topic_name("t6"))),
        DeleteTopicState::default()
            .with_name(None)
            .with_topic_id(uuid::Uuid::from_u128(5)),
    ]);
    let response = client.call(&request, 6).await.unwrap();
    let codes: Vec<i16> = response.responses.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, [0, 100]);
    assert!(host.server().catalog().topics().is_empty());
    // By the catalog's id alone.
    host.server()
        .catalog()
        .create(
            assignor_host::catalog::NewTopic {
                name: "by-id".into(),
                partitions: Some(1),
                partition_racks: Vec::new(),
            },
            false,
        )
        .unwrap();
    let id = host.server().catalog().topics().id("by-id").unwrap();
    let request = DeleteTopicsRequest::default().with_topics(vec![
        DeleteTopicState::default()
            .with_name(None)
            .with_topic_id(id),
    ]);
    let response = client.call(&request, 6).await.unwrap();
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(
        response.responses[0].name.as_ref().map(|n| n.as_str()),
        Some("by-id")
    );
    assert!(host.server().catalog().topics().is_empty());
    host.stop().await;
}

#[tokio::test]
async fn created_topics_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let host = TestHost::with_config(|c| c.data_dir = path.clone()).await;
    let mut client = host.client().await;
    let response = client
        .call(&create(vec![creatable("durable", 7, 1)]), 7)
        .await
        .unwrap();
    assert_eq!(response.topics[0].error_code, 0);
    host.stop().await;

    let host = TestHost::with_config(|c| c.data_dir = path.clone()).await;
    assert_eq!(
        host.server()
            .catalog()
            .topic("durable")
            .unwrap()
            .partition_count,
        7
    );
    host.stop().await;
}
