//! FindCoordinator (key 10): the host coordinates every consumer group, so the answer to a
//! group key is the host itself (v0-3: one key; v4+: the batched `coordinator_keys`, answered
//! in request order); in a cluster of host nodes it is the node holding the group's shard.
//!
//! The host is no transaction coordinator (key type 1) nor share-group coordinator (key type
//! 2): those get COORDINATOR_NOT_AVAILABLE with a message saying so. Any other key type is
//! INVALID_REQUEST, as in Kafka's `KafkaApis.getCoordinator`. In v0-3 an error answer names
//! node -1, host "" and port -1, as Kafka's error response does.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::proxy::authorize::Right;
use super::{Broker, Client};

/// `(error_code, error_message)` for a key type; `None` when the host is the coordinator.
fn refusal(key_type: i8) -> Option<(i16, String)> {
    match key_type {
        0 => None,
        1 => Some((
            ResponseError::CoordinatorNotAvailable.code(),
            "assignor-host coordinates consumer groups only; it has no transaction coordinator"
                .to_owned(),
        )),
        2 => Some((
            ResponseError::CoordinatorNotAvailable.code(),
            "assignor-host coordinates consumer groups only; it has no share-group coordinator"
                .to_owned(),
        )),
        other => Some((
            ResponseError::InvalidRequest.code(),
            format!("Unknown coordinator type {other}"),
        )),
    }
}

/// Where a group key's coordinator is: `(node id, host, port)`, or the refusal.
type Answer = Result<(i32, StrBytes, i32), (i16, String)>;

/// The coordinator of one key: this host, or in a cluster of host nodes the node holding the
/// group's shard (`cluster::Ownership::coordinator_of` says which while the shard moves).
fn coordinator_of(broker: &Broker, client: &Client, key_type: i8, key: &str) -> Answer {
    if let Some(refused) = refusal(key_type) {
        return Err(refused);
    }
    // DESCRIBE on the group, as Kafka asks before it says where a group is.
    if !client.permits(&Right::describe_group(key)) {
        return Err((
            ResponseError::GroupAuthorizationFailed.code(),
            format!("Not authorized to access group: {key}"),
        ));
    }
    let Some(cluster) = broker.mode.cluster() else {
        let node = &broker.node;
        return Ok((
            node.node_id,
            StrBytes::from_string(node.host.clone()),
            node.port,
        ));
    };
    let peer = cluster.coordinator_of(key);
    Ok((peer.node_id, StrBytes::from_string(peer.host), peer.port))
}

pub fn handle(
    broker: &Broker,
    client: &Client,
    request: FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let found = coordinator_of(broker, client, request.key_type, key.as_str());
                let answer = Coordinator::default().with_key(key);
                match found {
                    Ok((node_id, host, port)) => answer
                        .with_node_id(BrokerId(node_id))
                        .with_host(host)
                        .with_port(port)
                        .with_error_message(None),
                    Err((code, message)) => answer
                        .with_node_id(BrokerId(-1))
                        .with_port(-1)
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message))),
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    match coordinator_of(broker, client, request.key_type, request.key.as_str()) {
        Ok((node_id, host, port)) => FindCoordinatorResponse::default()
            .with_node_id(BrokerId(node_id))
            .with_host(host)
            .with_port(port),
        Err((code, message)) => FindCoordinatorResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message)))
            .with_node_id(BrokerId(-1))
            .with_port(-1),
    }
}
