//! The `[kafka]` section: the Kafka listener and how the host presents itself as a broker.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The Kafka listener and how the host presents itself as a broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// Address the Kafka listener binds.
    pub listen: SocketAddr,
    /// `host:port` clients are told to connect to (Metadata brokers, FindCoordinator). `None`
    /// advertises the bound listen address, which must then not be a wildcard address
    /// (Kafka refuses `advertised.listeners` on 0.0.0.0 for the same reason: clients would
    /// be sent to an address they cannot reach).
    pub advertised: Option<String>,
    /// The host's broker id in Metadata, FindCoordinator and partition leaders.
    pub node_id: i32,
    /// `cluster_id` in Metadata v2+.
    pub cluster_id: String,
    /// Largest request frame accepted, in bytes (Kafka's `socket.request.max.bytes`, same
    /// default), for Produce and for every request passed up to the cluster in proxy mode
    /// (those are relayed as bytes, never decoded). A larger or negative size prefix closes the
    /// connection before the body is read.
    pub max_frame_bytes: usize,
    /// Largest JoinGroup, SyncGroup or ConsumerGroupHeartbeat frame: members' subscriptions
    /// and a client leader's assignments, kept as bytes.
    pub max_group_frame_bytes: usize,
    /// Largest frame of every other request the host decodes and answers itself (Metadata,
    /// offsets, topics, the other group APIs). Those decode into many small values: an 8 MiB
    /// Metadata naming topics took 715 MiB to decode and answer, so the cap stays small.
    pub max_local_frame_bytes: usize,
    /// Bytes of request frames being read and decoded at once, over every connection (Kafka's
    /// `queued.max.request.bytes`; 0: no bound, Kafka's -1 and default). A frame takes its
    /// size when its size prefix and API key are read and gives it back when its request is
    /// handed on; one that does not fit waits, unread. Frames under 64 KiB take nothing
    /// (`kafka/budget.rs`).
    pub queued_max_request_bytes: usize,
    /// Open connections at most; further clients wait in the accept queue until one closes.
    pub max_connections: usize,
    /// Open connections from one client address at most (Kafka's `max.connections.per.ip`);
    /// one more is closed at once, with a log line naming the address.
    pub max_connections_per_address: usize,
    /// A connection with no request in flight and nothing received for this long is closed
    /// (Kafka's `connections.max.idle.ms`, same default); clients reconnect when they need to.
    #[serde(with = "crate::duration")]
    pub connections_max_idle: Duration,
    /// A request frame must arrive whole within this long of its first byte, or the
    /// connection is closed (a client that stalls mid-frame holds a connection slot).
    #[serde(with = "crate::duration")]
    pub frame_timeout: Duration,
    /// Requests one connection may have read ahead and not yet answered; beyond it the host
    /// stops reading that connection until an answer is written (the client's own
    /// `max.in.flight.requests.per.connection` is usually 5; 0 counts as 1).
    pub max_in_flight_requests: usize,
    /// Longest a Fetch is held for its `max_wait_ms` in standalone mode (where no records
    /// come): a Fetch asking for longer is answered, empty, after this. Clients fetch again;
    /// a request held for weeks would pin its connection for as long.
    #[serde(with = "crate::duration")]
    pub max_fetch_wait: Duration,
    /// Who authenticates the clients: `none`; `upstream` (proxy mode in front of a `SASL_*`
    /// listener: each client's SASL exchange goes up its own glued connection and the cluster
    /// checks its credentials); or `local` (standalone: the host's own users, SCRAM-SHA-256
    /// and -512, and PLAIN over TLS; `assignor-host user add`). Until a client has
    /// authenticated the host answers nothing but ApiVersions, SaslHandshake and
    /// SaslAuthenticate. Unset: `upstream` in proxy mode when `upstream.security_protocol` is
    /// `SASL_*`, else `none`.
    pub authentication: Option<Authentication>,
    /// `local` authentication's session lifetime (Kafka's `connections.max.reauth.ms`, same
    /// default 0: none): told to each client in SaslAuthenticate, which re-authenticates before
    /// it ends (KIP-368); a request after it ended closes the connection.
    #[serde(with = "crate::duration")]
    pub connections_max_reauth: Duration,
    /// PEM certificate (chain) every Kafka port presents: set, every port speaks TLS only.
    pub tls_certificate_location: Option<std::path::PathBuf>,
    /// Its PEM private key (may be the same file).
    pub tls_key_location: Option<std::path::PathBuf>,
    /// Kafka's `ssl.client.auth`: `none`, `requested` or `required` (a client certificate
    /// signed by `tls_ca_location`).
    pub tls_client_auth: crate::tls::ClientAuth,
    /// PEM CA bundle that signs the clients' certificates.
    pub tls_ca_location: Option<std::path::PathBuf>,
    /// Kafka's `ssl.principal.mapping.rules`: how a client certificate's subject becomes its
    /// principal (`User:<name>`) for standalone's ACLs (`kafka::principal`).
    pub ssl_principal_mapping_rules: String,
    /// Standalone: what a request on a resource no ACL names is (Kafka's
    /// `allow.everyone.if.no.acl.found`). `true` by default here, unlike Kafka's `false`, so a
    /// host with no ACLs serves as before; once an ACL names a resource, only what the ACLs
    /// allow is allowed on it. Set `false` to deny all that no ACL allows.
    pub allow_everyone_if_no_acl_found: bool,
    /// Proxy mode: a JSON file of ACLs (`{"acls": [binding, ...]}`, the bindings of
    /// `/v1/acls`), read at start, that must allow a group request too: the host serves it
    /// only when the cluster's ACLs and these both allow it. With
    /// `allow_everyone_if_no_acl_found` (default `true`) they restrict only what they name.
    pub acl_file: Option<std::path::PathBuf>,
    /// Standalone: principals the ACLs never restrict (Kafka's `super.users`), e.g.
    /// `["User:admin"]`.
    pub super_users: Vec<String>,
}

