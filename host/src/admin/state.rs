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
    pub registry: Arc<Registry>,
    pub driver: Driver,
    pub catalog: Catalog,
    pub metrics: Arc<Metrics>,
    pub config: Arc<super::AdminConfig>,
    /// What only the host's way of running has: standalone's users and ACLs, the upstream of
    /// proxy mode, a cluster's shards and module log.
    pub mode: AdminMode,
}

/// The host's way of running as the admin API sees it, decided once at start (`server`).
#[derive(Clone)]
pub enum AdminMode {
    /// The users the Kafka listener's `local` authentication checks and the ACLs it decides
    /// by, both kept in the store.
    Standalone {
        users: Arc<crate::users::Users>,
        acls: Arc<crate::acls::Acls>,
    },
    /// In front of a cluster, whose users and ACLs are the cluster's.
    Proxy(AdminUpstream),
    /// One node of several: module changes go through the cluster's module log, so every node
    /// applies them (`cluster::modules`), and a group's calls go to the node that holds it.
    Cluster {
        upstream: AdminUpstream,
        ownership: Arc<crate::cluster::Ownership>,
        module_log: Arc<crate::cluster::modules::ModuleLog>,
    },
}

impl AdminMode {
    /// Standalone's users; `None` where the cluster's are.
    pub fn users(&self) -> Option<&Arc<crate::users::Users>> {
        match self {
            AdminMode::Standalone { users, .. } => Some(users),
            AdminMode::Proxy(_) | AdminMode::Cluster { .. } => None,
        }
    }

    /// Standalone's ACLs; `None` where the cluster's decide.
    pub fn acls(&self) -> Option<&Arc<crate::acls::Acls>> {
        match self {
            AdminMode::Standalone { acls, .. } => Some(acls),
            AdminMode::Proxy(_) | AdminMode::Cluster { .. } => None,
        }
    }

    /// The cluster the host is in front of; `None` standalone.
    pub fn upstream(&self) -> Option<&AdminUpstream> {
        match self {
            AdminMode::Standalone { .. } => None,
            AdminMode::Proxy(upstream) | AdminMode::Cluster { upstream, .. } => Some(upstream),
        }
    }

    /// This node's shards and view of the others; `None` outside a cluster of hosts.
    pub fn cluster(&self) -> Option<&Arc<crate::cluster::Ownership>> {
        match self {
            AdminMode::Cluster { ownership, .. } => Some(ownership),
            AdminMode::Standalone { .. } | AdminMode::Proxy(_) => None,
        }
    }

    /// The cluster's module log; `None`: module changes go straight to the registry.
    pub fn module_log(&self) -> Option<&Arc<crate::cluster::modules::ModuleLog>> {
        match self {
            AdminMode::Cluster { module_log, .. } => Some(module_log),
            AdminMode::Standalone { .. } | AdminMode::Proxy(_) => None,
        }
    }
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
