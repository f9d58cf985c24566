//! One member of a consumer group (Kafka's `ConsumerGroupMember`): identity, subscription,
//! its epochs and reconciliation state with the partitions it owns ([`Current`]), its target,
//! and its request waiting for a target ([`Waiting`]). A member speaks the consumer protocol,
//! or the classic one ([`Classic`]: Kafka's upgrade path, served by `classic.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;

use regex::Regex;

use super::partitions::Partitions;
use crate::coordinator::api::ReplyTo;

/// Kafka's `MemberState`: where a member is in its reconciliation towards the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// Owns exactly what it may own at its epoch; moves on when a newer target exists.
    Stable,
    /// Must stop owning `pending_revocation` before its epoch advances; a rebalance timer
    /// fences it if it does not within its rebalance timeout.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions other members still own.
    UnreleasedPartitions,
}

impl MemberState {
    /// The name the admin API shows (Kafka's enum names, lower case).
    pub fn as_str(self) -> &'static str {
        match self {
            MemberState::Stable => "stable",
            MemberState::UnrevokedPartitions => "unrevoked_partitions",
            MemberState::UnreleasedPartitions => "unreleased_partitions",
        }
    }
}

/// A member's current assignment: what [`super::reconcile::reconcile`] reads and returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    /// The partitions the member may own now (what the heartbeat answer carries).
    pub assigned: Partitions,
    /// Partitions the member still owns and must give up.
    pub pending_revocation: Partitions,
}

impl Current {
    /// A member that just joined: epoch 0, owning nothing.
    pub fn joining() -> Current {
        Current {
            epoch: 0,
            previous_epoch: 0,
            state: MemberState::Stable,
            assigned: Partitions::new(),
            pending_revocation: Partitions::new(),
        }
    }

    /// Kafka's `isReconciledTo`: Stable at the target epoch.
    pub fn is_reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.epoch == target_epoch
    }

    /// What the member owns: assigned and pending revocation.
    pub fn owned(&self) -> Partitions {
        self.assigned.union(&self.pending_revocation)
    }
}

/// A regular-expression subscription (v1): the pattern as sent, compiled with full-match
/// semantics (Kafka uses RE2/J's `matches()`), and the catalog topics it matches now.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub pattern: String,
    pub regex: Arc<Regex>,
    pub matched: BTreeSet<String>,
}

/// What a classic member of a consumer group keeps besides a member's state (Kafka's
/// `ClassicMemberMetadata`): its JoinGroup's session timeout and protocols. Its assignment
/// reaches it through SyncGroup, and it learns that the assignment moved from its Heartbeat
/// answer (REBALANCE_IN_PROGRESS), then rejoins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classic {
    pub session_timeout_ms: i32,
    /// The protocol names it proposed, in its order; the first is the one its answers name.
    pub protocols: Vec<String>,
    /// Its Subscription's embedded-protocol version: its Assignment is written with it.
    pub version: i16,
}

/// A request that moved the group epoch, waiting for the group's next target assignment:
/// answered when the target is installed or when its wait ends (`TimerKey::TargetWait`).
#[derive(Debug, Clone)]
pub struct Waiting {
    pub reply_to: ReplyTo,
    /// A classic member's JoinGroup (its request version) rather than a heartbeat.
    pub join_version: Option<i16>,
    /// The group epoch the request is waiting for.
    pub for_epoch: i32,
    /// The partitions the request said the member owns (`None`: the field was null).
    pub owned: Option<Partitions>,
    pub subscription_changed: bool,
    /// The answer carries the Assignment (epoch 0 or a full request), else only when the
    /// assignment changed since `assigned_before`.
    pub with_assignment: bool,
    pub assigned_before: Partitions,
}

/// A member of a consumer group.
#[derive(Debug, Clone)]
pub struct Member {
    pub(in crate::coordinator) id: Arc<str>,
    pub(in crate::coordinator) instance_id: Option<Arc<str>>,
    pub(in crate::coordinator) rack_id: Option<String>,
    pub(in crate::coordinator) client_id: String,
    pub(in crate::coordinator) client_host: String,
    pub(in crate::coordinator) rebalance_timeout_ms: i32,
    /// Subscribed topic names (null in a request keeps them).
    pub(in crate::coordinator) topic_names: BTreeSet<String>,
    pub(in crate::coordinator) regex: Option<Subscription>,
    /// `ServerAssignor` as the client sent it: set, never cleared (Kafka's `maybeUpdate`).
    pub(in crate::coordinator) server_assignor: Option<String>,
    pub(in crate::coordinator) current: Current,
    /// The member's share of the group's target assignment.
    pub(in crate::coordinator) target: Partitions,
    /// The epoch the revocation timer was armed at, while it is armed.
    pub(in crate::coordinator) revoking_at: Option<i32>,
    pub(in crate::coordinator) waiting: Option<Waiting>,
    /// Set for a member that speaks the classic protocol.
    pub(in crate::coordinator) classic: Option<Classic>,
}

impl Member {
    /// A member that joins now.
    pub fn new(id: Arc<str>, client_id: &str, client_host: &str) -> Member {
        Member {
            id,
            instance_id: None,
            rack_id: None,
            client_id: client_id.to_owned(),
            client_host: client_host.to_owned(),
            rebalance_timeout_ms: 0,
            topic_names: BTreeSet::new(),
            regex: None,
            server_assignor: None,
            current: Current::joining(),
            target: Partitions::new(),
            revoking_at: None,
            waiting: None,
            classic: None,
        }
    }

    pub fn epoch(&self) -> i32 {
        self.current.epoch
    }

    /// Its session timeout: a classic member's own (from its JoinGroup), else the consumer
    /// protocol's `consumer_session_timeout_ms`.
    pub fn session_timeout_ms(&self, consumer_default: i32) -> i32 {
        self.classic
            .as_ref()
            .map_or(consumer_default, |c| c.session_timeout_ms)
    }

    /// Whether the member subscribes to `topic`, by name or through its regex.
    pub fn subscribes_to(&self, topic: &str) -> bool {
        self.topic_names.contains(topic)
            || self
                .regex
                .as_ref()
                .is_some_and(|r| r.matched.contains(topic))
    }

    /// Every topic name the member subscribes to (names and regex matches), sorted.
    pub fn subscribed_topics(&self) -> BTreeSet<&str> {
        let mut all: BTreeSet<&str> = self.topic_names.iter().map(String::as_str).collect();
        if let Some(r) = &self.regex {
            all.extend(r.matched.iter().map(String::as_str));
        }
        all
    }
}
