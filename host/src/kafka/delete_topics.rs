//! DeleteTopics (key 20, v1-6): removes topics from the catalog.
//!
//! v1-5 name topics in `topic_names`; v6 in `topics[]`, each by name or by id (the catalog's
//! topic ids); an id the catalog does not know is UNKNOWN_TOPIC_ID. A name given twice in one
//! request is INVALID_REQUEST ("Duplicate topic name."), as in Kafka.
//!
//! Authorization, as `KafkaApis.handleDeleteTopicsRequest`: a topic named by id that the client
//! may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED without its name; one it may not DELETE is
//! TOPIC_AUTHORIZATION_FAILED, whether it exists or not.

use std::collections::HashMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::proxy::authorize::Right;
use super::{Broker, Client};

pub fn handle(
    broker: &Broker,
    client: &Client,
    request: DeleteTopicsRequest,
    version: i16,
) -> DeleteTopicsResponse {
    // (name, topic id) in request order, whichever layout the version uses.
    let catalog = broker.catalog.topics();
    let wanted: Vec<(Option<TopicName>, uuid::Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| {
                let name = t.name.or_else(|| {
                    catalog
                        .name_of(&t.topic_id)
                        .map(|n| TopicName(StrBytes::from_string(n.to_owned())))
                });
                (name, t.topic_id)
            })
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n), uuid::Uuid::nil()))
            .collect()
    };
    let mut count: HashMap<TopicName, usize> = HashMap::new();
    for name in wanted.iter().filter_map(|(n, _)| n.clone()) {
        *count.entry(name).or_default() += 1;
    }
    let responses = wanted
        .into_iter()
        .map(|(name, topic_id)| {
            let answer = DeletableTopicResult::default()
                .with_name(name.clone())
                .with_topic_id(topic_id);
            let denied = ResponseError::TopicAuthorizationFailed;
            let (code, message) = match &name {
                Some(n)
                    if !topic_id.is_nil()
                        && count[n] == 1
                        && !client.permits(&Right::describe_topic(n)) =>
                {
                    return answer.with_name(None).with_error_code(denied.code());
                }
                Some(n) if count[n] == 1 && !client.permits(&Right::delete_topic(n)) => {
                    return answer.with_error_code(denied.code());
                }
                None => (
                    ResponseError::UnknownTopicId.code(),
                    format!("Topic id {topic_id} is not known."),
                ),
                Some(n) if count[n] > 1 => (
                    ResponseError::InvalidRequest.code(),
                    "Duplicate topic name.".to_owned(),
                ),
                Some(n) => match broker.catalog.delete(n) {
                    Ok(_) => return answer,
                    Err(e) => (e.error_code(), e.to_string()),
                },
            };
            answer
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message)))
        })
        .collect();
    DeleteTopicsResponse::default().with_responses(responses)
}
