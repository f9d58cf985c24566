//! The `[upstream]` section: proxy mode, the host in front of a Kafka-compatible cluster.
//! Without `bootstrap` the host is standalone.
//!
//! ```toml
//! [upstream]
//! bootstrap = "kafka-1.internal:9092,kafka-2.internal:9092"
//! advertised_host = "assignor.internal"
//! broker_ports_from = 19100      # broker node N listens on 19100 + N
//! ```
//!
//! The security settings (`security_protocol`, `sasl_*`, `ssl_*`) are read here and loaded by
//! `connection::security`, which says what each does.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use super::connection::security::{SaslMechanism, Secret, SecurityProtocol, SecuritySettings};

/// How the host sits in front of the upstream cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Bootstrap servers of the upstream cluster, `host:port`; a comma-separated string or a
    /// list (flag `--upstream`, env `ASSIGNOR_HOST_UPSTREAM`). Empty: standalone mode.
    #[serde(deserialize_with = "servers")]
    pub bootstrap: Vec<String>,
    /// Host name clients are told for every port of this host (Metadata, FindCoordinator).
    /// Unset: the host of `kafka.advertised`, else the bound listen address.
    pub advertised_host: Option<String>,
    /// The deterministic port of each upstream broker: broker node id `N` listens on
    /// `broker_ports_from + N`. Unset: the Kafka listen port + 1 (so with the default
    /// 9092, node 1 is at 9094). 0: a free port per broker, chosen at bind time (tests), shown
    /// in the log and the admin API.
    pub broker_ports_from: Option<u16>,
    /// The node id of this host's coordinator in Metadata and FindCoordinator: a broker that
    /// leads no partition, at the bootstrap port. Must be none of the upstream's node ids.
    pub coordinator_node_id: i32,
    /// How often the upstream's Metadata (brokers, topics, partitions, racks) is read again;
    /// a client asking for a topic the host does not know triggers a read at once.
    #[serde(with = "crate::duration")]
    pub metadata_refresh: Duration,
    /// Bound on every request the host makes upstream itself (offsets, metadata): past it the
    /// call fails and the client gets a retriable error.
    #[serde(with = "crate::duration")]
    pub request_timeout: Duration,
    /// Bound on opening a connection to an upstream broker.
    #[serde(with = "crate::duration")]
    pub connect_timeout: Duration,
    /// How often the committed offsets of live groups are committed again, unchanged, so the
    /// upstream's `offsets.retention.minutes` (7 days by default) never expires them: upstream
    /// every such group is an Empty "simple" group, whose offsets expire by age.
    #[serde(with = "crate::duration")]
    pub recommit_interval: Duration,
    /// Extra librdkafka properties of a cluster of hosts' node group and module log (the
    /// parts on librdkafka; for example `debug`), passed through as they are.
    pub client: std::collections::BTreeMap<String, String>,
    /// How the host's own connections to the cluster are secured: `PLAINTEXT` (default),
    /// `SSL`, `SASL_PLAINTEXT` or `SASL_SSL` (librdkafka's `security.protocol`).
    pub security_protocol: SecurityProtocol,
    /// `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512` or `OAUTHBEARER`, with a `SASL_*` protocol.
    pub sasl_mechanism: Option<SaslMechanism>,
    pub sasl_username: Option<String>,
    /// A file whose first line is the password.
    pub sasl_password_file: Option<PathBuf>,
    /// The password, only from the variable `ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD` (a
    /// configuration file that holds it is refused); never shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sasl_password: Option<Secret>,
    /// With `OAUTHBEARER`: a file whose first line is the token (a JWT), read again at each
    /// new connection, so whatever refreshes the file refreshes the host's logins.
    pub sasl_oauthbearer_token_file: Option<PathBuf>,
    /// PEM file of the CA certificates that sign the brokers' certificates. Unset: the
    /// system's bundle.
    pub ssl_ca_location: Option<PathBuf>,
    /// PEM certificate chain and key of the host, for brokers that require mutual TLS.
    pub ssl_certificate_location: Option<PathBuf>,
    pub ssl_key_location: Option<PathBuf>,
    /// Whether the broker's certificate must name the address the host connects to (`true`;
    /// `false` is logged as a warning at start).
    pub ssl_endpoint_identification: bool,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            bootstrap: Vec::new(),
            advertised_host: None,
            broker_ports_from: None,
            coordinator_node_id: 1_000_000,
            metadata_refresh: Duration::from_secs(30),
            request_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            recommit_interval: Duration::from_secs(24 * 60 * 60),
            client: Default::default(),
            security_protocol: SecurityProtocol::Plaintext,
            sasl_mechanism: None,
            sasl_username: None,
            sasl_password_file: None,
            sasl_password: None,
            sasl_oauthbearer_token_file: None,
            ssl_ca_location: None,
            ssl_certificate_location: None,
            ssl_key_location: None,
            ssl_endpoint_identification: true,
        }
    }
}

