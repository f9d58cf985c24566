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

use kafka_protocol::messages::{RequestHeader, TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::groups::{context, refused};
use super::proxy::authorize::Right;
use super::{Broker, Client};
use crate::coordinator::txn_offset_commit_all;

/// The answer, or `None` on a host without an upstream (never served there).
pub async fn handle(
    broker: &Broker,
    client: &Client,
    header: &RequestHeader,
    request: TxnOffsetCommitRequest,
) -> Option<TxnOffsetCommitResponse> {
    broker.mode.proxy()?;
    let group_id = request.group_id.to_string();
    let right = Right::read_group(&group_id);
    if let Some(refused) = refused(client, header, &group_id, &right, &request) {
        return Some(refused);
    }
    // READ on each topic: one refused answers TOPIC_AUTHORIZATION_FAILED for the request's
    // partitions of it; the others go on, as in Kafka.
    let mut request = request;
    let (allowed, denied): (Vec<_>, Vec<_>) = std::mem::take(&mut request.topics)
        .into_iter()
        .partition(|t| client.permits(&Right::read_topic(&t.name)));
    let any_allowed = !allowed.is_empty();
    request.topics = allowed;
    let mut response = if denied.is_empty() || any_allowed {
        broker
            .driver
            .call(&group_id, context(client, header), request)
            .await
    } else {
        TxnOffsetCommitResponse::default()
    };
    let code = kafka_protocol::ResponseError::TopicAuthorizationFailed.code();
    let refused = TxnOffsetCommitRequest::default().with_topics(denied);
    response
        .topics
        .extend(txn_offset_commit_all(&refused, code).topics);
    Some(response)
}
