//! The answers that describe the cluster: ApiVersions, Metadata, DescribeCluster,
//! FindCoordinator, and CreateTopics.
//!
//! Every broker answers them the same way, from the shared state: all brokers with their real
//! loopback ports and racks, the first broker as controller and as coordinator of every key.
//! Fields are set only at the versions that carry them, so each answer encodes at every
//! advertised version.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, CreateTopicsRequest, CreateTopicsResponse,
    DescribeClusterResponse, FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::answer::Answer;
use super::state::{CLUSTER_ID, State, Topic, error};

/// Partitions of a topic created with `num_partitions` -1 (the broker default).
const DEFAULT_PARTITIONS: i32 = 1;

fn string(value: impl Into<String>) -> StrBytes {
    StrBytes::from_string(value.into())
}

fn brokers(ids: &[i32]) -> Vec<BrokerId> {
    ids.iter().copied().map(BrokerId).collect()
}

/// What every broker advertises: `(api, min, max)`. Produce v10+ and Fetch v16 carry KIP-951
/// leader hints; the group APIs, TxnOffsetCommit, ConsumerGroupHeartbeat and
/// DescribeTopicPartitions are listed but never served (module docs).
pub const API_VERSIONS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 16),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::DescribeCluster, 0, 1),
    // Advertised but never served, as a Kafka 4 broker advertises them: a proxy must leave
    // them out of its own ApiVersions answer and never pass them up.
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::DescribeTopicPartitions, 0, 0),
];

/// Whether the fake advertises `version` of `api`.
pub fn advertised(api: ApiKey, version: i16) -> bool {
    API_VERSIONS
        .iter()
        .any(|&(key, min, max)| key == api && (min..=max).contains(&version))
}

/// The advertised table, as ApiVersions carries it.
pub fn api_versions() -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        API_VERSIONS
            .iter()
            .map(|&(key, min, max)| {
                ApiVersion::default()
                    .with_api_key(key as i16)
                    .with_min_version(min)
                    .with_max_version(max)
            })
            .collect(),
    )
}

/// The v0 answer to an ApiVersions newer than the fake knows (KIP-511).
pub fn api_versions_unsupported() -> ApiVersionsResponse {
    api_versions().with_error_code(error::UNSUPPORTED_VERSION)
}

/// Metadata: every broker; the topics asked for by name (v0: an empty list is all topics) or
/// by id (v10+), or all of them. Unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids
/// UNKNOWN_TOPIC_ID. Nothing is created automatically.
pub fn metadata(state: &State, request: &MetadataRequest, version: i16) -> Answer {
    let wanted: Option<&Vec<_>> = match &request.topics {
        Some(topics) if version == 0 && topics.is_empty() => None,
        topics => topics.as_ref(),
    };
    let topics = match wanted {
        None => state
            .topics
            .iter()
            .map(|(name, topic)| metadata_topic(state, name, topic, version))
            .collect(),
        Some(asked) => asked
            .iter()
            .map(|asked| match &asked.name {
                Some(name) => match state.topics.get(name.as_str()) {
                    Some(topic) => metadata_topic(state, name, topic, version),
                    None => MetadataResponseTopic::default()
                        .with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION)
                        .with_name(Some(name.clone())),
                },
                None => match state.topic_by_id(asked.topic_id) {
                    Some((name, topic)) => metadata_topic(state, name, topic, version),
                    None => MetadataResponseTopic::default()
                        .with_error_code(error::UNKNOWN_TOPIC_ID)
                        .with_name(None)
                        .with_topic_id(asked.topic_id),
                },
            })
            .collect(),
    };
    let brokers = state
        .brokers
        .iter()
        .map(|broker| {
            let (host, port, rack) = state.endpoint(broker.id);
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(broker.id))
                .with_host(string(host))
                .with_port(port)
                .with_rack((version >= 1).then(|| string(rack)))
        })
        .collect();
    let mut response = MetadataResponse::default()
        .with_brokers(brokers)
        .with_topics(topics);
    if version >= 1 {
        response.controller_id = BrokerId(state.first_broker());
    }
    if version >= 2 {
        response.cluster_id = Some(string(CLUSTER_ID));
    }
    Answer::reply(version, response)
}

