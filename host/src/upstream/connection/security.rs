//! How the host's own connections to the upstream are secured: the `[upstream]` security
//! settings (librdkafka's names, so Kafka users know them), checked and loaded once at start
//! into a [`Security`] every connection shares.
//!
//! ```toml
//! [upstream]
//! bootstrap = "kafka-1.internal:9093"
//! security_protocol = "SASL_SSL"
//! sasl_mechanism = "SCRAM-SHA-512"
//! sasl_username = "assignor-host"
//! sasl_password_file = "/run/secrets/kafka-password"   # or ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD
//! ssl_ca_location = "/etc/kafka/ca.pem"                # unset: the system's CA bundle
//! ```
//!
//! The password is read from a file or from the variable, never from the configuration file
//! (`config::env` refuses it there) or a flag, and never printed: [`Secret`] has no `Debug`
//! or `Display` that shows it, and serializes as `"<redacted>"`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};

use super::tls;

/// librdkafka's `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SecurityProtocol {
    #[default]
    #[serde(rename = "PLAINTEXT")]
    Plaintext,
    #[serde(rename = "SSL")]
    Ssl,
    #[serde(rename = "SASL_PLAINTEXT")]
    SaslPlaintext,
    #[serde(rename = "SASL_SSL")]
    SaslSsl,
}

impl SecurityProtocol {
    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub fn sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// librdkafka's `sasl.mechanism`: the ones Kafka ships besides GSSAPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    #[serde(rename = "PLAIN")]
    Plain,
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
    #[serde(rename = "OAUTHBEARER")]
    OauthBearer,
}

impl SaslMechanism {
    /// The name Kafka's SaslHandshake takes.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OauthBearer => "OAUTHBEARER",
        }
    }
}

/// A value that is never shown: `Debug` prints `<redacted>`, serialization writes
/// `"<redacted>"`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("<redacted>")
    }
}

/// The security settings as written in `[upstream]` (flattened into `UpstreamConfig`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecuritySettings {
    pub security_protocol: SecurityProtocol,
    pub sasl_mechanism: Option<SaslMechanism>,
    pub sasl_username: Option<String>,
    pub sasl_password_file: Option<PathBuf>,
    pub sasl_password: Option<Secret>,
    pub sasl_oauthbearer_token_file: Option<PathBuf>,
    pub ssl_ca_location: Option<PathBuf>,
    pub ssl_certificate_location: Option<PathBuf>,
    pub ssl_key_location: Option<PathBuf>,
    pub ssl_endpoint_identification: bool,
}

/// The credentials of a SASL login.
#[derive(Clone)]
pub struct Credentials {
    pub mechanism: SaslMechanism,
    /// PLAIN and SCRAM: the user and the password (empty for OAUTHBEARER).
    pub username: String,
    pub password: Secret,
    /// OAUTHBEARER: the file holding the token, read again at each login.
    pub token_file: Option<PathBuf>,
}

/// What every connection of the host's own to the upstream does after TCP: TLS with this
/// configuration, then this SASL login. Built once at start, shared by every connection.
pub struct Security {
    pub protocol: SecurityProtocol,
    /// TLS, read again when its files change.
    tls: Option<tls::Reloading>,
    pub sasl: Option<Credentials>,
    /// Whether the upstream takes these connections (written by each one opened).
    pub health: super::health::Health,
}

impl fmt::Debug for Security {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Security")
            .field("protocol", &self.protocol)
            .field("tls", &self.tls.is_some())
            .field(
                "sasl",
                &self
                    .sasl
                    .as_ref()
                    .map(|c| (c.mechanism.name(), c.username.as_str())),
            )
            .finish()
    }
}

impl Security {
    /// Plaintext, no login: the default.
    pub fn plaintext() -> Arc<Security> {
        Arc::new(Security {
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
            health: Default::default(),
        })
    }

