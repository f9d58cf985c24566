//! Large homogeneous groups for the strategy crates' `#[ignore]`d size tests: every member
//! subscribed to every topic, built straight into the request the host sends (no fixture
//! overhead), and a second round in which one member left, one joined and everyone else owns
//! what the first round gave it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use assignor_sdk::{ABI_VERSION, AssignRequest, Assignment, Member, Topic, TopicPartitions};

use crate::Flavor;
use crate::user_data::write_sticky;

/// `members` members on `topics` topics of `partitions` partitions each.
pub fn homogeneous(members: usize, topics: usize, partitions: i32) -> AssignRequest {
    let topic_names: Vec<String> = (0..topics).map(|t| format!("topic-{t:04}")).collect();
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "large".into(),
        generation_id: 2,
        protocol_type: "consumer".into(),
        protocol_name: "sticky".into(),
        members: (0..members)
            .map(|m| Member {
                member_id: format!("consumer-{m:05}-5a1e0c3b"),
                topics: topic_names.clone().into(),
                owned_generation: -1,
                ..Member::default()
            })
            .collect(),
        topics: topic_names
            .iter()
            .map(|name| Topic {
                name: name.clone(),
                partition_count: partitions,
                partition_racks: vec![],
            })
            .collect(),
        ..AssignRequest::default()
    }
}

/// The next round after `assignment`: the first member left, a new one joined, the others
/// report what they got (as user data for `sticky`, owned partitions for the cooperative
/// flavour) at the generation just formed.
pub fn next_round(
    previous: &AssignRequest,
    assignment: Assignment,
    flavor: Flavor,
) -> AssignRequest {
    let response = assignment.into_response();
    let owned: BTreeMap<&str, &Vec<TopicPartitions>> = response
        .assignments
        .iter()
        .map(|a| (a.member_id.as_str(), &a.partitions))
        .collect();
    let mut next = previous.clone();
    next.generation_id += 1;
    next.members.remove(0);
    for m in &mut next.members {
        let list = owned[m.member_id.as_str()].clone();
        match flavor {
            Flavor::Sticky => m.user_data = Some(write_sticky(&list, Some(previous.generation_id))),
            Flavor::CooperativeSticky => {
                m.owned_partitions = list;
                m.owned_generation = previous.generation_id;
            }
        }
    }
    let mut joiner = previous.members[0].clone();
    joiner.member_id = "consumer-99999-new".into();
    next.members.push(joiner);
    next
}

/// Runs `assign` on `request`, returning the assignment and how long it took.
pub fn timed(
    assign: fn(&AssignRequest) -> Result<Assignment, assignor_sdk::AssignError>,
    request: &AssignRequest,
) -> (Assignment, Duration) {
    let start = Instant::now();
    let assignment = assign(request).expect("assigns");
    (assignment, start.elapsed())
}

/// Partition counts per member: (min, max, total).
pub fn spread(request: &AssignRequest, assignment: &Assignment) -> (usize, usize, usize) {
    let counts: Vec<usize> = request
        .members
        .iter()
        .map(|m| assignment.of(&m.member_id).len())
        .collect();
    (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
        counts.iter().sum(),
    )
}
