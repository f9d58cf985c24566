//! The one dispatch on the API key: a decoded request goes to its API's file and comes back as
//! a response body (or as nothing, for Produce with `acks = 0`).

use kafka_protocol::messages::{RequestKind, ResponseKind};

use super::budget::Held;
use super::{
    Broker, Client, api_versions, consumer_group_describe, consumer_group_heartbeat,
    create_partitions, create_topics, delete_groups, delete_topics, describe_groups, fetch,
    find_coordinator, heartbeat, join_group, leave_group, list_groups, list_offsets, metadata,
    offset_commit, offset_delete, offset_fetch, produce, sync_group, txn_offset_commit,
};
use assignor_wire::request::Request;

/// What the connection sends back for one request.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per request, moved straight into the encoder
pub enum Outcome {
    Reply(ResponseKind),
    /// Nothing is sent (Produce with `acks = 0`).
    NoReply,
    /// The request cannot be served; the connection closes. Reached only through a bug (an
    /// advertised API without a handler): a closed connection beats a wrong answer.
    Close(String),
}

/// `held`: the request's share of `kafka.queued_max_request_bytes`, handed to the group's shard
/// by the APIs whose answer waits on the rest of the group, and given back when this returns
/// by the others (`budget.rs`).
pub async fn handle(
    broker: &Broker,
    client: &Client,
    request: Request,
    held: Option<Held>,
) -> Outcome {
    let version = request.version();
    let api_key = request.api_key;
    let header = request.header;
    let driver = &broker.driver;
    let reply = match request.body {
        RequestKind::ApiVersions(r) => {
            ResponseKind::ApiVersions(api_versions::handle(&r, version, broker.login.is_some()))
        }
        RequestKind::Metadata(r) => {
            ResponseKind::Metadata(metadata::handle(broker, client, r, version))
        }
        RequestKind::FindCoordinator(r) => {
            ResponseKind::FindCoordinator(find_coordinator::handle(broker, client, r, version))
        }
        RequestKind::CreateTopics(r) => {
            ResponseKind::CreateTopics(create_topics::handle(broker, client, r, version))
        }
        RequestKind::DeleteTopics(r) => {
            ResponseKind::DeleteTopics(delete_topics::handle(broker, client, r, version))
        }
        RequestKind::CreatePartitions(r) => {
            ResponseKind::CreatePartitions(create_partitions::handle(broker, client, r, version))
        }
        RequestKind::ListOffsets(r) => {
            ResponseKind::ListOffsets(list_offsets::handle(broker, client, r, version))
        }
        RequestKind::Fetch(r) => {
            ResponseKind::Fetch(fetch::handle(broker, client, r, version).await)
        }
        RequestKind::Produce(r) => match produce::handle(client, r, version) {
            Some(response) => ResponseKind::Produce(response),
            None => {
                if let Some(metrics) = &broker.metrics {
                    metrics.kafka_request_without_response(api_key);
                }
                return Outcome::NoReply;
            }
        },
        RequestKind::JoinGroup(r) => {
            ResponseKind::JoinGroup(join_group::handle(driver, client, &header, r, held).await)
        }
        RequestKind::SyncGroup(r) => {
            ResponseKind::SyncGroup(sync_group::handle(driver, client, &header, r, held).await)
        }
        RequestKind::Heartbeat(r) => {
            ResponseKind::Heartbeat(heartbeat::handle(driver, client, &header, r).await)
        }
        RequestKind::LeaveGroup(r) => {
            ResponseKind::LeaveGroup(leave_group::handle(driver, client, &header, r).await)
        }
        RequestKind::OffsetCommit(r) => {
            ResponseKind::OffsetCommit(offset_commit::handle(broker, client, &header, r).await)
        }
        RequestKind::TxnOffsetCommit(r) => {
            match txn_offset_commit::handle(broker, client, &header, r).await {
                Some(response) => ResponseKind::TxnOffsetCommit(response),
                None => {
                    return Outcome::Close("TxnOffsetCommit is served in proxy mode only".into());
                }
            }
        }
        RequestKind::OffsetFetch(r) => {
            ResponseKind::OffsetFetch(offset_fetch::handle(driver, client, &header, r).await)
        }
        RequestKind::OffsetDelete(r) => {
            ResponseKind::OffsetDelete(offset_delete::handle(broker, client, &header, r).await)
        }
        RequestKind::DescribeGroups(r) => {
            ResponseKind::DescribeGroups(describe_groups::handle(driver, client, &header, r).await)
        }
        RequestKind::ListGroups(r) => {
            ResponseKind::ListGroups(list_groups::handle(driver, client, r, version).await)
        }
        RequestKind::ConsumerGroupHeartbeat(r) => ResponseKind::ConsumerGroupHeartbeat(
            consumer_group_heartbeat::handle(driver, client, &header, r, held).await,
        ),
        RequestKind::ConsumerGroupDescribe(r) => ResponseKind::ConsumerGroupDescribe(
            consumer_group_describe::handle(driver, client, &header, r).await,
        ),
        RequestKind::DeleteGroups(r) => {
            ResponseKind::DeleteGroups(delete_groups::handle(driver, client, &header, r).await)
        }
        // `request::parse` decodes only the APIs `api_versions` advertises, and each has an
        // arm above; a new entry in that table without one lands here.
        _ => return Outcome::Close(format!("{api_key:?} is advertised but has no handler")),
    };
    if let Some(metrics) = &broker.metrics {
        metrics.kafka_response(api_key, &reply);
    }
    Outcome::Reply(reply)
}
