//! A client's SASL session. Standalone with `kafka.authentication = "local"`, the host checks
//! the client's credentials itself (`login.rs`) and tells the session its verdict
//! ([`Session::logged_in`]). In proxy mode the session is seen relayed (`kafka.authentication
//! = "upstream"`): the cluster checks the client's own credentials on the client's glued
//! connection, and the host only watches the exchange go by, to know three things Kafka's
//! broker knows of its own connections: whether the client has authenticated (until then the
//! host answers nothing but ApiVersions, SaslHandshake and SaslAuthenticate, so it never acts
//! with its own credentials for a client the cluster has not accepted), who it is (the
//! principal the exchange names), and until when (the `session_lifetime_ms` of KIP-368).
//!
//! Sans-io: [`Session`] is fed the requests and answers of the exchange by the connection.
//! The host never keeps or logs a password, a SCRAM proof or a token: only the user name
//! (PLAIN's authcid, SCRAM's `n=`) or a token's `sub` claim is read out of the request.
//!
//! When an exchange is complete is the mechanism's to say, since a successful SaslAuthenticate
//! answer can be a step of it (Kafka's `SaslServerAuthenticator` answers each step with
//! error 0, and sets `session_lifetime_ms` only on the last, and only with
//! `connections.max.reauth.ms`): PLAIN is one step; SCRAM two (server-first, then
//! server-final); OAUTHBEARER one answered with no bytes (a refused token is answered with
//! its JSON reason and error 0, then SASL_AUTHENTICATION_FAILED after the client's `0x01`).
//! Other mechanisms (GSSAPI) are refused at the handshake: the host could not tell when they
//! end.

use std::time::{Duration, Instant};

use base64::Engine;

/// The mechanisms whose end the host can tell.
pub const MECHANISMS: [&str; 4] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];

/// Kafka's cap on a SASL frame from a client that has not authenticated
/// (`SaslServerAuthenticator`'s `MAX_RECEIVE_SIZE`, 512 KiB): also the host's cap on any frame
/// before authentication.
pub const MAX_UNAUTHENTICATED_FRAME_BYTES: usize = 512 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mechanism {
    Plain,
    Scram,
    OAuthBearer,
}

/// One client connection's session.
#[derive(Debug, Default)]
pub struct Session {
    /// The mechanism of the exchange under way (after a SaslHandshake).
    mechanism: Option<Mechanism>,
    mechanism_name: String,
    /// Successful SaslAuthenticate answers in the exchange under way.
    steps: u32,
    /// The principal the exchange under way names.
    pending: Option<String>,
    /// The authenticated principal (`User:<name>`), kept through a re-authentication.
    principal: Option<String>,
    /// When the session ends (`session_lifetime_ms`); `None`: never.
    expires: Option<Instant>,
    /// The cluster's authorization decisions for this principal, and when each was made
    /// (`authorize.rs`); forgotten at each authentication.
    decisions: std::collections::HashMap<super::proxy::authorize::Right, (bool, Instant)>,
}

/// What the connection does with a request, by the session's state.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    /// Serve it as usual.
    Pass,
    /// Close the connection, saying why (Kafka closes a connection that sends anything else
    /// before authenticating), and the metric's reason (`unauthenticated`, `expired`).
    Close(String, &'static str),
}

/// What one SaslAuthenticate answer did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A step of an exchange that goes on.
    Continues,
    /// The exchange is complete: the principal and mechanism, for the log and the metrics.
    Authenticated {
        principal: String,
        mechanism: String,
        lifetime: Option<Duration>,
        /// A re-authentication (KIP-368): the connection had authenticated before.
        again: bool,
    },
    /// The cluster refused the client (its error code).
    Failed { mechanism: String, code: i16 },
}

impl Session {
    /// Whether the client has authenticated (a later re-authentication keeps it so).
    pub fn authenticated(&self) -> bool {
        self.principal.is_some()
    }

