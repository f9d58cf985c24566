//! Reconciliation, Kafka's `CurrentAssignmentBuilder` as a pure function: from a member's
//! current assignment, the group's target for it and what its heartbeat says it owns, the
//! member's next current assignment. Nothing here reads or changes a group.
//!
//! The rule that makes a partition never have two owners, whatever the assignor returns: a
//! partition enters a member's `assigned` set only when no other member owns it (in its
//! `assigned` or `pending_revocation`), and leaves a member's ownership only when the member's
//! heartbeat stops listing it (or the member is fenced or leaves). A member that must give
//! partitions up stays at its epoch in [`MemberState::UnrevokedPartitions`] until it has; one
//! whose new partitions are still owned elsewhere moves to the target epoch in
//! [`MemberState::UnreleasedPartitions`] and picks them up at a later heartbeat.
//!
//! Kafka's `UNKNOWN` state (only reachable after a downgrade of Kafka's coordinator) does not
//! exist here.

use super::member::{Current, MemberState};
use super::partitions::Partitions;

/// What reconciliation reads besides the member's current assignment.
pub struct Inputs<'a> {
    /// The target's epoch and the member's share of it.
    pub target_epoch: i32,
    pub target: &'a Partitions,
    /// Whether the member subscribes to a topic (names and regex matches the catalog knows).
    pub subscribed: &'a dyn Fn(&str) -> bool,
    /// Whether another member owns a partition (Kafka's `currentPartitionEpoch != -1` for a
    /// partition this member does not hold).
    pub owned_elsewhere: &'a dyn Fn(&str, i32) -> bool,
    /// The member's subscription changed in this request: its assignment must follow it.
    pub subscription_changed: bool,
    /// What the heartbeat says the member owns; `None` when the field was null, which never
    /// acknowledges a revocation.
    pub owned: Option<&'a Partitions>,
}

/// The member's next current assignment (Kafka's `maybeReconcile` + `build`).
pub fn reconcile(current: &Current, inputs: &Inputs<'_>) -> Current {
    if !inputs.subscription_changed && current.is_reconciled_to(inputs.target_epoch) {
        return current.clone();
    }
    match current.state {
        MemberState::Stable => {
            if current.epoch != inputs.target_epoch {
                compute_next(current, current.epoch, inputs)
            } else if inputs.subscription_changed {
                drop_unsubscribed(current, inputs)
            } else {
                current.clone()
            }
        }
        MemberState::UnrevokedPartitions => {
            if owns_any(inputs.owned, &current.pending_revocation) {
                if inputs.subscription_changed {
                    drop_unsubscribed(current, inputs)
                } else {
                    current.clone()
                }
            } else {
                // Revoked: on to the next epoch, but never past the target (a subscription
                // change may have started the revocation before the new target exists).
                let epoch = (current.epoch + 1).min(inputs.target_epoch);
                compute_next(current, epoch, inputs)
            }
        }
        MemberState::UnreleasedPartitions => compute_next(current, current.epoch, inputs),
    }
}

/// Kafka's `ownsRevokedPartitions`: a null owned list counts as still owning everything.
fn owns_any(owned: Option<&Partitions>, set: &Partitions) -> bool {
    owned.is_none_or(|o| o.intersects(set))
}

/// Kafka's `updateMemberEpoch`: the old epoch becomes the previous one.
fn with_epoch(current: &Current, epoch: i32) -> (i32, i32) {
    (epoch, current.epoch)
}

