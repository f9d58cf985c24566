//! Per-version health: call counters, a ring of recent failures, and quarantine.
//!
//! A version that fails `threshold` calls in a row (module faults only: an input over the cap
//! is not the module's fault) is quarantined: [`super::Registry::run`] answers `Quarantined` at
//! once and the coordinator uses its fallback. The quarantine lasts `initial_backoff`, doubling
//! each time it is re-imposed, up to `max_backoff`. When it expires the next call is a probe: a
//! success clears everything, a failure quarantines again for twice as long. Time comes from
//! an injectable [`Clock`] so tests need no sleeps.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::sandbox::CallError;

/// Wall-clock time in Unix milliseconds, for upload times and quarantine deadlines.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(now_ms))
    }

    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// When a failing version is quarantined, and for how long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuarantinePolicy {
    /// Consecutive module failures that quarantine a version (default 3).
    pub threshold: u32,
    /// First quarantine (default 1 s); doubles each time it is re-imposed.
    #[serde(with = "crate::duration")]
    pub initial_backoff: Duration,
    /// Longest quarantine (default 5 min).
    #[serde(with = "crate::duration")]
    pub max_backoff: Duration,
    /// Failures remembered per version for the status page (default 16).
    pub recent_failures: usize,
}

impl Default for QuarantinePolicy {
    fn default() -> Self {
        QuarantinePolicy {
            threshold: 3,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            recent_failures: 16,
        }
    }
}

/// One failed call, as the status page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureRecord {
    pub at_ms: u64,
    /// Short label ([`CallError::reason`]).
    pub reason: &'static str,
    pub message: String,
    pub group: String,
    pub generation: i32,
}

/// A version's counters and quarantine state at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthSnapshot {
    pub calls: u64,
    pub successes: u64,
    pub failures: u64,
    pub failures_by_reason: BTreeMap<&'static str, u64>,
    pub consecutive_failures: u32,
    /// Set while quarantined: calls are refused until this Unix time (ms).
    pub quarantined_until_ms: Option<u64>,
    pub last_success_ms: Option<u64>,
    /// Newest first.
    pub recent_failures: Vec<FailureRecord>,
}

/// The mutable health of one version; shared by every catalog snapshot holding the version.
#[derive(Debug, Default)]
pub(crate) struct Health(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    calls: u64,
    successes: u64,
    failures: u64,
    failures_by_reason: BTreeMap<&'static str, u64>,
    consecutive_failures: u32,
    /// Quarantines imposed since the last success (sets the next backoff).
    quarantines: u32,
    quarantined_until_ms: Option<u64>,
    last_success_ms: Option<u64>,
    last_error: Option<String>,
    recent: VecDeque<FailureRecord>,
}

impl Health {
    /// `Err((until_ms, last_error))` while quarantined at `now_ms`.
    pub(crate) fn check(&self, now_ms: u64) -> Result<(), (u64, String)> {
        let state = self.0.lock();
        match state.quarantined_until_ms {
            Some(until) if until > now_ms => {
                Err((until, state.last_error.clone().unwrap_or_default()))
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn record_success(&self, now_ms: u64) {
        let mut state = self.0.lock();
        state.calls += 1;
        state.successes += 1;
        state.consecutive_failures = 0;
        state.quarantines = 0;
        state.quarantined_until_ms = None;
        state.last_success_ms = Some(now_ms);
    }

    /// Records a failure; returns the new quarantine deadline if this failure imposed one.
    pub(crate) fn record_failure(
        &self,
        now_ms: u64,
        error: &CallError,
        group: &str,
        generation: i32,
        policy: &QuarantinePolicy,
    ) -> Option<u64> {
        let mut state = self.0.lock();
        state.calls += 1;
        state.failures += 1;
        *state.failures_by_reason.entry(error.reason()).or_default() += 1;
        let message = error.to_string();
        state.last_error = Some(message.clone());
        state.recent.push_front(FailureRecord {
            at_ms: now_ms,
            reason: error.reason(),
            message,
            group: group.to_owned(),
            generation,
        });
        state.recent.truncate(policy.recent_failures);
        if !error.is_module_fault() {
            return None;
        }
        state.consecutive_failures += 1;
        if state.consecutive_failures < policy.threshold.max(1) {
            return None;
        }
        let factor = 1u32.checked_shl(state.quarantines).unwrap_or(u32::MAX);
        let backoff = policy
            .initial_backoff
            .saturating_mul(factor)
            .min(policy.max_backoff);
        state.quarantines += 1;
        let until = now_ms + backoff.as_millis() as u64;
        state.quarantined_until_ms = Some(until);
        Some(until)
    }

    pub(crate) fn snapshot(&self, now_ms: u64) -> HealthSnapshot {
        let state = self.0.lock();
        HealthSnapshot {
            calls: state.calls,
            successes: state.successes,
            failures: state.failures,
            failures_by_reason: state.failures_by_reason.clone(),
            consecutive_failures: state.consecutive_failures,
            quarantined_until_ms: state.quarantined_until_ms.filter(|&u| u > now_ms),
            last_success_ms: state.last_success_ms,
            recent_failures: state.recent.iter().cloned().collect(),
        }
    }
}
