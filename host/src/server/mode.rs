//! The way the host runs, decided once from the configuration ([`Mode::build`]): standalone,
//! in front of a cluster, or one node of a cluster of hosts. Each part is then given its own
//! view of it (the Kafka ports a `kafka::Mode`, the admin API an `AdminMode`, the driver where
//! offsets and lag come from and which groups it may serve), so no part asks "am I in proxy
//! mode" of a set of options that only make sense together.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::ServerError;
use super::proxy::ProxyTasks;
use crate::acls::{AclSettings, Acls};
use crate::admin::{AdminMode, AdminUpstream};
use crate::catalog::Catalog;
use crate::cluster::{Cluster, Ownership, Peer};
use crate::config::Config;
use crate::driver::{DriverConfig, Gate, LagSource, RemoteOffsets, StoreLag};
use crate::kafka::proxy::{Proxy, topology};
use crate::kafka::{self, Authentication, Broker};
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::store::Store;
use crate::upstream::UpstreamConfig;
use crate::upstream::client::{ClientSettings, UpstreamClient};
use crate::upstream::connection::Security;
use crate::users::Users;

/// Where the host's listeners are bound and how clients are told to reach it.
pub(super) struct Bound {
    pub(super) kafka: SocketAddr,
    pub(super) admin: SocketAddr,
    /// The advertised host and port (`kafka.advertised`, or the bound address).
    pub(super) host: String,
    pub(super) port: i32,
}

/// The way the host runs, with what only that way has.
pub(super) enum Mode {
    /// Topics, records, groups, users and ACLs of its own, in its store.
    Standalone(Local),
    /// In front of a cluster: its topics and records, the groups here.
    Proxy(Remote),
    /// One node of several in front of one cluster, serving the groups of the shards it holds.
    Cluster(Remote, Arc<Ownership>),
}

/// Standalone's own users and ACLs (kept in the store, managed by the admin API).
pub(super) struct Local {
    catalog: Catalog,
    users: Arc<Users>,
    acls: Arc<Acls>,
    authentication: Authentication,
}

/// What being in front of a cluster brings: the host's own client of it and the data path.
pub(super) struct Remote {
    catalog: Catalog,
    /// `upstream.*`, with this node's coordinator node id in a cluster of hosts.
    settings: UpstreamConfig,
    client: UpstreamClient,
    proxy: Arc<Proxy>,
    /// The upstream brokers' ports, as the proxy opens them; taken by [`Mode::start`].
    listeners: Option<mpsc::UnboundedReceiver<(i32, std::net::TcpListener)>>,
    /// `kafka.acl_file`: ACLs and-ed with the cluster's.
    acl_file: Option<Arc<Acls>>,
}

/// The parts of a mode that run beside the Kafka listener, stopped with the host.
pub(super) enum Running {
    Standalone,
    Proxy(ProxyTasks),
    Cluster(ProxyTasks, Cluster),
}

