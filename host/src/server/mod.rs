//! Assembles the host from its configuration: store, topic catalog, wasm sandbox, module
//! registry (with the built-in strategies), metrics, the coordinator's driver, the Kafka
//! listener and the admin API; runs it until shutdown and stops it in order: stop accepting,
//! drain the connections, then stop the driver (which answers whatever it still has parked).
//!
//! [`run`] is what `assignor-host serve` calls. [`Server::start`] is the same assembly for
//! tests and embedding: it binds (port 0 is fine), returns the bound address at once, and
//! [`Server::shutdown`] stops it.

mod assignors;
mod lag;
mod offsets;
mod proxy;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::acls::{AclSettings, Acls};
use crate::admin::{self, AdminConfigError, AdminState, AdminUpstream};
use crate::catalog::{Catalog, CatalogError};
use crate::cluster::{Cluster, Ownership, Peer};
use crate::config::Config;
use crate::driver::{Driver, DriverConfig, DriverError};
use crate::kafka::login::Login;
use crate::kafka::proxy::{Proxy, Target, topology};
use crate::kafka::{Broker, Node, listener};
use crate::metrics::Metrics;
use crate::registry::{Registry, RegistryConfig, RegistryError};
use crate::sandbox::{Sandbox, SandboxError};
use crate::store::{Store, StoreError};
use crate::upstream::client::{ClientSettings, UpstreamClient};
use crate::upstream::connection::Security;
use crate::users::Users;

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

