//! ConsumerGroupHeartbeat (key 68, v0-1): KIP-848's consumer protocol, handed to the
//! coordinator as is. The coordinator checks the request (v1 needs a member id, `""` is no
//! instance or rack id, ...) because its checks are Kafka's and belong with the group logic;
//! the body is already version-shaped (`SubscribedTopicRegex` exists only from v1, which the
//! decoder enforces).

use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, RequestHeader,
};

use super::Client;
use super::groups::{context, refused};
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return refused;
    }
    driver
        .call(&group_id, context(client, header), request)
        .await
}