/// Kafka's `updateCurrentAssignment`: partitions of topics the member no longer subscribes to
/// move to pending revocation, without waiting for a new target.
fn drop_unsubscribed(current: &Current, inputs: &Inputs<'_>) -> Current {
    let mut assigned = current.assigned.clone();
    let mut pending = current.pending_revocation.clone();
    let gone: Vec<String> = assigned
        .topics()
        .filter(|t| !(inputs.subscribed)(t))
        .map(str::to_owned)
        .collect();
    if gone.is_empty() {
        return current.clone();
    }
    for topic in gone {
        for p in assigned.remove_topic(&topic).unwrap_or_default() {
            pending.insert(&topic, p);
        }
    }
    if !pending.is_empty() && owns_any(inputs.owned, &pending) {
        Current {
            state: MemberState::UnrevokedPartitions,
            assigned,
            pending_revocation: pending,
            ..current.clone()
        }
    } else {
        // Already revoked: the member keeps its state with fewer partitions.
        Current {
            assigned,
            ..current.clone()
        }
    }
}

/// Kafka's `computeNextAssignment` at member epoch `epoch`.
fn compute_next(current: &Current, epoch: i32, inputs: &Inputs<'_>) -> Current {
    let mut assigned = Partitions::new();
    let mut revoke = Partitions::new();
    let mut pending = Partitions::new();
    let mut unreleased = false;
    let topics: std::collections::BTreeSet<&str> = inputs
        .target
        .topics()
        .chain(current.assigned.topics())
        .collect();
    for topic in topics {
        let subscribed = (inputs.subscribed)(topic);
        let target = inputs.target.of(topic).filter(|_| subscribed);
        let had = current.assigned.of(topic);
        for &p in had.into_iter().flatten() {
            if target.is_some_and(|t| t.contains(&p)) {
                assigned.insert(topic, p);
            } else {
                revoke.insert(topic, p);
            }
        }
        for &p in target.into_iter().flatten() {
            if had.is_some_and(|h| h.contains(&p)) {
                continue;
            }
            // A partition this member itself still has pending revocation is not unreleased:
            // only one member owns a partition at a time (KAFKA-19449).
            if (inputs.owned_elsewhere)(topic, p) && !current.pending_revocation.contains(topic, p)
            {
                unreleased = true;
            } else {
                pending.insert(topic, p);
            }
        }
    }
    if !revoke.is_empty() && owns_any(inputs.owned, &revoke) {
        let (epoch, previous_epoch) = with_epoch(current, epoch);
        return Current {
            epoch,
            previous_epoch,
            state: MemberState::UnrevokedPartitions,
            assigned,
            pending_revocation: revoke,
        };
    }
    let (epoch, previous_epoch) = with_epoch(current, inputs.target_epoch);
    let state = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    Current {
        epoch,
        previous_epoch,
        state,
        assigned: assigned.union(&pending),
        pending_revocation: Partitions::new(),
    }
}

#[cfg(test)]
mod tests {
    //! Cases from Kafka's `CurrentAssignmentBuilderTest`, over names instead of topic ids.

    use super::*;

    fn p(pairs: &[(&str, &[i32])]) -> Partitions {
        Partitions::from_pairs(pairs.iter().copied())
    }

    fn member(
        epoch: i32,
        state: MemberState,
        assigned: Partitions,
        pending: Partitions,
    ) -> Current {
        Current {
            epoch,
            previous_epoch: epoch - 1,
            state,
            assigned,
            pending_revocation: pending,
        }
    }

    fn run(
        current: &Current,
        target_epoch: i32,
        target: &Partitions,
        elsewhere: &Partitions,
        owned: Option<&Partitions>,
    ) -> Current {
        let subscribed = |t: &str| t != "unsubscribed";
        let other = |t: &str, p: i32| elsewhere.contains(t, p);
        reconcile(
            current,
            &Inputs {
                target_epoch,
                target,
                subscribed: &subscribed,
                owned_elsewhere: &other,
                subscription_changed: false,
                owned,
            },
        )
    }

    #[test]
    fn stable_to_stable_when_nothing_moves() {
        let m = member(
            10,
            MemberState::Stable,
            p(&[("a", &[1, 2])]),
            Partitions::new(),
        );
        let next = run(&m, 11, &p(&[("a", &[1, 2, 3])]), &Partitions::new(), None);
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!((next.epoch, next.previous_epoch), (11, 10));
        assert_eq!(next.assigned, p(&[("a", &[1, 2, 3])]));
    }

