//! TLS for the host's own connections to the upstream, by rustls: the CA bundle of
//! `ssl_ca_location` (the system's when unset), an optional client certificate for mutual TLS,
//! and the broker's name checked against its certificate unless
//! `ssl_endpoint_identification` is false. A failed handshake is told in words that name the
//! setting to change ([`explain`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// The TLS settings of `[upstream]`.
pub struct Files<'a> {
    /// `ssl_ca_location`.
    pub ca: Option<&'a Path>,
    /// `ssl_certificate_location` and `ssl_key_location`.
    pub certificate: Option<&'a Path>,
    pub key: Option<&'a Path>,
    /// `ssl_endpoint_identification`.
    pub endpoint_identification: bool,
}

/// The TLS configurations, read again from their files when one of them changed (a rotated
/// CA bundle or client certificate, as cert-manager and the like write them), for the next
/// connection: open ones keep the session they have. Checked at each connection opened (a
/// `stat` per file); a file that changed into something unusable is logged and the previous
/// configuration kept.
pub struct Reloading {
    ca: Option<PathBuf>,
    certificate: Option<PathBuf>,
    key: Option<PathBuf>,
    endpoint_identification: bool,
    current: Mutex<Current>,
}

struct Current {
    stamps: Vec<Option<SystemTime>>,
    own: Arc<rustls::ClientConfig>,
    links: Arc<rustls::ClientConfig>,
}

impl Reloading {
    pub fn new(files: &Files<'_>) -> Result<Reloading, String> {
        let reloading = Reloading {
            ca: files.ca.map(Path::to_path_buf),
            certificate: files.certificate.map(Path::to_path_buf),
            key: files.key.map(Path::to_path_buf),
            endpoint_identification: files.endpoint_identification,
            current: Mutex::new(Current {
                stamps: Vec::new(),
                own: client_config(files, true)?,
                links: client_config(files, false)?,
            }),
        };
        reloading.current.lock().unwrap().stamps = reloading.stamps();
        Ok(reloading)
    }

    /// The host's own connections' configuration (with its certificate, if set).
    pub fn own(&self) -> Arc<rustls::ClientConfig> {
        self.fresh(|c| c.own.clone())
    }

    /// The glued links' configuration (never the host's certificate).
    pub fn links(&self) -> Arc<rustls::ClientConfig> {
        self.fresh(|c| c.links.clone())
    }

    fn stamps(&self) -> Vec<Option<SystemTime>> {
        [&self.ca, &self.certificate, &self.key]
            .into_iter()
            .flatten()
            .map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
            .collect()
    }

    fn fresh<T>(&self, take: impl Fn(&Current) -> T) -> T {
        let stamps = self.stamps();
        let mut current = self.current.lock().unwrap();
        if stamps != current.stamps {
            current.stamps = stamps;
            let files = Files {
                ca: self.ca.as_deref(),
                certificate: self.certificate.as_deref(),
                key: self.key.as_deref(),
                endpoint_identification: self.endpoint_identification,
            };
            match (client_config(&files, true), client_config(&files, false)) {
                (Ok(own), Ok(links)) => {
                    tracing::info!("upstream TLS files changed: read again for new connections");
                    current.own = own;
                    current.links = links;
                }
                (Err(error), _) | (_, Err(error)) => tracing::warn!(
                    %error,
                    "upstream TLS files changed into something unusable: new connections keep \
                     the previous ones"
                ),
            }
        }
        take(&current)
    }
}

/// The rustls configuration of the TLS connections to the upstream: the host's own (with its
/// client certificate, if set) and the clients' glued links (never with it: a client's
/// requests must not reach the cluster under the host's identity).
fn client_config(
    settings: &Files<'_>,
    with_certificate: bool,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = crate::tls::provider();
    let roots = Arc::new(crate::tls::roots(settings.ca, "upstream.ssl_ca_location")?);
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = if settings.endpoint_identification {
        builder.with_root_certificates(roots)
    } else {
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| format!("upstream.ssl_ca_location: {e}"))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName { inner }))
    };
    let config = match (settings.certificate, settings.key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(_), Some(_)) if !with_certificate => builder.with_no_client_auth(),
        (Some(cert), Some(key)) => {
            let chain = crate::tls::certificates(cert, "upstream.ssl_certificate_location")?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                format!(
                    "upstream.ssl_key_location {}: no PEM private key: {e}",
                    key.display()
                )
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                format!(
                    "upstream.ssl_certificate_location and ssl_key_location do not make a \
                     pair: {e}"
                )
            })?
        }
        (Some(_), None) => {
            return Err("upstream.ssl_certificate_location is set without ssl_key_location".into());
        }
        (None, Some(_)) => {
            return Err("upstream.ssl_key_location is set without ssl_certificate_location".into());
        }
    };
    Ok(Arc::new(config))
}

/// Whether `error` is a TLS alert the broker sent (a refusal, not a broken connection).
pub fn is_alert(error: &std::io::Error) -> bool {
    error
        .get_ref()
        .and_then(|e| e.downcast_ref::<Error>())
        .is_some_and(|e| matches!(e, Error::AlertReceived(_)))
}

/// What a failed TLS handshake means for the operator, naming the setting to change.
pub fn explain(error: &std::io::Error) -> String {
    let Some(tls) = error.get_ref().and_then(|e| e.downcast_ref::<Error>()) else {
        return format!(
            "{error} (is the broker's listener TLS? upstream.security_protocol says it is)"
        );
    };
    match tls {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "the broker's certificate is not signed by a CA of upstream.ssl_ca_location ({tls})"
        ),
        Error::InvalidCertificate(CertificateError::NotValidForName)
        | Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => format!(
            "the broker's certificate does not name the address the host connected to ({tls}); \
             use the name it has in upstream.bootstrap, or set \
             upstream.ssl_endpoint_identification = false"
        ),
        Error::InvalidCertificate(CertificateError::Expired)
        | Error::InvalidCertificate(CertificateError::ExpiredContext { .. }) => {
            format!("the broker's certificate has expired ({tls})")
        }
        Error::AlertReceived(alert) => format!(
            "the broker refused the handshake ({alert:?}): if it requires a client certificate, \
             check upstream.ssl_certificate_location and ssl_key_location (expired, or not \
             signed by a CA the broker trusts)"
        ),
        other => format!("TLS: {other}"),
    }
}

/// A verifier that checks the chain, the signatures and the validity dates as rustls does,
/// but not the name (`ssl_endpoint_identification = false`, librdkafka's
/// `ssl.endpoint.identification.algorithm=none`).
#[derive(Debug)]
struct AnyName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
