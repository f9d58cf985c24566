//! Heartbeat (key 12, v0-4): handed to the coordinator as is.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, RequestHeader};

use super::Client;
use super::groups::context;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let group_id = request.group_id.to_string();
    driver
        .call(&group_id, context(client, header), request)
        .await
}
