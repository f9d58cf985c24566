//! The classic group states, with Kafka's names and legal transitions (`ClassicGroupState`).

use serde::{Deserialize, Serialize};

/// The state of a classic group. Wire strings are the variant names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GroupState {
    /// No members (a new group, a group whose members all left, or a group that only stores
    /// offsets). JoinGroup adds members and starts the initial (delayed) rebalance; SyncGroup,
    /// Heartbeat and LeaveGroup answer UNKNOWN_MEMBER_ID; OffsetCommit with generation -1 is
    /// accepted. Next: PreparingRebalance, Dead.
    Empty,
    /// Waiting for every known member to (re)join. JoinGroup is parked; SyncGroup and Heartbeat
    /// answer REBALANCE_IN_PROGRESS; LeaveGroup removes and may complete the join phase.
    /// Next: CompletingRebalance (members left), Empty (nobody left), Dead.
    PreparingRebalance,
    /// Join phase done, generation bumped, waiting for the assignment (the host's assignor run,
    /// or a client leader's SyncGroup in relay mode). SyncGroup is parked; Heartbeat answers
    /// NONE; OffsetCommit answers REBALANCE_IN_PROGRESS. Next: Stable, PreparingRebalance, Dead.
    CompletingRebalance,
    /// Assignment installed. SyncGroup returns the stored assignment; a changed JoinGroup starts
    /// a rebalance. Next: PreparingRebalance, Dead.
    Stable,
    /// Deleted or unloaded; every request answers COORDINATOR_NOT_AVAILABLE. Next: none.
    Dead,
}

impl GroupState {
    /// Kafka's wire string (DescribeGroups, ListGroups).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// Whether `self -> to` is a transition Kafka allows (`ClassicGroupState.validPreviousStates`).
    pub fn can_transition_to(self, to: GroupState) -> bool {
        use GroupState::*;
        match to {
            PreparingRebalance => matches!(self, Stable | CompletingRebalance | Empty),
            CompletingRebalance => self == PreparingRebalance,
            Stable => self == CompletingRebalance,
            Empty => self == PreparingRebalance,
            Dead => true,
        }
    }
}

impl std::fmt::Display for GroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
