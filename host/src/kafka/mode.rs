//! How the Kafka ports serve, decided once when the host starts (`crate::server`): one value
//! where there were two options that only made sense together (a cluster of hosts is always in
//! front of an upstream).

use std::sync::Arc;

use crate::cluster::Ownership;

use super::proxy::Proxy;

/// The way the host's Kafka ports serve.
#[derive(Clone)]
pub enum Mode {
    /// The host's own topics and records: every API it advertises is answered here.
    Standalone,
    /// In front of a cluster: data requests pass up through the proxy; the groups are here.
    Proxy(Arc<Proxy>),
    /// One node of several in front of one cluster: as `Proxy`, serving the groups of the
    /// shards this node holds and naming the owners of the others.
    Cluster(Arc<Proxy>, Arc<Ownership>),
}

impl Mode {
    /// The upstream's data path; `None` standalone.
    pub fn proxy(&self) -> Option<&Arc<Proxy>> {
        match self {
            Mode::Standalone => None,
            Mode::Proxy(proxy) | Mode::Cluster(proxy, _) => Some(proxy),
        }
    }

    /// Which node coordinates which group; `None` when this host coordinates them all.
    pub fn cluster(&self) -> Option<&Arc<Ownership>> {
        match self {
            Mode::Cluster(_, ownership) => Some(ownership),
            Mode::Standalone | Mode::Proxy(_) => None,
        }
    }

    /// How a refusal names the mode ("not served standalone").
    pub fn describe(&self) -> &'static str {
        match self {
            Mode::Standalone => "standalone",
            Mode::Proxy(_) | Mode::Cluster(..) => "in proxy mode",
        }
    }
}