    #[test]
    fn stable_to_unrevoked_keeps_its_epoch_until_the_heartbeat_stops_listing_them() {
        let m = member(
            10,
            MemberState::Stable,
            p(&[("a", &[1, 2, 3])]),
            Partitions::new(),
        );
        let target = p(&[("a", &[1])]);
        let next = run(
            &m,
            11,
            &target,
            &Partitions::new(),
            Some(&p(&[("a", &[1, 2, 3])])),
        );
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.epoch, 10);
        assert_eq!(next.assigned, p(&[("a", &[1])]));
        assert_eq!(next.pending_revocation, p(&[("a", &[2, 3])]));
        // A null owned list never completes the revocation.
        assert_eq!(run(&next, 11, &target, &Partitions::new(), None), next);
        // Still listing one of them: no progress.
        let still = p(&[("a", &[1, 3])]);
        assert_eq!(
            run(&next, 11, &target, &Partitions::new(), Some(&still)),
            next
        );
        // Revoked: next epoch (min(10 + 1, 11)), stable.
        let done = run(
            &next,
            11,
            &target,
            &Partitions::new(),
            Some(&p(&[("a", &[1])])),
        );
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.epoch, 11);
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn partitions_owned_elsewhere_are_unreleased_until_released() {
        let m = member(
            10,
            MemberState::Stable,
            p(&[("a", &[1])]),
            Partitions::new(),
        );
        let target = p(&[("a", &[1, 2])]);
        let elsewhere = p(&[("a", &[2])]);
        let next = run(&m, 11, &target, &elsewhere, None);
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(next.epoch, 11);
        assert_eq!(next.assigned, p(&[("a", &[1])]));
        let later = run(&next, 11, &target, &Partitions::new(), None);
        assert_eq!(later.state, MemberState::Stable);
        assert_eq!(later.assigned, target);
    }

    #[test]
    fn an_acknowledged_revocation_never_passes_the_target_epoch() {
        // Entered UNREVOKED by a subscription change at the target epoch.
        let m = member(
            11,
            MemberState::UnrevokedPartitions,
            p(&[("a", &[1])]),
            p(&[("b", &[0])]),
        );
        let next = run(
            &m,
            11,
            &p(&[("a", &[1])]),
            &Partitions::new(),
            Some(&p(&[("a", &[1])])),
        );
        assert_eq!((next.epoch, next.state), (11, MemberState::Stable));
    }

    #[test]
    fn a_partition_pending_revocation_on_the_member_itself_is_not_unreleased() {
        let m = member(
            10,
            MemberState::UnrevokedPartitions,
            p(&[("a", &[1])]),
            p(&[("a", &[2])]),
        );
        // The target gives 2 back; 2 is owned (by this member) but that does not block it.
        let elsewhere = p(&[("a", &[2])]);
        let next = run(
            &m,
            12,
            &p(&[("a", &[1, 2])]),
            &elsewhere,
            Some(&p(&[("a", &[1])])),
        );
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.assigned, p(&[("a", &[1, 2])]));
    }

    #[test]
    fn unsubscribed_topics_are_revoked_even_without_a_new_target() {
        let m = member(
            10,
            MemberState::Stable,
            p(&[("a", &[0]), ("unsubscribed", &[1])]),
            Partitions::new(),
        );
        let subscribed = |t: &str| t != "unsubscribed";
        let other = |_: &str, _: i32| false;
        let target = p(&[("a", &[0]), ("unsubscribed", &[1])]);
        let owned = m.assigned.clone();
        let next = reconcile(
            &m,
            &Inputs {
                target_epoch: 10,
                target: &target,
                subscribed: &subscribed,
                owned_elsewhere: &other,
                subscription_changed: true,
                owned: Some(&owned),
            },
        );
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.epoch, 10);
        assert_eq!(next.assigned, p(&[("a", &[0])]));
        assert_eq!(next.pending_revocation, p(&[("unsubscribed", &[1])]));
    }
}
