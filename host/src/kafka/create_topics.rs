//! CreateTopics (key 19, v2-7): adds topics to the catalog with Kafka's validation and messages.
//!
//! Per topic, in Kafka's order: a name given twice in one request is INVALID_REQUEST; manual
//! `assignments` exclude `num_partitions`/`replication_factor`; the replication factor must be
//! -1 or 1 (the host is one broker); `num_partitions` -1 means `catalog.default_partitions`;
//! then the catalog checks the name, collisions and the partition count. `validate_only` runs
//! every check and changes nothing. Topic configs are accepted and ignored: the host stores no
//! messages, so retention, compaction and the like have nothing to act on.
//!
//! Authorization, as `KafkaApis.handleCreateTopicsRequest`, after the duplicate check: CREATE
//! on the cluster allows every topic, else CREATE on each topic; refused: TOPIC_AUTHORIZATION_
//! FAILED, "Authorization failed.".

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use super::proxy::authorize::{Operation, Resource, Right};
use super::{Broker, Client};
use crate::catalog::NewTopic;

pub fn handle(
    broker: &Broker,
    client: &Client,
    request: CreateTopicsRequest,
    _version: i16,
) -> CreateTopicsResponse {
    let cluster_create = client.allows(&Right {
        operation: Operation::Create,
        resource: Resource::Cluster,
    });
    let mut seen: HashMap<String, usize> = HashMap::new();
    for topic in &request.topics {
        *seen.entry(topic.name.to_string()).or_default() += 1;
    }
    let mut results = Vec::new();
    let mut answered = std::collections::HashSet::new();
    for topic in request.topics {
        let name = topic.name.to_string();
        if !answered.insert(name.clone()) {
            continue;
        }
        let result = if seen[&name] > 1 {
            Err((
                ResponseError::InvalidRequest.code(),
                format!("Create topics request contains multiple entries for the topic {name}"),
            ))
        } else if !cluster_create && !client.permits(&Right::create_topic(&name)) {
            Err((
                ResponseError::TopicAuthorizationFailed.code(),
                "Authorization failed.".to_owned(),
            ))
        } else {
            create(broker, topic.clone(), request.validate_only)
        };
        let answer = CreatableTopicResult::default().with_name(topic.name);
        results.push(match result {
            Ok(partitions) => answer
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_error_message(None),
            Err((code, message)) => answer
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message)))
                .with_configs(None),
        });
    }
    CreateTopicsResponse::default().with_topics(results)
}

/// Creates (or validates) one topic; `Ok` carries its partition count.
fn create(
    broker: &Broker,
    topic: CreatableTopic,
    validate_only: bool,
) -> Result<i32, (i16, String)> {
    let node_id = broker.node.node_id;
    let partitions = if topic.assignments.is_empty() {
        check_replication_factor(topic.replication_factor)?;
        match topic.num_partitions {
            -1 => None,
            n if n <= 0 => {
                return Err((
                    ResponseError::InvalidPartitions.code(),
                    "Number of partitions was set to an invalid non-positive value.".to_owned(),
                ));
            }
            n => Some(n),
        }
    } else {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return Err((
                ResponseError::InvalidRequest.code(),
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both \
                 cannot be used at the same time."
                    .to_owned(),
            ));
        }
        let mut indexes: Vec<i32> = topic
            .assignments
            .iter()
            .map(|a| a.partition_index)
            .collect();
        indexes.sort_unstable();
        if indexes.iter().enumerate().any(|(i, &p)| p != i as i32) {
            return Err((
                ResponseError::InvalidReplicaAssignment.code(),
                "Partitions should be a consecutive 0-based integer sequence".to_owned(),
            ));
        }
        for assignment in &topic.assignments {
            if let Some(other) = assignment.broker_ids.iter().find(|b| b.0 != node_id) {
                return Err((
                    ResponseError::InvalidReplicaAssignment.code(),
                    format!(
                        "The manual partition assignment includes broker {}, but no such broker \
                         is registered.",
                        other.0
                    ),
                ));
            }
            if assignment.broker_ids.len() != 1 {
                return Err((
                    ResponseError::InvalidReplicaAssignment.code(),
                    format!(
                        "Partition {} must have exactly one replica, broker {node_id}",
                        assignment.partition_index
                    ),
                ));
            }
        }
        Some(indexes.len() as i32)
    };
    let new = NewTopic {
        name: topic.name.to_string(),
        partitions,
        partition_racks: Vec::new(),
    };
    broker
        .catalog
        .create(new, validate_only)
        .map(|t| t.partition_count)
        .map_err(|e| (e.error_code(), e.to_string()))
}

fn check_replication_factor(factor: i16) -> Result<(), (i16, String)> {
    match factor {
        -1 | 1 => Ok(()),
        f if f <= 0 => Err((
            ResponseError::InvalidReplicationFactor.code(),
            "Replication factor must be larger than 0, or -1 to use the default value.".to_owned(),
        )),
        f => Err((
            ResponseError::InvalidReplicationFactor.code(),
            format!(
                "Unable to replicate the partition {f} time(s): The target replication factor of \
                 {f} cannot be reached because only 1 broker(s) are registered."
            ),
        )),
    }
}
