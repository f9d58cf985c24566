//! OffsetCommit (key 8, v2-9): partitions the host does not serve are answered here with
//! UNKNOWN_TOPIC_OR_PARTITION, as Kafka's request layer does; the rest go to the coordinator in
//! one request, and the two halves are merged back into the request's order. When nothing is
//! known, the coordinator is not asked (Kafka answers such a request at once too).

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, RequestHeader, TopicName,
};

use super::groups::{context, refused};
use super::proxy::authorize::Right;
use super::{Broker, Client};

pub async fn handle(
    broker: &Broker,
    client: &Client,
    header: &RequestHeader,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    // Kafka's order: READ on the group (every partition refused), then READ on each topic
    // (that topic's partitions refused), then unknown topics and partitions.
    let group_id = request.group_id.to_string();
    if let Some(refused) = refused(
        client,
        header,
        &group_id,
        &Right::read_group(&group_id),
        &request,
    ) {
        return refused;
    }
    let readable = |topic: &TopicName| client.permits(&Right::read_topic(topic));
    let catalog = broker.catalog.topics();
    let exists = |topic: &TopicName, partition: i32| {
        catalog
            .get(topic.as_str())
            .is_some_and(|t| (0..t.partition_count).contains(&partition))
    };
    // The request's shape, to answer in its order, with READ on each topic decided once.
    let mut known = request;
    let topics = std::mem::take(&mut known.topics);
    let asked: Vec<(TopicName, Vec<i32>, bool)> = topics
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
                readable(&t.name),
            )
        })
        .collect();
    known.topics = topics
        .into_iter()
        .zip(&asked)
        .filter(|(_, (_, _, readable))| *readable)
        .filter_map(|(mut topic, _)| {
            topic
                .partitions
                .retain(|p| exists(&topic.name, p.partition_index));
            (!topic.partitions.is_empty()).then_some(topic)
        })
        .collect();

    let mut decided: HashMap<(TopicName, i32), i16> = HashMap::new();
    if !known.topics.is_empty() {
        let group_id = known.group_id.to_string();
        let response = broker
            .driver
            .call(&group_id, context(client, header), known)
            .await;
        for topic in response.topics {
            for partition in topic.partitions {
                decided.insert(
                    (topic.name.clone(), partition.partition_index),
                    partition.error_code,
                );
            }
        }
    }

    let topics = asked
        .into_iter()
        .map(|(name, partitions, readable)| {
            let partitions = partitions
                .into_iter()
                .map(|index| {
                    let error_code = if !readable {
                        ResponseError::TopicAuthorizationFailed.code()
                    } else if exists(&name, index) {
                        // A partition the coordinator left out would be its bug; say so.
                        decided
                            .get(&(name.clone(), index))
                            .copied()
                            .unwrap_or(ResponseError::UnknownServerError.code())
                    } else {
                        ResponseError::UnknownTopicOrPartition.code()
                    };
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(index)
                        .with_error_code(error_code)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
