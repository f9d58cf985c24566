//! Heartbeat (key 12, v0-4): handed to the coordinator as is.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, RequestHeader};

use super::Client;
use super::groups::{Groups, context, mismatch};
use crate::coordinator::{GroupRequest, GroupResponse};

pub async fn handle(
    groups: &dyn Groups,
    client: &Client,
    header: &RequestHeader,
    request: HeartbeatRequest,
) -> Result<HeartbeatResponse, String> {
    let group_id = request.group_id.to_string();
    let answer = groups
        .request(
            &group_id,
            context(client, header),
            GroupRequest::Heartbeat(request),
        )
        .await;
    match answer {
        GroupResponse::Heartbeat(response) => Ok(response),
        other => Err(mismatch("Heartbeat", &other)),
    }
}
