//! Proxy mode's data path: which requests go up to the upstream broker a connection is glued
//! to and which the host answers itself ([`Proxy::route`]), where each upstream broker is
//! served here ([`Proxy`] as [`rewrite::Addresses`]: a port per node id, a listener opened the
//! first time a node is seen), the upstream connections themselves (`link.rs`), the rewriting
//! of answers that name brokers (`rewrite.rs`, `versions.rs`), and the host's own reads of the
//! upstream's Metadata (`topology.rs`).
//!
//! The wire is shared with standalone mode: the same connections, framing and per-API files
//! serve the requests the host answers; only the requests passed up are new. It lives here,
//! under `kafka`, because it is wire code (frames, headers, versions); `upstream` is the
//! host's view of the cluster as a client (offsets, topics, admin), and knows no frames.

pub mod answer;
pub mod authorize;
pub mod link;
pub mod reserved;
pub mod rewrite;
pub mod topology;
pub mod versions;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};

use crate::catalog::Catalog;
use crate::upstream::UpstreamConfig;
use link::{Link, LinkError};

/// Where a connection's passed-up requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The bootstrap port (also the coordinator node's): any upstream bootstrap server.
    Bootstrap,
    /// A broker port: the upstream broker with this node id.
    Broker(i32),
}

/// What to do with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The host answers it (group APIs, FindCoordinator for a group; TxnOffsetCommit, which
    /// it then sends on itself).
    Local,
    /// Pass it up; decode the answer to rewrite it when `rewrite` says so.
    Up { rewrite: Option<ApiKey> },
    /// Neither: the connection closes (the API is not advertised in proxy mode).
    Refuse,
}

/// One upstream node as served here.
#[derive(Debug, Clone)]
struct Node {
    /// Its address upstream, `host:port`, as the upstream's Metadata names it.
    upstream: String,
    /// The port it is served on here.
    port: u16,
}

/// The shared state of proxy mode.
pub struct Proxy {
    settings: UpstreamConfig,
    /// How the host's own connections to the upstream are secured.
    security: std::sync::Arc<crate::upstream::connection::Security>,
    /// What clients are told for every port here.
    host: StrBytes,
    /// The coordinator node: `(node id, port)` (the bootstrap port).
    coordinator: (i32, u16),
    listen_ip: IpAddr,
    /// Base of the node id -> port mapping; 0: a free port per node.
    ports_from: u16,
    nodes: Mutex<BTreeMap<i32, Node>>,
    /// New broker listeners, for the task that serves them.
    listeners: mpsc::UnboundedSender<(i32, std::net::TcpListener)>,
    /// The upstream's topics, as the host's own Metadata reads find them.
    pub(crate) catalog: Catalog,
    /// Wakes the topology reader before its interval (a client asked for an unknown topic).
    pub(crate) refresh: Notify,
    /// `kafka.authentication = "upstream"`: the cluster authenticates each client on its glued
    /// connection, and the host serves a client only once it has (`kafka::sasl`).
    authenticate_clients: bool,
    /// In a cluster of host nodes: the other nodes, listed in Metadata beside this one.
    cluster: Option<std::sync::Arc<crate::cluster::Ownership>>,
}

impl Proxy {
    /// Proxy mode for a host bound at `bound`, telling clients `host`.
    pub fn new(
        settings: UpstreamConfig,
        security: std::sync::Arc<crate::upstream::connection::Security>,
        host: String,
        bound: SocketAddr,
        catalog: Catalog,
        cluster: Option<std::sync::Arc<crate::cluster::Ownership>>,
        authenticate_clients: bool,
    ) -> (Proxy, mpsc::UnboundedReceiver<(i32, std::net::TcpListener)>) {
        let (listeners, new_listeners) = mpsc::unbounded_channel();
        let ports_from = settings
            .broker_ports_from
            .unwrap_or_else(|| bound.port().saturating_add(1));
        let proxy = Proxy {
            coordinator: (settings.coordinator_node_id, bound.port()),
            settings,
            security,
            host: StrBytes::from_string(host),
            listen_ip: bound.ip(),
            ports_from,
            nodes: Mutex::new(BTreeMap::new()),
            listeners,
            catalog,
            refresh: Notify::new(),
            cluster,
            authenticate_clients,
        };
        (proxy, new_listeners)
    }

    pub fn settings(&self) -> &UpstreamConfig {
        &self.settings
    }

    /// What to do with a request of `api_key` at `api_version`; `frame` is the whole request,
    /// read only for FindCoordinator (a group lookup is the host's, a transaction's is not).
    pub fn route(&self, api_key: i16, api_version: i16, frame: &Bytes) -> Route {
        if versions::refused(api_key) {
            return Route::Refuse;
        }
        let Ok(key) = ApiKey::try_from(api_key) else {
            return Route::Up { rewrite: None };
        };
        if versions::SERVED.contains(&key) {
            return Route::Local;
        }
        match key {
            ApiKey::FindCoordinator if find_coordinator_for_groups(frame, api_version) => {
                Route::Local
            }
            ApiKey::ApiVersions if api_version > key.valid_versions().max => Route::Local,
            // Its answer tells the client's session how the exchange went.
            ApiKey::SaslAuthenticate if self.authenticate_clients => {
                Route::Up { rewrite: Some(key) }
            }
            // Above these the topics are named by id, which `reserved` cannot read and the
            // host never advertises (`versions::merge`): a client that sends one anyway is
            // refused as for any API the host does not offer.
            ApiKey::Produce if api_version > versions::PRODUCE_MAX => Route::Refuse,
            ApiKey::Fetch if api_version > versions::FETCH_MAX => Route::Refuse,
            ApiKey::Produce if api_version >= 10 => Route::Up { rewrite: Some(key) },
            ApiKey::Produce | ApiKey::Fetch => Route::Up { rewrite: None },
            _ if versions::REWRITTEN.contains(&key) => Route::Up { rewrite: Some(key) },
            _ => Route::Up { rewrite: None },
        }
    }

