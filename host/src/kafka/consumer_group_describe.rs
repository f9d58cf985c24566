//! ConsumerGroupDescribe (key 69, v0-1): one coordinator request per group, answered in
//! request order. A group that is not a consumer group is GROUP_ID_NOT_FOUND, on which
//! librdkafka's and Java's admin clients fall back to DescribeGroups.

use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, RequestHeader,
};

use super::Client;
use super::groups::context;
use crate::coordinator::ConsumerGroupDescribe;
use crate::driver::Driver;

/// Kafka `AclOperation` bits for a group: READ (3), DELETE (6), DESCRIBE (8).
const GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);
/// Kafka's "not requested" value for `authorized_operations`.
const NOT_REQUESTED: i32 = i32::MIN;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let version = header.request_api_version;
    let mut described = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
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
