//! Where groups' saved state goes when not in this host's store: in a cluster of hosts, the
//! cluster's group log (`cluster::GroupLog`), so the node that gains a group's shard finds
//! the group at its generation and epochs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::coordinator::SavedGroup;

/// A future that borrows what made it; awaited where it is made.
pub type Borrowed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Groups' saved state kept outside this host. Every call is bounded in time by the
/// implementation; an `Err` is a message for the logs (the write is then missing: a node that
/// gains the shard finds the group as it was before it).
pub trait RemoteGroups: Send + Sync + 'static {
    /// Writes `group` as it is now, resolving once the write is acknowledged.
    fn save(&self, group: Arc<SavedGroup>) -> Borrowed<'_, Result<(), String>>;
    /// Forgets the group (deleted by DeleteGroups).
    fn delete(&self, group_id: String) -> Borrowed<'_, Result<(), String>>;
}
