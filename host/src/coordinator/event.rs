//! What goes into the coordinator ([`Event`]) and what comes out ([`Effect`]), with the keyed
//! timers and the observability notices. Plain data: no registry, tokio or wasmtime types, so
//! the driver, the test context and a benchmark can all feed the same core.

use std::sync::Arc;

use assignor_sdk::{Answer, AssignRequest};

use kafka_protocol::messages::{
    OffsetCommitResponse, OffsetDeleteResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};

use super::api::{GroupRequest, GroupResponse, Millis, OffsetFetchQuery, ReplyTo, RequestContext};
use super::classic_state::GroupState;
use super::config::GroupConfig;
use super::saved::{OffsetRecord, SavedGroup};
use super::view::{StrategiesView, TopicsView};
use assignor_wire::checks::OutputError;

/// An input to [`super::Coordinator::handle`].
#[derive(Debug, Clone)]
pub enum Event {
    /// One request for one group; the answer is an [`Effect::Respond`] to `reply_to`, now or
    /// later (a parked JoinGroup or SyncGroup).
    Request {
        reply_to: ReplyTo,
        group_id: String,
        ctx: RequestContext,
        request: GroupRequest,
    },
    /// A timer armed by [`Effect::ScheduleTimer`] came due. The driver never delivers a firing
    /// for a key that was cancelled or re-armed since; the coordinator still re-checks state.
    TimerFired(TimerKey),
    /// An assignor run started by [`Effect::RunAssignor`] finished.
    AssignorDone(AssignorDone),
    /// The topic catalog changed; groups whose subscribed partition counts changed rebalance.
    TopicsChanged(TopicsView),
    /// The registry's strategies changed (upload, activation, deletion). Applies at each
    /// group's next rebalance; no rebalance is forced.
    StrategiesChanged(Arc<StrategiesView>),
    /// A group read back from the store at start: stable groups resume without a rebalance.
    Restore(Box<RestoredGroup>),
}

/// What the store had for one group.
#[derive(Debug, Clone, Default)]
pub struct RestoredGroup {
    pub group_id: String,
    pub snapshot: Option<SavedGroup>,
    pub offsets: Vec<OffsetRecord>,
    pub config: Option<GroupConfig>,
}

/// Keyed timers. Scheduling a key replaces its previous deadline; see [`Event::TimerFired`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKey {
    /// Session expiry of a member, or of a pending (MEMBER_ID_REQUIRED) member id (classic
    /// and consumer groups alike).
    Heartbeat { group: Arc<str>, member: Arc<str> },
    /// End of the join phase (initial delay, or the rebalance timeout).
    Join { group: Arc<str> },
    /// End of the sync phase: members that never sent SyncGroup are removed.
    Sync { group: Arc<str> },
    /// The in-flight assignor run took too long: take the next step of the fallback chain.
    AssignorDeadline { group: Arc<str> },
    /// A module asked for another rebalance (`rebalance_after_ms`).
    FollowUp { group: Arc<str> },
    /// Rebalance stabilisation: membership has been quiet long enough (or the wait reached
    /// its bound); the deferred rebalance starts.
    Stabilize { group: Arc<str> },
    /// An in-place round stops waiting for a joiner's twins (`classic/in_place.rs`).
    InPlace { group: Arc<str> },
    /// Consumer groups: the rebalance timeout of a member that must revoke partitions; the
    /// member is fenced if it has not revoked them by then.
    Revocation { group: Arc<str>, member: Arc<str> },
    /// Consumer groups: the end of a request's wait for the next target assignment (a
    /// heartbeat that moved the group epoch); it is then answered with what is there.
    TargetWait { group: Arc<str>, member: Arc<str> },
    /// Consumer groups: the group changed a while ago and is written now.
    Persist { group: Arc<str> },
}

impl TimerKey {
    /// The group the timer belongs to.
    pub fn group(&self) -> &Arc<str> {
        match self {
            TimerKey::Heartbeat { group, .. }
            | TimerKey::Join { group }
            | TimerKey::Sync { group }
            | TimerKey::AssignorDeadline { group }
            | TimerKey::FollowUp { group }
            | TimerKey::Stabilize { group }
            | TimerKey::InPlace { group }
            | TimerKey::Revocation { group, .. }
            | TimerKey::TargetWait { group, .. }
            | TimerKey::Persist { group } => group,
        }
    }
}

