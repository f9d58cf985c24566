//! What the per-API files of the group APIs share: the facts about a request that the
//! coordinator needs and that are not in its body. Each file asks the driver with its own
//! request type and gets its own response type back (`coordinator::GroupCall`).

use kafka_protocol::messages::RequestHeader;

use super::Client;
use crate::coordinator::RequestContext;

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