/// A running host.
pub struct Server {
    kafka_addr: SocketAddr,
    node: Node,
    catalog: Catalog,
    registry: Arc<Registry>,
    driver: Driver,
    metrics: Arc<Metrics>,
    admin_addr: SocketAddr,
    /// Stops every Kafka listener (the bootstrap one and, in proxy mode, the brokers').
    stop: CancellationToken,
    task: JoinHandle<()>,
    proxy: Option<(Arc<Proxy>, proxy::ProxyTasks)>,
    /// In a cluster of host nodes: this node's member of the node group.
    cluster: Option<Cluster>,
    admin_stop: Option<oneshot::Sender<()>>,
    admin_task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Opens the store, the catalog and binds the Kafka listener, then serves in the
    /// background. Returns once the listener is bound, so `kafka_addr()` is connectable (in
    /// proxy mode, also after a first read of the upstream's topics, or its failure).
    pub async fn start(mut config: Config) -> Result<Server, ServerError> {
        // Refuse an exposed admin API before touching anything.
        admin::load_token(&mut config.admin)?;
        admin::check_listen(&config.admin)?;
        // The admin API's TLS, loaded now so a bad file stops the start naming its setting.
        let admin_tls = match config.admin.tls()? {
            Some(files) => Some(Arc::new(
                crate::tls::ServerTls::load(files)
                    .map_err(|e| ServerError::Admin(AdminConfigError::Tls(e)))?,
            )),
            None => None,
        };
        config
            .cluster
            .check(&config.upstream)
            .map_err(ServerError::Config)?;
        let clustered = config.cluster.is_clustered();
        let store = Store::open(&config.data_dir)?;
        let proxy_mode = config.upstream.is_proxy();
        // In proxy mode the topics are the upstream's, read from its Metadata.
        let catalog = if proxy_mode {
            Catalog::mirror()
        } else {
            Catalog::open(&config.catalog, Some(store.clone()))?
        };

        // Compiling the built-ins (or loading them from the cache) is CPU work: off the runtime.
        let sandbox = Sandbox::new_metered(
            config.sandbox.pool.clone(),
            config.sandbox.limits.clone(),
            config.sandbox.metering,
        )?;
        let registry_config = RegistryConfig {
            settings: config.registry.clone(),
            cache_dir: Some(config.data_dir.join("cache")),
            // Listen at once on a first start; Cranelift's code is swapped in meanwhile.
            serve_first: true,
            ..RegistryConfig::default()
        };
        // In a cluster the modules are the module log's (`cluster::modules`), applied at start.
        let registry_store = (!clustered).then(|| store.clone());
        let registry = tokio::task::spawn_blocking(move || {
            Registry::open(sandbox, registry_store, registry_config)
        })
        .await
        .map_err(|e| ServerError::Task(e.to_string()))??;
        let registry = Arc::new(registry);
        let metrics = Arc::new(Metrics::new());
        // How the host's own connections to the cluster are secured, loaded once: a missing
        // file or an inconsistent setting stops the start with the setting's name.
        let security = if proxy_mode {
            Security::load(&config.upstream.security()).map_err(ServerError::Upstream)?
        } else {
            Security::plaintext()
        };
        // TLS on the Kafka ports, loaded once here so a bad file stops the start naming it.
        let tls = match config.kafka.tls().map_err(ServerError::Upstream)? {
            Some(files) => Some(Arc::new(
                crate::tls::ServerTls::load(files).map_err(ServerError::Upstream)?,
            )),
            None => None,
        };
        let authentication = config
            .kafka
            .authentication(proxy_mode, security.protocol.sasl())
            .map_err(ServerError::Upstream)?;
        let authenticate_clients = authentication == crate::kafka::Authentication::Upstream;
        // Standalone's users live in its store (managed by the admin API whatever the
        // listener's authentication, so they can be made before it is switched on).
        let users = if proxy_mode {
            None
        } else {
            let store = store.clone();
            let users = tokio::task::spawn_blocking(move || Users::open(Some(store)))
                .await
                .map_err(|e| ServerError::Task(e.to_string()))??;
            Some(users)
        };
        // Standalone's ACLs decide every right; in proxy mode the cluster's do, and-ed with
        // those of `kafka.acl_file` when it is set.
        let settings = AclSettings {
            allow_everyone_if_no_acl_found: config.kafka.allow_everyone_if_no_acl_found,
            super_users: config.kafka.super_users.clone(),
        };
        let acl_file = match (&config.kafka.acl_file, proxy_mode) {
            (Some(path), true) => {
                let bindings = crate::acls::read_file(path)
                    .map_err(|e| ServerError::Config(format!("kafka.acl_file {e}")))?;
                let acls = Acls::open(None, settings.clone())
                    .map_err(|e| ServerError::Config(e.to_string()))?;
                acls.add(&bindings)
                    .map_err(|e| ServerError::Config(format!("kafka.acl_file: {e}")))?;
                Some(acls)
            }
            (Some(_), false) => {
                return Err(ServerError::Config(
                    "kafka.acl_file is for proxy mode; standalone keeps its ACLs in the store \
                     (assignor-host acl add)"
                        .into(),
                ));
            }
            (None, _) => None,
        };
        let acls = if proxy_mode {
            None
        } else {
            let store = store.clone();
            let acls = tokio::task::spawn_blocking(move || Acls::open(Some(store), settings))
                .await
                .map_err(|e| ServerError::Task(e.to_string()))?
                .map_err(|e| ServerError::Config(e.to_string()))?;
            Some(acls)
        };
        let login = match (&users, authentication) {
            (Some(users), crate::kafka::Authentication::Local) => Some(Arc::new(Login::new(
                users.clone(),
                tls.is_some(),
                config.kafka.connections_max_reauth,
            ))),
            _ => None,
        };
        if proxy_mode && security.protocol.sasl() && !authenticate_clients {
            tracing::warn!(
                "kafka.authentication = \"none\" in front of a SASL listener: the host answers \
                 group requests of clients the cluster never authenticated"
            );
        }
        // Proxy mode: the host's own client of the cluster keeps the groups' offsets there.
        let upstream = if proxy_mode {
            let settings = ClientSettings {
                bootstrap: config.upstream.bootstrap.clone(),
                request_timeout: config.upstream.request_timeout,
                security: security.clone(),
            };
            Some(
                UpstreamClient::connect(settings)
                    .map_err(|e| ServerError::Upstream(e.to_string()))?,
            )
        } else {
            None
        };
        let remote_offsets = upstream.clone().map(|client| {
            let offsets = offsets::UpstreamOffsets {
                client,
                metrics: metrics.clone(),
            };
            Arc::new(offsets) as Arc<dyn crate::driver::RemoteOffsets>
        });
        // Lag for modules that read it: standalone, committed offsets from the store (no end
        // offsets); in proxy mode both, from the upstream cluster.
        let lag: Arc<dyn crate::driver::LagSource> = match &upstream {
            None => Arc::new(crate::driver::StoreLag::new(store.clone())),
            Some(client) => Arc::new(lag::UpstreamLag {
                client: client.clone(),
                runtime: tokio::runtime::Handle::current(),
            }),
        };
        let lag = Some(lag);
        let listen = config.kafka.listen;
        let socket = TcpListener::bind(listen)
            .await
            .map_err(|source| ServerError::Bind {
                addr: listen,
                source,
            })?;
        let kafka_addr = socket.local_addr().map_err(|source| ServerError::Bind {
            addr: listen,
            source,
        })?;
        // Bound now (served once everything is up): a node of a cluster names its admin port to
        // the others, which forward admin calls about the groups it coordinates.
        let admin_listen = config.admin.listen;
        let bind_admin = |source| ServerError::BindAdmin {
            addr: admin_listen,
            source,
        };
        let admin_socket = TcpListener::bind(admin_listen).await.map_err(bind_admin)?;
        let admin_addr = admin_socket.local_addr().map_err(bind_admin)?;
        let (host, port) = advertised(config.kafka.advertised.as_deref(), kafka_addr)?;
        let host = config.upstream.advertised_host.clone().unwrap_or(host);
        // A cluster of host nodes: each node its own coordinator node id, and the shards it
        // holds (none until the node group assigns some).
        let mut upstream_config = config.upstream.clone();
        let ownership = clustered.then(|| {
            let node_id = config.cluster.node_id_for(&host, port);
            upstream_config.coordinator_node_id = node_id;
            let me = Peer {
                node_id,
                host: host.clone(),
                port,
                admin_port: Some(admin_addr.port()),
            };
            let ownership = Ownership::new(config.cluster.shards, me, config.cluster.lease());
            Arc::new(ownership.named(config.cluster.name.as_deref().unwrap_or_default()))
        });
        // Proxy mode: this listener is the bootstrap port and the coordinator node, a node
        // id of the host's own (FindCoordinator names it; it leads no partition).
        let node = Node {
            node_id: if proxy_mode {
                upstream_config.coordinator_node_id
            } else {
                config.kafka.node_id
            },
            host: host.clone(),
            port,
        };
        let proxy = proxy_mode.then(|| {
            let (proxy, listeners) = Proxy::new(
                upstream_config.clone(),
                security.clone(),
                host,
                kafka_addr,
                catalog.clone(),
                ownership.clone(),
                authenticate_clients,
            );
            (Arc::new(proxy), listeners)
        });
        // Proxy mode: the catalog is the upstream's. Read it once before the driver restores
        // the persisted groups and before anyone is served: a restored group compares its
        // partition counts with the catalog, and against the empty one it would rebalance
        // ("changed from 6 to 0") at each restart; a group formed on it would rebalance as
        // soon as the first read filled it. An upstream that does not answer within its
        // request timeout is retried by the topology reader while the host serves.
        if let Some((proxy, _)) = &proxy
            && let Err(error) = topology::read(proxy).await
        {
            tracing::warn!(%error, "cannot read the upstream's metadata at start; serving, and retrying");
        }
        let driver = Driver::start(
            DriverConfig {
                settings: config.driver.clone(),
                coordinator: config.coordinator.clone(),
                notices: metrics.clone(),
                remote_offsets,
                lag,
                gate: ownership.clone().map(|o| o as Arc<dyn crate::driver::Gate>),
                ..DriverConfig::default()
            },
            registry.clone(),
            registry.subscribe(),
            catalog.subscribe(),
            // In a cluster a group's state lives on whichever node holds its shard now, and
            // its offsets upstream: nothing of it is kept here across a restart.
            (!clustered).then_some(store),
        )?;

        let broker = Arc::new(Broker {
            node: node.clone(),
            cluster_id: config.kafka.cluster_id.clone(),
            catalog: catalog.clone(),
            driver: driver.clone(),
            metrics: Some(metrics.clone()),
            proxy: proxy.as_ref().map(|(p, _)| p.clone()),
            connections: Arc::new(tokio::sync::Semaphore::new(
                config.kafka.max_connections.max(1),
            )),
            addresses: Arc::default(),
            max_fetch_wait: config.kafka.max_fetch_wait,
            cluster: ownership.clone(),
            tls,
            principals: Arc::new(
                crate::kafka::principal::PrincipalMapper::parse(
                    &config.kafka.ssl_principal_mapping_rules,
                )
                .map_err(|e| {
                    ServerError::Config(format!("kafka.ssl_principal_mapping_rules: {e}"))
                })?,
            ),
            login,
            acls: acls.clone().or(acl_file),
            budget: crate::kafka::budget::Budget::new(
                config.kafka.queued_max_request_bytes,
                Some(metrics.request_budget()),
            )
            .map(Arc::new),
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(listener::run(
            socket,
            broker.clone(),
            config.kafka.clone(),
            Target::Bootstrap,
            stop.clone().cancelled_owned(),
        ));
        let proxy = match (proxy, &upstream) {
            (Some((proxy, listeners)), Some(client)) => {
                let tasks = proxy::ProxyTasks::start(
                    proxy.clone(),
                    broker,
                    config.kafka.clone(),
                    listeners,
                    client.clone(),
                    stop.clone(),
                );
                Some((proxy, tasks))
            }
            _ => None,
        };

        let cluster = match (&ownership, &upstream) {
            (Some(ownership), Some(client)) => Some(
                Cluster::start(
                    &config.cluster,
                    &upstream_config,
                    client.clone(),
                    ownership.clone(),
                    driver.clone(),
                    registry.clone(),
                )
                .await
                .map_err(ServerError::Upstream)?,
            ),
            _ => None,
        };

        let admin_state = AdminState {
            users,
            acls,
            registry: registry.clone(),
            driver: driver.clone(),
            catalog: catalog.clone(),
            metrics: metrics.clone(),
            config: Arc::new(config.admin.clone()),
            upstream: match (&upstream, &proxy) {
                (Some(client), Some((proxy, _))) => {
                    let proxy = proxy.clone();
                    Some(AdminUpstream {
                        client: client.clone(),
                        reread_topics: Arc::new(move || proxy.refresh.notify_one()),
                        timeout: config.upstream.request_timeout,
                    })
                }
                _ => None,
            },
            cluster: ownership.clone(),
            module_log: cluster.as_ref().map(|c| c.modules().clone()),
        };
        let (admin_stop, admin_stopped) = oneshot::channel::<()>();
        let admin_task = tokio::spawn(admin::serve(admin_socket, admin_tls, admin_state, async {
            let _ = admin_stopped.await;
        }));
        // The one line that says what this host serves and where.
        let upstream_at = config.upstream.bootstrap.join(",");
        let mode = if clustered {
            let name = config.cluster.name.as_deref().unwrap_or_default();
            format!("node of cluster {name} in front of {upstream_at}")
        } else if proxy_mode {
            format!("proxy in front of {upstream_at}")
        } else {
            "standalone".to_owned()
        };
        tracing::info!(
            mode = %mode,
            strategies = registry.list().len(),
            kafka = %kafka_addr,
            admin = %admin_addr,
            admin_auth = config.admin.token.is_some(),
            admin_tls = config.admin.tls_certificate_location.is_some(),
            advertised = %format!("{}:{}", node.host, node.port),
            node_id = node.node_id,
            data_dir = %config.data_dir.display(),
            "assignor-host serving"
        );
        Ok(Server {
            kafka_addr,
            node,
            catalog,
            registry,
            driver,
            metrics,
            admin_addr,
            stop,
            task,
            proxy,
            cluster,
            admin_stop: Some(admin_stop),
            admin_task,
        })
    }

    /// The address the admin HTTP API is bound to.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// The host's metrics (what `/metrics` serves).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The address the Kafka listener is bound to.
    pub fn kafka_addr(&self) -> SocketAddr {
        self.kafka_addr
    }

    /// How the host presents itself in Metadata and FindCoordinator.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// Proxy mode's data path (`None` standalone): the upstream brokers served here.
    pub fn proxy(&self) -> Option<&Arc<Proxy>> {
        self.proxy.as_ref().map(|(p, _)| p)
    }

    /// The module registry (for the admin API).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The coordinator's driver (for the admin API).
    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    /// In a cluster of host nodes: the shards this node holds and what it knows of the others.
    pub fn cluster(&self) -> Option<&Arc<Ownership>> {
        self.cluster.as_ref().map(Cluster::ownership)
    }

    /// The topic catalog (shared with the running host).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Stops accepting, closes every connection, and waits for all of them to end.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        // Leave the node group first: its groups are released (their parked requests answered
        // NOT_COORDINATOR on connections still open) and the other nodes take the shards.
        if let Some(cluster) = self.cluster.take() {
            cluster.stop().await;
        }
        self.stop.cancel();
        if let Some(stop) = self.admin_stop.take() {
            let _ = stop.send(());
        }
        let drained = (&mut self.task)
            .await
            .map_err(|e| ServerError::Task(e.to_string()));
        if let Some((_, tasks)) = self.proxy.take() {
            tasks.stop().await;
        }
        match (&mut self.admin_task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the admin listener stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "the admin task failed"),
        }
        self.driver.shutdown().await;
        drained
    }
}

