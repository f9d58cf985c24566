//! Apache Kafka's `UniformHeterogeneousAssignmentBuilderTest` (group-coordinator, after
//! KAFKA-17710), case for case, as data.
//!
//! Kafka's tests force the `HETEROGENEOUS` builder through the `GroupSpec` even where the
//! members happen to share a subscription, and iterate members in sorted order (their
//! `TestGroupSpecImpl`); the port calls the heterogeneous builder directly, and members are in
//! id order. Where the builder breaks ties by topic id, the test's ids (`T1-...` to `T4-...`)
//! compare as the names `topic1` to `topic4` do, so Kafka's names are kept. The builder's
//! results do not depend on hash order otherwise (topics are sorted, members indexed).
//!
//! As in the homogeneous port, nonexistent topics are left out instead of throwing, and
//! members that get nothing get an empty entry.

use crate::group::Group;
use crate::test_support::*;
use crate::{assign, heterogeneous, output};

const TOPIC_1: &str = "topic1";
const TOPIC_2: &str = "topic2";
const TOPIC_3: &str = "topic3";
const TOPIC_4: &str = "topic4";
const MEMBER_A: &str = "A";
const MEMBER_B: &str = "B";
const MEMBER_C: &str = "C";

/// Kafka's `assignor.assign` with a `TestGroupSpecImpl` of type `HETEROGENEOUS`.
fn assign_heterogeneous(request: &assignor_sdk::AssignRequest) -> Owned {
    let group = Group::new(request).unwrap();
    owned(&output::assignment(&group, &heterogeneous::build(&group)))
}

#[test]
fn test_two_members_no_topic_subscription() {
    let request = request(
        vec![topic(TOPIC_1, 3)],
        vec![member(MEMBER_A, &[], vec![]), member(MEMBER_B, &[], vec![])],
    );
    let nothing = expected(&[(MEMBER_A, &[]), (MEMBER_B, &[])]);
    assert_eq!(assign_heterogeneous(&request), nothing);
    assert_eq!(owned(&assign(&request).unwrap()), nothing);
}

#[test]
fn test_two_members_subscribed_to_nonexistent_topics() {
    // Kafka: PartitionAssignorException. Unresolvable names are left out instead.
    let request = request(
        vec![topic(TOPIC_1, 3)],
        vec![
            member(MEMBER_A, &[TOPIC_3], vec![]),
            member(MEMBER_B, &[TOPIC_2], vec![]),
        ],
    );
    let nothing = expected(&[(MEMBER_A, &[]), (MEMBER_B, &[])]);
    assert_eq!(assign_heterogeneous(&request), nothing);
    assert_eq!(owned(&assign(&request).unwrap()), nothing);
}

#[test]
fn test_first_assignment_two_members_two_topics() {
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_3, 6)],
        vec![
            member(MEMBER_A, &[TOPIC_1, TOPIC_3], vec![]),
            member(MEMBER_B, &[TOPIC_3], vec![]),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_1, &[0, 1, 2]), (TOPIC_3, &[4])]),
        (MEMBER_B, &[(TOPIC_3, &[0, 1, 2, 3, 5])]),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    // The subscriptions differ, so the strategy itself picks this builder.
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

#[test]
fn test_first_assignment_num_members_greater_than_total_num_partitions() {
    let request = request(
        vec![topic(TOPIC_3, 1), topic(TOPIC_1, 2)],
        vec![
            member(MEMBER_A, &[TOPIC_3], vec![]),
            member(MEMBER_B, &[TOPIC_3], vec![]),
            member(MEMBER_C, &[TOPIC_1], vec![]),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_3, &[0])]),
        (MEMBER_B, &[]),
        (MEMBER_C, &[(TOPIC_1, &[0, 1])]),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

#[test]
fn test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment() {
    let request = request(
        vec![topic(TOPIC_1, 6), topic(TOPIC_2, 4), topic(TOPIC_3, 4)],
        vec![
            member(MEMBER_A, &[TOPIC_1], vec![tp(TOPIC_1, &[0, 1, 2])]),
            member(
                MEMBER_B,
                &[TOPIC_1, TOPIC_2],
                vec![tp(TOPIC_1, &[3]), tp(TOPIC_2, &[0])],
            ),
            member(
                MEMBER_C,
                &[TOPIC_1, TOPIC_2, TOPIC_3],
                vec![
                    tp(TOPIC_1, &[4, 5]),
                    tp(TOPIC_2, &[1, 2, 3]),
                    tp(TOPIC_3, &[0, 1, 2, 3]),
                ],
            ),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_1, &[0, 1, 2, 5])]),
        (MEMBER_B, &[(TOPIC_1, &[3]), (TOPIC_2, &[0, 1, 2, 3])]),
        (MEMBER_C, &[(TOPIC_1, &[4]), (TOPIC_3, &[0, 1, 2, 3])]),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

