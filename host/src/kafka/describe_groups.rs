//! DescribeGroups (key 15, v0-5): one coordinator request per group, answered in request order.
//!
//! Version-specific fields are settled here: `authorized_operations` (v3+) is filled only when
//! asked for (the host has no ACLs, so every group operation is allowed) and member instance
//! ids exist from v4.

use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, RequestHeader};

use super::Client;
use super::groups::{NOT_REQUESTED, context, refused};
use super::proxy::authorize::Right;
use crate::acls::ResourceType;
use crate::coordinator::DescribeGroup;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let version = header.request_api_version;
    let mut described = Vec::with_capacity(request.groups.len());
    for group_id in request.groups {
        let right = Right::describe_group(&group_id);
        if let Some(refused) = refused(client, header, &group_id, &right, &DescribeGroup) {
            described.push(refused);
            continue;
        }
        let mut group = driver
            .call(group_id.as_str(), context(client, header), DescribeGroup)
            .await;
        group.authorized_operations = if version >= 3 && request.include_authorized_operations {
            client.authorized_operations(ResourceType::Group, &group_id)
        } else {
            NOT_REQUESTED
        };
        group.error_message = None;
        if version < 4 {
            for member in &mut group.members {
                member.group_instance_id = None;
            }
        }
        described.push(group);
    }
    DescribeGroupsResponse::default().with_groups(described)
}
