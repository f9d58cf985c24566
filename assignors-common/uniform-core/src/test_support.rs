//! Builders and checks for the ported Kafka tests: Kafka's `AssignmentTestUtil`
//! (`mkAssignment`, `mkTopicAssignment`, `assertAssignment`) and the builder tests'
//! `checkValidityAndBalance`, over the ABI's types.

use std::collections::{BTreeMap, BTreeSet};

use assignor_sdk::{ABI_VERSION, AssignRequest, Assignment, Member, Topic, TopicPartitions};

/// Member id -> topic -> partitions. Every member of the request has an entry (the ABI
/// answers every member; Kafka's `GroupAssignment` may leave one out when it gets nothing).
pub(crate) type Owned = BTreeMap<String, BTreeMap<String, BTreeSet<i32>>>;

pub(crate) fn topic(name: &str, partitions: i32) -> Topic {
    Topic {
        name: name.into(),
        partition_count: partitions,
        partition_racks: vec![],
    }
}

/// Kafka's `mkTopicAssignment`.
pub(crate) fn tp(topic: &str, partitions: &[i32]) -> TopicPartitions {
    TopicPartitions {
        topic: topic.into(),
        partitions: partitions.to_vec(),
    }
}

/// A dynamic member subscribed to `topics` whose current target assignment (Kafka) is
/// `previous`, listed in the order Kafka iterates it.
pub(crate) fn member(id: &str, topics: &[&str], previous: Vec<TopicPartitions>) -> Member {
    Member {
        member_id: id.into(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        previous_assignment: previous,
        ..Member::default()
    }
}

/// The request the host sends: members sorted by id, topics by name.
pub(crate) fn request(mut topics: Vec<Topic>, mut members: Vec<Member>) -> AssignRequest {
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
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

pub(crate) fn owned(assignment: &Assignment) -> Owned {
    assignment
        .member_ids()
        .map(|id| {
            let mut topics: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
            for (t, p) in assignment.of(id) {
                topics.entry(t.to_string()).or_default().insert(p);
            }
            (id.to_string(), topics)
        })
        .collect()
}

/// One member's expected share: `(member, [(topic, [partitions])])`.
pub(crate) type MemberShare<'a> = (&'a str, &'a [(&'a str, &'a [i32])]);

/// Kafka's expected-assignment literal.
pub(crate) fn expected(members: &[MemberShare<'_>]) -> Owned {
    members
        .iter()
        .map(|(id, topics)| {
            let topics = topics
                .iter()
                .map(|(t, ps)| (t.to_string(), ps.iter().copied().collect()))
                .collect();
            (id.to_string(), topics)
        })
        .collect()
}

/// The previous assignment for the next generation: what `owned` gave each member.
pub(crate) fn with_previous(request: &AssignRequest, owned: &Owned) -> AssignRequest {
    let mut next = request.clone();
    for m in &mut next.members {
        m.previous_assignment = owned[&m.member_id]
            .iter()
            .map(|(t, ps)| TopicPartitions {
                topic: t.clone(),
                partitions: ps.iter().copied().collect(),
            })
            .collect();
    }
    next
}

/// Kafka's `checkValidityAndBalance`: every member subscribes to the topics it got, no
/// partition is given twice, and any two members' sizes differ by at most one.
pub(crate) fn check_validity_and_balance(request: &AssignRequest, owned: &Owned) {
    let mut seen = BTreeSet::new();
    for (id, topics) in owned {
        let member = request
            .member(id)
            .expect("answered member is in the request");
        for (t, partitions) in topics {
            assert!(
                member.subscribes_to(t),
                "Error: Partitions for topic {t} are assigned to member {id} but it is not part of the members subscription"
            );
            for &p in partitions {
                assert!(seen.insert((t.clone(), p)), "{t}-{p} is assigned twice");
            }
        }
    }
    let sizes: Vec<usize> = owned
        .values()
        .map(|topics| topics.values().map(BTreeSet::len).sum())
        .collect();
    let (min, max) = (sizes.iter().min(), sizes.iter().max());
    if let (Some(min), Some(max)) = (min, max) {
        assert!(max - min <= 1, "sizes differ by more than one: {sizes:?}");
    }
}