impl Mode {
    /// Decides the mode and builds its parts: standalone opens its users, ACLs and topics;
    /// proxy mode loads the upstream's security (a missing file or an inconsistent setting
    /// stops the start naming the setting), makes the host's client of the cluster and the data
    /// path; a cluster node also takes its node id and an empty set of shards.
    pub(super) async fn build(
        config: &Config,
        store: &Store,
        bound: &Bound,
    ) -> Result<Mode, ServerError> {
        config
            .cluster
            .check(&config.upstream)
            .map_err(ServerError::Config)?;
        if !config.upstream.is_proxy() {
            return Ok(Mode::Standalone(Local::open(config, store).await?));
        }
        let security =
            Security::load(&config.upstream.security()).map_err(ServerError::Upstream)?;
        let authentication = config
            .kafka
            .authentication(true, security.protocol.sasl())
            .map_err(ServerError::Upstream)?;
        if security.protocol.sasl() && authentication != Authentication::Upstream {
            tracing::warn!(
                "kafka.authentication = \"none\" in front of a SASL listener: the host answers \
                 group requests of clients the cluster never authenticated"
            );
        }
        let mut settings = config.upstream.clone();
        let ownership = config.cluster.is_clustered().then(|| {
            let node_id = config.cluster.node_id_for(&bound.host, bound.port);
            settings.coordinator_node_id = node_id;
            let me = Peer {
                node_id,
                host: bound.host.clone(),
                port: bound.port,
                admin_port: Some(bound.admin.port()),
            };
            let ownership = Ownership::new(config.cluster.shards, me, config.cluster.lease());
            Arc::new(ownership.named(config.cluster.name.as_deref().unwrap_or_default()))
        });
        let client = UpstreamClient::connect(ClientSettings {
            bootstrap: settings.bootstrap.clone(),
            request_timeout: settings.request_timeout,
            security: security.clone(),
        })
        .map_err(|e| ServerError::Upstream(e.to_string()))?;
        let catalog = Catalog::mirror();
        let (proxy, listeners) = Proxy::new(
            settings.clone(),
            security,
            bound.host.clone(),
            bound.kafka,
            catalog.clone(),
            ownership.clone(),
            authentication == Authentication::Upstream,
        );
        let remote = Remote {
            catalog,
            settings,
            client,
            proxy: Arc::new(proxy),
            listeners: Some(listeners),
            acl_file: acl_file(config)?,
        };
        Ok(match ownership {
            Some(ownership) => Mode::Cluster(remote, ownership),
            None => Mode::Proxy(remote),
        })
    }

    fn remote(&self) -> Option<&Remote> {
        match self {
            Mode::Standalone(_) => None,
            Mode::Proxy(remote) | Mode::Cluster(remote, _) => Some(remote),
        }
    }

    /// The topics served: standalone's own, or the upstream's (read from its Metadata).
    pub(super) fn catalog(&self) -> &Catalog {
        match self {
            Mode::Standalone(local) => &local.catalog,
            Mode::Proxy(remote) | Mode::Cluster(remote, _) => &remote.catalog,
        }
    }

    /// The store a part keeps what it must find again after a restart in. In a cluster of
    /// hosts a group lives on whichever node holds its shard, and the modules in the cluster's
    /// module log: nothing of either is kept on a node.
    pub(super) fn keeps(&self, store: &Store) -> Option<Store> {
        match self {
            Mode::Cluster(..) => None,
            Mode::Standalone(_) | Mode::Proxy(_) => Some(store.clone()),
        }
    }

    /// The coordinator's node id: `kafka.node_id` standalone; in front of a cluster an id of
    /// the host's own, one no upstream broker has (FindCoordinator names it; it leads nothing).
    pub(super) fn node_id(&self, config: &Config) -> i32 {
        match self.remote() {
            None => config.kafka.node_id,
            Some(remote) => remote.settings.coordinator_node_id,
        }
    }

    /// Standalone's logins, when `kafka.authentication = "local"`.
    pub(super) fn users_checked(&self) -> Option<&Arc<Users>> {
        match self {
            Mode::Standalone(local) if local.authentication == Authentication::Local => {
                Some(&local.users)
            }
            _ => None,
        }
    }

    /// The ACLs the Kafka ports decide by: standalone's own, or `kafka.acl_file`'s in front of
    /// a cluster (and-ed with the cluster's own decisions).
    pub(super) fn acls(&self) -> Option<Arc<Acls>> {
        match self {
            Mode::Standalone(local) => Some(local.acls.clone()),
            Mode::Proxy(remote) | Mode::Cluster(remote, _) => remote.acl_file.clone(),
        }
    }

    /// The Kafka ports' view of the mode.
    pub(super) fn kafka(&self) -> kafka::Mode {
        match self {
            Mode::Standalone(_) => kafka::Mode::Standalone,
            Mode::Proxy(remote) => kafka::Mode::Proxy(remote.proxy.clone()),
            Mode::Cluster(remote, ownership) => {
                kafka::Mode::Cluster(remote.proxy.clone(), ownership.clone())
            }
        }
    }

