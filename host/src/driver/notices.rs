//! Where the coordinator's notices go: a [`NoticeSink`] (the metrics code counts them), and
//! the default [`TracingNotices`] that logs each with structured fields.

use crate::coordinator::Notice;

/// Receives every notice of every shard, in order per shard. Called on the shard's task: keep
/// it cheap (count, log), never block.
pub trait NoticeSink: Send + Sync + 'static {
    fn notice(&self, notice: &Notice);
}

/// Logs notices with `tracing` fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingNotices;

impl NoticeSink for TracingNotices {
    fn notice(&self, notice: &Notice) {
        match notice {
            Notice::StateChanged { group, from, to } => {
                tracing::debug!(group = %group, from = %from, to = %to, "group state changed")
            }
            Notice::RebalanceStarted {
                group,
                generation,
                reason,
            } => tracing::info!(group = %group, generation, reason = %reason, "rebalance started"),
            Notice::GenerationCompleted {
                group,
                generation,
                members,
                protocol,
                strategy,
            } => tracing::info!(group = %group, generation, members, protocol = ?protocol,
                module = ?strategy, "generation completed"),
            Notice::MemberRemoved {
                group,
                member,
                reason,
            } => {
                tracing::info!(group = %group, member = %member, reason = ?reason, "member removed")
            }
            Notice::AssignorFinished {
                group,
                generation,
                module,
                version,
                outcome,
                duration_us,
                fuel,
                fallback,
            } => tracing::info!(group = %group, generation, module = %module, version = ?version,
                outcome = ?outcome, duration_us, fuel, fallback, "assignor run finished"),
            Notice::InPlaceRound {
                group,
                generation,
                applied,
            } => tracing::info!(group = %group, generation, applied, "in-place round ended"),
            Notice::AssignorUnavailable {
                group,
                epoch,
                requested,
                fallback,
            } => tracing::warn!(group = %group, epoch, requested = %requested, module = %fallback,
                "no module serves the group's assignor; the fallback computes its target"),
        }
    }
}
