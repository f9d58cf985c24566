//! TxnOffsetCommit (key 28, v2-5, proxy mode only): a transaction's offsets, handed to the
//! coordinator as they are. It checks them against the group and has the upstream cluster write
//! them inside the client's transaction; the answer carries the cluster's code for each
//! partition. Unlike OffsetCommit, topics are not looked up in the host's catalog: the cluster
//! answers for its own topics (UNKNOWN_TOPIC_OR_PARTITION, retriable), and a topic a Streams
//! application has just created may not be in the host's last read of its Metadata yet.
//!
//! Standalone there is no transaction coordinator, so the API is neither advertised nor served
//! (the connection refuses it before decoding, as any API not offered); reaching this file
//! without an upstream is a bug, answered with a closed connection.

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{RequestHeader, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::groups::{context, refused};
use super::proxy::authorize::Right;
use super::{Broker, Client};

/// The answer, or `None` on a host without an upstream (never served there).
pub async fn handle(
    broker: &Broker,
    client: &Client,
    header: &RequestHeader,
    request: TxnOffsetCommitRequest,
) -> Option<TxnOffsetCommitResponse> {
    broker.proxy.as_ref()?;
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return Some(refused);
    }
    // READ on each topic: one refused answers TOPIC_AUTHORIZATION_FAILED for the request's
    // partitions of it; the others go on, as in Kafka.
    let (allowed, denied): (Vec<_>, Vec<_>) = request
        .topics
        .iter()
        .cloned()
        .partition(|t| client.allows(&Right::read_topic(&t.name)));
    if !denied.is_empty() {
        let code = kafka_protocol::ResponseError::TopicAuthorizationFailed.code();
        let refused_topics = denied.iter().map(|t| {
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        });
        let mut response = TxnOffsetCommitResponse::default();
        if !allowed.is_empty() {
            let mut rest = request;
            rest.topics = allowed;
            response = broker
                .driver
                .call(&group_id, context(client, header), rest)
                .await;
        }
        response.topics.extend(refused_topics);
        return Some(response);
    }
    Some(
        broker
            .driver
            .call(&group_id, context(client, header), request)
            .await,
    )
}
