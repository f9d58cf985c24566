//! What every admin handler shares: the state handed to each request, and the way blocking
//! work leaves the runtime's workers. The `[admin]` settings are `config`'s.

use std::sync::Arc;

use super::error::ApiError;
use crate::catalog::Catalog;
use crate::driver::Driver;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::upstream::client::UpstreamClient;

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
    pub config: Arc<super::AdminConfig>,
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
