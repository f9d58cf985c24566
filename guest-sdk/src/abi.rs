//! The messages that cross the host/module boundary, and the group as a strategy sees it.
//!
//! The types here are the contract between assignor-host and every assignor module, in any
//! language, as `docs/abi.md` specifies it. They are one model of a rebalance with two wire
//! encodings, one per ABI version:
//!
//! - **ABI v1**: these types' serde form, MessagePack maps with named fields ([`encode`],
//!   [`decode`]). Field names are the wire names, so fields can be added without breaking old
//!   modules: a reader ignores fields it does not know, and a field added in a later revision
//!   of v1 is optional (`#[serde(default)]`). Fields marked `#[serde(skip)]` are v2 inputs that
//!   v1 does not carry.
//! - **ABI v2** ([`v2`]): the same information laid out for speed, positional arrays with a
//!   topic table sent once, subscriptions shared by the members that have the same one,
//!   members and topics referred to by index, and the heavy inputs sent only to modules that
//!   declare them ([`Input`]).
//!
//! The host and the SDK both encode and decode with these types, and
//! `guest-sdk/tests/abi_doc.rs` / `abi_v2_doc.rs` keep them equal to the document. Byte strings
//! travel as MessagePack `bin`, never as arrays of integers. Partitions travel as integer arrays
//! grouped by topic so a 10,000-member group with 500,000 partitions encodes in a few
//! milliseconds.
//!
//! `docs/abi.md` also specifies the exports a module provides ("Exports and the import"), the
//! order the host calls them in ("One call"), the limits and the output checks.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

mod answer;
pub(crate) mod index;
pub(crate) mod order;
pub mod v2;

pub use answer::{Answer, AnswerEntry, Unresolved};
pub use index::Index;

/// ABI v1: named-field MessagePack maps. The host serves it for good.
pub const ABI_V1: u32 = 1;
/// ABI v2: positional MessagePack arrays with a topic table and shared subscriptions.
pub const ABI_V2: u32 = 2;

/// The ABI version this crate's [`assignor`](crate::assignor) attribute builds modules for (a
/// module's `assignor_abi_version` export returns it): [`ABI_V2`]. The host also serves
/// [`ABI_V1`] modules, built with earlier releases of this crate or written without it.
pub const ABI_VERSION: u32 = ABI_V2;

/// The ABI versions this crate's types encode and decode, oldest first.
pub const ABI_VERSIONS: [u32; 2] = [ABI_V1, ABI_V2];

/// Export: `() -> i32`, returns [`ABI_VERSION`].
pub const EXPORT_ABI_VERSION: &str = "assignor_abi_version";
/// Export: `(len: i32) -> i32`, a guest buffer of `len` bytes for the host to write the input into.
pub const EXPORT_ALLOC: &str = "assignor_alloc";
/// Export: `(ptr: i32, len: i32) -> i64`. The input is a MessagePack [`AssignRequest`]; the result
/// is `(out_ptr << 32) | out_len` of a MessagePack [`AssignResponse`].
pub const EXPORT_ASSIGN: &str = "assignor_assign";
/// Optional export: `() -> i64`, `(ptr << 32) | len` of a MessagePack [`AssignorInfo`].
pub const EXPORT_DESCRIBE: &str = "assignor_describe";
/// Export: the module's linear memory.
pub const EXPORT_MEMORY: &str = "memory";
/// Module of the only import a module may have.
pub const IMPORT_MODULE: &str = "assignor";
/// Import `assignor.log(level: i32, ptr: i32, len: i32)`: UTF-8 text into the host's tracing.
pub const IMPORT_LOG: &str = "log";

/// Levels for `assignor.log`, from most to least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum LogLevel {
    /// 1: the call is about to fail, or a panic message (the SDK's panic hook logs at this
    /// level before the module traps).
    Error = 1,
    /// 2: something the operator should look at, the answer still stands.
    Warn = 2,
    /// 3: also what an unknown level number reads as ([`LogLevel::from_i32`]).
    Info = 3,
    /// 4: detail for whoever debugs a strategy; `serve` logs at `info` unless `RUST_LOG` asks
    /// for more.
    Debug = 4,
    /// 5: the finest level; per-partition detail belongs here, if anywhere.
    Trace = 5,
}

