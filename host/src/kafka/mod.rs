//! The Kafka wire: frame codec, connections, listener, and one thin file per Kafka API.
//!
//! A request flows `listener` -> `connection` (one task per socket) -> `codec` (size-prefixed
//! frames) -> `request::parse` (header and body via `kafka-protocol`, through `guard`) ->
//! `dispatch` (one match on the API key) -> the API's file, which decodes nothing itself: it
//! answers from the [`Broker`] (catalog, node) or hands the group's request to the driver, and
//! returns the response struct. The connection encodes it and writes it.
//!
//! Requests on one connection are answered in the order they arrived, as Kafka does (its
//! `SocketServer` mutes a channel until the response of its request is sent) and as clients
//! require. A JoinGroup parked until the join phase ends therefore holds later requests on that
//! connection; clients talk to the coordinator on a connection of their own, so this is also
//! what they expect. Fetch is held for `max_wait_ms` inside its own connection task only.

pub mod addresses;
pub mod api_versions;
pub mod budget;
mod config;
mod connection;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_partitions;
mod create_topics;
mod delete_groups;
mod delete_topics;
mod describe_groups;
mod dispatch;
mod fetch;
mod find_coordinator;
pub mod groups;
mod heartbeat;
mod join_group;
mod leave_group;
mod list_groups;
mod list_offsets;
pub mod listener;
pub mod login;
mod metadata;
mod mode;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
pub mod principal;
mod produce;
pub mod proxy;
mod sasl;
mod sasl_authenticate;
mod sasl_handshake;
mod sync_group;
mod txn_offset_commit;

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::driver::Driver;

pub use config::{Authentication, KafkaConfig};
pub use mode::Mode;

/// How the host presents itself as a broker: the one node of its cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The broker id (config `kafka.node_id`, default 1 like a fresh Kafka broker).
    pub node_id: i32,
    /// Advertised host and port: what clients are told to connect to.
    pub host: String,
    pub port: i32,
}

/// Everything an API handler may read or change; shared by all connections.
pub struct Broker {
    pub node: Node,
    pub cluster_id: String,
    pub catalog: Catalog,
    /// The group coordinator's runtime, which every group API is handed to.
    pub driver: Driver,
    /// Where answered requests are counted (by API and error code); `None` counts nothing.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Standalone, in front of a cluster, or one node of a cluster of hosts.
    pub mode: Mode,
    /// Connection permits shared by every listener (`kafka.max_connections`).
    pub connections: Arc<tokio::sync::Semaphore>,
    /// Open connections by client address (`kafka.max_connections_per_address`).
    pub addresses: Arc<addresses::Addresses>,
    /// `kafka.max_fetch_wait`: the longest a standalone Fetch is held.
    pub max_fetch_wait: std::time::Duration,
    /// TLS on every Kafka port (`kafka.tls_certificate_location`); `None`: plaintext.
    pub tls: Option<Arc<crate::tls::ServerTls>>,
    /// How a client certificate names its principal (`kafka.ssl_principal_mapping_rules`).
    pub principals: Arc<principal::PrincipalMapper>,
    /// `kafka.authentication = "local"`: the host checks its own users' logins; `None`: not.
    pub login: Option<Arc<login::Login>>,
    /// Standalone: the ACLs that decide what each principal may do (`crate::acls`); `None` in
    /// proxy mode, where the cluster's decide.
    pub acls: Option<Arc<crate::acls::Acls>>,
    /// The bytes of requests being read and decoded, over every connection
    /// (`kafka.queued_max_request_bytes`); `None`: no bound.
    pub budget: Option<Arc<budget::Budget>>,
}

