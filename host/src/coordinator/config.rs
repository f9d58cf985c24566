//! Coordinator settings (Kafka's broker defaults) and per-group operator configuration.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::api::Millis;

/// Settings of one [`super::Coordinator`]. `Default` gives Kafka's broker defaults
/// (`group.min.session.timeout.ms` 6000, `group.max.session.timeout.ms` 1800000,
/// `group.initial.rebalance.delay.ms` 3000, `group.max.size` unlimited,
/// `offset.metadata.max.bytes` 4096, the internal 5-minute new-member join timeout).
///
/// It is the `[coordinator]` section of the config file: unknown keys are refused by name, as
/// in every section, because a misspelt setting silently left at its default is worse than a
/// refused start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoordinatorConfig {
    /// Shortest session timeout a JoinGroup may ask for (`group.min.session.timeout.ms`); a
    /// shorter one is refused with INVALID_SESSION_TIMEOUT.
    pub min_session_timeout_ms: i32,
    /// Longest session timeout a JoinGroup may ask for (`group.max.session.timeout.ms`); a
    /// longer one is refused with INVALID_SESSION_TIMEOUT.
    pub max_session_timeout_ms: i32,
    /// Delay of the first rebalance of an Empty group, extended while members keep arriving
    /// (bounded by the group's rebalance timeout).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`; `usize::MAX` is Kafka's `Integer.MAX_VALUE` (no limit).
    pub max_group_size: usize,
    /// Longest OffsetCommit metadata string accepted (`offset.metadata.max.bytes`); a longer
    /// one is refused per partition with OFFSET_METADATA_TOO_LARGE.
    pub offset_metadata_max_bytes: usize,
    /// How long a new member's parked JoinGroup may wait before it is dropped: a new member has
    /// no member id yet, so it cannot heartbeat.
    pub new_member_join_timeout_ms: Millis,
    /// The strategy that computes the assignment when the selected module fails or is too slow.
    pub fallback_strategy: String,
    /// How long one assignor call may take before the next step (fallback, then the native
    /// last-resort range) is taken. Each step gets at most half of the group's rebalance
    /// timeout, so the whole chain ends within it.
    pub assignor_deadline_ms: Millis,
    /// Consumer groups (KIP-848): the session timeout of consumer-protocol members
    /// (`group.consumer.session.timeout.ms`); classic members of a consumer group keep the
    /// one their JoinGroup asked for.
    pub consumer_session_timeout_ms: i32,
    /// Consumer groups: the heartbeat interval every answer tells the members
    /// (`group.consumer.heartbeat.interval.ms`); below the session timeout.
    pub consumer_heartbeat_interval_ms: i32,
    /// Consumer groups: the assignor of a group whose members name none
    /// (`group.remote.assignor` unset; Kafka's first `group.consumer.assignors` entry).
    pub consumer_default_assignor: String,
    /// Consumer groups: how long a heartbeat that moved the group epoch (a join, a
    /// subscription change) waits for the new target assignment before it is answered with
    /// what the member may own until then. The target is computed by a module, off the shard;
    /// most calls end well within this.
    pub consumer_assignment_wait_ms: Millis,
    /// Serve the consumer protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe); when off,
    /// both are answered UNSUPPORTED_VERSION, as Kafka answers with the protocol disabled.
    pub consumer_protocol: bool,
    /// Kafka's answers where the host is gentler by default: an assignor name no module
    /// serves is UNSUPPORTED_ASSIGNOR, and a failed module call UNKNOWN_SERVER_ERROR (both
    /// fatal to librdkafka). Off: the fallback module assigns a name without a module, and a
    /// failure keeps the previous target.
    pub strict: bool,
    /// Seed of the member-id generator, so tests are deterministic. Not a config-file key
    /// (`seed = ...` is refused as unknown): the driver seeds each shard from the OS, so a
    /// configured value would be silently ignored.
    #[serde(skip)]
    pub seed: u64,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_group_size: usize::MAX,
            offset_metadata_max_bytes: 4096,
            new_member_join_timeout_ms: 300_000,
            fallback_strategy: "range".to_string(),
            assignor_deadline_ms: 10_000,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_default_assignor: "uniform".to_string(),
            consumer_assignment_wait_ms: 2_000,
            consumer_protocol: true,
            strict: false,
            seed: 0x5eed_0fa5_519e_0e00,
        }
    }
}

/// What an operator set for one group (admin API): a strategy override, optionally pinned to a
/// module version, and parameters handed to the module as `AssignRequest.params`.
///
/// Stored (JSON, `store::groups`), not read from the config file: unknown fields are ignored on
/// purpose so that a store written by a newer host still opens. The admin API's own body type
/// refuses unknown fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupConfig {
    /// Canonical strategy name (or a client spelling of it) that computes this group's
    /// assignment instead of the voted protocol. Members still get their own spelling of the
    /// voted protocol back, so clients see a name they proposed.
    pub strategy: Option<String>,
    /// Run exactly this version of the override's module instead of the active one.
    pub pinned_version: Option<u32>,
    /// Handed to the module as `AssignRequest.params` on every run for this group.
    pub params: BTreeMap<String, String>,
    /// Rebalance stabilisation (`classic::stabilize`): a Stable classic group starts its
    /// rebalance only once membership has been quiet this long. `None`: every change
    /// rebalances at once, as Kafka does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stabilize_ms: Option<Millis>,
    /// The longest a rebalance waits for quiet, from the first change; `None` is
    /// [`DEFAULT_STABILIZE_MAX_FACTOR`] times `stabilize_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stabilize_max_ms: Option<Millis>,
}

/// `stabilize_max_ms` when only `stabilize_ms` is set: enough for a rolling restart of a few
/// consumers spaced by less than the quiet window, short enough that continuous churn still
/// rebalances.
pub const DEFAULT_STABILIZE_MAX_FACTOR: Millis = 5;

/// The longest quiet window an operator may set (10 minutes): each parked JoinGroup is
/// answered within half of its member's rebalance timeout whatever is set, and a departed
/// member's partitions are unowned for the whole wait.
pub const MAX_STABILIZE_MS: Millis = 600_000;

impl GroupConfig {
    /// `(quiet window, longest wait)` when stabilisation is on for the group.
    pub fn stabilize(&self) -> Option<(Millis, Millis)> {
        let quiet = self.stabilize_ms.filter(|ms| *ms > 0)?;
        let max = self
            .stabilize_max_ms
            .unwrap_or(quiet.saturating_mul(DEFAULT_STABILIZE_MAX_FACTOR));
        Some((quiet, max.max(quiet)))
    }
}
