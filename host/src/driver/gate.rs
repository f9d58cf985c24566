//! Which groups this host node may coordinate. Standalone, and in proxy mode with one node,
//! every group (no gate is set). In a cluster of host nodes (`crate::cluster`) only the groups
//! of the shards this node holds, and only while its lease on them lasts: the shard task asks
//! the gate before each request: a group another node coordinates is answered NOT_COORDINATOR
//! (its client looks the coordinator up again), one this node is about to coordinate, or that
//! nobody coordinates at the moment, COORDINATOR_LOAD_IN_PROGRESS (its client retries here, as
//! it does while a Kafka broker loads a `__consumer_offsets` partition). The check runs in the
//! shard, in the order of its queue, so no request reaches a group after
//! [`super::Driver::release`] gave it up.

use std::sync::Arc;

/// What to do with a request for one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// This node coordinates the group now.
    Serve,
    /// Not now, but ask here again: COORDINATOR_LOAD_IN_PROGRESS (NOT_COORDINATOR for a
    /// member's Heartbeat, SyncGroup and LeaveGroup, whose clients then find this node again).
    Loading,
    /// Another node coordinates it: NOT_COORDINATOR.
    Elsewhere,
}

/// The answer to "is this node the coordinator of this group now?".
pub trait Gate: Send + Sync + 'static {
    /// What requests for `group_id` get here now.
    fn admit(&self, group_id: &str) -> Admission;
}

/// Which groups a [`super::Driver::release`] gives up: true for each group to drop.
pub type Releasing = Arc<dyn Fn(&str) -> bool + Send + Sync>;
