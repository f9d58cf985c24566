//! Produce (key 0, v3-13): advertised, always refused.
//!
//! librdkafka decides whether it may fetch from the Produce versions a broker advertises
//! (reference/real-clients.md 4.1), so Produce is in the ApiVersions table. The host stores no
//! messages, so every partition of every produce gets POLICY_VIOLATION with a message saying so:
//! a non-retriable error, so a misdirected producer fails fast with the reason instead of
//! retrying forever (NOT_LEADER_OR_FOLLOWER would make it retry). With `acks = 0` Kafka sends no
//! response at all; neither does the host. A topic the client may not WRITE is
//! TOPIC_AUTHORIZATION_FAILED first, as Kafka checks it before anything else of a partition.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

use super::Client;
use super::proxy::authorize::Right;

/// The refusal every partition gets.
pub const REFUSAL: &str = "assignor-host stores no messages: it is a consumer-group coordinator; produce to your Kafka cluster";

/// `None` when the producer asked for no answer (`acks = 0`).
pub fn handle(client: &Client, request: ProduceRequest, _version: i16) -> Option<ProduceResponse> {
    if request.acks == 0 {
        return None;
    }
    let responses = request
        .topic_data
        .into_iter()
        .map(|topic| {
            let writable = client.permits(&Right::write_topic(&topic.name));
            let partitions = topic
                .partition_data
                .into_iter()
                .map(|p| {
                    let answer = PartitionProduceResponse::default()
                        .with_index(p.index)
                        .with_base_offset(-1);
                    if writable {
                        answer
                            .with_error_code(ResponseError::PolicyViolation.code())
                            .with_error_message(Some(StrBytes::from_static_str(REFUSAL)))
                    } else {
                        answer.with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    }
                })
                .collect();
            TopicProduceResponse::default()
                .with_name(topic.name)
                .with_topic_id(topic.topic_id)
                .with_partition_responses(partitions)
        })
        .collect();
    Some(ProduceResponse::default().with_responses(responses))
}
