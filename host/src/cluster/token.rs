//! OAUTHBEARER for a cluster's librdkafka clients (the node group, the module log): librdkafka
//! asks its client for a token through a refresh callback; the answer is the token in
//! `upstream.sasl_oauthbearer_token_file`, read again at each ask as the host's own
//! connections read it at each login (a sidecar that rewrites the file refreshes all of them),
//! with the principal and lifetime librdkafka wants from the token's `sub` and `exp` claims.
//! librdkafka asks again at 80 % of the lifetime, and every few seconds while the file holds
//! no usable token (its own retry), so a refresh that fails is retried, never fatal.

use std::error::Error;
use std::path::PathBuf;

use base64::Engine;
use rdkafka::ClientContext;
use rdkafka::client::OAuthToken;
use rdkafka::consumer::ConsumerContext;

use crate::upstream::connection::security::{SaslMechanism, SecuritySettings, read_token};

/// Where the tokens come from: the file when the upstream mechanism is OAUTHBEARER.
#[derive(Debug, Clone, Default)]
pub(super) struct Tokens {
    file: Option<PathBuf>,
}

impl Tokens {
    pub fn new(settings: &SecuritySettings) -> Tokens {
        let oauth = settings.sasl_mechanism == Some(SaslMechanism::OauthBearer);
        Tokens {
            file: oauth
                .then(|| settings.sasl_oauthbearer_token_file.clone())
                .flatten(),
        }
    }

    /// The token the file holds now, for librdkafka's refresh callback.
    pub fn token(&self) -> Result<OAuthToken, Box<dyn Error>> {
        let Some(file) = &self.file else {
            return Err(
                "OAUTHBEARER asked for, but upstream.sasl_mechanism is not OAUTHBEARER".into(),
            );
        };
        let token = read_token(file)?.expose().to_owned();
        let (principal_name, expires) = claims(&token).map_err(|e| {
            format!(
                "upstream.sasl_oauthbearer_token_file {}: {e}",
                file.display()
            )
        })?;
        Ok(OAuthToken {
            token,
            principal_name,
            lifetime_ms: expires.saturating_mul(1000),
        })
    }
}

/// The `sub` and `exp` (seconds since the epoch) claims of a JWT, read without checking its
/// signature: the cluster checks the token, librdkafka only needs to know whom it names and
/// when to ask for the next one.
fn claims(token: &str) -> Result<(String, i64), String> {
    let payload = token
        .split('.')
        .nth(1)
        .ok_or("the token is not a JWT (header.claims.signature)")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|e| format!("the token's claims are not base64url: {e}"))?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the token's claims are not JSON: {e}"))?;
    let sub = claims
        .get("sub")
        .and_then(|s| s.as_str())
        .ok_or("the token has no `sub` claim")?;
    let exp = claims
        .get("exp")
        .and_then(|e| e.as_i64())
        .ok_or("the token has no `exp` claim")?;
    Ok((sub.to_owned(), exp))
}

/// The module log's clients' context: librdkafka's default logging, and tokens.
pub(super) struct TokenContext(pub Tokens);

impl ClientContext for TokenContext {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn generate_oauth_token(&self, _config: Option<&str>) -> Result<OAuthToken, Box<dyn Error>> {
        self.0.token()
    }
}

impl ConsumerContext for TokenContext {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_subject_and_lifetime_and_a_bad_file_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, kafka_harness::unsigned_token("svc-host", 600) + "\n").unwrap();
        let tokens = Tokens::new(&SecuritySettings {
            sasl_mechanism: Some(SaslMechanism::OauthBearer),
            sasl_oauthbearer_token_file: Some(file.clone()),
            ..SecuritySettings::default()
        });
        let token = tokens.token().unwrap();
        assert_eq!(token.principal_name, "svc-host");
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let left = token.lifetime_ms - now_ms;
        assert!((500_000..=601_000).contains(&left), "{left} ms left");

        std::fs::write(&file, "not-a-jwt\n").unwrap();
        let error = tokens
            .token()
            .err()
            .expect("not a JWT: refused")
            .to_string();
        assert!(
            error.contains("sasl_oauthbearer_token_file") && error.contains("not a JWT"),
            "{error}"
        );
        // Not OAUTHBEARER: no file is read.
        let error = Tokens::default()
            .token()
            .err()
            .expect("no file: refused")
            .to_string();
        assert!(error.contains("not OAUTHBEARER"), "{error}");
    }
}
