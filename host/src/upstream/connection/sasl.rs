//! The SASL login of a connection of the host's own, as Kafka's clients do it (KIP-43,
//! KIP-152): SaslHandshake v1 names the mechanism, then each message of the mechanism goes in
//! a SaslAuthenticate request. The mechanism's messages (PLAIN's one, SCRAM's three, with its
//! salted hashes and the check of the broker's signature) are rsasl's; OAUTHBEARER's (RFC 7628:
//! the token in a GS2 frame, and a lone `\x01` after a refusal) are written here, with the
//! token read from its file at each login. The broker's answer to
//! the last SaslAuthenticate carries `session_lifetime_ms` (KIP-368): past it the broker
//! closes the connection, so the connection is not used beyond it (`Connection::expired`).
//!
//! [`Login`] is the exchange without the socket: the connection sends what it says and hands
//! it the answers.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use rsasl::prelude::{Mechname, MessageSent, SASLClient, SASLConfig, Session, State};

use super::error::{ConnectionError, error_name};
use super::security::{Credentials, SaslMechanism};

/// SaslAuthenticate versions spoken: v1 adds `session_lifetime_ms`, v2 is v1 flexible.
pub(super) const SASL_AUTHENTICATE: (i16, i16) = (0, 2);

/// One login in progress.
pub(super) struct Login<'a> {
    addr: &'a str,
    credentials: &'a Credentials,
    session: Option<Session>,
    /// OAUTHBEARER (RFC 7628, as Kafka's `OAuthBearerSaslClient`): messages sent so far.
    oauth_sent: usize,
    /// The last step's state: whether the mechanism has more to say.
    finished: bool,
    /// OAUTHBEARER: the broker's JSON error about the token, if it sent one.
    oauth_error: Option<String>,
    lifetime: Option<Duration>,
}

