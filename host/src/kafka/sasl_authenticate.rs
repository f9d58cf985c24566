//! SaslAuthenticate, answered by the host itself (standalone, `kafka.authentication =
//! "local"`): one step of the exchange the SaslHandshake started, run by `login.rs`. In proxy
//! mode the request goes up to the cluster instead, and the session learns the outcome from
//! the cluster's answer (`connection.rs`).
//!
//! As Kafka's `SaslServerAuthenticator`: a step before a handshake is ILLEGAL_SASL_STATE; a
//! refused exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's message, and the
//! connection closes after it; the last step carries `session_lifetime_ms`
//! (`kafka.connections_max_reauth`, KIP-368), after which the client re-authenticates on the
//! same connection or is closed at its next request. No SASL byte is logged.

use std::time::Instant;

use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::debug;

use super::login::{Exchange, Login, Outcome};
use super::sasl::{Session, Step};
use crate::metrics::Metrics;

/// Kafka's ILLEGAL_SASL_STATE and SASL_AUTHENTICATION_FAILED.
const ILLEGAL_SASL_STATE: i16 = 34;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// The answer, and `Some(reason)` when the connection closes after it.
pub fn handle(
    login: &Login,
    session: &mut Session,
    exchange: &mut Option<Exchange>,
    request: &SaslAuthenticateRequest,
    now: Instant,
    metrics: Option<&Metrics>,
) -> (SaslAuthenticateResponse, Option<String>) {
    let refuse = |code: i16, message: String| {
        let answer = SaslAuthenticateResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message.clone())));
        (answer, Some(message))
    };
    let Some(under_way) = exchange.as_mut() else {
        return refuse(
            ILLEGAL_SASL_STATE,
            "Unexpected SaslAuthenticate before a SaslHandshake".into(),
        );
    };
    let mechanism = under_way.mechanism();
    let failed = |message: String| {
        if let Some(m) = metrics {
            m.client_authentication(mechanism, "failure");
        }
        debug!(mechanism, "a client's SASL authentication failed");
        refuse(SASL_AUTHENTICATION_FAILED, message)
    };
    match under_way.step(&request.auth_bytes) {
        Outcome::Continue(bytes) => (
            SaslAuthenticateResponse::default().with_auth_bytes(bytes.into()),
            None,
        ),
        Outcome::Failed(message) => {
            *exchange = None;
            failed(message)
        }
        Outcome::Authenticated { user, bytes } => {
            *exchange = None;
            let lifetime = (!login.session_lifetime.is_zero()).then_some(login.session_lifetime);
            match session.logged_in(&user, mechanism, lifetime, now) {
                Err(message) => failed(message),
                Ok(Step::Authenticated {
                    principal, again, ..
                }) => {
                    debug!(%principal, mechanism, ?lifetime, again, "client authenticated");
                    if let Some(m) = metrics {
                        m.client_authentication(mechanism, "success");
                        if again {
                            m.client_reauthentication(mechanism);
                        }
                    }
                    let lifetime_ms =
                        lifetime.map_or(0, |l| i64::try_from(l.as_millis()).unwrap_or(i64::MAX));
                    let answer = SaslAuthenticateResponse::default()
                        .with_auth_bytes(bytes.into())
                        .with_session_lifetime_ms(lifetime_ms);
                    (answer, None)
                }
                Ok(_) => failed("the SASL session did not record the login".into()),
            }
        }
    }
}