/// Runs the host until `shutdown` completes (e.g. `tokio::signal::ctrl_c()`).
pub async fn run(config: Config, shutdown: impl Future) -> Result<(), ServerError> {
    let server = Server::start(config).await?;
    shutdown.await;
    tracing::info!("shutting down");
    server.shutdown().await
}

/// The advertised `(host, port)`: the configured `host:port`, or the bound address when it is
/// a concrete one.
fn advertised(configured: Option<&str>, bound: SocketAddr) -> Result<(String, i32), ServerError> {
    match configured {
        Some(text) => {
            let (host, port) = text.rsplit_once(':').ok_or_else(|| {
                ServerError::Config(format!("kafka.advertised {text:?} is not host:port"))
            })?;
            let port: u16 = port.parse().map_err(|_| {
                ServerError::Config(format!("kafka.advertised {text:?} has no valid port"))
            })?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() {
                return Err(ServerError::Config(format!(
                    "kafka.advertised {text:?} has no host"
                )));
            }
            Ok((host.to_owned(), i32::from(port)))
        }
        None if bound.ip().is_unspecified() => Err(ServerError::Config(format!(
            "kafka.listen {bound} is a wildcard address, which clients cannot connect to; set \
             kafka.advertised (or --advertise) to the address clients should use"
        ))),
        None => Ok((bound.ip().to_string(), i32::from(bound.port()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_address_defaults_to_a_concrete_bound_address() {
        let bound: SocketAddr = "127.0.0.1:19092".parse().unwrap();
        assert_eq!(
            advertised(None, bound).unwrap(),
            ("127.0.0.1".to_owned(), 19092)
        );
        assert_eq!(
            advertised(Some("kafka.example:9092"), bound).unwrap(),
            ("kafka.example".to_owned(), 9092)
        );
        assert_eq!(
            advertised(Some("[::1]:9093"), bound).unwrap(),
            ("::1".to_owned(), 9093)
        );
    }

    #[test]
    fn wildcard_or_malformed_advertised_addresses_are_refused() {
        let wildcard: SocketAddr = "0.0.0.0:9092".parse().unwrap();
        assert!(advertised(None, wildcard).is_err());
        for bad in ["nohost", "h:notaport", ":9092", "h:70000"] {
            assert!(advertised(Some(bad), wildcard).is_err(), "{bad}");
        }
    }
}