impl UpstreamConfig {
    /// Whether the host runs in front of a cluster.
    pub fn is_proxy(&self) -> bool {
        !self.bootstrap.is_empty()
    }

    /// The security settings, for `Security::load`.
    pub fn security(&self) -> SecuritySettings {
        SecuritySettings {
            security_protocol: self.security_protocol,
            sasl_mechanism: self.sasl_mechanism,
            sasl_username: self.sasl_username.clone(),
            sasl_password_file: self.sasl_password_file.clone(),
            sasl_password: self.sasl_password.clone(),
            sasl_oauthbearer_token_file: self.sasl_oauthbearer_token_file.clone(),
            ssl_ca_location: self.ssl_ca_location.clone(),
            ssl_certificate_location: self.ssl_certificate_location.clone(),
            ssl_key_location: self.ssl_key_location.clone(),
            ssl_endpoint_identification: self.ssl_endpoint_identification,
        }
    }
}

/// `"a:1,b:2"` or `["a:1", "b:2"]`, trimmed, empty entries dropped.
fn servers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Servers {
        One(String),
        Many(Vec<String>),
    }
    let list = match Servers::deserialize(deserializer)? {
        Servers::One(text) => text.split(',').map(str::to_owned).collect(),
        Servers::Many(list) => list,
    };
    let list: Vec<String> = list
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    for server in &list {
        parse_server(server).map_err(serde::de::Error::custom)?;
    }
    Ok(list)
}

/// `host:port` split, with a message naming what is wrong.
pub fn parse_server(server: &str) -> Result<(String, u16), String> {
    let (host, port) = server
        .rsplit_once(':')
        .ok_or_else(|| format!("upstream server {server:?} is not host:port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("upstream server {server:?} has no host"));
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| format!("upstream server {server:?} has no valid port"))?;
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        upstream: UpstreamConfig,
    }

    fn read(text: &str) -> Result<UpstreamConfig, String> {
        toml::from_str::<File>(text)
            .map(|f| f.upstream)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bootstrap_is_a_comma_separated_string_or_a_list() {
        let one = read("[upstream]\nbootstrap = \"a:1, b:2,\"").unwrap();
        let many = read("[upstream]\nbootstrap = [\"a:1\", \"b:2\"]").unwrap();
        assert_eq!(one.bootstrap, vec!["a:1", "b:2"]);
        assert_eq!(many.bootstrap, one.bootstrap);
        assert!(one.is_proxy());
        assert!(!UpstreamConfig::default().is_proxy());
    }

    #[test]
    fn a_server_that_is_not_host_port_is_refused_with_its_text() {
        for bad in ["nohost", ":9092", "h:port", "h:70000"] {
            let error = read(&format!("[upstream]\nbootstrap = \"{bad}\"")).unwrap_err();
            assert!(error.contains(bad), "{bad}: {error}");
        }
    }

    #[test]
    fn durations_read_as_humantime() {
        let c = read("[upstream]\nbootstrap = \"a:1\"\nrequest_timeout = \"250ms\"").unwrap();
        assert_eq!(c.request_timeout, Duration::from_millis(250));
        assert_eq!(c.recommit_interval, Duration::from_secs(86_400));
    }
}