    /// The driver's settings with what the mode decides: where offsets and lag come from and
    /// which groups it may serve.
    pub(super) fn driver_config(
        &self,
        config: &Config,
        metrics: &Arc<Metrics>,
        store: &Store,
    ) -> DriverConfig {
        DriverConfig {
            settings: config.driver.clone(),
            coordinator: config.coordinator.clone(),
            notices: metrics.clone(),
            remote_offsets: self.remote_offsets(metrics),
            lag: Some(self.lag(store)),
            gate: self.gate(),
            ..DriverConfig::default()
        }
    }

    /// Where a group's committed offsets go besides the coordinator: the cluster's, through
    /// the host's client, in front of one; `None` standalone (the store has them).
    fn remote_offsets(&self, metrics: &Arc<Metrics>) -> Option<Arc<dyn RemoteOffsets>> {
        let remote = self.remote()?;
        let offsets = super::offsets::UpstreamOffsets {
            client: remote.client.clone(),
            metrics: metrics.clone(),
        };
        Some(Arc::new(offsets))
    }

    /// Lag for modules that read it: standalone, committed offsets from the store (no end
    /// offsets); in front of a cluster both, from the cluster.
    fn lag(&self, store: &Store) -> Arc<dyn LagSource> {
        match self.remote() {
            None => Arc::new(StoreLag::new(store.clone())),
            Some(remote) => Arc::new(super::lag::UpstreamLag {
                client: remote.client.clone(),
                runtime: tokio::runtime::Handle::current(),
            }),
        }
    }

    /// Which groups the driver may serve: in a cluster of hosts those of the shards this
    /// node holds; `None`: all of them.
    fn gate(&self) -> Option<Arc<dyn Gate>> {
        match self {
            Mode::Cluster(_, ownership) => Some(ownership.clone()),
            Mode::Standalone(_) | Mode::Proxy(_) => None,
        }
    }

    /// In front of a cluster, reads its topics once before the driver restores the persisted
    /// groups and before anyone is served: a restored group compares its partition counts with
    /// the catalog, and against the empty one it would rebalance ("changed from 6 to 0") at
    /// each restart; a group formed on it would rebalance as soon as the first read filled it.
    /// An upstream that does not answer within its request timeout is retried by the topology
    /// reader while the host serves.
    pub(super) async fn read_topics(&self) {
        if let Some(remote) = self.remote()
            && let Err(error) = topology::read(&remote.proxy).await
        {
            tracing::warn!(%error, "cannot read the upstream's metadata at start; serving, and retrying");
        }
    }

    /// Starts what runs beside the Kafka listener (the upstream brokers' ports, the topology
    /// reader, the offsets' re-commit; a cluster node's membership and module log), and gives
    /// the admin API its view of the mode.
    pub(super) async fn start(
        self,
        config: &Config,
        broker: &Arc<Broker>,
        registry: &Arc<Registry>,
        stop: &CancellationToken,
    ) -> Result<(Running, AdminMode), ServerError> {
        let (mut remote, ownership) = match self {
            Mode::Standalone(local) => {
                let admin = AdminMode::Standalone {
                    users: local.users,
                    acls: local.acls,
                };
                return Ok((Running::Standalone, admin));
            }
            Mode::Proxy(remote) => (remote, None),
            Mode::Cluster(remote, ownership) => (remote, Some(ownership)),
        };
        let listeners = remote.listeners.take().expect("a mode is started once");
        let tasks = ProxyTasks::start(
            remote.proxy.clone(),
            broker.clone(),
            config.kafka.clone(),
            listeners,
            remote.client.clone(),
            stop.clone(),
        );
        let proxy = remote.proxy.clone();
        let upstream = AdminUpstream {
            client: remote.client.clone(),
            reread_topics: Arc::new(move || proxy.refresh.notify_one()),
            timeout: remote.settings.request_timeout,
        };
        let Some(ownership) = ownership else {
            return Ok((Running::Proxy(tasks), AdminMode::Proxy(upstream)));
        };
        let cluster = Cluster::start(
            &config.cluster,
            &remote.settings,
            remote.client.clone(),
            ownership.clone(),
            broker.driver.clone(),
            registry.clone(),
        )
        .await
        .map_err(ServerError::Upstream)?;
        let admin = AdminMode::Cluster {
            upstream,
            ownership,
            module_log: cluster.modules().clone(),
        };
        Ok((Running::Cluster(tasks, cluster), admin))
    }

