//! OffsetDelete (key 47, v0): partitions of topics the host does not serve are answered here
//! with UNKNOWN_TOPIC_OR_PARTITION, as Kafka's request layer does; the rest go to the
//! coordinator, and the answer keeps the request's order. A group-level error (no such group,
//! a non-empty group of another protocol type) is the whole answer, as in Kafka.

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{
    OffsetDeleteRequest, OffsetDeleteResponse, RequestHeader, TopicName,
};

use super::groups::{context, refused};
use super::proxy::authorize::Right;
use super::{Broker, Client};

pub async fn handle(
    broker: &Broker,
    client: &Client,
    header: &RequestHeader,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    // Kafka's order: DELETE on the group (the whole request refused), then READ on each topic.
    let group_id = request.group_id.to_string();
    let right = Right::delete_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
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
            let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
            (t.name.clone(), partitions, readable(&t.name))
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
    let answer = broker
        .driver
        .call(&group_id, context(client, header), known)
        .await;
    if answer.error_code != 0 {
        return OffsetDeleteResponse::default().with_error_code(answer.error_code);
    }
    let decided: HashMap<(TopicName, i32), i16> = answer
        .topics
        .into_iter()
        .flat_map(|t| {
            let name = t.name;
            t.partitions
                .into_iter()
                .map(move |p| ((name.clone(), p.partition_index), p.error_code))
        })
        .collect();
    let topics = asked
        .into_iter()
        .map(|(name, partitions, readable)| {
            let partitions = partitions
                .into_iter()
                .map(|index| {
                    let error_code = if !readable {
                        ResponseError::TopicAuthorizationFailed.code()
                    } else if exists(&name, index) {
                        decided
                            .get(&(name.clone(), index))
                            .copied()
                            .unwrap_or(ResponseError::UnknownServerError.code())
                    } else {
                        ResponseError::UnknownTopicOrPartition.code()
                    };
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(index)
                        .with_error_code(error_code)
                })
                .collect();
            OffsetDeleteResponseTopic::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    OffsetDeleteResponse::default().with_topics(topics)
}
