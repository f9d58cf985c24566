//! Heartbeat (key 12, v0-4): handed to the coordinator as is.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, RequestHeader};

use super::Client;
use super::groups::{context, refused};
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return refused;
    }
    driver
        .call(&group_id, context(client, header), request)
        .await
}