/// `kafka.authentication`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Authentication {
    None,
    Upstream,
    Local,
}

impl KafkaConfig {
    /// The listener's TLS files, `None` without TLS; `Err` names a setting that cannot work.
    pub fn tls(&self) -> Result<Option<crate::tls::ServerFiles>, String> {
        match (&self.tls_certificate_location, &self.tls_key_location) {
            (None, None) => {
                if self.tls_client_auth != crate::tls::ClientAuth::None
                    || self.tls_ca_location.is_some()
                {
                    return Err("kafka.tls_client_auth and tls_ca_location need TLS: set \
                         kafka.tls_certificate_location and tls_key_location"
                        .into());
                }
                Ok(None)
            }
            (Some(certificate), Some(key)) => Ok(Some(crate::tls::ServerFiles {
                section: "kafka",
                certificate: certificate.clone(),
                key: key.clone(),
                ca: self.tls_ca_location.clone(),
                client_auth: self.tls_client_auth,
            })),
            (Some(_), None) => {
                Err("kafka.tls_certificate_location is set without tls_key_location".into())
            }
            (None, Some(_)) => {
                Err("kafka.tls_key_location is set without tls_certificate_location".into())
            }
        }
    }

    /// Who authenticates the clients, for the host's mode (`proxy`) and its upstream's
    /// listener (`upstream_sasl`); `Err` names the setting that cannot work.
    pub fn authentication(
        &self,
        proxy: bool,
        upstream_sasl: bool,
    ) -> Result<Authentication, String> {
        match self.authentication {
            None if proxy && upstream_sasl => Ok(Authentication::Upstream),
            None | Some(Authentication::None) => Ok(Authentication::None),
            Some(Authentication::Upstream) if proxy && upstream_sasl => {
                Ok(Authentication::Upstream)
            }
            Some(Authentication::Upstream) => Err(if proxy {
                "kafka.authentication = \"upstream\" needs an upstream that authenticates with \
                 SASL: set upstream.security_protocol to SASL_SSL or SASL_PLAINTEXT"
                    .to_owned()
            } else {
                "kafka.authentication = \"upstream\" is for proxy mode (set upstream.bootstrap)"
                    .to_owned()
            }),
            Some(Authentication::Local) if proxy => Err(
                "kafka.authentication = \"local\" is for standalone: in proxy mode the cluster \
                 authenticates the clients (\"upstream\")"
                    .to_owned(),
            ),
            Some(Authentication::Local) => Ok(Authentication::Local),
        }
    }
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9092)),
            advertised: None,
            node_id: 1,
            cluster_id: "assignor-host".to_owned(),
            max_frame_bytes: 100 * 1024 * 1024,
            max_group_frame_bytes: 8 * 1024 * 1024,
            max_local_frame_bytes: 1024 * 1024,
            queued_max_request_bytes: 64 * 1024 * 1024,
            max_connections: 10_000,
            max_connections_per_address: 1_000,
            connections_max_idle: Duration::from_secs(600),
            frame_timeout: Duration::from_secs(30),
            max_in_flight_requests: 64,
            max_fetch_wait: Duration::from_secs(30),
            authentication: None,
            connections_max_reauth: Duration::ZERO,
            tls_certificate_location: None,
            tls_key_location: None,
            tls_client_auth: crate::tls::ClientAuth::None,
            tls_ca_location: None,
            ssl_principal_mapping_rules: "DEFAULT".to_owned(),
            acl_file: None,
            allow_everyone_if_no_acl_found: true,
            super_users: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::tls::ClientAuth;

    #[test]
    fn tls_is_on_with_a_certificate_and_a_key_and_half_a_pair_is_refused() {
        let mut config = KafkaConfig::default();
        assert!(config.tls().unwrap().is_none(), "off by default");
        config.tls_client_auth = ClientAuth::Required;
        assert!(config.tls().unwrap_err().contains("need TLS"));
        config.tls_client_auth = ClientAuth::None;
        config.tls_certificate_location = Some("/host.pem".into());
        assert!(
            config
                .tls()
                .unwrap_err()
                .contains("without tls_key_location")
        );
        config.tls_key_location = Some("/host.key".into());
        let on = config.tls().unwrap().expect("on");
        assert_eq!(on.certificate, PathBuf::from("/host.pem"));
        config.tls_certificate_location = None;
        assert!(
            config
                .tls()
                .unwrap_err()
                .contains("without tls_certificate_location")
        );
    }
}
