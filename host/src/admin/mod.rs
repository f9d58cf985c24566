//! The HTTP admin API (axum): modules, simulations, groups, topics under `/v1`, Prometheus
//! metrics at `/metrics`, liveness at `/healthz`. The reference with every endpoint, body and
//! status code is `docs/admin-api.md`; the CLI (`crate::cli`) is its client.
//!
//! - **Auth.** With `admin.token` set, every route but `/healthz` needs
//!   `Authorization: Bearer <token>` (401 otherwise). A listener that is not on loopback must
//!   have a token, and TLS unless `admin.allow_plaintext` says otherwise: [`check_listen`]
//!   refuses to start without them, because the API uploads code that the host then runs.
//! - **TLS** (`admin.tls_certificate_location`): HTTPS only, each handshake in a task of its
//!   own (`listener`).
//! - **Caps.** JSON bodies are capped by `admin.max_json_bytes`, uploads by the registry's
//!   module cap; a larger body is a 413 naming the cap and its setting.
//! - **Errors.** One JSON shape with the right status ([`error`]).
//! - **Blocking work** (compiling an upload, running a simulation, writes to the store) runs on
//!   the blocking pool, never on the runtime's workers.
//!
//! Layout: `config` (settings and the rules for starting), `state` (what the handlers share),
//! `listener` (TLS), `error` (shape and status mapping),
//! `extract` (bodies, caps), `auth`, one file per resource (`modules`, `groups`, `topics`,
//! `simulate`, `cluster`), and [`serve`] here.

mod acls;
mod auth;
mod cluster;
mod config;
pub mod error;
mod extract;
mod forward;
mod groups;
mod lag;
mod listener;
mod modules;
mod simulate;
mod state;
mod topics;
mod upstream;
mod users;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

pub use config::{AdminConfig, AdminConfigError, check_listen, load_token};
pub use error::{ApiError, ErrorBody};
pub use lag::PartitionLag;
pub use state::{AdminMode, AdminState, AdminUpstream};

use crate::metrics;
use crate::tls::ServerTls;

/// The whole API.
pub fn router(state: AdminState) -> Router {
    let json_cap = state.config.max_json_bytes;
    let protected = Router::new()
        .merge(modules::routes(state.max_module_bytes()))
        .merge(groups::routes())
        .merge(topics::routes())
        .merge(simulate::routes())
        .merge(cluster::routes())
        .merge(upstream::routes())
        .merge(users::routes())
        .merge(acls::routes())
        .route("/metrics", get(scrape))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ));
    Router::new()
        .merge(protected)
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(json_cap))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves the API on `listener` (over TLS with `tls`) until `shutdown` completes, then
/// finishes requests in flight.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    state: AdminState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = router(state);
    match tls {
        None => {
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
        }
        Some(tls) => {
            axum::serve(listener::TlsListener::new(listener, tls)?, router)
                .with_graceful_shutdown(shutdown)
                .await
        }
    }
}

async fn healthz() -> impl IntoResponse {
    axum::Json(serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
    }))
}

/// Prometheus scrape: the current-state gauges are recomputed first.
async fn scrape(State(state): State<AdminState>) -> impl IntoResponse {
    state.metrics.refresh_groups(&state.driver.groups().await);
    state.metrics.refresh_modules(&state.registry);
    if let Some(upstream) = state.mode.upstream() {
        state
            .metrics
            .refresh_upstream(&upstream.client.security().health);
    }
    if let Some(cluster) = state.mode.cluster() {
        let status = cluster.status();
        state.metrics.refresh_cluster(metrics::ClusterSample {
            cluster: status.cluster.clone(),
            held: status.held.len(),
            serving: status.serving.len(),
            leased: status.leased,
            lease_left_ms: status.lease_left_ms,
            nodes: status.nodes.len(),
            unreachable: status.nodes.iter().filter(|n| !n.reachable).count(),
            rejected_records: state.mode.module_log().map_or(0, |log| log.rejected()),
        });
    }
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.encode(),
    )
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(
        "no_such_route",
        format!("no admin endpoint at {uri} (see docs/admin-api.md)"),
    )
}

#[cfg(test)]
mod tests;
