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

use super::groups::context;
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
    Some(
        broker
            .driver
            .call(&group_id, context(client, header), request)
            .await,
    )
}
