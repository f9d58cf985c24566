//! ConsumerGroupHeartbeat (key 68, v0-1): KIP-848's consumer protocol, handed to the
//! coordinator as is. The coordinator checks the request (v1 needs a member id, `""` is no
//! instance or rack id, ...) because its checks are Kafka's and belong with the group logic;
//! the body is already version-shaped (`SubscribedTopicRegex` exists only from v1, which the
//! decoder enforces).

use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, RequestHeader,
};

use super::Client;
use super::budget::{Held, holding};
use super::groups::{context, error_answer, refused};
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: ConsumerGroupHeartbeatRequest,
    held: Option<Held>,
) -> ConsumerGroupHeartbeatResponse {
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return refused;
    }
    // Kafka 4.0+: DESCRIBE on every subscribed topic name, or the whole request is refused.
    let mut subscribed = request.subscribed_topic_names.iter().flatten();
    if subscribed.any(|t| !client.permits(&Right::describe_topic(t))) {
        return error_answer(
            header,
            &group_id,
            &request,
            kafka_protocol::ResponseError::TopicAuthorizationFailed,
        );
    }
    driver
        .call_holding(&group_id, context(client, header), request, holding(held))
        .await
}
