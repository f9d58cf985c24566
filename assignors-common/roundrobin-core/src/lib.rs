//! # assignor-roundrobin-core
//!
//! Apache Kafka's client-side `RoundRobinAssignor` (`org.apache.kafka.clients.consumer`),
//! member for member and partition for partition: the algorithm of the built-in `roundrobin`
//! module (`assignors/roundrobin`, the module around this crate) and of the composite modules
//! that run `roundrobin` inside (through `assignor-inner`). It lives outside `assignors/`
//! because every directory there is built into a strategy of its own.
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

use assignor_sdk::{AssignError, AssignRequest, Assignment, Topic, java_string_order};

#[cfg(test)]
mod kafka_tests;

/// Kafka's `RoundRobinAssignor`: the answer of the `roundrobin` strategy for `request`.
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    // The circle: member positions in Kafka's member order.
    let circle = request.kafka_order();
    // Members by subscription: who may take a topic's partitions is decided per subscription.
    let groups = request.subscription_groups();
    let mut group_of = vec![0u32; request.members.len()];
    let mut covering: Vec<Vec<u32>> = vec![Vec::new(); request.topics.len()];
    for (g, group) in groups.iter().enumerate() {
        for &m in group.members.iter() {
            group_of[m as usize] = g as u32;
        }
        for &t in group.topics.iter() {
            covering[t as usize].push(g as u32);
        }
    }
    // Kafka's `allPartitionsSorted`: the subscribed topics in name order (a TreeSet of Java
    // strings), each with its partitions 0..n, for topics the host knows.
    let mut topics: Vec<(usize, &Topic)> = request
        .topics
        .iter()
        .enumerate()
        .filter(|(t, _)| !covering[*t].is_empty())
        .collect();
    topics.sort_by(|a, b| java_string_order(&a.1.name, &b.1.name));

    if groups.len() == 1 {
        return Ok(one_subscription(request, &circle, &topics));
    }
    let mut assignment = Assignment::new(request);
    let mut subscribed = vec![false; groups.len()];
    let mut next = 0; // Kafka's CircularIterator position in `circle`
    for (t, topic) in topics {
        covering[t]
            .iter()
            .for_each(|&g| subscribed[g as usize] = true);
        // The topic has a subscriber, so the skipping ends.
        for partition in topic.partitions() {
            while !subscribed[group_of[circle[next] as usize] as usize] {
                next = (next + 1) % circle.len();
            }
            assignment.assign_indexed(circle[next] as usize, t, partition);
            next = (next + 1) % circle.len();
        }
        covering[t]
            .iter()
            .for_each(|&g| subscribed[g as usize] = false);
    }
    Ok(assignment)
}

/// The deal when every member has the same subscription: nobody is ever skipped, so the
/// `k`-th partition of the deal (topics in `topics` order, partitions ascending) goes to the
/// member at `k % members` in the circle, and each member's share is known without dealing
/// the others'. Handed out member by member in request order, the order of the answer, so the
/// SDK writes it as it is; the same answer as the deal.
fn one_subscription(
    request: &AssignRequest,
    circle: &[u32],
    topics: &[(usize, &Topic)],
) -> Assignment {
    let mut assignment = Assignment::new(request);
    // Where each topic starts in the deal, then the deal's length.
    let mut starts = Vec::with_capacity(topics.len() + 1);
    let mut total = 0u64;
    for (_, topic) in topics {
        starts.push(total);
        total += u64::from(topic.partition_count.max(0).unsigned_abs());
    }
    starts.push(total);
    let members = circle.len() as u64;
    let mut seat = vec![0u64; request.members.len()];
    for (c, &m) in circle.iter().enumerate() {
        seat[m as usize] = c as u64;
    }
    for (m, &c) in seat.iter().enumerate() {
        let mut k = c;
        let mut i = 0;
        while k < total {
            if starts[i + 1] <= k {
                // The next topic holding `k` (a binary search: a member may skip many).
                i += starts[i + 1..].partition_point(|&s| s <= k);
            }
            assignment.assign_indexed(m, topics[i].0, (k - starts[i]) as i32);
            k += members;
        }
    }
    assignment
}
