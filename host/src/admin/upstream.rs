//! `GET /v1/upstream`: in proxy mode, the cluster as the host reaches it: its bootstrap
//! servers, how the host's connections are secured, and whether the cluster takes them (a
//! refusal, TLS or SASL, names the setting to change). A standalone host answers 404.

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::AdminState;

pub(super) fn routes() -> Router<AdminState> {
    Router::new().route("/v1/upstream", get(show))
}

async fn show(State(state): State<AdminState>) -> Result<axum::Json<Value>, ApiError> {
    let Some(upstream) = state.mode.upstream() else {
        return Err(ApiError::not_found(
            "standalone",
            "this host is standalone: it has no upstream cluster (serve --upstream HOST:PORT)",
        ));
    };
    let security = upstream.client.security();
    let health = &security.health;
    let refused = health.refused();
    Ok(axum::Json(json!({
        "bootstrap": upstream.client.bootstrap(),
        "security_protocol": security.protocol,
        "sasl_mechanism": security.sasl.as_ref().map(|c| c.mechanism.name()),
        "sasl_username": security
            .sasl
            .as_ref()
            .map(|c| c.username.as_str())
            .filter(|u| !u.is_empty()),
        "state": if refused.is_some() { "refused" } else { "accepted" },
        "reason": refused.as_ref().map(|(reason, _)| reason),
        "refused_for_ms": refused.as_ref().map(|(_, since)| since.as_millis() as u64),
        "refusals": health.refusals(),
    })))
}
