//! Why the host could not start, or stopped.

use std::net::SocketAddr;

use crate::admin::AdminConfigError;
use crate::catalog::CatalogError;
use crate::driver::DriverError;
use crate::registry::RegistryError;
use crate::sandbox::SandboxError;
use crate::store::StoreError;

/// The host could not start (or stopped) because of a fault of its own or its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("topic catalog: {0}")]
    Catalog(#[from] CatalogError),
    #[error("wasm sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("module registry: {0}")]
    Registry(#[from] RegistryError),
    #[error("group coordinator: {0}")]
    Driver(#[from] DriverError),
    #[error("cannot bind the Kafka listener on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot bind the admin listener on {addr}: {source}")]
    BindAdmin {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Admin(#[from] AdminConfigError),
    #[error("configuration: {0}")]
    Config(String),
    #[error("upstream cluster: {0}")]
    Upstream(String),
    #[error("the Kafka listener task failed: {0}")]
    Task(String),
}
