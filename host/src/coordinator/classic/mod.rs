//! Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), with
//! host-side assignment: one of the group protocols the coordinator serves (KIP-848's consumer
//! protocol comes beside it).
//!
//! Everything follows Kafka's classic coordinator (`GroupMetadataManager`, `ClassicGroup`)
//! except where host-side assignment needs otherwise, on purpose:
//! - **Host mode**: when a module serves the selected protocol, JoinGroup names
//!   [`HOST_LEADER`] (never a member id) and nobody gets the member list, so every client is
//!   a follower; a member's identical rejoin in Stable never forces a rebalance (there is no
//!   client leader to ask for one); the assignment comes from an assignor run
//!   (`assignment.rs`), and each member is answered with its own protocol spelling and a
//!   complete Assignment (never zero bytes, only subscribed topics, written with the member's
//!   Subscription version) (`install.rs`).
//! - **Relay mode**: when no module serves the common protocol, a real member leads and its
//!   SyncGroup assignments are relayed exactly as Kafka does (`sync_group.rs`).
//! - **Strategy choice** (`protocol.rs`): Kafka's vote over alias-normalised names, restricted
//!   to names with a module; an operator override computes the assignment while members keep
//!   their voted spelling; ties go to the smallest name.
//! - **Fallback chain** (`assignment.rs`): module, then the configured fallback, then a native
//!   range, each step bounded so the chain ends within the rebalance timeout; results for an
//!   old generation or run are dropped.
//! - **Invalid consumer metadata**: the member stays and subscribes to nothing (an empty,
//!   well-formed assignment); in relay mode the bytes are relayed untouched.
//! - **Host-started rebalances** (`rebalance.rs`): a subscribed topic's partition count
//!   changing, a topic the group subscribes to appearing, a module's `rebalance_after_ms`, an
//!   operator trigger.
//! - **In-place rounds** (`in_place.rs`): a module declaring `in_place` (`hold-departed`) gets
//!   a departure or a returning member of a Stable group applied without a rebalance when its
//!   answer moves nothing from a member that stayed.
//! - **Rebalance stabilisation** (`stabilize.rs`, an operator option): a Stable group defers
//!   the rebalance of a membership change until membership has been quiet for a while.
//! - Parked requests superseded by a resent JoinGroup or SyncGroup are answered
//!   REBALANCE_IN_PROGRESS (Kafka drops them), so the driver never holds a dead reply.
//!
//! The files, from the bottom of the ladder up: `state`, `member`, `group` (with `snapshot`,
//! its persisted shape), `protocol` (the vote), `install` (installing a generation),
//! `assignment` (the assignor run and its fallbacks), `in_place` (a membership change tried
//! without a rebalance), `stabilize` (the deferral window),
//! `rebalance` (the join phase, timers, removals), then one file per API: `join_group`, `sync_group`, `heartbeat`, `leave_group`.

pub(super) mod assignment;
pub(super) mod group;
pub(super) mod heartbeat;
pub(super) mod in_place;
pub(super) mod install;
pub(super) mod join_group;
pub(super) mod leave_group;
pub(super) mod member;
pub(super) mod protocol;
pub(super) mod rebalance;
pub(super) mod snapshot;
pub(super) mod stabilize;
pub(super) mod sync_group;

pub use crate::coordinator::classic_state::GroupState;
pub use crate::coordinator::record::{RebalanceRecord, RunRecord};
pub use assignment::build_request;
pub use group::{HISTORY_LEN, HOST_LEADER, Mode};