    /// Whether the cluster authenticates each client before the host serves it.
    pub fn authenticates_clients(&self) -> bool {
        self.authenticate_clients
    }

    /// Whether requests of `api_key` are relayed to the cluster as bytes, never decoded here
    /// (their frame cap is `kafka.max_frame_bytes`): all but the APIs the host serves and
    /// FindCoordinator, which it reads.
    pub fn relayed(api_key: i16) -> bool {
        ApiKey::try_from(api_key).map_or(true, |key| {
            !versions::SERVED.contains(&key) && key != ApiKey::FindCoordinator
        })
    }

    /// Opens a link for `target`: the node's upstream address, or the bootstrap servers in
    /// turn.
    pub async fn connect(&self, target: Target) -> Result<Link, LinkError> {
        let timeout = self.settings.connect_timeout;
        match target {
            Target::Broker(id) => {
                let addr = self.nodes.lock().get(&id).map(|n| n.upstream.clone());
                match addr {
                    Some(addr) => Link::connect(&addr, &self.security, timeout).await,
                    None => Err(LinkError::Connect {
                        addr: format!("node {id}"),
                        reason: "the upstream's Metadata has not named this node".into(),
                    }),
                }
            }
            Target::Bootstrap => {
                let mut last = None;
                for server in &self.settings.bootstrap {
                    match Link::connect(server, &self.security, timeout).await {
                        Ok(link) => return Ok(link),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or(LinkError::Connect {
                    addr: "upstream".into(),
                    reason: "no bootstrap servers".into(),
                }))
            }
        }
    }

    /// The node ids served here and their ports, for the admin API and the logs.
    pub fn ports(&self) -> Vec<(i32, u16, String)> {
        self.nodes
            .lock()
            .iter()
            .map(|(id, n)| (*id, n.port, n.upstream.clone()))
            .collect()
    }

    fn port_for(&self, node_id: i32) -> Option<u16> {
        if self.ports_from == 0 {
            return Some(0);
        }
        u16::try_from(i64::from(self.ports_from) + i64::from(node_id)).ok()
    }
}

impl rewrite::Addresses for Proxy {
    fn node(&self, node_id: i32, upstream: (&str, i32)) -> Option<(StrBytes, i32)> {
        let upstream = format!("{}:{}", upstream.0, upstream.1);
        let mut nodes = self.nodes.lock();
        if let Some(node) = nodes.get_mut(&node_id) {
            if node.upstream != upstream {
                tracing::info!(node = node_id, from = %node.upstream, to = %upstream,
                    "upstream broker moved");
                node.upstream = upstream;
            }
            return Some((self.host.clone(), i32::from(node.port)));
        }
        let Some(port) = self.port_for(node_id) else {
            tracing::error!(
                node = node_id,
                ports_from = self.ports_from,
                "no port for this upstream node (upstream.broker_ports_from + node id > 65535); clients cannot reach it"
            );
            return None;
        };
        let listener = match std::net::TcpListener::bind((self.listen_ip, port)) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(node = node_id, port, error = %e,
                    "cannot listen for an upstream broker; clients cannot reach it");
                return None;
            }
        };
        let bound = listener.local_addr().map(|a| a.port()).unwrap_or(port);
        if listener.set_nonblocking(true).is_err()
            || self.listeners.send((node_id, listener)).is_err()
        {
            return None;
        }
        tracing::info!(node = node_id, port = bound, upstream = %upstream, "serving upstream broker");
        nodes.insert(
            node_id,
            Node {
                upstream,
                port: bound,
            },
        );
        Some((self.host.clone(), i32::from(bound)))
    }

    fn coordinator(&self) -> (i32, StrBytes, i32) {
        let (id, port) = self.coordinator;
        (id, self.host.clone(), i32::from(port))
    }

    fn peers(&self) -> Vec<(i32, StrBytes, i32)> {
        let Some(cluster) = &self.cluster else {
            return Vec::new();
        };
        (cluster.live_peers().into_iter())
            .map(|p| (p.node_id, StrBytes::from_string(p.host), p.port))
            .collect()
    }
}

/// Whether a FindCoordinator request asks for group coordinators (key type 0, the default).
/// A request that does not decode is the host's to refuse, so it counts as a group lookup.
fn find_coordinator_for_groups(frame: &Bytes, api_version: i16) -> bool {
    use kafka_protocol::messages::{FindCoordinatorRequest, RequestHeader};
    let mut rest = frame.clone();
    let header_version = ApiKey::FindCoordinator.request_header_version(api_version);
    let Ok(_) = assignor_wire::guard::decode_from::<RequestHeader>(&mut rest, header_version)
    else {
        return true;
    };
    match assignor_wire::guard::decode::<FindCoordinatorRequest>(&rest, api_version) {
        Ok(request) => request.key_type == 0,
        Err(_) => true,
    }
}
