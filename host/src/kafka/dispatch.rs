//! The one dispatch on the API key: a decoded request goes to its API's file and comes back as
//! a response body (or as nothing, for Produce with `acks = 0`).

use kafka_protocol::messages::{RequestKind, ResponseKind};

use super::request::Request;
use super::{
    Broker, Client, api_versions, create_partitions, create_topics, delete_groups, delete_topics,
    describe_groups, fetch, find_coordinator, heartbeat, join_group, leave_group, list_groups,
    list_offsets, metadata, offset_commit, offset_fetch, produce, sync_group,
};

/// What the connection sends back for one request.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per request, moved straight into the encoder
pub enum Outcome {
    Reply(ResponseKind),
    /// Nothing is sent (Produce with `acks = 0`).
    NoReply,
    /// The request cannot be served; the connection closes. Reached only through a bug (a
    /// coordinator answering the wrong kind): a closed connection beats a wrong answer.
    Close(String),
}

pub async fn handle(broker: &Broker, client: &Client, request: Request) -> Outcome {
    let version = request.version();
    let api_key = request.api_key;
    let header = request.header;
    let with_groups = broker.groups.is_some();
    let reply = match request.body {
        RequestKind::ApiVersions(r) => {
            ResponseKind::ApiVersions(api_versions::handle(&r, version, with_groups))
        }
        RequestKind::Metadata(r) => ResponseKind::Metadata(metadata::handle(broker, r, version)),
        RequestKind::FindCoordinator(r) => {
            ResponseKind::FindCoordinator(find_coordinator::handle(broker, r, version))
        }
        RequestKind::CreateTopics(r) => {
            ResponseKind::CreateTopics(create_topics::handle(broker, r, version))
        }
        RequestKind::DeleteTopics(r) => {
            ResponseKind::DeleteTopics(delete_topics::handle(broker, r, version))
        }
        RequestKind::CreatePartitions(r) => {
            ResponseKind::CreatePartitions(create_partitions::handle(broker, r, version))
        }
        RequestKind::ListOffsets(r) => {
            ResponseKind::ListOffsets(list_offsets::handle(broker, r, version))
        }
        RequestKind::Fetch(r) => ResponseKind::Fetch(fetch::handle(broker, r, version).await),
        RequestKind::Produce(r) => match produce::handle(r, version) {
            Some(response) => ResponseKind::Produce(response),
            None => {
                if let Some(metrics) = &broker.metrics {
                    metrics.kafka_request_without_response(api_key);
                }
                return Outcome::NoReply;
            }
        },
        body => {
            // The decoder lets group APIs through only when a coordinator is attached.
            let Some(groups) = broker.groups.as_deref() else {
                return Outcome::Close(format!("{api_key:?} needs a group coordinator"));
            };
            let answered = match body {
                RequestKind::JoinGroup(r) => join_group::handle(groups, client, &header, r)
                    .await
                    .map(ResponseKind::JoinGroup),
                RequestKind::SyncGroup(r) => sync_group::handle(groups, client, &header, r)
                    .await
                    .map(ResponseKind::SyncGroup),
                RequestKind::Heartbeat(r) => heartbeat::handle(groups, client, &header, r)
                    .await
                    .map(ResponseKind::Heartbeat),
                RequestKind::LeaveGroup(r) => leave_group::handle(groups, client, &header, r)
                    .await
                    .map(ResponseKind::LeaveGroup),
                RequestKind::OffsetCommit(r) => {
                    offset_commit::handle(broker, groups, client, &header, r)
                        .await
                        .map(ResponseKind::OffsetCommit)
                }
                RequestKind::OffsetFetch(r) => offset_fetch::handle(groups, client, &header, r)
                    .await
                    .map(ResponseKind::OffsetFetch),
                RequestKind::DescribeGroups(r) => {
                    describe_groups::handle(groups, client, &header, r)
                        .await
                        .map(ResponseKind::DescribeGroups)
                }
                RequestKind::ListGroups(r) => Ok(ResponseKind::ListGroups(
                    list_groups::handle(groups, r, version).await,
                )),
                RequestKind::DeleteGroups(r) => delete_groups::handle(groups, client, &header, r)
                    .await
                    .map(ResponseKind::DeleteGroups),
                _ => Err(format!("{api_key:?} is not served")),
            };
            match answered {
                Ok(reply) => reply,
                Err(reason) => return Outcome::Close(reason),
            }
        }
    };
    if let Some(metrics) = &broker.metrics {
        metrics.kafka_response(api_key, &reply);
    }
    Outcome::Reply(reply)
}
