//! What every admin handler shares: the `[admin]` settings, the state handed to each request,
//! and the way blocking work leaves the runtime's workers.

use std::net::SocketAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::ApiError;
use crate::catalog::Catalog;
use crate::driver::Driver;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::upstream::client::UpstreamClient;

/// The `[admin]` section of the config file. Its `Debug` leaves the token out.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin HTTP listener (default `127.0.0.1:9644`; env
    /// `ASSIGNOR_HOST_ADMIN_LISTEN`, flag `--admin-listen`).
    pub listen: SocketAddr,
    /// Bearer token every request but `/healthz` must carry (env `ASSIGNOR_HOST_TOKEN`, flag
    /// `--token`). Required when `listen` is not a loopback address. Default: none.
    pub token: Option<String>,
    /// A file holding the token (its first line; surrounding white space ignored), read at
    /// start: a secrets mount instead of the token in a config file or the environment. Not
    /// both with `token`.
    pub token_file: Option<std::path::PathBuf>,
    /// Largest JSON request body, in bytes (default 1 MiB; a simulation scenario of a few
    /// thousand members fits).
    pub max_json_bytes: usize,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9644)),
            token: None,
            token_file: None,
            max_json_bytes: 1 << 20,
        }
    }
}

impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConfig")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("max_json_bytes", &self.max_json_bytes)
            .finish()
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
    #[error("admin.token and admin.token_file are both set: keep one")]
    TwoTokens,
    #[error("admin.token_file {path}: {reason}")]
    TokenFile { path: String, reason: String },
}

/// Reads `admin.token_file` into `token` (its first line, trimmed); an unreadable or empty
/// file stops the start naming the setting.
pub fn load_token(config: &mut AdminConfig) -> Result<(), AdminConfigError> {
    let Some(path) = &config.token_file else {
        return Ok(());
    };
    if config.token.is_some() {
        return Err(AdminConfigError::TwoTokens);
    }
    let failed = |reason: String| AdminConfigError::TokenFile {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        return Err(failed("empty: write the token on its first line".into()));
    }
    config.token = Some(token.to_owned());
    Ok(())
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
    /// Standalone: the users the Kafka listener's `local` authentication checks; `None` in
    /// proxy mode, where the cluster's users are the cluster's.
    pub users: Option<Arc<crate::users::Users>>,
    /// Standalone: the ACLs the Kafka listener decides by; `None` in proxy mode.
    pub acls: Option<Arc<crate::acls::Acls>>,
    pub registry: Arc<Registry>,
    pub driver: Driver,
    pub catalog: Catalog,
    pub metrics: Arc<Metrics>,
    pub config: Arc<AdminConfig>,
    /// Proxy mode: the cluster the host is in front of; `None` standalone.
    pub upstream: Option<AdminUpstream>,
    /// In a cluster of host nodes: this node's shards and view of the others.
    pub cluster: Option<Arc<crate::cluster::Ownership>>,
    /// In a cluster of host nodes: module changes go through the cluster's module log, so
    /// every node applies them (`cluster::modules`); `None`: straight to the registry.
    pub module_log: Option<Arc<crate::cluster::modules::ModuleLog>>,
}

/// Proxy mode as the admin API sees it: the host's client of the cluster (topics, end
/// offsets), and a way to have the catalog read the upstream's topics again at once after a
/// change made through it.
#[derive(Clone)]
pub struct AdminUpstream {
    pub client: UpstreamClient,
    pub reread_topics: Arc<dyn Fn() + Send + Sync>,
    /// How long a topic change waits to show in the catalog (`upstream.request_timeout`).
    pub timeout: std::time::Duration,
}

impl AdminState {
    /// The registry's upload cap (`registry.max_module_bytes`), applied to upload bodies.
    pub fn max_module_bytes(&self) -> usize {
        usize::try_from(self.registry.max_module_bytes()).unwrap_or(usize::MAX)
    }
}

/// Runs blocking work (compiling, the store, a module call) off the runtime's workers.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(format!("the admin task failed: {e}")))?
}
