//! The host's TLS, by rustls on ring: the server side of its listeners (the Kafka ports,
//! `[kafka] tls_*`, and the admin API, `[admin] tls_*`) and the PEM and CA reading that the
//! host's clients share (the upstream connections, `upstream::connection::tls`; the admin
//! API's node-to-node forwarding and the CLI).
//!
//! A listener speaks TLS with one certificate. Optionally the client presents a certificate
//! signed by `tls_ca_location` (`tls_client_auth`, Kafka's `ssl.client.auth`: `required`
//! refuses a client without one at the handshake, `requested` takes one when offered).
//!
//! The certificate, key and CA are read again when one of their files changes (checked at
//! each connection accepted: a `stat` per file), for the connections accepted after it; open
//! connections keep their session, as a broker's do. A file that changed into something
//! unusable is logged and the previous configuration kept, so a half-written rotation never
//! stops the listener.
//!
//! ring rather than aws-lc-rs (rustls' default, which brings post-quantum key exchange):
//! aws-lc builds a large C library, minutes on the 2-core machines the project builds on, and
//! Kafka's brokers (JSSE) negotiate no post-quantum group before JDK 24 anyway.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use serde::{Deserialize, Serialize};

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

/// The TLS settings of one listener.
#[derive(Debug, Clone)]
pub struct ServerFiles {
    /// The section they come from (`kafka`, `admin`): every error names `<section>.<setting>`.
    pub section: &'static str,
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
                    tracing::info!(
                        section = self.files.section,
                        "TLS files changed: read again for new connections"
                    );
                    current.1 = fresh;
                }
                Err(error) => tracing::warn!(
                    section = self.files.section,
                    %error,
                    "TLS files changed into something unusable: new connections keep the \
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
    let section = files.section;
    let provider = provider();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{section} TLS: {e}"))?;
    let builder = match (files.client_auth, &files.ca) {
        (ClientAuth::None, None) => builder.with_no_client_auth(),
        (ClientAuth::None, Some(_)) => {
            return Err(format!(
                "{section}.tls_ca_location is set but {section}.tls_client_auth is \"none\": set \
                 it to \"requested\" or \"required\", or unset the CA"
            ));
        }
        (_, None) => {
            return Err(format!(
                "{section}.tls_client_auth asks clients for certificates: set \
                 {section}.tls_ca_location to the PEM file of the CA that signs them"
            ));
        }
        (auth, Some(ca)) => {
            let setting = format!("{section}.tls_ca_location");
            let roots = roots(Some(ca), &setting)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("{setting} {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = certificates(
        &files.certificate,
        &format!("{section}.tls_certificate_location"),
    )?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "{section}.tls_key_location {}: no PEM private key: {e}",
            files.key.display()
        )
    })?;
    let config = builder.with_single_cert(chain, key).map_err(|e| {
        format!("{section}.tls_certificate_location and tls_key_location do not make a pair: {e}")
    })?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The host's one crypto provider: ring (the module's comment says why).
pub fn provider() -> Arc<CryptoProvider> {
    #[allow(deprecated)]
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of the PEM file `path`, named by its setting (`upstream.ssl_ca_location`,
/// `kafka.tls_certificate_location`) in every error. The one PEM reader of the host.
pub fn certificates(path: &Path, setting: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect())
        .map_err(|e| format!("{setting} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{setting} {}: no PEM certificate in it",
            path.display()
        ));
    }
    Ok(certs)
}

/// The CAs a client trusts: those of the PEM file `ca` (named `setting` in errors), or the
/// system's bundle when it is unset.
pub fn roots(ca: Option<&Path>, setting: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            for cert in certificates(path, setting)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("{setting} {}: {e}", path.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                // The system bundle holds the odd certificate rustls refuses; the rest serve.
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(format!(
                    "{setting} is not set and the system has no CA bundle: set it to the PEM \
                     file of the CA that signs the certificates"
                ));
            }
        }
    }
    Ok(roots)
}

/// An HTTP client builder for the admin API (node-to-node forwarding, the CLI), HTTPS
/// checking the server's certificate and name against `ca` (named `setting` in errors), or the
/// system's CA bundle when unset. Every reqwest client of the host is built here: reqwest is
/// built without a crypto provider of its own (it would bring aws-lc), so a client without
/// this configuration could not speak HTTPS at all.
pub fn http_client(ca: Option<&Path>, setting: &str) -> Result<reqwest::ClientBuilder, String> {
    let roots = match ca {
        Some(_) => roots(ca, setting)?,
        // Plain http needs no CA, so a system without a bundle is only refused at an https
        // call, by the certificate check, not here.
        None => roots(None, setting).unwrap_or_else(|_| RootCertStore::empty()),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(reqwest::Client::builder().tls_backend_preconfigured(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(client_auth: ClientAuth, ca: Option<&str>) -> ServerFiles {
        ServerFiles {
            section: "kafka",
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
}