impl LogLevel {
    /// The level for a raw `level` argument; unknown values read as `Info` so a module built
    /// against a later SDK still logs.
    pub fn from_i32(level: i32) -> LogLevel {
        match level {
            1 => LogLevel::Error,
            2 => LogLevel::Warn,
            4 => LogLevel::Debug,
            5 => LogLevel::Trace,
            _ => LogLevel::Info,
        }
    }
}

/// One rebalance's input. The host keeps `members` sorted by `member_id` and `topics` by `name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssignRequest {
    /// The ABI version of the wire message this was decoded from ([`ABI_V1`] or [`ABI_V2`]);
    /// informational in a request built by hand or by the host (the host writes each
    /// module's own version on the wire).
    pub abi_version: u32,
    /// The consumer group's `group.id`, for log lines and per-group decisions; the host runs
    /// one call per rebalance of this group.
    pub group_id: String,
    /// The generation being formed.
    pub generation_id: i32,
    /// `consumer` for Kafka consumers; other protocol types carry raw `metadata`.
    pub protocol_type: String,
    /// The selected strategy name (the module's protocol name).
    pub protocol_name: String,
    /// Coordinator time at the start of the rebalance, in milliseconds.
    pub now_ms: i64,
    /// Operator parameters for this group and strategy.
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
    /// Every member of the generation being formed, sorted by `member_id`. Each one should get
    /// an entry in the answer; a member left out gets no partitions.
    pub members: Vec<Member>,
    /// Every topic some member subscribes to, sorted by name.
    pub topics: Vec<Topic>,
    /// Input [`Input::Lag`] (ABI v2 only): the group's committed offset and the end offset of
    /// every partition, one entry per topic of `topics` (same index). Empty when the module did
    /// not declare the input; see [`AssignRequest::lag`].
    #[serde(skip)]
    pub lag: Vec<TopicOffsets>,
    /// Input [`Input::State`] (ABI v2 only): the `state` this module's last answer for this
    /// group kept, as it returned it; `None` in the group's first rebalance under this module,
    /// after an answer that kept none, or without the input. The host keeps it with the group
    /// (across restarts) and drops it when the group's strategy changes; an answer the host
    /// refused, or a round the fallback assigned, leaves it as it was.
    #[serde(skip)]
    pub state: Option<Vec<u8>>,
    /// Lookups that came with the request (ABI v2): each member's subscription, members in
    /// Kafka's order, subscribers by topic. Filled when the SDK decodes a v2 request, empty in
    /// a request built by hand, where the helpers compute what they need instead; a clone
    /// drops it (so a changed clone never reads stale lookups). Leave it to `Default`.
    #[serde(skip)]
    #[doc(hidden)]
    pub index: Index,
}

/// A member of the group as the module sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Member {
    /// The id the coordinator gave the member (unique in the group); answers name members by
    /// it.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// The `client.id` from the member's request header (not unique: many consumers of one
    /// application share it). Kafka's order of members ([`AssignRequest::members_in_kafka_order`])
    /// does not use it; it is for logging.
    pub client_id: String,
    /// The member's address as Kafka prints it (`/10.0.0.7`): informational, never an identity.
    pub client_host: String,
    /// The consumer's `client.rack` (Subscription v3+), `None` when it sent none. Rack-aware
    /// strategies compare it with [`Topic::partition_racks`].
    pub rack_id: Option<String>,
    /// Subscribed topic names, sorted. Shared (an `Arc`) between the members with the same
    /// subscription, as ABI v2 sends it once for all of them: build one with
    /// `vec!["orders".into()].into()`, `["orders".into()].into()` or by collecting names.
    #[serde(with = "shared_strings")]
    pub topics: Arc<[String]>,
    /// Partitions the member says it owns (Subscription v1-v3); empty when absent.
    #[serde(default)]
    pub owned_partitions: Vec<TopicPartitions>,
    /// Generation in which `owned_partitions` were held (Subscription v2+); -1 when absent.
    #[serde(default = "minus_one")]
    pub owned_generation: i32,
    /// What the host gave this member in the last generation; empty if the member is new.
    #[serde(default)]
    pub previous_assignment: Vec<TopicPartitions>,
    /// The Subscription's `userData` for the selected protocol, as the client sent it (Kafka's
    /// `StickyAssignor` keeps its previous assignment there); `None` when it sent none. Opaque
    /// to the host.
    #[serde(default, with = "serde_bytes")]
    pub user_data: Option<Vec<u8>>,
    /// The raw protocol metadata the member sent for the selected protocol.
    #[serde(default, with = "serde_bytes")]
    pub metadata: Vec<u8>,
    /// Input [`Input::Weights`] (ABI v2 only): the member's weight from the operator's
    /// parameters (`weight.instance.<group.instance.id>`, `weight.client.<client.id>`,
    /// `weight.default`; 1 when none applies). `None` when not sent; see [`Member::weight`].
    #[serde(skip)]
    pub weight: Option<u32>,
}

