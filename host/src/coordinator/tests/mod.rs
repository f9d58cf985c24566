//! Coordinator tests: the conformance checklist of `kafka-coordinator-spec.md` section 13 (one
//! test per item, named after it), the host-side differences, and a deterministic simulation.

mod builders;
mod consumer_context;
mod consumer_epochs;
mod consumer_items;
mod consumer_mixed;
mod consumer_reconcile;
mod consumer_restore;
pub(crate) mod context;
mod host;
mod host_admin;
mod host_cooperative;
mod in_place;
mod items_join;
mod items_offsets;
mod items_static;
mod items_sync;
mod module_state;
mod offset_delete;
mod simulation;
mod stabilize;
mod txn_offsets;
