//! ListOffsets (key 2, v1-10): every partition's log is empty and starts at offset 0.
//!
//! Consumers with no committed offset reset through here (`auto.offset.reset`), so the answer
//! must be a concrete offset: EARLIEST (-2), LATEST (-1) and EARLIEST_LOCAL (-4) are all 0. A
//! timestamp lookup (>= 0), MAX_TIMESTAMP (-3) and LATEST_TIERED (-5) find no record in an empty
//! log, which Kafka answers with offset -1 and timestamp -1; so does the host. `leader_epoch` is
//! -1 as everywhere. Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION. A topic the
//! client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED in each of its partitions (Kafka's
//! `handleListOffsetRequest`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::proxy::authorize::Right;
use super::{Broker, Client};

/// Special `timestamp` values that name a position rather than a time.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const EARLIEST_LOCAL: i64 = -4;

pub fn handle(
    broker: &Broker,
    client: &Client,
    request: ListOffsetsRequest,
    _version: i16,
) -> ListOffsetsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let known = broker.catalog.topic(&topic.name);
            let allowed = client.permits(&Right::describe_topic(&topic.name));
            let partitions = topic
                .partitions
                .into_iter()
                .map(|p| {
                    let answer = ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index);
                    if !allowed {
                        return answer
                            .with_error_code(ResponseError::TopicAuthorizationFailed.code());
                    }
                    let exists = known
                        .as_ref()
                        .is_some_and(|t| (0..t.partition_count).contains(&p.partition_index));
                    if !exists {
                        return answer
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code());
                    }
                    match p.timestamp {
                        LATEST | EARLIEST | EARLIEST_LOCAL => answer.with_offset(0),
                        _ => answer,
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}
