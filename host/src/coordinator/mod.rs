//! Sans-io group coordinator: Kafka's group protocols with host-side assignment.
//!
//! The coordinator decides; the [`crate::driver`] acts. One [`Coordinator`] owns the groups of
//! one shard and exposes a single entry point, `handle(now, Event) -> Vec<Effect>`. It never
//! reads a clock, touches a socket, spawns a thread or calls wasmtime: time is an argument,
//! parked responses are stored [`ReplyTo`] tokens answered later by [`Effect::Respond`], running
//! an assignor is [`Effect::RunAssignor`] and its result comes back as [`Event::AssignorDone`].
//!
//! # Contract with the wire layer (`kafka/`)
//!
//! The per-API files decode a request and hand the driver one [`GroupRequest`] per group, with
//! a [`RequestContext`]; the driver answers with the matching [`GroupResponse`], typed per
//! request by [`GroupCall`] (`api.rs`).
//!
//! # The ladder
//!
//! Each file imports only files below it, so the coordinator has no import circle (a test
//! reads the `use` lines and checks it, see `docs/architecture.md`):
//! 1. plain data and settings: `api` (requests, responses, times, reply tokens), `config`,
//!    `view` (topics and strategies), `ids`, `saved` (what is kept of a group, versioned), `committed`
//!    (offsets), `classic_state` (a classic group's states); then `event` (events, effects, timers, notices, reasons);
//! 2. `context` (`Ctx`: the event's time, the shard's environment, the effects so
//!    far) and `responses` (version-shaped answers); then `run`, one assignor run for every
//!    group type (the call, its deadline, its records, the fallback, `native_range`);
//! 3. the group protocols: [`classic`] (Kafka's classic protocol, with host-side
//!    assignment) and [`consumer`] (KIP-848's consumer protocol) beside it;
//! 4. the APIs every protocol shares: `offset_commit`, `txn_offset_commit`, `offset_fetch`,
//!    `offset_delete`, `describe_groups`, `list_groups`, `delete_groups`, and `admin` (the
//!    operator's views and changes). Offsets are not the coordinator's state: it decides whether a commit or a
//!    deletion is valid and emits the write; the driver keeps them (`committed::OffsetTable`
//!    in standalone mode, the upstream cluster in proxy mode);
//! 5. `dispatch`: [`Coordinator`], which routes each event to its handler.
//!
//! The checklist tests in `tests/` are named after the conformance items of Kafka's
//! coordinator (`items_*.rs`) and the host's own behaviour (`host*.rs`).

mod admin;
mod api;
pub mod classic;
mod classic_state;
mod committed;
mod config;
pub mod consumer;
mod context;
mod delete_groups;
mod describe_groups;
mod dispatch;
mod event;
mod held;
mod ids;
mod list_groups;
mod native_range;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod record;
mod responses;
mod run;
mod saved;
mod txn_offset_commit;
pub mod view;

#[cfg(test)]
pub(crate) mod tests;

pub use admin::{
    AdminError, DeferredDetail, GroupDetail, GroupSummary, HeldDetail, MemberDetail,
    check_group_config,
};
pub use api::{
    CLASSIC, ConsumerGroupDescribe, DeleteGroup, DescribeGroup, GroupCall, GroupRequest,
    GroupResponse, Millis, OffsetFetchQuery, OffsetFetchResult, PartitionOffset, ReplyTo,
    RequestContext,
};
pub use classic::{GroupState, HOST_LEADER, RebalanceRecord, RunRecord};
pub use committed::{Committed, OffsetTable};
pub use config::{CoordinatorConfig, DEFAULT_STABILIZE_MAX_FACTOR, GroupConfig, MAX_STABILIZE_MS};
pub use dispatch::Coordinator;
pub use event::{
    AssignorDone, AssignorFailure, AssignorOutput, AssignorRun, Effect, Event, Notice,
    RebalanceReason, RemovalReason, RestoredGroup, RunOutcome, TimerKey,
};
pub use held::Held;
pub use responses::{error_response, txn_offset_commit_all};
pub use saved::{
    AssignorRecord, ClassicGroupRecord, ClassicMemberRecord, ConsumerGroupRecord,
    ConsumerMemberRecord, DeferredRebalance, ModuleState, OffsetRecord, SavedGroup,
    SavedGroupError,
};