/// An output of [`super::Coordinator::handle`]. The driver executes effects in order: a persist
/// comes before the response that depends on it.
#[derive(Debug, Clone)]
pub enum Effect {
    Respond {
        to: ReplyTo,
        response: GroupResponse,
    },
    ScheduleTimer {
        key: TimerKey,
        at: Millis,
    },
    CancelTimer {
        key: TimerKey,
    },
    /// Run a strategy off the shard and send back [`Event::AssignorDone`] with the same
    /// `group_id`, `generation_id` and `run_id`.
    RunAssignor(Box<AssignorRun>),
    /// Store the group's metadata at this generation (replaces the previous record).
    PersistGroup(Arc<SavedGroup>),
    /// Commit `offsets` for the group where offsets live (this host's store, or the upstream
    /// cluster), then answer `to` with `response`: its partitions that are in `offsets` read
    /// NONE and take the write's error where it failed; the others carry the coordinator's
    /// own refusal (OFFSET_METADATA_TOO_LARGE). Answered only after the write.
    CommitOffsets {
        to: ReplyTo,
        group_id: String,
        offsets: Vec<OffsetRecord>,
        response: OffsetCommitResponse,
    },
    /// Commit a transaction's offsets for the group where its transaction lives (the upstream
    /// cluster: proxy mode only), inside that transaction, then answer `to` with `response`:
    /// its partitions that are in `request` take the cluster's code for them; the others carry
    /// the coordinator's own refusal (OFFSET_METADATA_TOO_LARGE). `request` is the client's,
    /// cut to the partitions to write, its member fields as the client sent them (the driver
    /// sends generation -1 and no member upstream). `api_version` is the client's: it goes up
    /// at that version, whose meaning for the transaction differs (v5: the coordinator adds
    /// the offsets to the transaction itself, KIP-890).
    CommitTxnOffsets {
        to: ReplyTo,
        group_id: String,
        api_version: i16,
        request: TxnOffsetCommitRequest,
        response: TxnOffsetCommitResponse,
    },
    /// Answer `to` with the group's committed offsets for `query`, read where they live.
    FetchOffsets {
        to: ReplyTo,
        group_id: String,
        query: OffsetFetchQuery,
    },
    /// Forget `partitions` of the group's offsets, then answer `to` with `response` (the
    /// partitions not refused read NONE unless the deletion fails).
    DeleteOffsets {
        to: ReplyTo,
        group_id: String,
        partitions: Vec<(String, i32)>,
        response: OffsetDeleteResponse,
    },
    /// Store the operator's configuration of a group.
    PersistGroupConfig {
        group_id: String,
        config: GroupConfig,
    },
    /// Forget a deleted group's metadata and offsets (its operator configuration stays), then
    /// answer `to`: NONE, or the error of the deletion where the offsets live.
    DeleteGroup {
        to: ReplyTo,
        group_id: String,
    },
    Notice(Notice),
}

/// One assignor call to make.
#[derive(Debug, Clone)]
pub struct AssignorRun {
    pub group_id: String,
    pub generation_id: i32,
    /// Distinguishes the primary run from the fallback run of the same generation.
    pub run_id: u64,
    /// Canonical strategy (module) name.
    pub strategy: String,
    pub pinned_version: Option<u32>,
    /// The selected strategy is cooperative (KIP-429): the runner checks that the output hands
    /// no partition to a new owner while another member still owns it. Always `false` for the
    /// fallback, whose output the coordinator strips instead.
    pub cooperative: bool,
    /// This run is the fallback after the primary failed or timed out.
    pub fallback: bool,
    /// Shared with the coordinator, which keeps it for the fallback and the stripping.
    pub request: Arc<AssignRequest>,
}

/// The result of an [`AssignorRun`].
#[derive(Debug, Clone)]
pub struct AssignorDone {
    pub group_id: String,
    pub generation_id: i32,
    pub run_id: u64,
    pub result: Result<AssignorOutput, AssignorFailure>,
}

/// A successful call: an answer the coordinator installs without checking it again.
///
/// Whoever runs the assignor guarantees it: the answer passed the output checks
/// ([`assignor_wire::checks`]) against the run's `request` with the run's `cooperative` flag,
/// so every position in it is inside that request. The registry's runner gets both from the sandbox, which checks every module call
/// (off the shards, on the blocking pool); test runners apply the same function. Checking once,
/// where a module's answer enters the host, keeps a second pass over a 10,000-member output
/// off the shard thread and leaves one definition of "valid" (two used to disagree).
#[derive(Debug, Clone)]
pub struct AssignorOutput {
    pub module: String,
    pub version: u32,
    /// By positions in the run's request.
    pub answer: Answer,
    pub duration_us: u64,
    pub fuel: u64,
}