    /// The TLS configuration of the host's own connections (with its certificate, if set),
    /// as the files are now.
    pub fn tls(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.tls.as_ref().map(tls::Reloading::own)
    }

    /// The TLS configuration of clients' glued links: the same CA and name check, never the
    /// host's certificate.
    pub fn link_tls(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.tls.as_ref().map(tls::Reloading::links)
    }

    /// Checks `settings` and loads what they name (the password, the CA bundle, the client
    /// certificate and key). The error names the setting to change.
    pub fn load(settings: &SecuritySettings) -> Result<Arc<Security>, String> {
        let protocol = settings.security_protocol;
        let tls_only = [
            ("ssl_ca_location", settings.ssl_ca_location.is_some()),
            (
                "ssl_certificate_location",
                settings.ssl_certificate_location.is_some(),
            ),
            ("ssl_key_location", settings.ssl_key_location.is_some()),
        ];
        if !protocol.tls()
            && let Some((name, _)) = tls_only.iter().find(|(_, set)| *set)
        {
            return Err(format!(
                "upstream.{name} is set but upstream.security_protocol is {protocol:?}: \
                 set it to SSL or SASL_SSL, or remove {name}"
            ));
        }
        let tls = if protocol.tls() {
            if !settings.ssl_endpoint_identification {
                tracing::warn!(
                    "upstream.ssl_endpoint_identification is false: the host accepts any \
                     certificate its CA signed for any name, so whoever holds one can stand in \
                     for the upstream's brokers"
                );
            }
            Some(tls::Reloading::new(&tls::Files {
                ca: settings.ssl_ca_location.as_deref(),
                certificate: settings.ssl_certificate_location.as_deref(),
                key: settings.ssl_key_location.as_deref(),
                endpoint_identification: settings.ssl_endpoint_identification,
            })?)
        } else {
            None
        };
        let sasl = if protocol.sasl() {
            Some(credentials(settings)?)
        } else {
            let set = [
                ("sasl_mechanism", settings.sasl_mechanism.is_some()),
                ("sasl_username", settings.sasl_username.is_some()),
                ("sasl_password_file", settings.sasl_password_file.is_some()),
                ("sasl_password", settings.sasl_password.is_some()),
                (
                    "sasl_oauthbearer_token_file",
                    settings.sasl_oauthbearer_token_file.is_some(),
                ),
            ];
            if let Some((name, _)) = set.iter().find(|(_, set)| *set) {
                return Err(format!(
                    "upstream.{name} is set but upstream.security_protocol is {protocol:?}: \
                     set it to SASL_PLAINTEXT or SASL_SSL, or remove {name}"
                ));
            }
            None
        };
        Ok(Arc::new(Security {
            protocol,
            tls,
            sasl,
            health: Default::default(),
        }))
    }
}

/// The same settings as librdkafka's configuration, for the clients of a cluster of hosts
/// that run on it (the node group and the module log, `cluster`): `security.protocol`,
/// `sasl.*` and `ssl.*`, so they reach the upstream as the host's own connections do. The
/// password goes into librdkafka's configuration in memory, never into a log.
///
/// librdkafka reads the TLS files when its client starts (a rotated certificate reaches those
/// clients at the node's next start: the one difference from the host's own connections).
/// With OAUTHBEARER only the mechanism is set: the clients' context hands librdkafka the
/// token of `sasl_oauthbearer_token_file` when it asks (`cluster::token`).
pub fn librdkafka_config(
    settings: &SecuritySettings,
) -> Result<Vec<(&'static str, String)>, String> {
    let protocol = settings.security_protocol;
    let mut config = vec![(
        "security.protocol",
        match protocol {
            SecurityProtocol::Plaintext => "plaintext",
            SecurityProtocol::Ssl => "ssl",
            SecurityProtocol::SaslPlaintext => "sasl_plaintext",
            SecurityProtocol::SaslSsl => "sasl_ssl",
        }
        .to_owned(),
    )];
    if protocol.sasl() {
        let credentials = credentials(settings)?;
        config.push(("sasl.mechanism", credentials.mechanism.name().to_owned()));
        if credentials.mechanism != SaslMechanism::OauthBearer {
            config.push(("sasl.username", credentials.username.clone()));
            config.push(("sasl.password", credentials.password.expose().to_owned()));
        }
    }
    if protocol.tls() {
        let path = |p: &std::path::Path| p.display().to_string();
        if let Some(ca) = &settings.ssl_ca_location {
            config.push(("ssl.ca.location", path(ca)));
        }
        if let Some(certificate) = &settings.ssl_certificate_location {
            config.push(("ssl.certificate.location", path(certificate)));
        }
        if let Some(key) = &settings.ssl_key_location {
            config.push(("ssl.key.location", path(key)));
        }
        let algorithm = if settings.ssl_endpoint_identification {
            "https"
        } else {
            "none"
        };
        config.push((
            "ssl.endpoint.identification.algorithm",
            algorithm.to_owned(),
        ));
    }
    Ok(config)
}

