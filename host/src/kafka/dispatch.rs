//! The one dispatch on the API key: a decoded request goes to its API's file and comes back as
//! a response body (or as nothing, for Produce with `acks = 0`).

use kafka_protocol::messages::{RequestKind, ResponseKind};

use super::request::Request;
use super::{
    Broker, Client, api_versions, create_partitions, create_topics, delete_topics, fetch,
    find_coordinator, list_offsets, metadata, produce,
};

/// What the connection sends back for one request.
#[derive(Debug)]
pub enum Outcome {
    Reply(ResponseKind),
    /// Nothing is sent (Produce with `acks = 0`).
    NoReply,
    /// The request cannot be served; the connection closes (never reached for a request the
    /// decoder accepted, but a closed connection beats a panic).
    Close(String),
}

pub async fn handle(broker: &Broker, _client: &Client, request: Request) -> Outcome {
    let version = request.version();
    let api_key = request.api_key;
    let reply = match request.body {
        RequestKind::ApiVersions(r) => ResponseKind::ApiVersions(api_versions::handle(&r, version)),
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
            None => return Outcome::NoReply,
        },
        _ => return Outcome::Close(format!("{api_key:?} is not served")),
    };
    Outcome::Reply(reply)
}
