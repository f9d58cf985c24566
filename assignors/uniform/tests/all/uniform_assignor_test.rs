//! Apache Kafka's `UniformAssignorTest` (its one case), then the module's mapping of Kafka's
//! inputs onto the ABI, case by case: member order, subscription type decided on names,
//! previous assignments that the host's name-based world can make stale, and input the host
//! never sends, refused with the culprit named.

use assignor_sdk::{ABI_VERSION, AssignRequest, Assignment, Member, Topic, TopicPartitions};
use assignor_uniform::assign;

fn topic(name: &str, partitions: i32) -> Topic {
    Topic {
        name: name.into(),
        partition_count: partitions,
        partition_racks: vec![],
    }
}

fn member(id: &str, topics: &[&str]) -> Member {
    Member {
        member_id: id.into(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    }
}

fn with_previous(mut m: Member, previous: &[(&str, &[i32])]) -> Member {
    m.previous_assignment = previous
        .iter()
        .map(|(t, ps)| TopicPartitions {
            topic: t.to_string(),
            partitions: ps.to_vec(),
        })
        .collect();
    m
}

fn request(topics: Vec<Topic>, members: Vec<Member>) -> AssignRequest {
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "group".into(),
        protocol_type: "consumer".into(),
        protocol_name: "uniform".into(),
        members,
        topics,
        ..AssignRequest::default()
    }
}

fn of<'a>(assignment: &'a Assignment, member: &str) -> Vec<(&'a str, i32)> {
    assignment.of(member)
}

#[test]
fn test_one_consumer_no_topic_subscription() {
    let a = assign(&request(vec![topic("topic1", 3)], vec![member("A", &[])])).unwrap();
    assert_eq!(a.member_ids().collect::<Vec<_>>(), ["A"]);
    assert!(of(&a, "A").is_empty());
}

#[test]
fn static_members_come_first_by_instance_id_then_dynamic_members_by_id() {
    // Three partitions over two members: the unclaimed extra goes to the last member.
    let mut z = member("z", &["t"]);
    z.group_instance_id = Some("instance-0".into());
    let a = assign(&request(vec![topic("t", 3)], vec![member("a", &["t"]), z])).unwrap();
    assert_eq!(of(&a, "z"), [("t", 0)]);
    assert_eq!(of(&a, "a"), [("t", 1), ("t", 2)]);
}

#[test]
fn subscription_type_is_decided_on_names_including_unknown_ones() {
    // Same known topics, but B also names a topic the host does not know: Kafka counts names,
    // so the group is heterogeneous (least loaded subscriber first: A, B, A).
    let heterogeneous = assign(&request(
        vec![topic("t", 3)],
        vec![member("A", &["t"]), member("B", &["t", "ghost"])],
    ))
    .unwrap();
    assert_eq!(of(&heterogeneous, "A"), [("t", 0), ("t", 2)]);
    assert_eq!(of(&heterogeneous, "B"), [("t", 1)]);
    // The same names, listed in another order and repeated, are one subscription.
    let homogeneous = assign(&request(
        vec![topic("t", 3)],
        vec![
            member("A", &["ghost", "t"]),
            member("B", &["t", "ghost", "t"]),
        ],
    ))
    .unwrap();
    assert_eq!(of(&homogeneous, "A"), [("t", 0)]);
    assert_eq!(of(&homogeneous, "B"), [("t", 1), ("t", 2)]);
}

#[test]
fn stale_and_contradictory_previous_assignments_are_ignored() {
    // A lists a partition out of range, a negative one and an unknown topic; B lists A's
    // partition 0 again. Each partition counts for the first member (in order) that lists it.
    let a = assign(&request(
        vec![topic("t", 4)],
        vec![
            with_previous(
                member("A", &["t"]),
                &[("t", &[0, 7, -1]), ("deleted", &[0])],
            ),
            with_previous(member("B", &["t"]), &[("t", &[0, 1])]),
        ],
    ))
    .unwrap();
    assert_eq!(of(&a, "A"), [("t", 0), ("t", 2)]);
    assert_eq!(of(&a, "B"), [("t", 1), ("t", 3)]);
}

#[test]
fn a_topic_without_partitions_is_an_unknown_topic() {
    let a = assign(&request(
        vec![topic("empty", 0), topic("t", 2)],
        vec![member("A", &["empty", "t"]), member("B", &["empty", "t"])],
    ))
    .unwrap();
    assert_eq!(of(&a, "A"), [("t", 0)]);
    assert_eq!(of(&a, "B"), [("t", 1)]);
}

#[test]
fn a_member_listed_twice_is_refused_naming_it() {
    let error = assign(&request(
        vec![topic("t", 2)],
        vec![
            member("A", &["t"]),
            member("B", &["t"]),
            member("A", &["t"]),
        ],
    ))
    .unwrap_err();
    assert_eq!(error.message(), "member `A` is listed twice in the request");
}

#[test]
fn a_topic_listed_twice_is_refused_naming_it() {
    let error = assign(&request(
        vec![topic("t", 2), topic("s", 1), topic("t", 3)],
        vec![member("A", &["t"])],
    ))
    .unwrap_err();
    assert_eq!(error.message(), "topic `t` is listed twice in the request");
}

#[test]
fn refusals_reach_the_host_as_an_error_response() {
    let request = request(
        vec![topic("t", 2)],
        vec![member("A", &["t"]), member("A", &["t"])],
    );
    let response = assignor_sdk::glue::call(&request, &[], assign).unwrap();
    assert_eq!(
        response.error.as_deref(),
        Some("member `A` is listed twice in the request")
    );
    assert!(response.assignments.is_empty());
}
