//! OffsetFetch (key 9, v1-9): committed offsets, in both layouts.
//!
//! v1-7 ask for one group (`group_id`, `topics`, null = every committed partition from v2); v8+
//! batch groups in `groups[]` (librdkafka uses this layout at v8/9). Either way each group is
//! one [`OffsetFetchQuery`] to the coordinator and the answers are assembled in request order.
//! The group-level error goes where the version puts it: top level in v2-7, per group in v8+,
//! and copied into every partition in v1 (offset -1, empty metadata), as Kafka does.
//!
//! Authorized as KafkaApis does: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED for
//! it; DESCRIBE on each named topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED
//! (offset -1, after the allowed topics); and when every committed offset is asked for, the
//! topics the principal may not describe are left out without a word.

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, RequestHeader, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::Client;
use super::groups::{context, refused};
use super::proxy::authorize::Right;
use crate::coordinator::{OffsetFetchQuery, OffsetFetchResult, PartitionOffset};
use crate::driver::Driver;

pub async fn handle(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let version = header.request_api_version;
    if version >= 8 {
        let mut answered = Vec::with_capacity(request.groups.len());
        for group in request.groups {
            let query = OffsetFetchQuery {
                topics: group.topics.map(|topics| {
                    topics
                        .into_iter()
                        .map(|t| (t.name.to_string(), t.partition_indexes))
                        .collect()
                }),
                require_stable: request.require_stable,
                member_id: group.member_id.map(|m| m.to_string()),
                member_epoch: group.member_epoch,
            };
            let result = fetch(driver, client, header, &group.group_id, query).await;
            answered.push(
                OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id)
                    .with_error_code(result.error_code)
                    .with_topics(
                        result
                            .topics
                            .into_iter()
                            .map(|(name, partitions)| {
                                OffsetFetchResponseTopics::default()
                                    .with_name(topic(name))
                                    .with_partitions(partitions.into_iter().map(batched).collect())
                            })
                            .collect(),
                    ),
            );
        }
        return OffsetFetchResponse::default().with_groups(answered);
    }

    let query = OffsetFetchQuery {
        topics: request.topics.map(|topics| {
            topics
                .into_iter()
                .map(|t| (t.name.to_string(), t.partition_indexes))
                .collect()
        }),
        require_stable: version >= 7 && request.require_stable,
        member_id: None,
        member_epoch: -1,
    };
    let result = fetch(driver, client, header, &request.group_id, query).await;
    let group_error = result.error_code;
    let topics = result
        .topics
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|p| {
                    let mut answer = single(p);
                    if version < 2 && group_error != 0 {
                        answer.committed_offset = -1;
                        answer.metadata = Some(StrBytes::default());
                        answer.error_code = group_error;
                    }
                    answer
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(topic(name))
                .with_partitions(partitions)
        })
        .collect();
    let mut response = OffsetFetchResponse::default().with_topics(topics);
    if version >= 2 {
        response.error_code = group_error;
    }
    response
}

/// One group's offsets as the principal may see them (module docs).
async fn fetch(
    driver: &Driver,
    client: &Client,
    header: &RequestHeader,
    group_id: &str,
    mut query: OffsetFetchQuery,
) -> OffsetFetchResult {
    let right = Right::describe_group(group_id);
    if let Some(refused) = refused(client, header, group_id, &right, &query) {
        return refused;
    }
    let mut denied = Vec::new();
    if let Some(topics) = query.topics.as_mut() {
        let (allowed, refused): (Vec<_>, Vec<_>) = topics
            .drain(..)
            .partition(|(name, _)| client.permits(&Right::describe_topic(name)));
        *topics = allowed;
        denied = refused;
    }
    let every_topic = query.topics.is_none();
    let mut result = driver.call(group_id, context(client, header), query).await;
    if every_topic {
        // Kafka's silent filter: nothing told.
        result
            .topics
            .retain(|(name, _)| client.allows(&Right::describe_topic(name)));
    }
    let code = kafka_protocol::ResponseError::TopicAuthorizationFailed.code();
    result
        .topics
        .extend(denied.into_iter().map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|partition_index| PartitionOffset {
                    partition_index,
                    committed_offset: -1,
                    committed_leader_epoch: -1,
                    metadata: Some(String::new()),
                    error_code: code,
                })
                .collect();
            (name, partitions)
        }));
    result
}

fn topic(name: String) -> TopicName {
    TopicName(StrBytes::from_string(name))
}

fn single(p: PartitionOffset) -> OffsetFetchResponsePartition {
    OffsetFetchResponsePartition::default()
        .with_partition_index(p.partition_index)
        .with_committed_offset(p.committed_offset)
        .with_committed_leader_epoch(p.committed_leader_epoch)
        .with_metadata(p.metadata.map(StrBytes::from_string))
        .with_error_code(p.error_code)
}

fn batched(p: PartitionOffset) -> OffsetFetchResponsePartitions {
    OffsetFetchResponsePartitions::default()
        .with_partition_index(p.partition_index)
        .with_committed_offset(p.committed_offset)
        .with_committed_leader_epoch(p.committed_leader_epoch)
        .with_metadata(p.metadata.map(StrBytes::from_string))
        .with_error_code(p.error_code)
}
