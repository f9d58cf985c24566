//! DeleteGroups (key 42, v0-2): one coordinator request per group, answered in request order
//! (NONE, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ... per group).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, RequestHeader};

use super::Client;
use super::groups::{Groups, context, mismatch};
use crate::coordinator::{GroupRequest, GroupResponse};

pub async fn handle(
    groups: &dyn Groups,
    client: &Client,
    header: &RequestHeader,
    request: DeleteGroupsRequest,
) -> Result<DeleteGroupsResponse, String> {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        let answer = groups
            .request(
                group_id.as_str(),
                context(client, header),
                GroupRequest::DeleteGroup,
            )
            .await;
        let error_code = match answer {
            GroupResponse::DeleteGroup(code) => code,
            other => return Err(mismatch("DeleteGroups", &other)),
        };
        results.push(
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(error_code),
        );
    }
    Ok(DeleteGroupsResponse::default().with_results(results))
}
