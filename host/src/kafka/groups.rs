//! The group coordinator as the wire layer sees it: one request for one group in, one answer
//! out (the contract in `coordinator/mod.rs`). The driver implements it; the per-API files call
//! it and never hold group logic themselves.
//!
//! It is a trait so the wire layer depends on the contract rather than on the driver's
//! internals, and so a host without a coordinator (none configured yet) simply does not
//! advertise the group APIs.

use std::future::Future;
use std::pin::Pin;

use kafka_protocol::messages::RequestHeader;
use kafka_protocol::messages::list_groups_response::ListedGroup;

use super::Client;
use crate::coordinator::{GroupRequest, GroupResponse, RequestContext};

/// A boxed future borrowing the coordinator (trait objects cannot have `async fn`).
pub type GroupFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The coordinator's entry points for the wire layer.
pub trait Groups: Send + Sync + 'static {
    /// Handles one request for `group_id`; resolves when the coordinator answers (a JoinGroup
    /// may wait for the whole join phase).
    fn request<'a>(
        &'a self,
        group_id: &'a str,
        ctx: RequestContext,
        request: GroupRequest,
    ) -> GroupFuture<'a, GroupResponse>;

    /// Every group, filtered like Kafka's ListGroups (empty filter = all; states compared
    /// case-insensitively).
    fn list_groups<'a>(
        &'a self,
        states_filter: &'a [String],
        types_filter: &'a [String],
    ) -> GroupFuture<'a, Vec<ListedGroup>>;
}

impl Groups for crate::driver::Driver {
    fn request<'a>(
        &'a self,
        group_id: &'a str,
        ctx: RequestContext,
        request: GroupRequest,
    ) -> GroupFuture<'a, GroupResponse> {
        Box::pin(crate::driver::Driver::request(self, group_id, ctx, request))
    }

    fn list_groups<'a>(
        &'a self,
        states_filter: &'a [String],
        types_filter: &'a [String],
    ) -> GroupFuture<'a, Vec<ListedGroup>> {
        Box::pin(crate::driver::Driver::list_groups(
            self,
            states_filter,
            types_filter,
        ))
    }
}

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

/// The error when the coordinator answers with the wrong kind of response (a bug): the
/// connection closes rather than sending a wrong answer.
pub fn mismatch(api: &str, got: &GroupResponse) -> String {
    let kind = match got {
        GroupResponse::JoinGroup(_) => "JoinGroup",
        GroupResponse::SyncGroup(_) => "SyncGroup",
        GroupResponse::Heartbeat(_) => "Heartbeat",
        GroupResponse::LeaveGroup(_) => "LeaveGroup",
        GroupResponse::OffsetCommit(_) => "OffsetCommit",
        GroupResponse::OffsetFetch(_) => "OffsetFetch",
        GroupResponse::DescribeGroup(_) => "DescribeGroup",
        GroupResponse::DeleteGroup(_) => "DeleteGroup",
        GroupResponse::ListGroups(_) => "ListGroups",
    };
    tracing::error!(
        api,
        answered = kind,
        "coordinator answered with the wrong response kind"
    );
    format!("coordinator answered {api} with a {kind} response")
}
