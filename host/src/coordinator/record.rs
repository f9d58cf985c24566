//! What a group remembers of its assignor runs and rebalances: its last run and its recent
//! rebalances, kept live by either protocol, shown by the admin API, and persisted with the
//! group's snapshot so a restart keeps them (which module version assigned the group, how its
//! last run went, and why it last rebalanced are what an operator asks after an incident,
//! often the one that restarted the host).

use serde::{Deserialize, Serialize};

/// The last assignor run of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub generation: i32,
    pub module: String,
    pub version: Option<u32>,
    pub duration_us: u64,
    pub fuel: u64,
    pub outcome: RunOutcome,
    pub fallback_used: bool,
}

/// One completed rebalance (classic) or computed target (consumer protocol).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebalanceRecord {
    pub generation: i32,
    /// Why it started, as the logs said it ([`crate::coordinator::RebalanceReason`]'s text):
    /// text, so a record read back after a restart says the same.
    pub reason: Option<String>,
    pub strategy: Option<String>,
    pub module_version: Option<u32>,
    pub members: usize,
    /// Coordinator time from the start of the rebalance to the installed assignment.
    pub duration_ms: u64,
    pub partitions_moved: u64,
    pub fallback_used: bool,
    /// A classic group's membership change applied without a rebalance (`classic/in_place.rs`):
    /// `generation` is the one it kept.
    #[serde(default)]
    pub in_place: bool,
}

/// How an assignor step ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum RunOutcome {
    Ok,
    Failed(String),
    TimedOut,
    /// The result came back for a generation that is gone; it was dropped.
    Stale,
    /// The module's output failed the output checks ([`assignor_wire::checks`]); the text names the
    /// culprit.
    Refused(String),
}