fn credentials(settings: &SecuritySettings) -> Result<Credentials, String> {
    let protocol = settings.security_protocol;
    let mechanism = settings.sasl_mechanism.ok_or_else(|| {
        format!(
            "upstream.security_protocol is {protocol:?} but upstream.sasl_mechanism is not set \
             (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)"
        )
    })?;
    if mechanism == SaslMechanism::OauthBearer {
        let path = settings
            .sasl_oauthbearer_token_file
            .clone()
            .ok_or_else(|| {
                "upstream.sasl_mechanism is OAUTHBEARER but upstream.sasl_oauthbearer_token_file \
             is not set"
                    .to_owned()
            })?;
        read_token(&path)?;
        return Ok(Credentials {
            mechanism,
            username: String::new(),
            password: Secret::new(String::new()),
            token_file: Some(path),
        });
    }
    if settings.sasl_oauthbearer_token_file.is_some() {
        return Err(format!(
            "upstream.sasl_oauthbearer_token_file is set but upstream.sasl_mechanism is {}: \
             set it to OAUTHBEARER, or remove the token file",
            mechanism.name()
        ));
    }
    let username = settings
        .sasl_username
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            format!(
                "upstream.sasl_mechanism is {} but upstream.sasl_username is not set",
                mechanism.name()
            )
        })?;
    let password = match (&settings.sasl_password_file, &settings.sasl_password) {
        (Some(_), Some(_)) => {
            return Err(
                "both upstream.sasl_password_file and ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD \
                 are set: keep one"
                    .to_owned(),
            );
        }
        (Some(path), None) => read_password(path)?,
        (None, Some(password)) => password.clone(),
        (None, None) => {
            return Err(format!(
                "upstream.sasl_mechanism is {} but no password: set upstream.sasl_password_file \
                 or the variable ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD",
                mechanism.name()
            ));
        }
    };
    if password.expose().is_empty() {
        return Err("the upstream SASL password is empty".to_owned());
    }
    Ok(Credentials {
        mechanism,
        username,
        password,
        token_file: None,
    })
}

/// The OAUTHBEARER token in `path` (its first line), read at each login so a token refreshed
/// in the file is the one the next connection presents.
pub fn read_token(path: &Path) -> Result<Secret, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read upstream.sasl_oauthbearer_token_file {}: {e}",
            path.display()
        )
    })?;
    let token = text.lines().next().unwrap_or_default().trim().to_owned();
    if token.is_empty() {
        return Err(format!(
            "upstream.sasl_oauthbearer_token_file {} holds no token",
            path.display()
        ));
    }
    Ok(Secret::new(token))
}

/// The first line of `path`, without its line end (a file written by `echo` has one).
fn read_password(path: &Path) -> Result<Secret, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read upstream.sasl_password_file {}: {e}",
            path.display()
        )
    })?;
    let line = text.lines().next().unwrap_or_default();
    Ok(Secret::new(line.to_owned()))
}
