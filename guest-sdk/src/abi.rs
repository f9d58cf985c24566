//! Guest ABI v1: the messages that cross the host/module boundary.
//!
//! These types are the contract between assignor-host and every assignor module, in any
//! language, as `docs/abi.md` specifies it: the host and the SDK both encode and decode with
//! them, and `guest-sdk/tests/abi_doc.rs` keeps the two equal. Field names are the wire names
//! (MessagePack maps with named fields), so fields can be added without breaking old modules:
//! a reader ignores fields it does not know, and a field added in a later revision of v1 is
//! optional (`#[serde(default)]`). Byte strings travel as MessagePack `bin`, never as arrays
//! of integers. Partitions travel as integer arrays grouped by topic so a 10,000-member group
//! with 500,000 partitions encodes in a few milliseconds.
//!
//! `docs/abi.md` also specifies the exports a module provides ("Exports and the import"), the
//! order the host calls them in ("One call"), the limits and the output checks.

use serde::{Deserialize, Serialize};

/// The ABI version this crate speaks. A module's `assignor_abi_version` export returns it, and
/// the host refuses a module that returns anything else.
pub const ABI_VERSION: u32 = 1;

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
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
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
    /// Always [`ABI_VERSION`] for this crate.
    pub abi_version: u32,
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
    pub members: Vec<Member>,
    /// Every topic some member subscribes to, sorted by name.
    pub topics: Vec<Topic>,
}

/// A member of the group as the module sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Member {
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rack_id: Option<String>,
    /// Subscribed topic names.
    pub topics: Vec<String>,
    /// Partitions the member says it owns (Subscription v1-v3); empty when absent.
    #[serde(default)]
    pub owned_partitions: Vec<TopicPartitions>,
    /// Generation in which `owned_partitions` were held (Subscription v2+); -1 when absent.
    #[serde(default = "minus_one")]
    pub owned_generation: i32,
    /// What the host gave this member in the last generation; empty if the member is new.
    #[serde(default)]
    pub previous_assignment: Vec<TopicPartitions>,
    #[serde(default, with = "serde_bytes")]
    pub user_data: Option<Vec<u8>>,
    /// The raw protocol metadata the member sent for the selected protocol.
    #[serde(default, with = "serde_bytes")]
    pub metadata: Vec<u8>,
}

fn minus_one() -> i32 {
    -1
}

/// A topic some member subscribes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Topic {
    pub name: String,
    pub partition_count: i32,
    /// Empty when unknown, else one list of replica racks per partition.
    #[serde(default)]
    pub partition_racks: Vec<Vec<String>>,
}

/// Partitions of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TopicPartitions {
    pub topic: String,
    pub partitions: Vec<i32>,
}

/// A module's answer. When `error` is set the call failed and the rest is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssignResponse {
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub assignments: Vec<MemberAssignment>,
    /// Ask the host to start another rebalance this many milliseconds after this one completes.
    #[serde(default)]
    pub rebalance_after_ms: Option<u64>,
}

/// One member's share of the assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MemberAssignment {
    pub member_id: String,
    pub partitions: Vec<TopicPartitions>,
    #[serde(default, with = "serde_bytes")]
    pub user_data: Option<Vec<u8>>,
    /// Raw assignment bytes, for protocol types other than `consumer`.
    #[serde(default, with = "serde_bytes")]
    pub metadata: Option<Vec<u8>>,
}

/// What a module says about itself (`assignor_describe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssignorInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    pub rebalance_protocol: RebalanceProtocol,
}

/// KIP-429 rebalance protocol of a strategy. For `Cooperative` the host refuses an assignment
/// that hands a partition to a new owner while another member still lists it as owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RebalanceProtocol {
    #[default]
    Eager,
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
