//! CreatePartitions (key 37, v0-3): raises a topic's partition count.
//!
//! Kafka's rules: the count only increases (INVALID_PARTITIONS otherwise), an unknown topic is
//! UNKNOWN_TOPIC_OR_PARTITION, a topic named twice is INVALID_REQUEST, and manual assignments,
//! when given, must list exactly the new partitions, each on a registered broker (here: only
//! the host). `validate_only` checks without changing anything.

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::proxy::authorize::Right;
use super::{Broker, Client};

pub fn handle(
    broker: &Broker,
    client: &Client,
    request: CreatePartitionsRequest,
    _version: i16,
) -> CreatePartitionsResponse {
    let mut count: HashMap<TopicName, usize> = HashMap::new();
    for topic in &request.topics {
        *count.entry(topic.name.clone()).or_default() += 1;
    }
    let results = request
        .topics
        .into_iter()
        .map(|topic| {
            let name = topic.name.clone();
            let outcome = if count[&name] > 1 {
                Err((
                    ResponseError::InvalidRequest.code(),
                    "Duplicate topic name.".to_owned(),
                ))
            } else if !client.permits(&Right::alter_topic(&name)) {
                // `KafkaApis.handleCreatePartitionsRequest`: ALTER on the topic.
                Err((
                    ResponseError::TopicAuthorizationFailed.code(),
                    ResponseError::TopicAuthorizationFailed.to_string(),
                ))
            } else {
                grow(broker, topic, request.validate_only)
            };
            let answer = CreatePartitionsTopicResult::default().with_name(name);
            match outcome {
                Ok(()) => answer,
                Err((code, message)) => answer
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    CreatePartitionsResponse::default().with_results(results)
}

fn grow(
    broker: &Broker,
    topic: CreatePartitionsTopic,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    // A null or empty assignment list leaves placement to the host (always itself).
    let assignments = topic.assignments.as_deref().unwrap_or_default();
    if let (false, Some(existing)) = (assignments.is_empty(), broker.catalog.topic(&topic.name)) {
        let new = topic.count - existing.partition_count;
        if new > 0 && assignments.len() != new as usize {
            return Err((
                ResponseError::InvalidReplicaAssignment.code(),
                format!(
                    "Attempted to add {new} additional partition(s), but only {} assignment(s) \
                     were specified.",
                    assignments.len()
                ),
            ));
        }
        let node_id = broker.node.node_id;
        if let Some(other) = assignments
            .iter()
            .flat_map(|a| a.broker_ids.iter())
            .find(|b| b.0 != node_id)
        {
            return Err((
                ResponseError::InvalidReplicaAssignment.code(),
                format!(
                    "The manual partition assignment includes broker {}, but no such broker is \
                     registered.",
                    other.0
                ),
            ));
        }
    }
    broker
        .catalog
        .create_partitions(&topic.name, topic.count, validate_only)
        .map(|_| ())
        .map_err(|e| (e.error_code(), e.to_string()))
}
