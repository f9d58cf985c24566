//! ConsumerGroupDescribe (key 69, v0-1): one coordinator request per group, answered in
//! request order. A group that is not a consumer group is GROUP_ID_NOT_FOUND, on which
//! librdkafka's and Java's admin clients fall back to DescribeGroups.

use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, RequestHeader,
};

use super::Client;
use super::groups::{GROUP_OPERATIONS, NOT_REQUESTED, context, refused};
use super::proxy::authorize::Right;
use crate::coordinator::ConsumerGroupDescribe;
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let version = header.request_api_version;
    let mut described = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
        let right = Right::describe_group(&group_id);
        if let Some(refused) = refused(client, header, &group_id, &right, &ConsumerGroupDescribe) {
            described.push(refused);
            continue;
        }
        let mut group = driver
            .call(
                group_id.as_str(),
                context(client, header),
                ConsumerGroupDescribe,
            )
            .await;
        group.authorized_operations = if request.include_authorized_operations {
            GROUP_OPERATIONS
        } else {
            NOT_REQUESTED
        };
        if version < 1 {
            // MemberType exists from v1 (KIP-1099); v0 writes no such field.
            for member in &mut group.members {
                member.member_type = -1;
            }
        }
        described.push(group);
    }
    ConsumerGroupDescribeResponse::default().with_groups(described)
}