fn metadata_topic(state: &State, name: &str, topic: &Topic, version: i16) -> MetadataResponseTopic {
    let replicas = brokers(&state.broker_ids());
    let partitions = topic
        .partitions
        .iter()
        .enumerate()
        .map(|(index, partition)| {
            MetadataResponsePartition::default()
                .with_partition_index(index as i32)
                .with_leader_id(BrokerId(partition.leader))
                .with_leader_epoch(if version >= 7 {
                    partition.leader_epoch
                } else {
                    -1
                })
                .with_replica_nodes(replicas.clone())
                .with_isr_nodes(replicas.clone())
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(string(name))))
        .with_topic_id(if version >= 10 { topic.id } else { Uuid::nil() })
        .with_partitions(partitions)
}

/// DescribeCluster: every broker, the cluster id, the first broker as controller.
pub fn describe_cluster(state: &State, version: i16) -> Answer {
    let brokers = state
        .brokers
        .iter()
        .map(|broker| {
            let (host, port, rack) = state.endpoint(broker.id);
            DescribeClusterBroker::default()
                .with_broker_id(BrokerId(broker.id))
                .with_host(string(host))
                .with_port(port)
                .with_rack(Some(string(rack)))
        })
        .collect();
    let response = DescribeClusterResponse::default()
        .with_cluster_id(string(CLUSTER_ID))
        .with_controller_id(BrokerId(state.first_broker()))
        .with_brokers(brokers);
    Answer::reply(version, response)
}

/// FindCoordinator for groups (key type 0) and transactional ids (1): the first broker, for
/// one key (v0-v3) or each key (v4+). Other key types get INVALID_REQUEST.
pub fn find_coordinator(state: &State, request: &FindCoordinatorRequest, version: i16) -> Answer {
    let (host, port, _) = state.endpoint(state.first_broker());
    let known = (0..=1).contains(&request.key_type);
    let (node_id, host, port, code) = if known {
        (state.first_broker(), string(host), port, 0)
    } else {
        (-1, string(""), -1, error::INVALID_REQUEST)
    };
    let mut response = FindCoordinatorResponse::default();
    if version >= 4 {
        response.coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(BrokerId(node_id))
                    .with_host(host.clone())
                    .with_port(port)
                    .with_error_code(code)
            })
            .collect();
    } else {
        response = response
            .with_error_code(code)
            .with_node_id(BrokerId(node_id))
            .with_host(host)
            .with_port(port);
    }
    Answer::reply(version, response)
}

/// CreateTopics: a new topic's leaders are spread as at start, over the brokers known now;
/// every broker is a replica. An existing name gets TOPIC_ALREADY_EXISTS.
pub fn create_topics(state: &mut State, request: &CreateTopicsRequest, version: i16) -> Answer {
    let broker_count = state.brokers.len() as i32;
    let mut results = Vec::new();
    for topic in &request.topics {
        let name = topic.name.as_str();
        let partitions = match topic.num_partitions {
            -1 => DEFAULT_PARTITIONS,
            n => n,
        };
        let code = if state.topics.contains_key(name) {
            error::TOPIC_ALREADY_EXISTS
        } else if partitions < 1 {
            error::INVALID_PARTITIONS
        } else if topic.replication_factor == 0
            || i32::from(topic.replication_factor) > broker_count
        {
            error::INVALID_REPLICATION_FACTOR
        } else {
            0
        };
        if code == 0 && !request.validate_only {
            state.add_topic(name, partitions);
        }
        let mut result = CreatableTopicResult::default()
            .with_name(topic.name.clone())
            .with_error_code(code);
        if version >= 5 && code == 0 {
            result.num_partitions = partitions;
            result.replication_factor = broker_count as i16;
        }
        if version >= 7 && code == 0 {
            result.topic_id = super::state::topic_id(name);
        }
        results.push(result);
    }
    Answer::reply(
        version,
        CreateTopicsResponse::default().with_topics(results),
    )
}