    /// The authenticated principal, `User:<name>`.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// Whether a request of `api_key` may be served now (`local`: the host answers it itself;
    /// a request passed up after the session expired is the cluster's to refuse).
    pub fn gate(&self, api_key: i16, local: bool, now: Instant) -> Gate {
        const API_VERSIONS: i16 = 18;
        const SASL_HANDSHAKE: i16 = 17;
        const SASL_AUTHENTICATE: i16 = 36;
        if matches!(api_key, API_VERSIONS | SASL_HANDSHAKE | SASL_AUTHENTICATE) {
            return Gate::Pass;
        }
        let name = kafka_protocol::messages::ApiKey::try_from(api_key)
            .map_or_else(|()| format!("API key {api_key}"), |k| format!("{k:?}"));
        if !self.authenticated() {
            return Gate::Close(
                format!(
                    "{name} before SASL authentication (kafka.authentication is set: the \
                     client's credentials must be accepted first)"
                ),
                "unauthenticated",
            );
        }
        match self.expires {
            Some(expires) if local && now >= expires => Gate::Close(
                format!(
                    "{name} after the SASL session of {} expired (the cluster's \
                     connections.max.reauth.ms); the client must re-authenticate",
                    self.principal.as_deref().unwrap_or("?")
                ),
                "expired",
            ),
            _ => Gate::Pass,
        }
    }

    /// The host itself authenticated the client as `user` with `mechanism` (standalone), for
    /// `lifetime` (`None`: no end). A re-authentication must keep the principal (Kafka's
    /// `SaslServerAuthenticator` refuses "Cannot change principals during re-authentication"):
    /// `Err` with that refusal's message, and the session unchanged.
    pub fn logged_in(
        &mut self,
        user: &str,
        mechanism: &str,
        lifetime: Option<Duration>,
        now: Instant,
    ) -> Result<Step, String> {
        let principal = format!("User:{user}");
        if let Some(before) = self.principal.as_deref()
            && before != principal
        {
            return Err(format!(
                "Cannot change principals during re-authentication from {before}: {principal}"
            ));
        }
        self.mechanism = None;
        self.pending = None;
        self.expires = lifetime.map(|l| now + l);
        self.decisions.clear();
        let again = self.principal.replace(principal.clone()).is_some();
        Ok(Step::Authenticated {
            principal,
            mechanism: mechanism.to_owned(),
            lifetime,
            again,
        })
    }

    /// The decision on `right` made within [`super::proxy::authorize::TTL`] of `now`.
    pub fn decided(&self, right: &super::proxy::authorize::Right, now: Instant) -> Option<bool> {
        self.decisions
            .get(right)
            .filter(|(_, at)| now.duration_since(*at) < super::proxy::authorize::TTL)
            .map(|(allowed, _)| *allowed)
    }

    /// Keeps the cluster's decision on `right`.
    pub fn decide(&mut self, right: super::proxy::authorize::Right, allowed: bool, now: Instant) {
        self.decisions.insert(right, (allowed, now));
    }

    /// A SaslHandshake asking for `mechanism`: `Err` with the answer's error code when the
    /// host cannot relay it (UNSUPPORTED_SASL_MECHANISM, 33).
    pub fn handshake(&mut self, mechanism: &str) -> Result<(), i16> {
        let parsed = match mechanism {
            "PLAIN" => Mechanism::Plain,
            "SCRAM-SHA-256" | "SCRAM-SHA-512" => Mechanism::Scram,
            "OAUTHBEARER" => Mechanism::OAuthBearer,
            _ => return Err(33),
        };
        self.mechanism = Some(parsed);
        self.mechanism_name = mechanism.to_owned();
        self.steps = 0;
        self.pending = None;
        Ok(())
    }

    /// A SaslAuthenticate request with `auth_bytes`: the first of an exchange names the
    /// principal. Nothing else of the bytes is kept.
    pub fn request(&mut self, auth_bytes: &[u8]) {
        if self.steps > 0 || self.pending.is_some() {
            return;
        }
        self.pending = match self.mechanism {
            Some(Mechanism::Plain) => plain_user(auth_bytes),
            Some(Mechanism::Scram) => scram_user(auth_bytes),
            Some(Mechanism::OAuthBearer) => oauthbearer_subject(auth_bytes),
            None => None,
        };
    }

