//! The benches' groups: Kafka's benchmark grid (members x partitions per member x topics),
//! homogeneous or bucketed into heterogeneous subscriptions as Kafka's `ServerSideAssignorBenchmark`
//! builds them, and the INCREMENTAL variant (a member joins a group that already has an
//! assignment).

use std::sync::Arc;

use assignor_sdk::{Answer, AssignRequest, Member, Topic, TopicPartitions};

use super::report::Subscription;

/// Kafka's `MAX_BUCKET_COUNT` for heterogeneous subscriptions.
const MAX_BUCKETS: usize = 5;

/// A homogeneous group from Kafka's benchmark grid: `members` consumers all subscribed to
/// `topics` topics holding `members * partitions_per_member` partitions, spread evenly.
/// Member ids look like a Java consumer's (`consumer-<n>-<uuid>`), so strings weigh what they
/// weigh in production; no protocol metadata is attached.
pub fn grid_group(members: usize, partitions_per_member: usize, topics: usize) -> AssignRequest {
    grid_group_with(
        members,
        partitions_per_member,
        topics,
        Subscription::Homogeneous,
    )
}

/// [`grid_group`] with the given subscription type. Topic `i` is `topic-<i>` zero-padded to
/// four digits, so name order is index order and Kafka's contiguous buckets are contiguous
/// here too. Partitions per topic are `ceil(members * partitions_per_member / topics)`
/// (Kafka floors; the two agree on every cell the benches run).
///
/// Panics when heterogeneous with fewer topics than buckets, as Kafka's builder refuses.
pub fn grid_group_with(
    members: usize,
    partitions_per_member: usize,
    topics: usize,
    subscription: Subscription,
) -> AssignRequest {
    let names: Vec<String> = (0..topics).map(|t| format!("topic-{t:04}")).collect();
    let per_topic = (members * partitions_per_member).div_ceil(topics) as i32;
    AssignRequest {
        abi_version: 1,
        group_id: "bench-group".into(),
        generation_id: 1,
        protocol_type: "consumer".into(),
        protocol_name: "range".into(),
        now_ms: 0,
        params: Default::default(),
        members: subscriptions(&names, members, subscription)
            .into_iter()
            .enumerate()
            .map(|(i, topics)| member(i, topics))
            .collect(),
        topics: names
            .iter()
            .map(|name| Topic {
                name: name.clone(),
                partition_count: per_topic,
                partition_racks: Vec::new(),
            })
            .collect(),
        ..AssignRequest::default()
    }
}

/// Kafka's INCREMENTAL shape: `members - 1` members (bucketed over `members - 1`, as Kafka
/// does) are assigned first by `assign`; each keeps that answer as its `previous_assignment`
/// (by topic name, partitions ascending, as the host lists it); then one member joins,
/// subscribed to every topic (homogeneous) or to member `members - 2`'s topics
/// (heterogeneous). The request has `members` members, the same partitions as the FULL cell.
pub fn incremental_group(
    members: usize,
    partitions_per_member: usize,
    topics: usize,
    subscription: Subscription,
    assign: impl FnOnce(&AssignRequest) -> Answer,
) -> AssignRequest {
    assert!(members >= 2, "an incremental group needs a member to add");
    let mut request = grid_group_with(members, partitions_per_member, topics, subscription);
    // The first M - 1 members, bucketed over M - 1 as Kafka builds them; the topics and their
    // partition counts stay the FULL cell's (Kafka sizes them by M).
    let names: Vec<String> = request.topics.iter().map(|t| t.name.clone()).collect();
    request.members.truncate(members - 1);
    for (m, topics) in
        request
            .members
            .iter_mut()
            .zip(subscriptions(&names, members - 1, subscription))
    {
        m.topics = topics;
    }
    let answer = assign(&request).to_response(&request);
    for given in answer.assignments {
        let member = request
            .members
            .iter_mut()
            .find(|m| m.member_id == given.member_id)
            .expect("answers name members of the request");
        let mut partitions = given.partitions;
        partitions.sort_by(|a, b| a.topic.cmp(&b.topic));
        for tp in &mut partitions {
            tp.partitions.sort_unstable();
        }
        partitions.retain(|tp: &TopicPartitions| !tp.partitions.is_empty());
        member.previous_assignment = partitions;
    }
    let joiner_topics = match subscription {
        Subscription::Homogeneous => request.members[0].topics.clone(),
        Subscription::Heterogeneous => request.members[members - 2].topics.clone(),
    };
    request.members.push(member(members - 1, joiner_topics));
    request
}

/// Each member's subscription, shared (one `Arc`) between the members that have the same one,
/// as the coordinator builds them.
fn subscriptions(
    names: &[String],
    members: usize,
    subscription: Subscription,
) -> Vec<Arc<[String]>> {
    match subscription {
        Subscription::Homogeneous => {
            let all: Arc<[String]> = names.into();
            vec![all; members]
        }
        Subscription::Heterogeneous => {
            let buckets = MAX_BUCKETS.min(members);
            assert!(
                names.len() >= buckets,
                "{buckets} buckets need at least {buckets} topics (Kafka refuses fewer)"
            );
            let topics_per_bucket = names.len().div_ceil(buckets);
            let members_per_bucket = members.div_ceil(buckets);
            let mut out = Vec::with_capacity(members);
            for bucket in 0..buckets {
                let first_topic = (bucket * topics_per_bucket).min(names.len());
                let last_topic = ((bucket + 1) * topics_per_bucket).min(names.len());
                let shared: Arc<[String]> = names[first_topic..last_topic].into();
                let first_member = bucket * members_per_bucket;
                let last_member = ((bucket + 1) * members_per_bucket).min(members);
                for _ in first_member..last_member.max(first_member) {
                    out.push(shared.clone());
                }
            }
            out
        }
    }
}

/// Member `i` of a grid group: an id shaped like a Java consumer's, sorting in index order.
fn member(i: usize, topics: Arc<[String]>) -> Member {
    Member {
        member_id: format!("consumer-{i:05}-6f1c2a8e-4d7b-4b1e-9a3f-2c5d8e7f{i:04x}"),
        client_id: format!("consumer-{i}"),
        client_host: "/10.0.0.1".into(),
        topics,
        owned_generation: -1,
        ..Member::default()
    }
}
