//! SyncGroup (key 14, v0-5): handed to the coordinator, which answers every member with its own
//! assignment. From v5 Kafka's request layer refuses a request whose `protocol_type` or
//! `protocol_name` is null with INCONSISTENT_GROUP_PROTOCOL before it reaches the coordinator
//! (`SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent`); so does this file.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{RequestHeader, SyncGroupRequest, SyncGroupResponse};

use super::Client;
use super::budget::{Held, holding};
use super::groups::{context, refused};
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: SyncGroupRequest,
    held: Option<Held>,
) -> SyncGroupResponse {
    if header.request_api_version >= 5
        && (request.protocol_type.is_none() || request.protocol_name.is_none())
    {
        return SyncGroupResponse::default()
            .with_error_code(ResponseError::InconsistentGroupProtocol.code());
    }
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return refused;
    }
    driver
        .call_holding(&group_id, context(client, header), request, holding(held))
        .await
}