    /// The answer to a SaslAuthenticate: `code`, whether it carried bytes, and its
    /// `session_lifetime_ms`.
    pub fn answer(&mut self, code: i16, has_bytes: bool, lifetime_ms: i64, now: Instant) -> Step {
        let mechanism = self.mechanism_name.clone();
        let Some(kind) = self.mechanism else {
            return Step::Failed { mechanism, code };
        };
        if code != 0 {
            self.mechanism = None;
            return Step::Failed { mechanism, code };
        }
        self.steps += 1;
        let complete = match kind {
            Mechanism::Plain => true,
            Mechanism::Scram => self.steps >= 2,
            Mechanism::OAuthBearer => !has_bytes,
        };
        if !complete {
            return Step::Continues;
        }
        self.mechanism = None;
        let principal = format!(
            "User:{}",
            self.pending.take().unwrap_or_else(|| "?".to_owned())
        );
        let lifetime = (lifetime_ms > 0).then(|| Duration::from_millis(lifetime_ms as u64));
        self.expires = lifetime.map(|l| now + l);
        let again = self.principal.replace(principal.clone()).is_some();
        self.decisions.clear();
        Step::Authenticated {
            principal,
            mechanism,
            lifetime,
            again,
        }
    }
}

/// PLAIN (RFC 4616): `[authzid] NUL authcid NUL passwd`; Kafka's principal is the authcid.
fn plain_user(bytes: &[u8]) -> Option<String> {
    let mut parts = bytes.splitn(3, |b| *b == 0);
    let _authzid = parts.next()?;
    let authcid = parts.next()?;
    parts.next()?;
    String::from_utf8(authcid.to_vec()).ok()
}

/// SCRAM's client-first-message (RFC 5802): `gs2-header n=<user>,r=<nonce>`, with `,` and `=`
/// in the name escaped as `=2C` and `=3D`.
fn scram_user(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    // The GS2 header is two fields: `n`/`y`/`p=...`, then an optional `a=authzid`.
    let bare = text.splitn(3, ',').nth(2)?;
    let user = bare.split(',').find_map(|f| f.strip_prefix("n="))?;
    Some(user.replace("=2C", ",").replace("=3D", "="))
}

