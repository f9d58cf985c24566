//! JoinGroup (key 11, v0-9): handed to the coordinator as is; the answer may wait for the whole
//! join phase (the connection's later requests wait behind it, as in Kafka).

use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, RequestHeader};

use super::Client;
use super::groups::{Groups, context, mismatch};
use crate::coordinator::{GroupRequest, GroupResponse};

pub async fn handle(
    groups: &dyn Groups,
    client: &Client,
    header: &RequestHeader,
    request: JoinGroupRequest,
) -> Result<JoinGroupResponse, String> {
    let group_id = request.group_id.to_string();
    let answer = groups
        .request(
            &group_id,
            context(client, header),
            GroupRequest::JoinGroup(request),
        )
        .await;
    match answer {
        GroupResponse::JoinGroup(mut response) => {
            if header.request_api_version < 9 {
                // SkipAssignment exists from v9 only.
                response.skip_assignment = false;
            }
            Ok(response)
        }
        other => Err(mismatch("JoinGroup", &other)),
    }
}