impl<'a> Login<'a> {
    pub(super) fn new(addr: &'a str, credentials: &'a Credentials) -> Login<'a> {
        Login {
            addr,
            credentials,
            session: None,
            oauth_sent: 0,
            finished: false,
            oauth_error: None,
            lifetime: None,
        }
    }

    /// A refusal of this login, saying `reason`.
    pub(super) fn refused(&self, reason: String) -> ConnectionError {
        ConnectionError::Sasl {
            addr: self.addr.to_owned(),
            mechanism: self.credentials.mechanism.name(),
            reason,
        }
    }

    /// The SaslHandshake (v1) naming the mechanism.
    pub(super) fn handshake(&self) -> SaslHandshakeRequest {
        SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_static_str(self.credentials.mechanism.name()))
    }

    /// Checks the broker's answer to the handshake and starts the mechanism.
    pub(super) fn handshake_answered(
        &mut self,
        answer: &SaslHandshakeResponse,
    ) -> Result<(), ConnectionError> {
        let mechanism = self.credentials.mechanism.name();
        if answer.error_code == ResponseError::UnsupportedSaslMechanism.code() {
            let offered: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(self.refused(format!(
                "the broker's listener does not enable {mechanism} (it offers {offered:?}): \
                 change upstream.sasl_mechanism"
            )));
        }
        if answer.error_code == ResponseError::IllegalSaslState.code() {
            return Err(self.refused(
                "the broker's listener takes no SASL login: change \
                 upstream.security_protocol (SSL or PLAINTEXT) or connect to its SASL listener"
                    .to_owned(),
            ));
        }
        if answer.error_code != 0 {
            return Err(self.refused(format!(
                "SaslHandshake answered {}",
                error_name(answer.error_code)
            )));
        }
        if self.credentials.mechanism == SaslMechanism::OauthBearer {
            return Ok(());
        }
        let config = SASLConfig::with_credentials(
            None,
            self.credentials.username.clone(),
            self.credentials.password.expose().to_owned(),
        )
        .map_err(|e| self.refused(format!("SASL: {e}")))?;
        let name =
            Mechname::parse(mechanism.as_bytes()).map_err(|e| self.refused(e.to_string()))?;
        let session = SASLClient::new(config)
            .start_suggested(&[name])
            .map_err(|e| self.refused(format!("SASL: {e}")))?;
        self.session = Some(session);
        Ok(())
    }

    /// The mechanism's next message for a SaslAuthenticate, given the broker's last one;
    /// `None` when the mechanism is done (it checked the broker's final message: SCRAM's
    /// server signature).
    pub(super) fn step(&mut self, input: Option<&[u8]>) -> Result<Option<Bytes>, ConnectionError> {
        if self.credentials.mechanism == SaslMechanism::OauthBearer {
            return self.oauth_step(input);
        }
        let Some(session) = self.session.as_mut() else {
            return Err(self.refused("no handshake before the login".to_owned()));
        };
        let mut out = Vec::new();
        // rsasl 2.3.1's SCRAM parser slices the broker's attributes without checking their
        // length (`r=x,s` or a final `v` panic): such a message refuses the login instead.
        let state = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            session.step(input, &mut out)
        }));
        let Ok(state) = state else {
            return Err(self.refused(
                "the broker's SASL message is malformed (rsasl's parser could not read it)"
                    .to_owned(),
            ));
        };
        let state = state.map_err(|e| {
            self.refused(format!("the broker's SASL message does not check out: {e}"))
        })?;
        if let State::Finished(MessageSent::No) = state {
            return Ok(None);
        }
        self.finished = state.is_finished();
        Ok(Some(Bytes::from(out)))
    }

    /// OAUTHBEARER: first the client's initial response with the token read from its file
    /// now; a broker that refuses the token answers with a JSON error instead of a verdict
    /// and waits for a lone `\x01` (RFC 7628, 3.2.3) before it fails the login with its
    /// message, so that is the second message.
    fn oauth_step(&mut self, input: Option<&[u8]>) -> Result<Option<Bytes>, ConnectionError> {
        self.oauth_sent += 1;
        match self.oauth_sent {
            1 => {
                let path =
                    self.credentials.token_file.as_deref().ok_or_else(|| {
                        self.refused("OAUTHBEARER without a token file".to_owned())
                    })?;
                let token = super::security::read_token(path).map_err(|e| self.refused(e))?;
                // This is the last message unless the broker refuses the token.
                self.finished = false;
                let message = format!("n,,\x01auth=Bearer {}\x01\x01", token.expose());
                Ok(Some(Bytes::from(message)))
            }
            2 => {
                let error = String::from_utf8_lossy(input.unwrap_or_default()).into_owned();
                self.oauth_error = Some(error);
                self.finished = true;
                Ok(Some(Bytes::from_static(b"\x01")))
            }
            _ => Ok(None),
        }
    }

    /// Takes the broker's answer to a SaslAuthenticate: the broker's next message for
    /// [`Login::step`], or `None` when the login is complete.
    pub(super) fn answered(
        &mut self,
        answer: SaslAuthenticateResponse,
    ) -> Result<Option<Bytes>, ConnectionError> {
        if answer.error_code != 0 {
            let message = answer
                .error_message
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            let failed = answer.error_code == ResponseError::SaslAuthenticationFailed.code();
            let hint = match (failed, &self.oauth_error) {
                (true, Some(json)) => {
                    format!(" ({json}); check the token in upstream.sasl_oauthbearer_token_file")
                }
                (true, None) => "; check upstream.sasl_username and the password".to_owned(),
                (false, _) => String::new(),
            };
            return Err(self.refused(format!(
                "{}: {message}{hint}",
                error_name(answer.error_code)
            )));
        }
        if self.credentials.mechanism == SaslMechanism::OauthBearer {
            // No challenge back: the token is taken. A challenge is the broker's JSON error.
            return Ok((!answer.auth_bytes.is_empty() && self.oauth_sent == 1)
                .then_some(answer.auth_bytes));
        }
        // Set on the last answer when the broker bounds sessions (`connections.max.reauth.ms`),
        // 0 otherwise.
        if answer.session_lifetime_ms > 0 {
            self.lifetime = Some(Duration::from_millis(answer.session_lifetime_ms as u64));
        }
        // PLAIN: one message, and the broker's answer without error is the verdict.
        Ok((!self.finished).then_some(answer.auth_bytes))
    }

    /// The session's lifetime, if the broker bounds it.
    pub(super) fn lifetime(&self) -> Option<Duration> {
        self.lifetime
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::connection::Secret;

    fn scram_login(credentials: &Credentials) -> Login<'_> {
        let mut login = Login::new("broker:9093", credentials);
        let answer = SaslHandshakeResponse::default()
            .with_mechanisms(vec![StrBytes::from_static_str("SCRAM-SHA-512")]);
        login.handshake_answered(&answer).unwrap();
        login
    }

    /// A broker's malformed server-first or server-final (which panicked rsasl 2.3.1's parser)
    /// refuses the login with a message, and does not end the task.
    #[test]
    fn a_malformed_scram_message_from_the_broker_refuses_the_login() {
        let credentials = Credentials {
            mechanism: SaslMechanism::ScramSha512,
            username: "alice".into(),
            password: Secret::new("alice-secret".into()),
            token_file: None,
        };
        let mut login = scram_login(&credentials);
        let first = login.step(None).unwrap().unwrap();
        assert!(first.starts_with(b"n,,n=alice,r="), "{first:?}");
        let refused = login.step(Some(b"r=abc,s")).unwrap_err().to_string();
        assert!(refused.contains("malformed"), "{refused}");

        // A well-formed server-first, then a server-final too short to read.
        let mut login = scram_login(&credentials);
        let first = login.step(None).unwrap().unwrap();
        let client_nonce = std::str::from_utf8(&first)
            .unwrap()
            .rsplit("r=")
            .next()
            .unwrap()
            .to_owned();
        let server_first = format!("r={client_nonce}server,s=c2FsdHNhbHQ=,i=4096");
        login.step(Some(server_first.as_bytes())).unwrap();
        let refused = login.step(Some(b"v")).unwrap_err().to_string();
        assert!(refused.contains("malformed"), "{refused}");
    }
}
