//! LeaveGroup (key 13, v0-5): handed to the coordinator as is (a v0-2 request names one member
//! in `member_id`, v3+ a batch in `members`).
//!
//! Below v3 the answer has no per-member list, so the single member's error is folded into the
//! top-level error when that is NONE, as Kafka's `LeaveGroupResponse` does for old versions.

use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse, RequestHeader};

use super::Client;
use super::groups::{context, refused};
use super::proxy::authorize::Right;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return refused;
    }
    let mut response = driver
        .call(&group_id, context(client, header), request)
        .await;
    if header.request_api_version < 3 {
        if response.error_code == 0
            && let Some(member) = response.members.iter().find(|m| m.error_code != 0)
        {
            response.error_code = member.error_code;
        }
        response.members.clear();
    }
    response
}
