//! The `[admin]` settings, and the rules a listener must meet before it starts: the API uploads
//! code that the host then runs, so beyond loopback it needs a token, and it speaks TLS unless
//! the operator says in so many words that the network is trusted (`allow_plaintext`), since a
//! bearer token sent in the clear is the token given away.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The `[admin]` section of the config file. Its `Debug` leaves the token out.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin HTTP listener (default `127.0.0.1:9644`; env
    /// `ASSIGNOR_HOST_ADMIN_LISTEN`, flag `--admin-listen`).
    pub listen: SocketAddr,
    /// Bearer token every request but `/healthz` must carry (env `ASSIGNOR_HOST_TOKEN`, flag
    /// `--token`). Required when `listen` is not a loopback address. Default: none.
    pub token: Option<String>,
    /// A file holding the token (its first line; surrounding white space ignored), read at
    /// start: a secrets mount instead of the token in a config file or the environment. Not
    /// both with `token`.
    pub token_file: Option<PathBuf>,
    /// Largest JSON request body, in bytes (default 1 MiB; a simulation scenario of a few
    /// thousand members fits).
    pub max_json_bytes: usize,
    /// PEM certificate chain of the admin listener; with `tls_key_location` the API speaks
    /// HTTPS only. Read again when the files change, for new connections.
    pub tls_certificate_location: Option<PathBuf>,
    /// PEM private key of that certificate.
    pub tls_key_location: Option<PathBuf>,
    /// PEM file of the CA that signs the other nodes' admin certificates, trusted when a node
    /// of a cluster forwards an admin call to another over HTTPS (default: the system's CA
    /// bundle).
    pub tls_ca_location: Option<PathBuf>,
    /// Listen beyond loopback without TLS (default false: refused at start). For a network
    /// the operator trusts, or TLS ended in front of the host.
    pub allow_plaintext: bool,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9644)),
            token: None,
            token_file: None,
            max_json_bytes: 1 << 20,
            tls_certificate_location: None,
            tls_key_location: None,
            tls_ca_location: None,
            allow_plaintext: false,
        }
    }
}

impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConfig")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("max_json_bytes", &self.max_json_bytes)
            .field("tls_certificate_location", &self.tls_certificate_location)
            .field("tls_key_location", &self.tls_key_location)
            .field("tls_ca_location", &self.tls_ca_location)
            .field("allow_plaintext", &self.allow_plaintext)
            .finish()
    }
}

impl AdminConfig {
    /// The listener's TLS files, `None` without TLS; `Err` names a setting that cannot work.
    pub fn tls(&self) -> Result<Option<crate::tls::ServerFiles>, AdminConfigError> {
        match (&self.tls_certificate_location, &self.tls_key_location) {
            (None, None) => Ok(None),
            (Some(certificate), Some(key)) => Ok(Some(crate::tls::ServerFiles {
                section: "admin",
                certificate: certificate.clone(),
                key: key.clone(),
                ca: None,
                client_auth: crate::tls::ClientAuth::None,
            })),
            (Some(_), None) => Err(AdminConfigError::Tls(
                "admin.tls_certificate_location is set without tls_key_location".into(),
            )),
            (None, Some(_)) => Err(AdminConfigError::Tls(
                "admin.tls_key_location is set without tls_certificate_location".into(),
            )),
        }
    }

    /// The scheme the API is served with, and other nodes' APIs reached with.
    pub fn scheme(&self) -> &'static str {
        if self.tls_certificate_location.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// The admin listener cannot start as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminConfigError {
    #[error(
        "admin.listen {listen} is not a loopback address, and no admin token is set: anyone who \
         can reach it could upload code this host runs. Set admin.token (or --token / \
         ASSIGNOR_HOST_TOKEN), or listen on 127.0.0.1"
    )]
    TokenRequired { listen: SocketAddr },
    #[error(
        "admin.listen {listen} is not a loopback address, and the admin API has no TLS: its \
         bearer token would cross the network in the clear. Set admin.tls_certificate_location \
         and admin.tls_key_location, or set admin.allow_plaintext = true if the network is \
         trusted (or TLS ends in front of the host)"
    )]
    TlsRequired { listen: SocketAddr },
    #[error("admin.token is empty; set a non-empty token or remove the setting")]
    EmptyToken,
    #[error("admin.token and admin.token_file are both set: keep one")]
    TwoTokens,
    #[error("admin.token_file {path}: {reason}")]
    TokenFile { path: String, reason: String },
    #[error("{0}")]
    Tls(String),
}

/// Reads `admin.token_file` into `token` (its first line, trimmed); an unreadable or empty
/// file stops the start naming the setting.
pub fn load_token(config: &mut AdminConfig) -> Result<(), AdminConfigError> {
    let Some(path) = &config.token_file else {
        return Ok(());
    };
    if config.token.is_some() {
        return Err(AdminConfigError::TwoTokens);
    }
    let failed = |reason: String| AdminConfigError::TokenFile {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        return Err(failed("empty: write the token on its first line".into()));
    }
    config.token = Some(token.to_owned());
    Ok(())
}

/// Refuses a configuration that would expose the API without a token, or without TLS unless
/// `allow_plaintext` says so.
pub fn check_listen(config: &AdminConfig) -> Result<(), AdminConfigError> {
    let tls = config.tls()?;
    let loopback = config.listen.ip().is_loopback();
    match &config.token {
        Some(token) if token.trim().is_empty() => return Err(AdminConfigError::EmptyToken),
        Some(_) => {}
        None if loopback => {}
        None => {
            return Err(AdminConfigError::TokenRequired {
                listen: config.listen,
            });
        }
    }
    if !loopback && tls.is_none() && !config.allow_plaintext {
        return Err(AdminConfigError::TlsRequired {
            listen: config.listen,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposed() -> AdminConfig {
        AdminConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 9644)),
            token: Some("t0ken".into()),
            ..AdminConfig::default()
        }
    }

    #[test]
    fn beyond_loopback_the_api_needs_a_token_and_tls_or_an_explicit_plaintext() {
        assert_eq!(check_listen(&AdminConfig::default()), Ok(()), "loopback");
        let mut config = exposed();
        config.token = None;
        assert!(matches!(
            check_listen(&config),
            Err(AdminConfigError::TokenRequired { .. })
        ));
        let mut config = exposed();
        let refused = check_listen(&config).unwrap_err();
        assert!(
            matches!(refused, AdminConfigError::TlsRequired { .. })
                && refused.to_string().contains("admin.allow_plaintext"),
            "{refused}"
        );
        config.allow_plaintext = true;
        assert_eq!(check_listen(&config), Ok(()));
        let mut config = exposed();
        config.tls_certificate_location = Some("/admin.pem".into());
        config.tls_key_location = Some("/admin.key".into());
        assert_eq!(check_listen(&config), Ok(()));
        assert_eq!(config.scheme(), "https");
    }

    #[test]
    fn half_a_pair_is_refused_naming_the_missing_setting() {
        let config = AdminConfig {
            tls_certificate_location: Some("/admin.pem".into()),
            ..AdminConfig::default()
        };
        let refused = check_listen(&config).unwrap_err().to_string();
        assert!(refused.contains("without tls_key_location"), "{refused}");
        let config = AdminConfig {
            tls_key_location: Some("/admin.key".into()),
            ..AdminConfig::default()
        };
        let refused = check_listen(&config).unwrap_err().to_string();
        assert!(
            refused.contains("without tls_certificate_location"),
            "{refused}"
        );
    }
}