/// OAUTHBEARER's client response (RFC 7628): `gs2-header 0x01 auth=Bearer <jwt> 0x01 0x01`;
/// the principal is the token's `sub` claim (Kafka's default `sasl.oauthbearer.sub.claim.name`).
/// The token's signature is the cluster's to check, not the host's.
fn oauthbearer_subject(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let token = text
        .split('\u{1}')
        .find_map(|kv| kv.strip_prefix("auth="))?
        .trim();
    let jwt = token
        .strip_prefix("Bearer ")
        .or_else(|| token.strip_prefix("bearer "))?;
    let payload = jwt.split('.').nth(1)?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&json).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Instant {
        Instant::now()
    }

    #[test]
    fn nothing_but_the_sasl_apis_pass_before_authentication() {
        let session = Session::default();
        for key in [18, 17, 36] {
            assert_eq!(session.gate(key, true, at()), Gate::Pass, "key {key}");
        }
        for (key, local) in [(11, true), (8, true), (0, false), (1, false), (3, false)] {
            match session.gate(key, local, at()) {
                Gate::Close(reason, why) => assert!(
                    reason.contains("before SASL authentication") && why == "unauthenticated",
                    "key {key}: {reason}"
                ),
                Gate::Pass => panic!("key {key} passed before authentication"),
            }
        }
    }

    #[test]
    fn plain_is_one_step_and_names_the_authcid() {
        let mut s = Session::default();
        s.handshake("PLAIN").unwrap();
        s.request(b"\0alice\0alice-secret");
        let step = s.answer(0, false, 0, at());
        assert_eq!(
            step,
            Step::Authenticated {
                principal: "User:alice".into(),
                mechanism: "PLAIN".into(),
                lifetime: None,
                again: false,
            }
        );
        assert_eq!(s.principal(), Some("User:alice"));
        assert_eq!(s.gate(11, true, at()), Gate::Pass);
        assert!(
            !format!("{s:?}").contains("secret"),
            "the password is not kept: {s:?}"
        );
    }

    #[test]
    fn scram_is_complete_after_the_server_final_message() {
        let mut s = Session::default();
        s.handshake("SCRAM-SHA-512").unwrap();
        s.request(b"n,,n=al=2Cice=3D,r=fyko+d2lbbFgONRv9qkxdawL");
        assert_eq!(s.answer(0, true, 0, at()), Step::Continues);
        assert!(!s.authenticated(), "server-first is not the end");
        s.request(b"c=biws,r=...,p=proof");
        match s.answer(0, true, 0, at()) {
            Step::Authenticated { principal, .. } => assert_eq!(principal, "User:al,ice="),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_refusal_is_a_failure_and_leaves_the_client_unauthenticated() {
        let mut s = Session::default();
        s.handshake("SCRAM-SHA-512").unwrap();
        s.request(b"n,,n=alice,r=abc");
        assert_eq!(s.answer(0, true, 0, at()), Step::Continues);
        assert_eq!(
            s.answer(58, false, 0, at()),
            Step::Failed {
                mechanism: "SCRAM-SHA-512".into(),
                code: 58
            }
        );
        assert!(!s.authenticated());
        assert!(matches!(s.gate(11, true, at()), Gate::Close(..)));
    }

    #[test]
    fn oauthbearer_names_the_tokens_subject_and_a_json_refusal_is_no_success() {
        let claims =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"sub":"carol","exp":1}"#);
        let message = format!("n,,\u{1}auth=Bearer eyJhbGciOiJub25lIn0.{claims}.\u{1}\u{1}");
        let mut s = Session::default();
        s.handshake("OAUTHBEARER").unwrap();
        s.request(message.as_bytes());
        // A refused token: its JSON reason, error 0; then the failure.
        assert_eq!(s.answer(0, true, 0, at()), Step::Continues);
        assert!(matches!(s.answer(58, false, 0, at()), Step::Failed { .. }));
        s.handshake("OAUTHBEARER").unwrap();
        s.request(message.as_bytes());
        match s.answer(0, false, 0, at()) {
            Step::Authenticated { principal, .. } => assert_eq!(principal, "User:carol"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mechanisms_whose_end_the_host_cannot_tell_are_refused() {
        let mut s = Session::default();
        assert_eq!(s.handshake("GSSAPI"), Err(33));
        assert_eq!(s.handshake("SCRAM-SHA-1"), Err(33));
    }

    #[test]
    fn an_expired_session_closes_on_the_hosts_own_answers_and_reauthentication_renews_it() {
        let mut s = Session::default();
        let start = at();
        s.handshake("PLAIN").unwrap();
        s.request(b"\0alice\0pw");
        match s.answer(0, false, 1_000, start) {
            Step::Authenticated {
                lifetime, again, ..
            } => {
                assert_eq!(lifetime, Some(Duration::from_secs(1)));
                assert!(!again, "a first login is no re-authentication");
            }
            other => panic!("{other:?}"),
        }
        let later = start + Duration::from_secs(2);
        match s.gate(11, true, later) {
            Gate::Close(reason, why) => {
                assert!(reason.contains("expired") && why == "expired", "{reason}")
            }
            Gate::Pass => panic!("an expired session served a JoinGroup"),
        }
        assert_eq!(
            s.gate(1, false, later),
            Gate::Pass,
            "a Fetch is the cluster's to refuse"
        );
        s.handshake("PLAIN").unwrap();
        s.request(b"\0alice\0pw");
        match s.answer(0, false, 1_000, later) {
            Step::Authenticated { again, .. } => assert!(again, "a re-authentication"),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.gate(11, true, later), Gate::Pass);
    }
}