#[test]
fn test_reassignment_when_partitions_are_added_for_two_members() {
    // Simulating adding partitions to T1, T2, T3: originally T1 -> 4, T2 -> 3, T3 -> 2, T4 -> 3.
    let request = request(
        vec![
            topic(TOPIC_1, 6),
            topic(TOPIC_2, 5),
            topic(TOPIC_3, 3),
            topic(TOPIC_4, 3),
        ],
        vec![
            member(
                MEMBER_A,
                &[TOPIC_1, TOPIC_3],
                vec![tp(TOPIC_1, &[0, 1, 2, 3]), tp(TOPIC_3, &[0, 1])],
            ),
            member(
                MEMBER_B,
                &[TOPIC_1, TOPIC_2, TOPIC_3, TOPIC_4],
                vec![tp(TOPIC_2, &[0, 1, 2]), tp(TOPIC_4, &[0, 1, 2])],
            ),
        ],
    );
    let want = expected(&[
        (
            MEMBER_A,
            &[(TOPIC_1, &[0, 1, 2, 3, 4, 5]), (TOPIC_3, &[0, 1, 2])],
        ),
        (
            MEMBER_B,
            &[(TOPIC_2, &[0, 1, 2, 3, 4]), (TOPIC_4, &[0, 1, 2])],
        ),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

#[test]
fn test_reassignment_when_one_member_added_and_partitions_added_two_members_two_topics() {
    // Initially T1 -> 3, T2 -> 3 partitions.
    let request = request(
        vec![topic(TOPIC_1, 6), topic(TOPIC_2, 7)],
        vec![
            member(
                MEMBER_A,
                &[TOPIC_1],
                vec![tp(TOPIC_1, &[0, 2]), tp(TOPIC_2, &[0])],
            ),
            member(
                MEMBER_B,
                &[TOPIC_1, TOPIC_2],
                vec![tp(TOPIC_1, &[1]), tp(TOPIC_2, &[1, 2])],
            ),
            // A new member triggers the re-assignment.
            member(MEMBER_C, &[TOPIC_1, TOPIC_2], vec![]),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_1, &[0, 2, 3, 4, 5])]),
        (MEMBER_B, &[(TOPIC_1, &[1]), (TOPIC_2, &[1, 2, 6])]),
        (MEMBER_C, &[(TOPIC_2, &[0, 3, 4, 5])]),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

#[test]
fn test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_three_topics()
 {
    // Member C was removed.
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_2, 8), topic(TOPIC_3, 3)],
        vec![
            member(
                MEMBER_A,
                &[TOPIC_1, TOPIC_3],
                vec![tp(TOPIC_1, &[0, 1, 2]), tp(TOPIC_3, &[0, 1])],
            ),
            member(MEMBER_B, &[TOPIC_2], vec![tp(TOPIC_2, &[3, 4, 5, 6])]),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_1, &[0, 1, 2]), (TOPIC_3, &[0, 1, 2])]),
        (MEMBER_B, &[(TOPIC_2, &[0, 1, 2, 3, 4, 5, 6, 7])]),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

#[test]
fn test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics()
 {
    // Initial subscriptions were [T1, T2].
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_2, 5)],
        vec![
            member(
                MEMBER_A,
                &[TOPIC_1],
                vec![tp(TOPIC_1, &[0, 2]), tp(TOPIC_2, &[1, 3])],
            ),
            member(
                MEMBER_B,
                &[TOPIC_1, TOPIC_2],
                vec![tp(TOPIC_1, &[1]), tp(TOPIC_2, &[0, 2, 4])],
            ),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_1, &[0, 1, 2])]),
        (MEMBER_B, &[(TOPIC_2, &[0, 1, 2, 3, 4])]),
    ]);
    assert_eq!(assign_heterogeneous(&request), want);
    assert_eq!(owned(&assign(&request).unwrap()), want);
}

/// An edge case of the reassignment loop: the topic's partitions run out before its
/// subscribers are balanced, and its least loaded subscribers start with none of them. The
/// per-topic loop must stop when it cannot find a partition to move.
#[test]
fn test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions() {
    let all = [TOPIC_1, TOPIC_2, TOPIC_3];
    let request = request(
        vec![topic(TOPIC_1, 2), topic(TOPIC_2, 2), topic(TOPIC_3, 2)],
        vec![
            member(
                MEMBER_A,
                &all,
                vec![
                    tp(TOPIC_1, &[0, 1]),
                    tp(TOPIC_2, &[0, 1]),
                    tp(TOPIC_3, &[0, 1]),
                ],
            ),
            member(MEMBER_B, &all, vec![]),
        ],
    );
    let want = expected(&[
        (MEMBER_A, &[(TOPIC_2, &[0]), (TOPIC_3, &[0, 1])]),
        (MEMBER_B, &[(TOPIC_1, &[0, 1]), (TOPIC_2, &[1])]),
    ]);
    // Kafka forces the heterogeneous builder on this homogeneous group.
    assert_eq!(assign_heterogeneous(&request), want);
}

#[test]
fn test_first_assignment_with_two_members_including_one_without_subscriptions() {
    let request = request(
        vec![topic(TOPIC_1, 3)],
        vec![
            member(MEMBER_A, &[TOPIC_1], vec![]),
            member(MEMBER_B, &[], vec![]),
        ],
    );
    let want = expected(&[(MEMBER_A, &[(TOPIC_1, &[0, 1, 2])]), (MEMBER_B, &[])]);
    assert_eq!(assign_heterogeneous(&request), want);
    // One member subscribes to nothing: the subscriptions differ.
    assert_eq!(owned(&assign(&request).unwrap()), want);
}
