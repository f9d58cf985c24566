//! DeleteGroups (key 42, v0-2): one coordinator request per group, answered in request order
//! (NONE, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ... per group).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, RequestHeader};

use super::Client;
use super::groups::context;
use super::proxy::authorize::Right;
use crate::coordinator::DeleteGroup;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        let error_code = if client.permits(&Right::delete_group(&group_id)) {
            driver
                .call(group_id.as_str(), context(client, header), DeleteGroup)
                .await
        } else {
            kafka_protocol::ResponseError::GroupAuthorizationFailed.code()
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(error_code),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}