/// A failed call (trap, timeout, memory cap, malformed or refused output, unknown module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignorFailure {
    pub module: String,
    pub version: Option<u32>,
    pub message: String,
    pub duration_us: u64,
    /// Set when the module answered but the answer failed the output checks (the culprit,
    /// typed); the coordinator records the run as [`RunOutcome::Refused`] rather than `Failed`.
    /// Boxed: failures are rare and the common case stays small.
    pub invalid_output: Option<Box<OutputError>>,
}

/// Why a member left the group, for notices and the admin history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RemovalReason {
    SessionExpired,
    Left,
    Fenced,
    NotRejoined,
    SyncExpired,
    GroupFull,
    PendingExpired,
}

/// Why a rebalance started. The text ([`std::fmt::Display`]) names members and topics, for the
/// logs and the group's history; [`RebalanceReason::category`] is the bounded label metrics
/// count by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebalanceReason {
    /// A member joined an empty or stable group (or a pending member came back with its id).
    MemberAdded { member: Arc<str> },
    /// A known member sent JoinGroup while the group was already preparing a rebalance.
    MemberJoinedDuringRebalance { member: Arc<str> },
    /// A member rejoined with different protocols or metadata.
    ProtocolsChanged { member: Arc<str> },
    /// A client leader (relay mode) rejoined a stable group: how Kafka's leaders ask for one.
    LeaderRejoined { member: Arc<str> },
    /// A static member's replacement changed the selected protocol.
    StaticMemberChangedProtocols { member: Arc<str> },
    /// A static member was replaced while the group waited for its assignment.
    StaticMemberReplaced { member: Arc<str> },
    /// LeaveGroup removed these members, each with the reason its client gave (KIP-800).
    MembersLeft {
        members: Vec<(Arc<str>, Option<String>)>,
    },
    /// A member stopped heartbeating for its session timeout.
    SessionExpired { member: Arc<str> },
    /// Members did not send SyncGroup within the rebalance timeout.
    SyncExpired,
    /// A subscribed topic's partition count changed (or the topic appeared: from 0).
    PartitionCountChanged {
        topic: String,
        before: i32,
        after: i32,
    },
    /// The module's answer asked for another rebalance (`rebalance_after_ms`).
    AssignorFollowUp,
    /// The operator asked for one (admin API, `group rebalance`), optionally saying why.
    Operator { why: Option<String> },
    /// Consumer groups: a member changed the topics it subscribes to (names, or what its
    /// regular expression matches).
    SubscriptionChanged { member: Arc<str> },
    /// Consumer groups: the assignor most members prefer (`group.remote.assignor`) changed.
    AssignorChanged { assignor: String },
    /// Consumer groups: a module now serves the assignor the group names, which the
    /// fallback served until then.
    ModuleAvailable { module: String },
    /// Consumer groups: a member did not revoke partitions within its rebalance timeout.
    RevocationExpired { member: Arc<str> },
    /// A consumer-protocol member joined a classic group, which became a consumer group
    /// (KIP-848's online upgrade).
    Upgraded { member: Arc<str> },
    /// Rebalance stabilisation: the rebalance deferred while `joined` members joined and
    /// `left` left (or expired) over `waited_ms` starts now.
    Stabilized {
        joined: usize,
        left: usize,
        waited_ms: Millis,
    },
}

impl RebalanceReason {
    /// A label from a small fixed set: member and topic names must never become label values.
    pub fn category(&self) -> &'static str {
        match self {
            RebalanceReason::MemberAdded { .. }
            | RebalanceReason::MemberJoinedDuringRebalance { .. } => "member_joined",
            RebalanceReason::ProtocolsChanged { .. } | RebalanceReason::LeaderRejoined { .. } => {
                "member_rejoined"
            }
            RebalanceReason::StaticMemberChangedProtocols { .. }
            | RebalanceReason::StaticMemberReplaced { .. } => "static_member",
            RebalanceReason::MembersLeft { .. } => "member_left",
            RebalanceReason::SessionExpired { .. } => "session_expired",
            RebalanceReason::SyncExpired => "sync_expired",
            RebalanceReason::PartitionCountChanged { .. } => "metadata_changed",
            RebalanceReason::AssignorFollowUp => "assignor_requested",
            RebalanceReason::Operator { .. } => "operator",
            RebalanceReason::SubscriptionChanged { .. } => "subscription_changed",
            RebalanceReason::AssignorChanged { .. } => "assignor_changed",
            RebalanceReason::ModuleAvailable { .. } => "module_available",
            RebalanceReason::RevocationExpired { .. } => "revocation_expired",
            RebalanceReason::Upgraded { .. } => "upgraded",
            RebalanceReason::Stabilized { .. } => "stabilized",
        }
    }
}

