//! Whether the upstream takes the host's connections: the last refusal (a TLS handshake or a
//! SASL login that failed, which only a changed setting mends) until a connection of the
//! host's own succeeds again (its Metadata read runs every `upstream.metadata_refresh`, so a
//! mended setting shows within that; a glued link's success does not count: it carries no
//! login of the host's). Written by every connection the host opens, read by `GET /v1/upstream` and the
//! metrics; a refusal is logged once, at error level, when it starts or its reason changes,
//! not at every retry.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::error::ConnectionError;

#[derive(Default)]
pub struct Health {
    refused: Mutex<Option<(String, Instant)>>,
    refusals: AtomicU64,
}

impl Health {
    /// A connection failed on `error`; a refusal is kept and counted.
    pub(super) fn failed(&self, error: &ConnectionError) {
        if !error.is_refusal() {
            return;
        }
        self.refusals.fetch_add(1, Ordering::Relaxed);
        let reason = error.to_string();
        let mut refused = self.refused.lock().unwrap();
        if refused.as_ref().is_none_or(|(known, _)| *known != reason) {
            tracing::error!(%reason, "the upstream refuses the host's connection");
            *refused = Some((reason, Instant::now()));
        }
    }

    /// A connection opened (and logged in): whatever was refused is mended.
    pub(super) fn opened(&self) {
        let mut refused = self.refused.lock().unwrap();
        if let Some((reason, since)) = refused.take() {
            tracing::info!(
                was = %reason,
                refused_for = ?since.elapsed(),
                "the upstream takes the host's connections again"
            );
        }
    }

    /// The current refusal and how long it has lasted, if the upstream refuses the host.
    pub fn refused(&self) -> Option<(String, Duration)> {
        let refused = self.refused.lock().unwrap();
        refused
            .as_ref()
            .map(|(reason, since)| (reason.clone(), since.elapsed()))
    }

    /// Refused connections since start.
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }
}
