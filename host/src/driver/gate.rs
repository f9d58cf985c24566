//! Which groups this host node may coordinate. Standalone, and in proxy mode with one node,
//! every group (no gate is set). In a cluster of host nodes (`crate::cluster`) only the groups
//! of the shards this node holds, and only while its lease on them lasts: the shard task asks
//! the gate before each request, so a request for any other group is answered
//! NOT_COORDINATOR and its client looks the coordinator up again. The check runs in the shard,
//! in the order of its queue, so no request reaches a group after [`super::Driver::release`]
//! gave it up.

use std::sync::Arc;

/// The answer to "is this node the coordinator of this group now?".
pub trait Gate: Send + Sync + 'static {
    /// Whether requests for `group_id` are served here now.
    fn serves(&self, group_id: &str) -> bool;
}

/// Which groups a [`super::Driver::release`] gives up: true for each group to drop.
pub type Releasing = Arc<dyn Fn(&str) -> bool + Send + Sync>;
