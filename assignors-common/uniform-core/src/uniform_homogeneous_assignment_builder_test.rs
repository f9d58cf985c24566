//! Apache Kafka's `UniformHomogeneousAssignmentBuilderTest` (group-coordinator, as of
//! KAFKA-18688), case for case, as data, plus the homogeneous cases of `CommonAssignorTests`.
//!
//! Topic order: Kafka iterates the subscribed topic ids in `HashSet` order, which for the
//! test's ids (`T1-A4s3VTwiI5CTbEp6POw`, `T2-B4s3VTwiI5YHbPp6YUe`, `T3-CU8fVTLCz5YMkLoDQsa`:
//! `Uuid.hashCode` spread into a 16-bucket table lands in buckets 10, 1 and 9) is topic 2,
//! topic 3, topic 1. This module iterates topics by name, so the port names them so that name
//! order is that order, and Kafka's expected assignments hold partition for partition.
//! Previous assignments are listed in the order Kafka iterates them: insertion order for
//! `mkOrderedAssignment`, hash order (= name order here) for `mkAssignment`.
//!
//! Two deliberate differences, both about input the classic host never produces the way
//! KIP-848 does: a member subscribed to a topic that does not exist gets nothing instead of an
//! exception (the host, like Kafka's coordinator, hands over only topics it can resolve), and
//! members that get nothing still get an (empty) entry.

use crate::assign;
use crate::test_support::*;

/// Kafka's `topic1Name`.. with their hash rank in front (see the module docs).
const TOPIC_1: &str = "3.topic1";
const TOPIC_2: &str = "1.topic2";
const TOPIC_3: &str = "2.topic3";
const MEMBER_A: &str = "A";
const MEMBER_B: &str = "B";
const MEMBER_C: &str = "C";

#[test]
fn test_one_member_no_topic_subscription() {
    let request = request(vec![topic(TOPIC_1, 3)], vec![member(MEMBER_A, &[], vec![])]);
    let got = owned(&assign(&request).unwrap());
    assert_eq!(got, expected(&[(MEMBER_A, &[])]));
}

