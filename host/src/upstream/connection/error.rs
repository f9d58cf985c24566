//! What can go wrong opening or using a connection of the host's own, and Kafka's names for
//! the codes its answers carry.

use kafka_protocol::ResponseError;

/// Why a connection could not be opened or used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectionError {
    #[error("cannot connect to upstream broker {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// The TLS handshake failed: the reason names the setting to change.
    #[error("TLS with upstream broker {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    /// The broker refused the host's login: the reason names the setting to change.
    #[error("upstream broker {addr} refused the host's SASL {mechanism} login: {reason}")]
    Sasl {
        addr: String,
        mechanism: &'static str,
        reason: String,
    },
    #[error("upstream broker {addr}: {reason}")]
    Broken { addr: String, reason: String },
}

impl ConnectionError {
    /// Whether the upstream refuses the host (TLS or SASL): trying again soon will not help,
    /// a setting has to change.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ConnectionError::Tls { .. } | ConnectionError::Sasl { .. }
        )
    }
}

/// Kafka's name of error `code`.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        Some(e) => format!("{e:?} ({code})"),
        None => format!("error {code}"),
    }
}