fn minus_one() -> i32 {
    -1
}

/// `Arc<[String]>` as a plain array of strings (serde's own impl needs its `rc` feature, which
/// would change every crate depending on serde in the host's build).
mod shared_strings {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(value: &Arc<[String]>, s: S) -> Result<S::Ok, S::Error> {
        value[..].serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[String]>, D::Error> {
        Vec::<String>::deserialize(d).map(Arc::from)
    }
}

/// A topic some member subscribes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Topic {
    /// The topic's name, unique in the request; members' `topics` name topics by it.
    pub name: String,
    /// Partitions are numbered `0..partition_count`; assigning one outside that range fails
    /// the call.
    pub partition_count: i32,
    /// Empty when unknown, else one list of replica racks per partition.
    #[serde(default)]
    pub partition_racks: Vec<Vec<String>>,
}

/// The offsets of one topic's partitions (input [`Input::Lag`]): index = partition, -1 where
/// unknown (no committed offset, or an end offset the host does not know).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicOffsets {
    /// The group's committed offset of each partition, -1 when it has none.
    pub committed: Vec<i64>,
    /// The end (high watermark) offset of each partition, -1 when the host does not know it
    /// (standalone, the host stores no messages, so it knows none).
    pub end: Vec<i64>,
}

/// Partitions of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TopicPartitions {
    /// The topic's name.
    pub topic: String,
    /// Partition numbers of that topic. In an answer the order does not matter (the host
    /// sorts before sending to the client), but a partition listed twice across the answer
    /// fails the call.
    pub partitions: Vec<i32>,
}

/// A module's answer. When `error` is set the call failed and the rest is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssignResponse {
    /// Set when the strategy could not assign: the message is recorded where the operator sees
    /// failures (logs, metrics, `module status`) and the group is assigned by the host's
    /// fallback strategy instead.
    #[serde(default)]
    pub error: Option<String>,
    /// At most one entry per member of the request (a second entry for a member, or an entry
    /// for a member not in the group, fails the call). A member without an entry gets nothing.
    #[serde(default)]
    pub assignments: Vec<MemberAssignment>,
    /// Ask the host to start another rebalance this many milliseconds after this one completes.
    /// A later generation's answer replaces the request: one without it cancels a follow-up
    /// not yet started.
    #[serde(default)]
    pub rebalance_after_ms: Option<u64>,
    /// ABI v2, input [`Input::State`]: bytes for the host to keep with the group and send back
    /// in the next request ([`AssignRequest::state`]); `None` keeps nothing. At most
    /// [`MAX_STATE_BYTES`]. Opaque to the host.
    #[serde(skip)]
    pub state: Option<Vec<u8>>,
}

/// The largest [`AssignResponse::state`] the host keeps; a larger one refuses the answer.
pub const MAX_STATE_BYTES: usize = 4 << 20;

