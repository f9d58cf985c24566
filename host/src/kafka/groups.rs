//! What the per-API files of the group APIs share: the facts about a request that the
//! coordinator needs and that are not in its body, and Kafka's refusals. Each
//! file asks the driver with its own request type and gets its own response type back
//! (`coordinator::GroupCall`).

use kafka_protocol::messages::RequestHeader;

use super::Client;
use crate::coordinator::RequestContext;

/// Kafka's `authorized_operations` when the request did not ask for them.
pub const NOT_REQUESTED: i32 = i32::MIN;

/// The request facts the coordinator needs that are not in the body.
pub fn context(client: &Client, header: &RequestHeader) -> RequestContext {
    RequestContext {
        api_version: header.request_api_version,
        client_id: header
            .client_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        client_host: client.host.clone(),
    }
}

/// Kafka's answer to a request the client may not make (`right` refused by the cluster:
/// GROUP_AUTHORIZATION_FAILED in the request's own shape, as KafkaApis answers before it
/// reaches the coordinator), or `None` when it may. The request is cloned only when refused.
pub fn refused<R: crate::coordinator::GroupCall + Clone>(
    client: &Client,
    header: &RequestHeader,
    group_id: &str,
    right: &crate::kafka::proxy::authorize::Right,
    request: &R,
) -> Option<R::Answer> {
    if client.permits(right) {
        return None;
    }
    Some(error_answer(
        header,
        group_id,
        request,
        kafka_protocol::ResponseError::GroupAuthorizationFailed,
    ))
}

/// `error` answered to the whole request, in its own shape.
pub fn error_answer<R: crate::coordinator::GroupCall + Clone>(
    header: &RequestHeader,
    group_id: &str,
    request: &R,
    error: kafka_protocol::ResponseError,
) -> R::Answer {
    let answer = crate::coordinator::error_response(
        header.request_api_version,
        group_id,
        &request.clone().into_request(),
        error,
    );
    R::answer(answer).unwrap_or_else(|_| unreachable!("error_response keeps the kind"))
}
