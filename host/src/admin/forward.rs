//! In a cluster of host nodes, an admin call about a group that another node coordinates is
//! answered by that node: this one forwards it to the owner's admin API (its advertised host,
//! the admin port it names in the node group) and passes the answer back as it came, with
//! `x-assignor-host-node` naming the node that answered. The caller's `Authorization` goes
//! along (the nodes of a cluster share a token, or none). A forwarded call carries
//! `x-assignor-host-forwarded` and is never forwarded again, so two nodes that disagree about
//! an owner for a moment answer 404 rather than pass a call back and forth.
//!
//! When this node's API speaks TLS, so do the others' (the nodes of a cluster share their
//! settings): the call goes over HTTPS, the owner's certificate checked against
//! `admin.tls_ca_location` (read at each call, so a rotated CA counts at once) and its
//! advertised host.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::error::ApiError;
use super::state::AdminState;

/// Marks a forwarded call.
const FORWARDED: &str = "x-assignor-host-forwarded";
/// Names the node that answered a forwarded call.
const ANSWERED_BY: &str = "x-assignor-host-node";
/// How long the owner may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The owner's answer to `GET <path>` when another node of the cluster coordinates `group`;
/// `None` when this node is the owner (or alone, or the call was forwarded already).
pub async fn to_owner(
    state: &AdminState,
    headers: &HeaderMap,
    group: &str,
    path: &[&str],
) -> Result<Option<Response>, ApiError> {
    let Some(cluster) = state.mode.cluster() else {
        return Ok(None);
    };
    if headers.contains_key(FORWARDED) {
        return Ok(None);
    }
    let owner = cluster.coordinator_of(group);
    let Some(admin_port) = owner
        .admin_port
        .filter(|_| owner.node_id != cluster.me().node_id)
    else {
        return Ok(None);
    };
    let host = if owner.host.contains(':') {
        format!("[{}]", owner.host)
    } else {
        owner.host.clone()
    };
    let scheme = state.config.scheme();
    let mut url = reqwest::Url::parse(&format!("{scheme}://{host}:{admin_port}/"))
        .map_err(|e| ApiError::internal(format!("the owner's address: {e}")))?;
    url.path_segments_mut()
        .map_err(|()| ApiError::internal("the owner's address has no path"))?
        .extend(path);
    let unreachable = |e: reqwest::Error| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "owner_unreachable",
            format!(
                "group `{group}` is coordinated by node {} (admin API {host}:{admin_port}), \
                 which did not answer: {e}",
                owner.node_id
            ),
        )
    };
    let client = crate::tls::http_client(
        state.config.tls_ca_location.as_deref(),
        "admin.tls_ca_location",
    )
    .and_then(|builder| builder.build().map_err(|e| e.to_string()))
    .map_err(|e| ApiError::internal(format!("the client of other nodes: {e}")))?;
    let mut request = client.get(url).header(FORWARDED, "1").timeout(TIMEOUT);
    if let Some(auth) = headers.get(header::AUTHORIZATION) {
        request = request.header(header::AUTHORIZATION, auth);
    }
    let answer = request.send().await.map_err(unreachable)?;
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
    let body = answer.bytes().await.map_err(unreachable)?;
    let mut response = Response::builder().status(status);
    if let Some(content_type) = content_type {
        response = response.header(header::CONTENT_TYPE, content_type);
    }
    response
        .header(ANSWERED_BY, HeaderValue::from(owner.node_id))
        .body(Body::from(body))
        .map(Some)
        .map_err(|e| ApiError::internal(e.to_string()))
}