/// One member's share of the assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MemberAssignment {
    /// A [`Member::member_id`] of the request.
    pub member_id: String,
    /// Only topics this member subscribes to and partitions that exist; for a cooperative
    /// strategy, no partition another member still owns (the host refuses the whole answer
    /// otherwise, see [`RebalanceProtocol`]).
    pub partitions: Vec<TopicPartitions>,
    /// Sent to the member as the Assignment's `userData`, as is; `None` sends none.
    #[serde(default, with = "serde_bytes")]
    pub user_data: Option<Vec<u8>>,
    /// Raw assignment bytes, for protocol types other than `consumer`.
    #[serde(default, with = "serde_bytes")]
    pub metadata: Option<Vec<u8>>,
}

/// What a module says about itself (`assignor_describe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssignorInfo {
    /// The protocol name the author meant (the attribute's `name`). Informational: the host
    /// registers a module under the name it is uploaded with.
    pub name: String,
    /// The author's version string, shown in `module ls`; the host numbers versions itself.
    pub version: String,
    /// One line for `module ls`.
    pub description: String,
    /// Decides which output checks the host applies to every call of this module.
    pub rebalance_protocol: RebalanceProtocol,
    /// The optional inputs the module reads (ABI v2): the host sends only these. Empty (the
    /// default) reads none of them; a v1 module gets every v1 field whatever it says here.
    #[serde(default)]
    pub inputs: Vec<Input>,
    /// The module's answer to a change of membership may be applied without a rebalance when
    /// it moves nothing from a member that stays (docs/abi.md, "In-place rounds"): the host
    /// then calls it at the current generation when a member leaves or joins a settled group,
    /// applies a fitting answer in place, and drops an answer (with its `state`) that does not
    /// fit, rebalancing instead. Absent (older modules): `false`.
    #[serde(default)]
    pub in_place: bool,
}

/// An optional input of an ABI v2 request: sent only to a module whose [`AssignorInfo`]
/// lists it, so a strategy that does not read it does not pay for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    /// Each member's `client_id` and `client_host`.
    Client,
    /// Each member's `rack_id` and each topic's `partition_racks` (rack-aware strategies).
    Racks,
    /// Each member's Subscription `user_data`.
    UserData,
    /// Each member's raw protocol `metadata`.
    Metadata,
    /// Committed and end offsets of every partition ([`AssignRequest::lag`]).
    Lag,
    /// Each member's weight from the operator's parameters ([`Member::weight`]).
    Weights,
    /// The bytes this module's last answer for the group kept ([`AssignRequest::state`],
    /// [`AssignResponse::state`]): what a strategy remembers between rebalances.
    State,
}

impl Input {
    /// Every input, in wire order.
    pub const ALL: [Input; 7] = [
        Input::Client,
        Input::Racks,
        Input::UserData,
        Input::Metadata,
        Input::Lag,
        Input::Weights,
        Input::State,
    ];

    /// The name in `assignor_describe`'s `inputs` and in the attribute's `inputs = "..."`.
    pub fn name(self) -> &'static str {
        match self {
            Input::Client => "client",
            Input::Racks => "racks",
            Input::UserData => "user_data",
            Input::Metadata => "metadata",
            Input::Lag => "lag",
            Input::Weights => "weights",
            Input::State => "state",
        }
    }

    /// The input called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Input> {
        Input::ALL.into_iter().find(|i| i.name() == name)
    }
}

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// KIP-429 rebalance protocol of a strategy. For `Cooperative` the host refuses an assignment
/// that hands a partition to a new owner while another member still lists it as owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RebalanceProtocol {
    /// Members give up every partition before rejoining, so any valid assignment is safe (and
    /// what a module without `assignor_describe` is taken to be).
    #[default]
    Eager,
    /// KIP-429: members keep their partitions while rejoining, so a partition changes owner in
    /// two rounds: revoked by the old owner in one, given to the new one in the next.
    Cooperative,
}

/// Encodes a message the way the ABI wants it: MessagePack with named fields.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    rmp_serde::to_vec_named(value)
}

/// Decodes a MessagePack message; unknown fields are ignored.
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, rmp_serde::decode::Error> {
    rmp_serde::from_slice(bytes)
}
