//! ConsumerGroupDescribe (key 69, v0-1): one coordinator request per group, answered in
//! request order. A group that is not a consumer group is GROUP_ID_NOT_FOUND, on which
//! librdkafka's and Java's admin clients fall back to DescribeGroups.
//!
//! Authorized as Kafka 4 does: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; and a
//! group whose members subscribe to, own or are to own a topic the principal may not describe
//! is answered TOPIC_AUTHORIZATION_FAILED with no details (KAFKA-18813), so a describe does not
//! reveal topic names the principal could not list.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, RequestHeader,
};
use kafka_protocol::protocol::StrBytes;

use super::Client;
use super::groups::{NOT_REQUESTED, context, refused};
use super::proxy::authorize::Right;
use crate::acls::ResourceType;
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
            client.authorized_operations(ResourceType::Group, &group_id)
        } else {
            NOT_REQUESTED
        };
        if let Some(topic) = hidden_topic(client, &group) {
            client.permits(&Right::describe_topic(&topic));
            described.push(
                DescribedGroup::default()
                    .with_group_id(group.group_id)
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    .with_error_message(Some(StrBytes::from_static_str(HIDDEN)))
                    .with_authorized_operations(NOT_REQUESTED),
            );
            continue;
        }
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

/// The message of a group refused for its topics.
const HIDDEN: &str =
    "The group has described topic(s) that the client is not authorized to describe.";

/// A topic of `group` (subscribed, assigned or in the target assignment) the client may not
/// describe.
fn hidden_topic(client: &Client, group: &DescribedGroup) -> Option<String> {
    if group.error_code != 0 {
        return None;
    }
    group.members.iter().find_map(|member| {
        let subscribed = member.subscribed_topic_names.iter().map(|t| t.to_string());
        let owned = [&member.assignment, &member.target_assignment]
            .into_iter()
            .flat_map(|a| a.topic_partitions.iter().map(|t| t.topic_name.to_string()));
        subscribed
            .chain(owned)
            .find(|topic| !client.allows(&Right::describe_topic(topic)))
    })
}