#[test]
fn test_one_member_subscribed_to_nonexistent_topic() {
    // Kafka: PartitionAssignorException for an id the describer does not know. Names the host
    // cannot resolve are left out before the assignor runs, as Kafka's coordinator does.
    let request = request(
        vec![topic(TOPIC_1, 3)],
        vec![member(MEMBER_A, &[TOPIC_2], vec![])],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(got, expected(&[(MEMBER_A, &[])]));
}

#[test]
fn test_first_assignment_two_members_two_topics_no_member_racks() {
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_3, 2)],
        vec![
            member(MEMBER_A, &[TOPIC_1, TOPIC_3], vec![]),
            member(MEMBER_B, &[TOPIC_1, TOPIC_3], vec![]),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[(TOPIC_3, &[0, 1])]),
            (MEMBER_B, &[(TOPIC_1, &[0, 1, 2])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

#[test]
fn test_first_assignment_num_members_greater_than_total_num_partitions() {
    let request = request(
        vec![topic(TOPIC_3, 2)],
        vec![
            member(MEMBER_A, &[TOPIC_3], vec![]),
            member(MEMBER_B, &[TOPIC_3], vec![]),
            member(MEMBER_C, &[TOPIC_3], vec![]),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    // Topic 3 has 2 partitions but three members subscribed to it: one of them gets nothing.
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[]),
            (MEMBER_B, &[(TOPIC_3, &[0])]),
            (MEMBER_C, &[(TOPIC_3, &[1])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

#[test]
fn test_validity_and_balance_for_large_sample_set() {
    let topics: Vec<_> = (1..101).map(|i| topic(&format!("topic-{i}"), 3)).collect();
    let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let members = (1..50)
        .map(|i| member(&format!("member{i}"), &names, vec![]))
        .collect();
    let request = request(topics, members);
    let got = owned(&assign(&request).unwrap());
    check_validity_and_balance(&request, &got);
    let assigned: usize = got.values().flat_map(|t| t.values()).map(|p| p.len()).sum();
    assert_eq!(assigned, 300, "every partition is assigned");
}

#[test]
fn test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment() {
    let subscription = [TOPIC_1, TOPIC_2];
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_2, 3)],
        vec![
            // mkOrderedAssignment: topic 1 first.
            member(
                MEMBER_A,
                &subscription,
                vec![tp(TOPIC_1, &[0, 1]), tp(TOPIC_2, &[0, 1])],
            ),
            member(
                MEMBER_B,
                &subscription,
                vec![tp(TOPIC_1, &[2]), tp(TOPIC_2, &[2])],
            ),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[(TOPIC_1, &[0, 1]), (TOPIC_2, &[0])]),
            (MEMBER_B, &[(TOPIC_1, &[2]), (TOPIC_2, &[1, 2])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

#[test]
fn test_reassignment_when_partitions_are_added_for_two_members_two_topics() {
    // Simulating adding partitions to T1 and T2: originally 3 partitions each.
    let subscription = [TOPIC_1, TOPIC_2];
    let request = request(
        vec![topic(TOPIC_1, 6), topic(TOPIC_2, 5)],
        vec![
            member(
                MEMBER_A,
                &subscription,
                vec![tp(TOPIC_1, &[0, 2]), tp(TOPIC_2, &[0])],
            ),
            member(
                MEMBER_B,
                &subscription,
                vec![tp(TOPIC_1, &[1]), tp(TOPIC_2, &[1, 2])],
            ),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[(TOPIC_1, &[0, 2]), (TOPIC_2, &[0, 3, 4])]),
            (MEMBER_B, &[(TOPIC_1, &[1, 3, 4, 5]), (TOPIC_2, &[1, 2])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

#[test]
fn test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics() {
    let subscription = [TOPIC_1, TOPIC_2];
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_2, 3)],
        vec![
            member(
                MEMBER_A,
                &subscription,
                vec![tp(TOPIC_1, &[0, 2]), tp(TOPIC_2, &[0])],
            ),
            member(
                MEMBER_B,
                &subscription,
                vec![tp(TOPIC_1, &[1]), tp(TOPIC_2, &[1, 2])],
            ),
            // A new member triggers the re-assignment.
            member(MEMBER_C, &subscription, vec![]),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[(TOPIC_1, &[0, 2])]),
            (MEMBER_B, &[(TOPIC_1, &[1]), (TOPIC_2, &[1])]),
            (MEMBER_C, &[(TOPIC_2, &[0, 2])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

#[test]
fn test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_two_topics()
 {
    // mkAssignment: hash order, topic 2 before topic 1. Member C was removed.
    let subscription = [TOPIC_1, TOPIC_2];
    let request = request(
        vec![topic(TOPIC_1, 3), topic(TOPIC_2, 3)],
        vec![
            member(
                MEMBER_A,
                &subscription,
                vec![tp(TOPIC_2, &[0]), tp(TOPIC_1, &[0])],
            ),
            member(
                MEMBER_B,
                &subscription,
                vec![tp(TOPIC_2, &[1]), tp(TOPIC_1, &[1])],
            ),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[(TOPIC_1, &[0]), (TOPIC_2, &[0, 2])]),
            (MEMBER_B, &[(TOPIC_1, &[1, 2]), (TOPIC_2, &[1])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

#[test]
fn test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics()
 {
    // Initial subscriptions were [T1, T2].
    let request = request(
        vec![topic(TOPIC_1, 2), topic(TOPIC_2, 2)],
        vec![
            member(
                MEMBER_A,
                &[TOPIC_2],
                vec![tp(TOPIC_2, &[0]), tp(TOPIC_1, &[0])],
            ),
            member(
                MEMBER_B,
                &[TOPIC_2],
                vec![tp(TOPIC_2, &[1]), tp(TOPIC_1, &[1])],
            ),
        ],
    );
    let got = owned(&assign(&request).unwrap());
    assert_eq!(
        got,
        expected(&[
            (MEMBER_A, &[(TOPIC_2, &[0])]),
            (MEMBER_B, &[(TOPIC_2, &[1])]),
        ])
    );
    check_validity_and_balance(&request, &got);
}

/// `CommonAssignorTests`' group: topics of 2, 5 and 7 partitions, three members subscribed to
/// all of them, with racks when `rack_aware` (which the uniform assignor ignores).
fn common_group(rack_aware: bool) -> assignor_sdk::AssignRequest {
    let subscription = [TOPIC_1, TOPIC_2, TOPIC_3];
    let members = [
        (MEMBER_A, "rack1"),
        (MEMBER_B, "rack2"),
        (MEMBER_C, "rack3"),
    ]
    .into_iter()
    .map(|(id, rack)| {
        let mut m = member(id, &subscription, vec![]);
        m.rack_id = rack_aware.then(|| rack.to_string());
        m
    })
    .collect();
    request(
        vec![topic(TOPIC_1, 2), topic(TOPIC_2, 5), topic(TOPIC_3, 7)],
        members,
    )
}

#[test]
fn test_assignment_reuse() {
    // Kafka checks the unchanged assignment is the same object; here: the same partitions.
    for rack_aware in [false, true] {
        let first = common_group(rack_aware);
        let first_assignment = owned(&assign(&first).unwrap());
        check_validity_and_balance(&first, &first_assignment);
        let second = with_previous(&first, &first_assignment);
        assert_eq!(owned(&assign(&second).unwrap()), first_assignment);
    }
}

#[test]
fn test_iteration_order_stickiness() {
    // Kafka re-runs the assignor on its own output with the members iterated in each of the
    // six orders. Member order here follows member ids, so each order is made by renaming the
    // members (keeping what each had): the assignment must follow the members, not the order.
    for rack_aware in [false, true] {
        let first = common_group(rack_aware);
        let first_assignment = owned(&assign(&first).unwrap());
        let orders = [
            ["1", "2", "3"],
            ["1", "3", "2"],
            ["2", "1", "3"],
            ["2", "3", "1"],
            ["3", "1", "2"],
            ["3", "2", "1"],
        ];
        for names in orders {
            let rename = |id: &str| match id {
                MEMBER_A => names[0],
                MEMBER_B => names[1],
                _ => names[2],
            };
            let mut second = with_previous(&first, &first_assignment);
            for m in &mut second.members {
                m.member_id = rename(&m.member_id).to_string();
            }
            second.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            let expected: Owned = first_assignment
                .iter()
                .map(|(id, topics)| (rename(id).to_string(), topics.clone()))
                .collect();
            assert_eq!(
                owned(&assign(&second).unwrap()),
                expected,
                "order {names:?}"
            );
        }
    }
}
