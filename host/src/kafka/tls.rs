//! TLS on the host's Kafka ports (`kafka.tls_certificate_location` set): every port, the
//! bootstrap port and proxy mode's per-broker ports, speaks TLS with one certificate, by rustls
//! on ring (as the upstream connections: `upstream::connection::tls`). Optionally the client
//! presents a certificate signed by `tls_ca_location` (`tls_client_auth`, Kafka's
//! `ssl.client.auth`: `required` refuses a client without one at the handshake, `requested`
//! takes one when offered).
//!
//! The certificate, key and CA are read again when one of their files changes (checked at
//! each connection accepted: a `stat` per file), for the connections accepted after it; open
//! connections keep their session, as a broker's do. A file that changed into something
//! unusable is logged and the previous configuration kept, so a half-written rotation never
//! stops the listener.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use rustls::server::WebPkiClientVerifier;
use serde::{Deserialize, Serialize};

use crate::upstream::connection::certificates;

/// `kafka.tls_client_auth`, Kafka's `ssl.client.auth`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// One is asked for, and checked when offered.
    Requested,
    /// A client without one signed by `tls_ca_location` is refused at the handshake.
    Required,
}

/// The TLS settings of `[kafka]`.
#[derive(Debug, Clone)]
pub struct ServerFiles {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
}

/// The listener's TLS configuration, read again when its files change.
pub struct ServerTls {
    files: ServerFiles,
    current: Mutex<(Vec<Option<SystemTime>>, tokio_rustls::TlsAcceptor)>,
}

impl ServerTls {
    /// Loads the files; an error names the setting to change.
    pub fn load(files: ServerFiles) -> Result<ServerTls, String> {
        let acceptor = acceptor(&files)?;
        let stamps = stamps(&files);
        Ok(ServerTls {
            files,
            current: Mutex::new((stamps, acceptor)),
        })
    }

    /// The acceptor for the next connection: the files' current contents.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let stamps = stamps(&self.files);
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if stamps != current.0 {
            current.0 = stamps;
            match acceptor(&self.files) {
                Ok(fresh) => {
                    tracing::info!("kafka TLS files changed: read again for new connections");
                    current.1 = fresh;
                }
                Err(error) => tracing::warn!(
                    %error,
                    "kafka TLS files changed into something unusable: new connections keep the \
                     previous ones"
                ),
            }
        }
        current.1.clone()
    }
}

fn stamps(files: &ServerFiles) -> Vec<Option<SystemTime>> {
    [
        Some(&files.certificate),
        Some(&files.key),
        files.ca.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
    .collect()
}

fn acceptor(files: &ServerFiles) -> Result<tokio_rustls::TlsAcceptor, String> {
    // ring, as `upstream::connection::tls` says why.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("kafka TLS: {e}"))?;
    let builder = match (files.client_auth, &files.ca) {
        (ClientAuth::None, None) => builder.with_no_client_auth(),
        (ClientAuth::None, Some(_)) => {
            return Err(
                "kafka.tls_ca_location is set but kafka.tls_client_auth is \"none\": set \
                 it to \"requested\" or \"required\", or unset the CA"
                    .into(),
            );
        }
        (_, None) => {
            return Err(
                "kafka.tls_client_auth asks clients for certificates: set kafka.tls_ca_location \
                 to the PEM file of the CA that signs them"
                    .into(),
            );
        }
        (auth, Some(ca)) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(ca, "kafka.tls_ca_location")? {
                roots
                    .add(cert)
                    .map_err(|e| format!("kafka.tls_ca_location {}: {e}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("kafka.tls_ca_location {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = certificates(&files.certificate, "kafka.tls_certificate_location")?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "kafka.tls_key_location {}: no PEM private key: {e}",
            files.key.display()
        )
    })?;
    let config = builder.with_single_cert(chain, key).map_err(|e| {
        format!("kafka.tls_certificate_location and tls_key_location do not make a pair: {e}")
    })?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::KafkaConfig;

    fn files(client_auth: ClientAuth, ca: Option<&str>) -> ServerFiles {
        ServerFiles {
            certificate: "/nonexistent/host.pem".into(),
            key: "/nonexistent/host.key".into(),
            ca: ca.map(PathBuf::from),
            client_auth,
        }
    }

    fn refused(files: ServerFiles) -> String {
        match ServerTls::load(files) {
            Err(error) => error,
            Ok(_) => panic!("loaded"),
        }
    }

    #[test]
    fn settings_that_cannot_work_are_refused_naming_the_setting() {
        assert!(
            refused(files(ClientAuth::None, None)).starts_with("kafka.tls_certificate_location")
        );
        assert!(refused(files(ClientAuth::Required, None)).contains("set kafka.tls_ca_location"));
        assert!(refused(files(ClientAuth::None, Some("/ca.pem"))).contains("tls_client_auth"));
        assert!(
            refused(files(ClientAuth::Requested, Some("/nonexistent/ca.pem")))
                .starts_with("kafka.tls_ca_location")
        );
    }

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
