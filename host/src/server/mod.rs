//! Assembles the host from its configuration: store, topic catalog, wasm sandbox, module
//! registry (with the built-in strategies), metrics, the coordinator's driver, the Kafka
//! listener and the admin API; runs it until shutdown and stops it in order: stop accepting,
//! drain the connections, then stop the driver (which answers whatever it still has parked).
//!
//! [`run`] is what `assignor-host serve` calls. [`Server::start`] is the same assembly for
//! tests and embedding: it binds (port 0 is fine), returns the bound address at once, and
//! [`Server::shutdown`] stops it.

mod assignors;
mod error;
mod lag;
mod mode;
mod offsets;
mod proxy;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::admin::{self, AdminConfigError, AdminState};
use crate::catalog::Catalog;
use crate::cluster::Ownership;
use crate::config::Config;
use crate::driver::Driver;
use crate::kafka::login::Login;
use crate::kafka::proxy::{Proxy, Target};
use crate::kafka::{Broker, Node, listener};
use crate::metrics::Metrics;
use crate::registry::{Registry, RegistryConfig};
use crate::sandbox::Sandbox;
use crate::store::Store;
pub use error::ServerError;
use mode::{Bound, Mode, Running};

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
    proxy: Option<Arc<Proxy>>,
    /// In a cluster of host nodes: this node's shards and view of the others.
    cluster: Option<Arc<Ownership>>,
    /// What runs beside the listener for the mode (proxy tasks, a cluster node's membership).
    running: Option<Running>,
    admin_stop: Option<oneshot::Sender<()>>,
    admin_task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    /// Opens the store, binds the listeners, decides the mode and builds its parts, then
    /// serves in the background. Returns once the listener is bound, so `kafka_addr()` is
    /// connectable (in proxy mode, also after a first read of the upstream's topics, or its
    /// failure).
    pub async fn start(mut config: Config) -> Result<Server, ServerError> {
        // Refuse an exposed admin API before touching anything; its TLS loaded now so a bad
        // file stops the start naming its setting.
        admin::load_token(&mut config.admin)?;
        admin::check_listen(&config.admin)?;
        let admin_tls = config
            .admin
            .tls()?
            .map(|files| crate::tls::ServerTls::load(files).map(Arc::new))
            .transpose()
            .map_err(|e| ServerError::Admin(AdminConfigError::Tls(e)))?;
        let store = Store::open(&config.data_dir)?;
        let (kafka_socket, admin_socket, bound) = bind(&config).await?;
        let mode = Mode::build(&config, &store, &bound).await?;
        let security = PortSecurity::load(&config, &mode)?;
        let registry = open_registry(&config, mode.keeps(&store)).await?;
        let metrics = Arc::new(Metrics::new());
        let node = Node {
            node_id: mode.node_id(&config),
            host: bound.host.clone(),
            port: bound.port,
        };
        mode.read_topics().await;
        let driver = Driver::start(
            mode.driver_config(&config, &metrics, &store),
            registry.clone(),
            registry.subscribe(),
            mode.catalog().subscribe(),
            mode.keeps(&store),
        )?;
        let broker = Arc::new(security.broker(&config, &mode, node.clone(), &driver, &metrics));
        let stop = CancellationToken::new();
        let task = tokio::spawn(listener::run(
            kafka_socket,
            broker.clone(),
            config.kafka.clone(),
            Target::Bootstrap,
            stop.clone().cancelled_owned(),
        ));
        let catalog = mode.catalog().clone();
        let described = mode.describe(&config);
        let proxy = broker.mode.proxy().cloned();
        let cluster = broker.mode.cluster().cloned();
        let (running, admin_mode) = mode.start(&config, &broker, &registry, &stop).await?;
        let admin_state = AdminState {
            registry: registry.clone(),
            driver: driver.clone(),
            catalog: catalog.clone(),
            metrics: metrics.clone(),
            config: Arc::new(config.admin.clone()),
            mode: admin_mode,
        };
        let (admin_stop, admin_stopped) = oneshot::channel::<()>();
        let admin_task = tokio::spawn(admin::serve(admin_socket, admin_tls, admin_state, async {
            let _ = admin_stopped.await;
        }));
        say_serving(&config, &described, &registry, &bound, &node);
        Ok(Server {
            kafka_addr: bound.kafka,
            node,
            catalog,
            registry,
            driver,
            metrics,
            admin_addr: bound.admin,
            stop,
            task,
            proxy,
            cluster,
            running: Some(running),
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
        self.proxy.as_ref()
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
        self.cluster.as_ref()
    }

    /// The topic catalog (shared with the running host).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Stops accepting, closes every connection, and waits for all of them to end.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        let mut running = self.running.take();
        if let Some(running) = &mut running {
            running.leave().await;
        }
        self.stop.cancel();
        if let Some(stop) = self.admin_stop.take() {
            let _ = stop.send(());
        }
        let drained = (&mut self.task)
            .await
            .map_err(|e| ServerError::Task(e.to_string()));
        if let Some(running) = running {
            running.stop().await;
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

/// The one line that says what this host serves and where.
fn say_serving(config: &Config, mode: &str, registry: &Registry, bound: &Bound, node: &Node) {
    tracing::info!(
        mode = %mode,
        strategies = registry.list().len(),
        kafka = %bound.kafka,
        admin = %bound.admin,
        admin_auth = config.admin.token.is_some(),
        admin_tls = config.admin.tls_certificate_location.is_some(),
        advertised = %format!("{}:{}", node.host, node.port),
        node_id = node.node_id,
        data_dir = %config.data_dir.display(),
        "assignor-host serving"
    );
}

/// Binds the Kafka and admin listeners (port 0 is fine) and works out the advertised address.
/// Bound before anything is served: a node of a cluster names its admin port to the others,
/// which forward admin calls about the groups it coordinates.
async fn bind(config: &Config) -> Result<(TcpListener, TcpListener, Bound), ServerError> {
    let listen = config.kafka.listen;
    let bind_kafka = |source| ServerError::Bind {
        addr: listen,
        source,
    };
    let kafka = TcpListener::bind(listen).await.map_err(bind_kafka)?;
    let kafka_addr = kafka.local_addr().map_err(bind_kafka)?;
    let admin_listen = config.admin.listen;
    let bind_admin = |source| ServerError::BindAdmin {
        addr: admin_listen,
        source,
    };
    let admin = TcpListener::bind(admin_listen).await.map_err(bind_admin)?;
    let admin_addr = admin.local_addr().map_err(bind_admin)?;
    let (host, port) = advertised(config.kafka.advertised.as_deref(), kafka_addr)?;
    let bound = Bound {
        kafka: kafka_addr,
        admin: admin_addr,
        host: config.upstream.advertised_host.clone().unwrap_or(host),
        port,
    };
    Ok((kafka, admin, bound))
}

/// Opens the registry with the built-ins, off the runtime (compiling them, or loading them
/// from the cache, is CPU work). `store`: where uploaded modules are kept (`None` in a cluster,
/// whose modules are the module log's, applied at start by `cluster::modules`).
async fn open_registry(
    config: &Config,
    store: Option<Store>,
) -> Result<Arc<Registry>, ServerError> {
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
    let registry =
        tokio::task::spawn_blocking(move || Registry::open(sandbox, store, registry_config))
            .await
            .map_err(|e| ServerError::Task(e.to_string()))??;
    Ok(Arc::new(registry))
}

/// The Kafka ports' security, loaded before anything starts so a bad file stops the start
/// naming its setting: TLS, how a certificate names its principal, standalone's logins, the
/// ACLs requests are decided by.
struct PortSecurity {
    tls: Option<Arc<crate::tls::ServerTls>>,
    principals: Arc<crate::kafka::principal::PrincipalMapper>,
    login: Option<Arc<Login>>,
    acls: Option<Arc<crate::acls::Acls>>,
}

impl PortSecurity {
    fn load(config: &Config, mode: &Mode) -> Result<PortSecurity, ServerError> {
        let kafka = &config.kafka;
        let tls = kafka
            .tls()
            .map_err(ServerError::Upstream)?
            .map(|files| crate::tls::ServerTls::load(files).map(Arc::new))
            .transpose()
            .map_err(ServerError::Upstream)?;
        let principals =
            crate::kafka::principal::PrincipalMapper::parse(&kafka.ssl_principal_mapping_rules)
                .map_err(|e| {
                    ServerError::Config(format!("kafka.ssl_principal_mapping_rules: {e}"))
                })?;
        let login = mode.users_checked().map(|users| {
            Arc::new(Login::new(
                users.clone(),
                tls.is_some(),
                kafka.connections_max_reauth,
            ))
        });
        Ok(PortSecurity {
            tls,
            principals: Arc::new(principals),
            login,
            acls: mode.acls(),
        })
    }

    /// What every Kafka connection shares.
    fn broker(
        self,
        config: &Config,
        mode: &Mode,
        node: Node,
        driver: &Driver,
        metrics: &Arc<Metrics>,
    ) -> Broker {
        let kafka = &config.kafka;
        Broker {
            node,
            cluster_id: kafka.cluster_id.clone(),
            catalog: mode.catalog().clone(),
            driver: driver.clone(),
            metrics: Some(metrics.clone()),
            mode: mode.kafka(),
            connections: Arc::new(tokio::sync::Semaphore::new(kafka.max_connections.max(1))),
            addresses: Arc::default(),
            max_fetch_wait: kafka.max_fetch_wait,
            tls: self.tls,
            principals: self.principals,
            login: self.login,
            acls: self.acls,
            budget: crate::kafka::budget::Budget::new(
                kafka.queued_max_request_bytes,
                Some(metrics.request_budget()),
            )
            .map(Arc::new),
        }
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