impl std::fmt::Display for RebalanceReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RebalanceReason::MemberAdded { member } => write!(f, "adding new member {member}"),
            RebalanceReason::MemberJoinedDuringRebalance { member } => {
                write!(f, "member {member} joined during PreparingRebalance")
            }
            RebalanceReason::ProtocolsChanged { member } => {
                write!(f, "member {member} changed its protocols")
            }
            RebalanceReason::LeaderRejoined { member } => write!(f, "leader {member} rejoined"),
            RebalanceReason::StaticMemberChangedProtocols { member } => {
                write!(
                    f,
                    "static member {member} rejoined with a change of protocol"
                )
            }
            RebalanceReason::StaticMemberReplaced { member } => {
                write!(
                    f,
                    "static member {member} replaced during CompletingRebalance"
                )
            }
            RebalanceReason::MembersLeft { members } => {
                f.write_str("members left: ")?;
                for (i, (member, why)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{member} ({})", why.as_deref().unwrap_or("not provided"))?;
                }
                Ok(())
            }
            RebalanceReason::SessionExpired { member } => {
                write!(f, "member {member} session expired")
            }
            RebalanceReason::SyncExpired => f.write_str("members did not send SyncGroup in time"),
            RebalanceReason::PartitionCountChanged {
                topic,
                before,
                after,
            } => write!(
                f,
                "partition count of topic {topic} changed from {before} to {after}"
            ),
            RebalanceReason::AssignorFollowUp => f.write_str("the assignor asked for a rebalance"),
            RebalanceReason::Operator { why: None } => f.write_str("operator request"),
            RebalanceReason::Operator { why: Some(why) } => write!(f, "operator request: {why}"),
            RebalanceReason::SubscriptionChanged { member } => {
                write!(f, "member {member} changed its subscription")
            }
            RebalanceReason::AssignorChanged { assignor } => {
                write!(f, "the preferred assignor is now {assignor}")
            }
            RebalanceReason::ModuleAvailable { module } => {
                write!(f, "module {module} is now available")
            }
            RebalanceReason::RevocationExpired { member } => {
                write!(f, "member {member} did not revoke its partitions in time")
            }
            RebalanceReason::Upgraded { member } => write!(
                f,
                "consumer-protocol member {member} joined: upgraded to a consumer group"
            ),
            RebalanceReason::Stabilized {
                joined,
                left,
                waited_ms,
            } => write!(
                f,
                "membership settled after {waited_ms} ms ({joined} joined, {left} left)"
            ),
        }
    }
}

/// Serialised as its text (the admin API's history shows what the logs say).
impl serde::Serialize for RebalanceReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// How an assignor step ended (defined with the run records).
pub use super::record::RunOutcome;

/// Something worth counting or logging. The driver hands each to its `NoticeSink`.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    StateChanged {
        group: Arc<str>,
        from: GroupState,
        to: GroupState,
    },
    RebalanceStarted {
        group: Arc<str>,
        generation: i32,
        reason: RebalanceReason,
    },
    GenerationCompleted {
        group: Arc<str>,
        generation: i32,
        members: usize,
        protocol: Option<String>,
        /// `None` when the group relays a client leader's assignment.
        strategy: Option<String>,
    },
    MemberRemoved {
        group: Arc<str>,
        member: Arc<str>,
        reason: RemovalReason,
    },
    AssignorFinished {
        group: Arc<str>,
        generation: i32,
        module: String,
        version: Option<u32>,
        outcome: RunOutcome,
        duration_us: u64,
        fuel: u64,
        fallback: bool,
    },
    /// A classic group's membership change was tried without a rebalance: applied, or given
    /// up for a rebalance (`classic/in_place.rs`).
    InPlaceRound {
        group: Arc<str>,
        generation: i32,
        applied: bool,
    },
    /// A consumer group's target is being computed by the fallback module because no module
    /// serves the assignor the group names (`group.remote.assignor`).
    AssignorUnavailable {
        group: Arc<str>,
        epoch: i32,
        requested: String,
        fallback: String,
    },
}
