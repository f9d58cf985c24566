//! The HTTP admin API (axum): modules, simulations, groups, topics under `/v1`, Prometheus
//! metrics at `/metrics`, liveness at `/healthz`. The reference with every endpoint, body and
//! status code is `docs/admin-api.md`; the CLI (`crate::cli`) is its client.
//!
//! - **Auth.** With `admin.token` set, every route but `/healthz` needs
//!   `Authorization: Bearer <token>` (401 otherwise). A listener that is not on loopback must
//!   have a token: [`check_listen`] refuses to start without one, because the API uploads code
//!   that the host then runs.
//! - **Caps.** JSON bodies are capped by `admin.max_json_bytes`, uploads by the registry's
//!   module cap; a larger body is a 413 naming the cap and its setting.
//! - **Errors.** One JSON shape with the right status ([`error`]).
//! - **Blocking work** (compiling an upload, running a simulation, writes to the store) runs on
//!   the blocking pool, never on the runtime's workers.
//!
//! Layout: `error` (shape and status mapping), `extract` (bodies, caps), `auth`, one file per
//! resource (`modules`, `groups`, `topics`, `simulate`), and [`serve`].

mod auth;
pub mod error;
mod extract;
mod groups;
mod modules;
mod simulate;
mod topics;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

pub use error::{ApiError, ErrorBody};

use crate::catalog::Catalog;
use crate::driver::Driver;
use crate::metrics::{self, Metrics};
use crate::registry::Registry;

/// The `[admin]` section of the config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin HTTP listener (default `127.0.0.1:9644`; env
    /// `ASSIGNOR_HOST_ADMIN_LISTEN`, flag `--admin-listen`).
    pub listen: SocketAddr,
    /// Bearer token every request but `/healthz` must carry (env `ASSIGNOR_HOST_TOKEN`, flag
    /// `--token`). Required when `listen` is not a loopback address. Default: none.
    pub token: Option<String>,
    /// Largest JSON request body, in bytes (default 1 MiB; a simulation scenario of a few
    /// thousand members fits).
    pub max_json_bytes: usize,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9644)),
            token: None,
            max_json_bytes: 1 << 20,
        }
    }
}

/// The admin listener cannot start as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminConfigError {
    #[error(
        "admin.listen {listen} is not a loopback address, and no admin token is set: anyone who \
         can reach it could upload code this host runs. Set admin.token (or --token / \
         ASSIGNOR_HOST_TOKEN), or listen on 127.0.0.1"
    )]
    TokenRequired { listen: SocketAddr },
    #[error("admin.token is empty; set a non-empty token or remove the setting")]
    EmptyToken,
}

/// Refuses a configuration that would expose the API without a token.
pub fn check_listen(config: &AdminConfig) -> Result<(), AdminConfigError> {
    match &config.token {
        Some(token) if token.trim().is_empty() => Err(AdminConfigError::EmptyToken),
        Some(_) => Ok(()),
        None if config.listen.ip().is_loopback() => Ok(()),
        None => Err(AdminConfigError::TokenRequired {
            listen: config.listen,
        }),
    }
}

/// What the handlers work with. Cheap to clone.
#[derive(Clone)]
pub struct AdminState {
    pub registry: Arc<Registry>,
    pub driver: Driver,
    pub catalog: Catalog,
    pub metrics: Arc<Metrics>,
    pub config: Arc<AdminConfig>,
    /// The registry's upload cap (`registry.max_module_bytes`), applied to upload bodies.
    pub max_module_bytes: usize,
}

/// The whole API.
pub fn router(state: AdminState) -> Router {
    let json_cap = state.config.max_json_bytes;
    let protected = Router::new()
        .merge(modules::routes(state.max_module_bytes))
        .merge(groups::routes())
        .merge(topics::routes())
        .merge(simulate::routes())
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

/// Serves the API on `listener` until `shutdown` completes, then finishes requests in flight.
pub async fn serve(
    listener: TcpListener,
    state: AdminState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
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

/// Runs blocking work (compiling, the store, a module call) off the runtime's workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(format!("the admin task failed: {e}")))?
}

#[cfg(test)]
mod tests;
