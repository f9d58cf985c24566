//! SaslHandshake, answered by the host itself (standalone, `kafka.authentication = "local"`):
//! the client names a mechanism, the host starts its exchange or lists what it offers. In proxy
//! mode the request goes up to the cluster instead (`connection.rs` watches it pass).
//!
//! As Kafka's `SaslServerAuthenticator`: a mechanism not offered is answered
//! UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection closes. Version 0
//! (after which the tokens travel unframed, outside Kafka's request format) is answered
//! UNSUPPORTED_VERSION and closed: every client since Kafka 1.0 sends v1.

use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
use kafka_protocol::protocol::StrBytes;

use super::login::{Exchange, Login};
use super::sasl::Session;
use crate::metrics::Metrics;

/// Kafka's UNSUPPORTED_SASL_MECHANISM and UNSUPPORTED_VERSION.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const UNSUPPORTED_VERSION: i16 = 35;

/// The answer, and `Some(reason)` when the connection closes after it.
pub fn handle(
    login: &Login,
    session: &mut Session,
    exchange: &mut Option<Exchange>,
    request: &SaslHandshakeRequest,
    version: i16,
    metrics: Option<&Metrics>,
) -> (SaslHandshakeResponse, Option<String>) {
    let offered = login.mechanisms();
    let answer = |code: i16| {
        SaslHandshakeResponse::default()
            .with_error_code(code)
            .with_mechanisms(
                offered
                    .iter()
                    .map(|m| StrBytes::from_static_str(m))
                    .collect(),
            )
    };
    if version == 0 {
        return (
            answer(UNSUPPORTED_VERSION),
            Some(
                "SaslHandshake v0 (unframed SASL tokens) is not served; clients since Kafka 1.0 \
                 use v1"
                    .into(),
            ),
        );
    }
    let mechanism = request.mechanism.as_str();
    match login.start(mechanism) {
        Some(started) => {
            // The session learns which mechanism is under way (for its metrics' label).
            let _ = session.handshake(started.mechanism());
            *exchange = Some(started);
            (answer(0), None)
        }
        None => {
            if let Some(m) = metrics {
                m.client_authentication(mechanism, "unsupported");
            }
            *exchange = None;
            (
                answer(UNSUPPORTED_SASL_MECHANISM),
                Some(format!(
                    "Unsupported SASL mechanism {mechanism:?}: this listener offers {}",
                    offered.join(", ")
                )),
            )
        }
    }
}
