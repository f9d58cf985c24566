//! The host's addition to Kafka's `StickyAssignor`: a member that sent no user data keeps what
//! the host gave it in the last generation (`previous_assignment`), counted at generation
//! `generation_id - 1`. User data, when a member sends it, wins, as in Kafka.

use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic, TopicPartitions};
use assignor_sticky::assign;
use assignor_sticky_core::user_data::write_sticky;

const GENERATION: i32 = 10;

fn partitions(list: &[i32]) -> Vec<TopicPartitions> {
    vec![TopicPartitions {
        topic: "t".into(),
        partitions: list.to_vec(),
    }]
}

fn member(id: &str) -> Member {
    Member {
        member_id: id.into(),
        topics: vec!["t".into()].into(),
        owned_generation: -1,
        ..Member::default()
    }
}

/// A member whose client sent Kafka's sticky user data: `owned` at `generation`.
fn with_user_data(id: &str, owned: &[i32], generation: i32) -> Member {
    Member {
        user_data: Some(write_sticky(&partitions(owned), Some(generation))),
        ..member(id)
    }
}

/// A member the host gave `given` last generation, whose client sent no user data.
fn given(id: &str, given: &[i32]) -> Member {
    Member {
        previous_assignment: partitions(given),
        ..member(id)
    }
}

fn request(members: Vec<Member>, partition_count: i32) -> AssignRequest {
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "g".into(),
        generation_id: GENERATION,
        protocol_type: "consumer".into(),
        protocol_name: "sticky".into(),
        members,
        topics: vec![Topic {
            name: "t".into(),
            partition_count,
            partition_racks: vec![],
        }],
        ..AssignRequest::default()
    }
}

fn of(request: &AssignRequest, member: &str) -> Vec<i32> {
    let a = assign(request).unwrap();
    a.partitions(member, "t")
}

#[test]
fn a_member_without_user_data_keeps_what_the_host_gave_it() {
    let req = request(
        vec![
            given("a", &[4, 5]),
            with_user_data("b", &[0, 1], GENERATION - 1),
            member("c"),
        ],
        6,
    );
    assert_eq!(of(&req, "a"), [4, 5]);
    assert_eq!(of(&req, "b"), [0, 1]);
    assert_eq!(of(&req, "c"), [2, 3]);
}

#[test]
fn without_previous_assignment_or_user_data_nothing_is_kept() {
    // The same group with the host's memory gone: the free partitions are dealt round robin.
    let req = request(
        vec![
            member("a"),
            with_user_data("b", &[0, 1], GENERATION - 1),
            member("c"),
        ],
        6,
    );
    assert_eq!(of(&req, "a"), [2, 4]);
    assert_eq!(of(&req, "c"), [3, 5]);
}

#[test]
fn user_data_wins_over_the_previous_assignment() {
    let mut a = with_user_data("a", &[2, 3], GENERATION - 1);
    a.previous_assignment = partitions(&[0, 1]);
    let req = request(vec![a, member("b")], 4);
    assert_eq!(of(&req, "a"), [2, 3]);
    assert_eq!(of(&req, "b"), [0, 1]);
}

#[test]
fn the_hosts_assignment_counts_as_the_last_generation() {
    // "b" claims partition 0 in its user data at an older generation: the host's wins.
    let stale = request(
        vec![given("a", &[0]), with_user_data("b", &[0], GENERATION - 2)],
        2,
    );
    assert_eq!(of(&stale, "a"), [0]);
    assert_eq!(of(&stale, "b"), [1]);
    // At a newer generation than the host's, the user data wins.
    let newer = request(
        vec![given("a", &[0]), with_user_data("b", &[0], GENERATION)],
        2,
    );
    assert_eq!(of(&newer, "b"), [0]);
    assert_eq!(of(&newer, "a"), [1]);
}
