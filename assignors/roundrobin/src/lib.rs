//! # roundrobin
//!
//! Apache Kafka's client-side `RoundRobinAssignor` (`org.apache.kafka.clients.consumer`) as an
//! assignor-host module, member for member and partition for partition.
//!
//! Every partition of every subscribed topic, topics by name and partitions in numeric order,
//! is dealt in turn to the members in Kafka's member order (static members first by
//! `group.instance.id`, then dynamic members by member id), in a circle; a member not
//! subscribed to the partition's topic is skipped. With identical subscriptions the counts
//! differ by at most one; with different subscriptions the deal can be unbalanced, as in
//! Kafka: `C0` on `t0`, `C1` on `t0, t1`, `C2` on `t0, t1, t2` with 1, 2 and 3 partitions get
//! `C0: [t0p0]`, `C1: [t1p0]`, `C2: [t1p1, t2p0, t2p1, t2p2]`.
//!
//! Kafka's round robin is not rack-aware. Members that get nothing still get an (empty)
//! assignment. Subscribed topics the host does not know (no partitions) are skipped.

use assignor_sdk::{
    AssignError, AssignRequest, Assignment, Topic, assignor, java_string_order, kafka_member_order,
};

#[cfg(test)]
mod kafka_tests;

/// The `roundrobin` strategy: Kafka's `RoundRobinAssignor`.
#[assignor(
    name = "roundrobin",
    version = "1.0.0",
    description = "Apache Kafka's RoundRobinAssignor: all partitions dealt in turn over the members, static members first, skipping non-subscribers",
    protocol = "eager"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    // The circle: member indices in Kafka's member order.
    let mut circle: Vec<usize> = (0..request.members.len()).collect();
    circle.sort_by(|&a, &b| kafka_member_order(&request.members[a], &request.members[b]));
    // Kafka's `allPartitionsSorted`: the subscribed topics in name order (a TreeSet of Java
    // strings), each with its partitions 0..n, for topics the host knows.
    let mut topics: Vec<(&Topic, Vec<usize>)> = request
        .topics
        .iter()
        .zip(request.subscribers_by_topic())
        .filter(|(_, subscribers)| !subscribers.is_empty())
        .collect();
    topics.sort_by(|a, b| java_string_order(&a.0.name, &b.0.name));

    let mut assignment = Assignment::new(request);
    let mut subscribed = vec![false; request.members.len()];
    let mut next = 0; // Kafka's CircularIterator position in `circle`
    for (topic, subscribers) in topics {
        subscribers.iter().for_each(|&m| subscribed[m] = true);
        // The topic has a subscriber, so the skipping ends.
        for partition in topic.partitions() {
            while !subscribed[circle[next]] {
                next = (next + 1) % circle.len();
            }
            assignment.assign(
                &request.members[circle[next]].member_id,
                &topic.name,
                partition,
            );
            next = (next + 1) % circle.len();
        }
        subscribers.iter().for_each(|&m| subscribed[m] = false);
    }
    Ok(assignment)
}

/// The module decodes, assigns and encodes, keeping nearly all it allocates until the call
/// ends: the SDK's bump allocator fits and costs ~19 % less fuel than the default one.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
