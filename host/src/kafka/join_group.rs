//! JoinGroup (key 11, v0-9): handed to the coordinator as is; the answer may wait for the whole
//! join phase (the connection's later requests wait behind it, as in Kafka).

use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, RequestHeader};

use super::Client;
use super::budget::{Held, holding};
use super::groups::{context, refused};
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: JoinGroupRequest,
    held: Option<Held>,
) -> JoinGroupResponse {
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return refused;
    }
    let mut response = driver
        .call_holding(&group_id, context(client, header), request, holding(held))
        .await;
    if header.request_api_version < 9 {
        // SkipAssignment exists from v9 only.
        response.skip_assignment = false;
    }
    response
}
