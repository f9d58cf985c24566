use assignor_sdk::{assignor, AssignError, AssignRequest, Assignment, Member, Topic};

/// Gives every partition to the first member in Kafka order that subscribes to its topic.
#[assignor(
    name = "first",
    version = "0.1.0",
    description = "everything to the first subscriber",
    protocol = "cooperative"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let mut assignment = Assignment::new(request);
    for topic in &request.topics {
        let Some(first) = request.subscribers(&topic.name).first().copied() else {
            return Err(AssignError::new(format!("nobody subscribes to {}", topic.name)));
        };
        assignment.assign_all(&first.member_id, &topic.name, topic.partitions());
    }
    assignor_sdk::info!("{} topics", request.topics.len());
    Ok(assignment)
}

fn main() {
    let request = AssignRequest {
        abi_version: assignor_sdk::ABI_VERSION,
        members: vec![
            Member { member_id: "a".into(), topics: vec!["t".into()].into(), ..Member::default() },
            Member {
                member_id: "b".into(),
                group_instance_id: Some("static".into()),
                topics: vec!["t".into()].into(),
                ..Member::default()
            },
        ],
        topics: vec![Topic { name: "t".into(), partition_count: 2, partition_racks: vec![] }],
        ..AssignRequest::default()
    };
    // The function is left as written: callable natively.
    let assignment = assign(&request).unwrap();
    assert_eq!(assignment.of("b"), [("t", 0), ("t", 1)]);
    assert!(assignment.of("a").is_empty());
}
