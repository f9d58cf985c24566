//! KIP-848's consumer group protocol (ConsumerGroupHeartbeat, API 68), beside the classic
//! one: Kafka's `ConsumerGroup` with member and group epochs, a target assignment computed by
//! the wasm module the group names in `group.remote.assignor`, and reconciliation as in
//! Kafka's `CurrentAssignmentBuilder`, so no partition ever has two owners whatever the module
//! returns.
//!
//! Differences from Kafka, on purpose:
//! - the target is computed by a module off the shard, so the heartbeat that moved the group
//!   epoch waits for it (bounded, `heartbeat.rs`);
//! - an assignor name with no module is served by the fallback module (and said so), a failed
//!   module keeps the previous target; `strict` gives Kafka's UNSUPPORTED_ASSIGNOR and
//!   UNKNOWN_SERVER_ERROR (`target.rs`);
//! - a consumer group is written at most once a second, whole (`snapshot`), not as Kafka's
//!   record per change: a crash can lose the last second, whose members are then fenced and
//!   rejoin.
//!
//! The files, from the bottom of the ladder up: `partitions` (partition sets by topic name),
//! `member`, `group`, `reconcile` (the pure `CurrentAssignmentBuilder`), `respond` (applying
//! reconciliation and the answers), `twins` (a restarted consumer's next target waits for its
//! previous process), `target` (the module run and its result), `membership` (fences, static
//! leave and replacement, member timers), `refresh` (catalog and module changes),
//! `snapshot` (the persisted shape, when it is written, and the restore), then the APIs:
//! `heartbeat`, and `classic` (JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic
//! members in a consumer group: Kafka's mixed groups), and `upgrade`
//! (a classic group with members becoming a consumer group when a consumer-protocol member
//! joins: Kafka's online upgrade).

pub(super) mod admin;
pub(super) mod classic;
pub(super) mod describe;
pub(super) mod group;
pub(super) mod heartbeat;
pub(super) mod member;
pub(super) mod membership;
pub(super) mod partitions;
pub(super) mod reconcile;
pub(super) mod refresh;
pub(super) mod respond;
pub(super) mod snapshot;
pub(super) mod target;
pub(super) mod twins;
pub(super) mod upgrade;

pub use group::ConsumerGroupState;
pub use member::MemberState;