    /// How the serving line names the mode.
    pub(super) fn describe(&self, config: &Config) -> String {
        let upstream = config.upstream.bootstrap.join(",");
        match self {
            Mode::Standalone(_) => "standalone".to_owned(),
            Mode::Proxy(_) => format!("proxy in front of {upstream}"),
            Mode::Cluster(..) => {
                let name = config.cluster.name.as_deref().unwrap_or_default();
                format!("node of cluster {name} in front of {upstream}")
            }
        }
    }
}

impl Local {
    /// Opens standalone's topics, users and ACLs from the store (the users and ACLs are
    /// managed by the admin API whatever the listener's authentication, so they can be made
    /// before it is switched on).
    async fn open(config: &Config, store: &Store) -> Result<Local, ServerError> {
        if config.kafka.acl_file.is_some() {
            return Err(ServerError::Config(
                "kafka.acl_file is for proxy mode; standalone keeps its ACLs in the store \
                 (assignor-host acl add)"
                    .into(),
            ));
        }
        let authentication = config
            .kafka
            .authentication(false, false)
            .map_err(ServerError::Upstream)?;
        let catalog = Catalog::open(&config.catalog, Some(store.clone()))?;
        let settings = acl_settings(config);
        let store = store.clone();
        let (users, acls) = tokio::task::spawn_blocking(move || {
            let users = Users::open(Some(store.clone()))?;
            let acls = Acls::open(Some(store), settings)
                .map_err(|e| ServerError::Config(e.to_string()))?;
            Ok::<_, ServerError>((users, acls))
        })
        .await
        .map_err(|e| ServerError::Task(e.to_string()))??;
        Ok(Local {
            catalog,
            users,
            acls,
            authentication,
        })
    }
}

impl Running {
    /// Leaves the node group first: its groups are released (their parked requests answered
    /// NOT_COORDINATOR on connections still open) and the other nodes take the shards.
    pub(super) async fn leave(&mut self) {
        if let Running::Cluster(tasks, cluster) = std::mem::replace(self, Running::Standalone) {
            cluster.stop().await;
            *self = Running::Proxy(tasks);
        }
    }

    /// Waits for the upstream brokers' ports to drain (after the listeners' stop) and ends
    /// the rest.
    pub(super) async fn stop(self) {
        match self {
            Running::Standalone => {}
            Running::Proxy(tasks) => tasks.stop().await,
            Running::Cluster(tasks, cluster) => {
                cluster.stop().await;
                tasks.stop().await;
            }
        }
    }
}

fn acl_settings(config: &Config) -> AclSettings {
    AclSettings {
        allow_everyone_if_no_acl_found: config.kafka.allow_everyone_if_no_acl_found,
        super_users: config.kafka.super_users.clone(),
    }
}

/// `kafka.acl_file`, read and checked now so a bad file stops the start naming it.
fn acl_file(config: &Config) -> Result<Option<Arc<Acls>>, ServerError> {
    let Some(path) = &config.kafka.acl_file else {
        return Ok(None);
    };
    let bindings = crate::acls::read_file(path)
        .map_err(|e| ServerError::Config(format!("kafka.acl_file {e}")))?;
    let acls =
        Acls::open(None, acl_settings(config)).map_err(|e| ServerError::Config(e.to_string()))?;
    acls.add(&bindings)
        .map_err(|e| ServerError::Config(format!("kafka.acl_file: {e}")))?;
    Ok(Some(acls))
}
