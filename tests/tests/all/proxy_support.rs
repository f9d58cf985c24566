//! Shared by the proxy-mode tests: the fake cluster they run against, topics made on Apache
//! Kafka itself, what Metadata names, the offset requests a consumer sends to the host, and a
//! host in front of Kafka's SASL_SSL listener with clients that log in through it.

use std::sync::Arc;
use std::time::Duration;

use assignor_host::upstream::connection::security::{SaslMechanism, Security, SecuritySettings};
use assignor_host::upstream::connection::{Connection, Secret, SecurityProtocol};
use assignor_host_tests::fake_cluster::FakeCluster;
use assignor_host_tests::{KafkaClient, TestHost, str, topic_name};
use kafka_harness::KafkaCluster;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, GroupId, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetFetchRequest,
};

/// `topic` with `partitions` partitions of `replicas` replicas, created on Kafka itself over
/// node 1's PLAINTEXT listener (not through the host); that connection, for reading Kafka
/// directly.
pub async fn create_on_kafka(
    kafka: &KafkaCluster,
    topic: &str,
    partitions: i32,
    replicas: i16,
) -> KafkaClient {
    let mut direct = KafkaClient::connect(kafka.nodes()[0].plaintext)
        .await
        .unwrap();
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(topic_name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(replicas),
        ]);
    let answer = direct.call(&request, 5).await.unwrap();
    assert_eq!(answer.topics[0].error_code, 0, "{:?}", answer.topics[0]);
    direct
}

/// The host's coordinator node id (`upstream.coordinator_node_id`, its default).
pub const COORDINATOR: i32 = 1_000_000;

/// The host every port of the host under test is advertised at.
pub const HOST: &str = "127.0.0.1";

/// The group APIs and FindCoordinator, which the host answers itself and never passes up.
pub const GROUP_APIS: &[ApiKey] = &[
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::FindCoordinator,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::ListGroups,
    ApiKey::DescribeGroups,
];

/// Brokers 1, 2, 3: `orders` with 6 partitions (leaders 1 2 3 1 2 3), `audit` with 2.
pub async fn three_brokers() -> FakeCluster {
    FakeCluster::start(&[1, 2, 3], &[("orders", 6), ("audit", 2)]).await
}

/// The cluster and a host in front of it that has read its topics.
pub async fn proxied() -> (FakeCluster, TestHost) {
    let cluster = three_brokers().await;
    let host = TestHost::proxy(&cluster).await;
    host.wait_for_topic("orders", 6).await;
    (cluster, host)
}

/// Metadata for every topic at `version` (v0 says "all" with an empty list).
pub fn all_topics(version: i16) -> MetadataRequest {
    MetadataRequest::default().with_topics((version == 0).then(Vec::new))
}

/// `(node id, host, port)` of every broker a Metadata answer names, in its order.
pub fn brokers(response: &MetadataResponse) -> Vec<(i32, String, i32)> {
    response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, b.host.to_string(), b.port))
        .collect()
}

/// What the host should name for nodes 1, 2, 3 and its coordinator node: its own host, at the
/// broker ports it serves and the bootstrap port.
pub fn expected_brokers(host: &TestHost, nodes: &[i32]) -> Vec<(i32, String, i32)> {
    let mut expected: Vec<(i32, String, i32)> = nodes
        .iter()
        .map(|&n| {
            let port = host.broker_port(n).expect("a port for every upstream node");
            (n, HOST.to_owned(), i32::from(port))
        })
        .collect();
    expected.push((COORDINATOR, HOST.to_owned(), i32::from(host.addr().port())));
    expected
}

/// The leader of each partition of `topic` in a Metadata answer, by partition index.
pub fn leaders(response: &MetadataResponse, topic: &str) -> Vec<i32> {
    let topic = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some(topic))
        .unwrap_or_else(|| panic!("no {topic} in the answer"));
    let mut partitions: Vec<(i32, i32)> = topic
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.leader_id.0))
        .collect();
    partitions.sort();
    partitions.into_iter().map(|(_, leader)| leader).collect()
}

/// OffsetCommit (v8) of `offsets` as `(partition, offset)` of `orders`, by a member.
pub fn commit(
    group: &str,
    member: &str,
    generation: i32,
    offsets: &[(i32, i64)],
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(str(member))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name("orders"))
                .with_partitions(
                    offsets
                        .iter()
                        .map(|&(partition, offset)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(partition)
                                .with_committed_offset(offset)
                        })
                        .collect(),
                ),
        ])
}

/// The error code of every partition of an OffsetCommit answer, in order.
pub async fn commit_codes(client: &mut KafkaClient, request: &OffsetCommitRequest) -> Vec<i16> {
    let response = client.call(request, 8).await.unwrap();
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// OffsetFetch (v7: one group) of `orders`' `partitions`.
pub fn offset_fetch(group: &str, partitions: &[i32]) -> OffsetFetchRequest {
    OffsetFetchRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name("orders"))
                .with_partition_indexes(partitions.to_vec()),
        ]))
}

/// `(partition, committed offset, error)` of an OffsetFetch (v7) answer for `orders`.
pub async fn fetched_offsets(
    client: &mut KafkaClient,
    group: &str,
    partitions: &[i32],
) -> Vec<(i32, i64, i16)> {
    let response = client
        .call(&offset_fetch(group, partitions), 7)
        .await
        .unwrap();
    assert_eq!(response.error_code, 0, "OffsetFetch of {group}");
    response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset, p.error_code))
        })
        .collect()
}

/// The host in front of Kafka's SASL_SSL listener, logged in as `admin` for its own calls;
/// `kafka.authentication` left unset (its default there is `upstream`).
pub async fn sasl_host(kafka: &KafkaCluster) -> TestHost {
    sasl_host_with(kafka, |_| {}).await
}

/// [`sasl_host`] with more of the configuration changed by `edit`.
pub async fn sasl_host_with(
    kafka: &KafkaCluster,
    edit: impl FnOnce(&mut assignor_host::config::Config),
) -> TestHost {
    TestHost::proxy_with(kafka.sasl_ssl_bootstrap(), |config| {
        edit(config);
        let upstream = &mut config.upstream;
        upstream.security_protocol = SecurityProtocol::SaslSsl;
        upstream.sasl_mechanism = Some(SaslMechanism::ScramSha512);
        upstream.sasl_username = Some("admin".into());
        upstream.sasl_password = Some(Secret::new("admin-secret".into()));
        upstream.ssl_ca_location = Some(kafka.state().tls.ca.clone());
    })
    .await
}

/// A client of the host that logs in with SASL (SASL_PLAINTEXT to the host).
pub async fn login(
    host: &TestHost,
    mechanism: SaslMechanism,
    user: &str,
    password: &str,
) -> Result<Connection, String> {
    let settings = SecuritySettings {
        security_protocol: SecurityProtocol::SaslPlaintext,
        sasl_mechanism: Some(mechanism),
        sasl_username: Some(user.to_owned()),
        sasl_password: Some(Secret::new(password.to_owned())),
        ..SecuritySettings::default()
    };
    let security: Arc<Security> = Security::load(&settings).expect("client settings");
    Connection::open(&host.addr().to_string(), &security, Duration::from_secs(20))
        .await
        .map_err(|e| e.to_string())
}

/// The test process's shared Kafka node (`kafka_harness::shared`, started on first use), for
/// tests that need only *a* Kafka with its SASL_SSL listener and use names of their own.
pub async fn shared_kafka() -> &'static KafkaCluster {
    kafka_harness::shared_async().await
}
