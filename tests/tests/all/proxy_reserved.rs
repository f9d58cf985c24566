//! The host's own topics (`__assignor_host.*`) kept from clients on the relayed path, in front
//! of Apache Kafka, in the worst case: a host whose clients the cluster does not authenticate
//! (`kafka.authentication = "none"`, its links speaking as the host). Whatever a refused
//! request would have changed is read back from Kafka directly: nothing.

use assignor_host_tests::proxy::{batch, fetch, produce};
use assignor_host_tests::{KafkaClient, TestHost, str, topic_name};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, IncrementalAlterConfigsRequest, ListOffsetsRequest,
    MetadataRequest,
};

use super::admin_support::{Admin, sample};
use super::proxy_support::{create_on_kafka, shared_kafka};

const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const INVALID_REQUEST: i16 = 42;
const UNKNOWN_TOPIC_ID: i16 = 100;

const MODULES: &str = "__assignor_host.reserved-test.modules";

/// The end offset of `topic`'s partition 0, read from Kafka itself.
async fn end_offset(direct: &mut KafkaClient, topic: &str) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ]),
        ]);
    let answer = direct.call(&request, 7).await.unwrap();
    let partition = &answer.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0, "ListOffsets of {topic} on Kafka");
    partition.offset
}

/// Whether Kafka itself has `topic`.
async fn exists(direct: &mut KafkaClient, topic: &str) -> bool {
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                .with_name(Some(topic_name(topic))),
        ]))
        .with_allow_auto_topic_creation(false);
    let answer = direct.call(&request, 9).await.unwrap();
    answer.topics[0].error_code == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_own_topics_are_refused_to_clients_whatever_they_send() {
    let kafka = shared_kafka().await;
    let mut direct = create_on_kafka(kafka, MODULES, 1, 1).await;
    create_on_kafka(kafka, "reserved-test-plain", 1, 1).await;
    let host = TestHost::proxy_with(kafka.bootstrap(), |_| {}).await;
    host.wait_for_topic("reserved-test-plain", 1).await;
    let leader = kafka.nodes()[0].node_id;
    let mut client = host.broker_client(leader).await;

    // Produce to the module log: refused; with a topic of the client's own beside it, the
    // whole request is (INVALID_REQUEST for the other, with a message), and nothing lands.
    let answer = client
        .call(&produce(MODULES, 0, batch(&["forged"])), 9)
        .await
        .unwrap();
    let p = &answer.responses[0].partition_responses[0];
    assert_eq!(p.error_code, TOPIC_AUTHORIZATION_FAILED, "{answer:?}");
    let mut mixed = produce("reserved-test-plain", 0, batch(&["innocent"]));
    mixed
        .topic_data
        .extend(produce(MODULES, 0, batch(&["forged"])).topic_data);
    let answer = client.call(&mixed, 9).await.unwrap();
    let codes: Vec<(String, i16)> = answer
        .responses
        .iter()
        .map(|t| (t.name.to_string(), t.partition_responses[0].error_code))
        .collect();
    assert_eq!(
        codes,
        [
            ("reserved-test-plain".to_owned(), INVALID_REQUEST),
            (MODULES.to_owned(), TOPIC_AUTHORIZATION_FAILED)
        ]
    );
    let message = answer.responses[0].partition_responses[0]
        .error_message
        .as_deref()
        .unwrap_or("");
    assert!(message.contains("send it without"), "{message:?}");
    assert_eq!(
        end_offset(&mut direct, MODULES).await,
        0,
        "a forged record landed"
    );
    assert_eq!(
        end_offset(&mut direct, "reserved-test-plain").await,
        0,
        "a refused request was half done"
    );
    // A Produce of the client's own alone still goes through, on the same connection.
    let answer = client
        .call(&produce("reserved-test-plain", 0, batch(&["mine"])), 9)
        .await
        .unwrap();
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);
    assert_eq!(end_offset(&mut direct, "reserved-test-plain").await, 1);

    // Fetch (reading the modules and settings) and ListOffsets.
    let answer = client.call(&fetch(MODULES, 0, 0, 12), 12).await.unwrap();
    let p = &answer.responses[0].partitions[0];
    assert_eq!(p.error_code, TOPIC_AUTHORIZATION_FAILED, "{answer:?}");
    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
    let listed = ListOffsetsRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name(MODULES))
                .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]),
        ]);
    let answer = client.call(&listed, 7).await.unwrap();
    assert_eq!(
        answer.topics[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );

    // DeleteTopics, CreateTopics and a retention change: refused, and Kafka unchanged.
    let answer = client
        .call(
            &DeleteTopicsRequest::default()
                .with_topic_names(vec![topic_name(MODULES)])
                .with_timeout_ms(5_000),
            5,
        )
        .await
        .unwrap();
    assert_eq!(answer.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(
        exists(&mut direct, MODULES).await,
        "the module log was deleted"
    );
    let squatted = "__assignor_host.reserved-test.shards";
    let answer = client
        .call(
            &CreateTopicsRequest::default()
                .with_topics(vec![
                    CreatableTopic::default()
                        .with_name(topic_name(squatted))
                        .with_num_partitions(1)
                        .with_replication_factor(1),
                ])
                .with_timeout_ms(5_000),
            5,
        )
        .await
        .unwrap();
    assert_eq!(answer.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED);
    assert!(
        !exists(&mut direct, squatted).await,
        "a host's name was taken"
    );
    let retention = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(str(MODULES))
            .with_configs(vec![
                AlterableConfig::default()
                    .with_name(str("retention.ms"))
                    .with_config_operation(0)
                    .with_value(Some(str("1"))),
            ]),
    ]);
    let answer = client.call(&retention, 1).await.unwrap();
    assert_eq!(answer.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED);

    // By id, which the host cannot read: a DeleteTopics entry naming Kafka's own id of the
    // module log is refused (UNKNOWN_TOPIC_ID), and a Fetch above the versions the host
    // advertises (v13+ name topics by id) closes its connection.
    let kafka_id = {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(topic_name(MODULES))),
            ]))
            .with_allow_auto_topic_creation(false);
        direct.call(&request, 12).await.unwrap().topics[0].topic_id
    };
    let by_id = DeleteTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::delete_topics_request::DeleteTopicState::default()
                .with_name(None)
                .with_topic_id(kafka_id),
        ])
        .with_timeout_ms(5_000);
    let answer = client.call(&by_id, 6).await.unwrap();
    assert_eq!(
        answer.responses[0].error_code, UNKNOWN_TOPIC_ID,
        "{answer:?}"
    );
    assert!(
        exists(&mut direct, MODULES).await,
        "the module log was deleted by id"
    );
    let mut by_id_fetch = host.broker_client(leader).await;
    by_id_fetch
        .send(&fetch(MODULES, 0, 0, 13), 13)
        .await
        .unwrap();
    assert!(
        by_id_fetch.is_closed_by_host().await.unwrap(),
        "a Fetch v13 was served"
    );

    // A Produce with acks=0 expects no answer: the connection closes, as Kafka closes it.
    let mut fire_and_forget = produce(MODULES, 0, batch(&["forged"]));
    fire_and_forget.acks = 0;
    client.send(&fire_and_forget, 9).await.unwrap();
    assert!(
        client.is_closed_by_host().await.unwrap(),
        "still open after an acks=0 Produce to the module log"
    );
    assert_eq!(
        end_offset(&mut direct, MODULES).await,
        0,
        "a forged record landed"
    );

    // Each refused right told once (the mixed Produce refused one; INVALID_REQUEST is no
    // denial).
    let metrics = Admin::new(&host).scrape().await;
    for (api, count) in [
        ("Produce", 3.0),
        ("Fetch", 1.0),
        ("ListOffsets", 1.0),
        ("DeleteTopics", 1.0),
        ("CreateTopics", 1.0),
        ("IncrementalAlterConfigs", 1.0),
    ] {
        let name =
            format!("assignor_host_client_denials_total{{api=\"{api}\",resource=\"topic\"}}");
        assert_eq!(sample(&metrics, &name), count, "{name} in\n{metrics}");
    }
    host.stop().await;
}
