//! The admin API's contract, route by route, through the router itself (no socket): the
//! status and `code` of every error path, the token rules, the body caps, and the happy paths
//! whose answers the CLI relies on. Live groups are exercised by the black-box tests in
//! `tests/tests/all/admin_*.rs`.
//!
//! `auth` (tokens, caps), `modules` (uploads and versions), `resources` (groups, topics,
//! simulate, metrics); this file holds the fixture.

mod auth;
mod bodies;
mod modules;
mod resources;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::Value;
use tower::ServiceExt;

use super::*;
use crate::catalog::{Catalog, CatalogConfig};
use crate::driver::{Driver, DriverConfig, DriverSettings};
use crate::metrics::Metrics;
use crate::registry::{BuiltinSource, Registry, RegistryConfig, RegistrySettings};
use crate::sandbox::Sandbox;

pub(super) fn sandbox() -> Sandbox {
    Sandbox::shared_default()
}

pub(super) fn range_wasm() -> &'static [u8] {
    crate::builtins::builtin("range").unwrap().wasm
}

pub(super) fn roundrobin_wasm() -> &'static [u8] {
    crate::builtins::builtin("roundrobin").unwrap().wasm
}

/// A host's admin state: built-in `range` only, no store, a running driver.
pub(super) fn state(edit: impl FnOnce(&mut AdminConfig, &mut usize)) -> AdminState {
    state_of(edit, &["range"])
}

/// [`state`] with these built-ins instead of `range` alone.
pub(super) fn state_with_builtins(builtins: &[&str]) -> AdminState {
    state_of(|_, _| {}, builtins)
}

fn state_of(edit: impl FnOnce(&mut AdminConfig, &mut usize), builtins: &[&str]) -> AdminState {
    let mut config = AdminConfig::default();
    let mut max_module_bytes = 16 << 20;
    edit(&mut config, &mut max_module_bytes);
    let registry_config = RegistryConfig {
        settings: RegistrySettings {
            max_module_bytes: max_module_bytes as u64,
            ..RegistrySettings::default()
        },
        builtins: BuiltinSource::embedded()
            .into_iter()
            .filter(|b| builtins.contains(&b.name.as_str()))
            .collect(),
        ..RegistryConfig::default()
    };
    let registry = Arc::new(Registry::open(sandbox(), None, registry_config).unwrap());
    let catalog = Catalog::open(&CatalogConfig::default(), None).unwrap();
    let metrics = Arc::new(Metrics::new());
    let driver_config = DriverConfig {
        settings: DriverSettings {
            shards: Some(2),
            ..DriverSettings::default()
        },
        notices: metrics.clone(),
        ..DriverConfig::default()
    };
    let driver = Driver::start(
        driver_config,
        registry.clone(),
        registry.subscribe(),
        catalog.subscribe(),
        None,
    )
    .unwrap();
    AdminState {
        registry,
        driver,
        catalog,
        metrics,
        config: Arc::new(config),
        mode: super::AdminMode::Standalone {
            users: crate::users::Users::open(None).unwrap(),
            acls: crate::acls::Acls::open(None, crate::acls::AclSettings::default()).unwrap(),
        },
    }
}

pub(super) struct Api {
    pub(super) router: axum::Router,
    pub(super) token: Option<String>,
}

impl Api {
    pub(super) fn new(state: AdminState) -> Api {
        Api {
            router: router(state),
            token: None,
        }
    }

    pub(super) async fn send(
        &self,
        method: Method,
        uri: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    pub(super) async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.send(Method::GET, uri, Vec::new()).await
    }

    pub(super) async fn json(&self, method: Method, uri: &str, body: Value) -> (StatusCode, Value) {
        self.send(method, uri, body.to_string().into_bytes()).await
    }
}

/// The `code` of an error answer (panics with the answer if it is not one).
pub(super) fn code(answer: &(StatusCode, Value)) -> &str {
    answer.1["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error answer: {answer:?}"))
}

/// Proxy mode's view for routes that never reach the cluster: a client of an address nothing
/// listens on (it connects lazily, so nothing is dialled unless a route asks the cluster).
pub(super) fn proxy_mode() -> super::AdminMode {
    let settings = crate::upstream::client::ClientSettings::new(vec!["127.0.0.1:9".to_owned()]);
    super::AdminMode::Proxy(super::AdminUpstream {
        client: crate::upstream::client::UpstreamClient::connect(settings).unwrap(),
        reread_topics: Arc::new(|| {}),
        timeout: std::time::Duration::from_secs(1),
    })
}
