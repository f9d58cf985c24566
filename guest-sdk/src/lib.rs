//! # assignor-sdk
//!
//! Write a Kafka partition assignor in Rust, test it natively with `cargo test`, build it to
//! `wasm32-unknown-unknown`, and upload it to a running assignor-host. The host runs it in a
//! sandbox whenever a consumer group that selected its protocol name rebalances.
//!
//! ## Writing a strategy
//!
//! One function from the group to an assignment, marked with [`assignor`]:
//!
//! ```
//! use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment};
//!
//! /// Every topic's partitions dealt one by one over its subscribers, in Kafka's member order.
//! #[assignor(
//!     name = "deal",
//!     version = "0.1.0",
//!     description = "each topic dealt over its subscribers",
//!     protocol = "eager"
//! )]
//! pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
//!     let mut assignment = Assignment::new(request); // every member, nothing assigned yet
//!     for topic in &request.topics {
//!         let subscribers = request.subscribers(&topic.name);
//!         if subscribers.is_empty() {
//!             continue;
//!         }
//!         for partition in topic.partitions() {
//!             let member = subscribers[partition as usize % subscribers.len()];
//!             assignment.assign(&member.member_id, &topic.name, partition);
//!         }
//!     }
//!     assignor_sdk::debug!("assigned {} topics", request.topics.len());
//!     Ok(assignment)
//! }
//! # fn main() {}
//! ```
//!
//! The attribute leaves the function exactly as written, so a unit test calls it directly.
//! For `wasm32` targets only, it adds the exports the host calls (ABI v1, see [`abi`]):
//! `assignor_abi_version`, `assignor_alloc`, `assignor_assign` and `assignor_describe`. The
//! keys are all required: `name` is the protocol name consumers put in
//! `partition.assignment.strategy`, `version` and `description` show in `module ls`, and
//! `protocol` is `"eager"` or `"cooperative"` (KIP-429; for cooperative strategies the host
//! refuses an assignment that moves a partition a member still owns). One attribute per crate.
//!
//! What the function gets:
//! - [`AssignRequest`]: the group (members sorted by id, topics by name), operator `params`,
//!   `now_ms`; helpers [`AssignRequest::member`], [`AssignRequest::topic`],
//!   [`AssignRequest::subscribers`], [`AssignRequest::members_in_kafka_order`],
//!   [`AssignRequest::subscription`].
//! - [`Member`]: subscription ([`Member::subscribes_to`]), rack ([`Member::rack`]), and for
//!   sticky strategies what it owns ([`Member::owned`], [`Member::owns`]) and what the host gave
//!   it last time ([`Member::previously_assigned`]).
//! - [`Topic`]: [`Topic::partitions`] (`0..partition_count`) and [`Topic::racks_of`].
//!
//! What it returns: an [`Assignment`] (every member of the request gets an entry, partitions
//! come out sorted and grouped by topic; [`Assignment::rebalance_after_ms`] asks for a
//! follow-up rebalance), or an [`AssignError`] whose message the operator sees; the host then
//! assigns with its fallback strategy. A panic is logged through the host and the call fails
//! the same way. Log with [`error!`], [`warn!`], [`info!`], [`debug!`], [`trace!`]: into the
//! host's tracing in wasm, to stderr natively.
//!
//! There is no clock, no randomness and no I/O in the sandbox: a strategy is a pure function
//! of its input (use `request.now_ms` for time), so the same group always gets the same answer.
//!
//! ## Building
//!
//! The crate is a `cdylib` (for wasm) and an `rlib` (for tests):
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib", "rlib"]
//!
//! [dependencies]
//! assignor-sdk = "0.1"
//!
//! [profile.wasm]
//! inherits = "release"
//! opt-level = 3
//! lto = true
//! codegen-units = 1
//! panic = "abort"
//! debug = false
//! strip = true
//! ```
//!
//! and `.cargo/config.toml` next to it gives the module the 64 KiB stack the host is tuned for:
//!
//! ```toml
//! [target.wasm32-unknown-unknown]
//! rustflags = ["-C", "link-arg=-zstack-size=65536"]
//! ```
//!
//! Then `cargo build --target wasm32-unknown-unknown --profile wasm` writes
//! `target/wasm32-unknown-unknown/wasm/<crate_name>.wasm`, ready for
//! `assignor-host module push <name> <file>`. `guest-sdk/README.md` walks through it.
//!
//! ## Layout
//!
//! - [`abi`]: the ABI v1 messages and constants, the contract with the host (the host depends
//!   on this crate with `default-features = false` and gets only the types and helpers).
//! - `request` (methods on [`AssignRequest`], [`Member`], [`Topic`]) and
//!   [`kafka_member_order`]: read helpers.
//! - [`Assignment`], [`AssignError`]: what a strategy returns.
//! - [`log`] and the log macros (feature `guest`).
//! - [`glue`]: what the exports do, as native functions (feature `guest`).
//! - [`assignor`]: the attribute (feature `guest`, from `assignor-sdk-macros`).

// Every public item is part of an author's manual: say what it guarantees (tests/run denies
// warnings, so an undocumented one fails the build).
#![warn(missing_docs)]

pub mod abi;
mod assignment;
mod bump;
mod hash;
mod request;

#[cfg(feature = "guest")]
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[cfg(feature = "guest")]
pub mod glue;
#[cfg(feature = "guest")]
pub mod log;

pub use abi::order::{java_string_order, kafka_member_order};
pub use abi::*;
pub use assignment::{AssignError, Assignment};
pub use bump::BumpAllocator;
pub use request::SubscriptionGroup;

/// Marks the function that computes a group's assignment and exports it to the host.
///
/// ```text
/// #[assignor(name = "range", version = "1.0.0", description = "...", protocol = "eager")]
/// pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> { ... }
/// ```
///
/// See the [crate docs](crate) for the whole picture.
#[cfg(feature = "guest")]
pub use assignor_sdk_macros::assignor;

/// The Rust examples of `guest-sdk/README.md`, compiled as doctests so the guide stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
