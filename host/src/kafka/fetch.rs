//! Fetch (key 1, v4-12): well-formed empty answers, held for `max_wait_ms` (at most
//! `kafka.max_fetch_wait`).
//!
//! The host stores no messages, but consumers must be able to fetch (kafkajs crashes without
//! Fetch) and must not spin: none of the clients waits after an empty fetch, so the answer is
//! held for `max_wait_ms` exactly like Kafka's fetch purgatory holds a fetch that found fewer
//! than `min_bytes`. Like Kafka, it answers at once when the client asked not to wait
//! (`max_wait_ms <= 0` or `min_bytes <= 0`) or when some partition has an error. The hold
//! suspends only this connection's task (its later requests wait behind it, as in Kafka).
//!
//! Per partition: an empty log that ends exactly at the fetch offset: high watermark = last
//! stable offset = the fetch offset (0 for a negative one), log start 0, no aborted transactions,
//! empty records, never OFFSET_OUT_OF_RANGE (that would start a reset loop in every client).
//! Ending the log where the consumer stands matters to consumers resuming from a committed
//! offset: librdkafka signals "end of partition" (`enable.partition.eof`, kcat's `-e`) only when
//! the fetch offset equals the high watermark (`rd_kafka_fetch_reply_handle_partition`,
//! src/rdkafka_fetcher.c), so a fixed watermark of 0 left every partition with a committed
//! offset short of its end forever.
//! Fetch sessions (KIP-227) are declined by always answering `session_id` 0, which every
//! client accepts; an incremental fetch naming a session is FETCH_SESSION_ID_NOT_FOUND.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::proxy::authorize::Right;
use super::{Broker, Client};

pub async fn handle(
    broker: &Broker,
    client: &Client,
    request: FetchRequest,
    version: i16,
) -> FetchResponse {
    let response = answer(broker, client, &request, version);
    let has_error = response.error_code != 0
        || response
            .responses
            .iter()
            .flat_map(|t| &t.partitions)
            .any(|p| p.error_code != 0);
    if !has_error && request.max_wait_ms > 0 && request.min_bytes > 0 {
        let asked = Duration::from_millis(request.max_wait_ms as u64);
        tokio::time::sleep(asked.min(broker.max_fetch_wait)).await;
    }
    response
}

/// The answer, without the hold.
fn answer(broker: &Broker, client: &Client, request: &FetchRequest, version: i16) -> FetchResponse {
    if version >= 7 {
        let session_error = if request.session_id != 0 {
            Some(ResponseError::FetchSessionIdNotFound)
        } else if request.session_epoch > 0 {
            Some(ResponseError::InvalidFetchSessionEpoch)
        } else {
            None
        };
        if let Some(error) = session_error {
            return FetchResponse::default().with_error_code(error.code());
        }
    }
    let responses = request
        .topics
        .iter()
        .map(|topic| {
            let known = broker.catalog.topic(&topic.topic);
            // A consumer's fetch needs READ on the topic (Kafka's `handleFetchRequest`).
            let readable = client.permits(&Right::read_topic(&topic.topic));
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let exists = known
                        .as_ref()
                        .is_some_and(|t| (0..t.partition_count).contains(&p.partition));
                    let data = PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_records(Some(Bytes::new()));
                    if !readable {
                        data.with_error_code(ResponseError::TopicAuthorizationFailed.code())
                            .with_high_watermark(-1)
                    } else if exists {
                        let end = p.fetch_offset.max(0);
                        data.with_high_watermark(end)
                            .with_last_stable_offset(end)
                            .with_log_start_offset(0)
                    } else {
                        data.with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_high_watermark(-1)
                    }
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    FetchResponse::default().with_responses(responses)
}