/// Facts about the connection a request came on.
#[derive(Debug, Clone)]
pub struct Client {
    /// Kafka-style peer address, e.g. `/127.0.0.1` (what DescribeGroups reports).
    pub host: String,
    pub peer: std::net::SocketAddr,
    /// Proxy mode with clients the cluster authenticated: the cluster's decisions on the
    /// rights this request needs (`proxy::authorize`); `None`: nothing is checked.
    pub rights: Option<Arc<proxy::authorize::Rights>>,
    /// Where a refusal is told ([`Client::permits`]): the request's API, the principal the
    /// cluster authenticated, the host's metrics.
    pub api: i16,
    pub principal: Option<Arc<str>>,
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Standalone: the ACLs, asked for every right ([`Client::allows`]).
    pub acls: Option<Arc<crate::acls::Acls>>,
}

impl Client {
    /// Whether the client may do `right`: never on the host's own names, else always where
    /// nothing is checked. Silent: for Kafka's filters (ListGroups, OffsetFetch of every
    /// offset), which leave out what may not be seen without logging a denial.
    pub fn allows(&self, right: &proxy::authorize::Right) -> bool {
        !right.reserved()
            && self.rights.as_ref().is_none_or(|r| r.allows(right))
            && self
                .acls
                .as_ref()
                .is_none_or(|acls| self.acl_allows(acls, right))
    }

    /// The local ACLs' decision on `right` ([`Client::acl_decides`]).
    fn acl_allows(&self, acls: &crate::acls::Acls, right: &proxy::authorize::Right) -> bool {
        use crate::acls::{AclOperation, CLUSTER_NAME, ResourceType};
        use proxy::authorize::{Operation, Resource};
        let operation = match right.operation {
            Operation::Read => AclOperation::Read,
            Operation::Write => AclOperation::Write,
            Operation::Create => AclOperation::Create,
            Operation::Delete => AclOperation::Delete,
            Operation::Alter => AclOperation::Alter,
            Operation::Describe => AclOperation::Describe,
            Operation::AlterConfigs => AclOperation::AlterConfigs,
        };
        let (kind, name) = match &right.resource {
            Resource::Group(name) => (ResourceType::Group, name.as_str()),
            Resource::Topic(name) => (ResourceType::Topic, name.as_str()),
            Resource::Cluster => (ResourceType::Cluster, CLUSTER_NAME),
        };
        self.acl_decides(acls, operation, kind, name)
    }

    /// The local ACLs' decision on `operation` on a resource for this connection's principal
    /// (Kafka's `User:ANONYMOUS` when the client did not log in) from its address.
    fn acl_decides(
        &self,
        acls: &crate::acls::Acls,
        operation: crate::acls::AclOperation,
        kind: crate::acls::ResourceType,
        name: &str,
    ) -> bool {
        let principal = self.principal.as_deref().unwrap_or("User:ANONYMOUS");
        acls.authorize(
            principal,
            &self.peer.ip().to_string(),
            operation,
            kind,
            name,
        )
    }

    /// Kafka's `authorized_operations` of a resource for this client
    /// (`AuthHelper.authorizedOperations`): the bits (`AclOperation` codes) of the operations
    /// Kafka supports on the resource's type that the local ACLs allow this principal, every one
    /// of them where no local ACLs decide. Proxy mode asks the cluster only for the rights a
    /// request needs, so there the cluster's ACLs do not narrow it (an `acl_file` does).
    pub fn authorized_operations(&self, kind: crate::acls::ResourceType, name: &str) -> i32 {
        use crate::acls::AclOperation;
        kind.operations()
            .iter()
            .filter(|op| **op != AclOperation::All)
            .filter(|op| {
                self.acls
                    .as_ref()
                    .is_none_or(|acls| self.acl_decides(acls, **op, kind, name))
            })
            .fold(0, |bits, op| bits | 1 << op.code())
    }

    /// [`Client::allows`], and a refusal told: a debug line, the denials metric, a warning
    /// at most every few seconds (`proxy::authorize::denied`). For the checks that answer an
    /// authorization error.
    pub fn permits(&self, right: &proxy::authorize::Right) -> bool {
        let allowed = self.allows(right);
        if !allowed {
            proxy::authorize::denied(
                self.api,
                self.principal.as_deref(),
                right,
                self.metrics.as_deref(),
            );
        }
        allowed
    }
}
