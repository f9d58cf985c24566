//! # assignor-range-core
//!
//! Apache Kafka's client-side `RangeAssignor` (`org.apache.kafka.clients.consumer`), member
//! for member and partition for partition, including KIP-881 rack awareness: the algorithm of
//! the built-in `range` module (`assignors/range`, the module around this crate) and of the
//! composite modules that run `range` inside (through `assignor-inner`). It lives outside
//! `assignors/` because every directory there is built into a strategy of its own.
//!
//! Per topic, the partitions in numeric order are split into contiguous ranges over the
//! topic's subscribers in Kafka's member order (static members first by `group.instance.id`,
//! then dynamic members by member id); the first `partitions % subscribers` of them get one
//! extra. With two consumers `C0`, `C1` and topics `t0`, `t1` of three partitions each:
//! `C0: [t0p0, t0p1, t1p0, t1p1]`, `C1: [t0p2, t1p2]`. Topics with the same partition count
//! and the same subscribers are co-partitioned: the same consumer gets partition `p` of each.
//! The extras of every topic go to the same first members, so many topics can add up to an
//! unbalanced group; that is Kafka's behaviour and clients rely on the co-partitioning.
//!
//! **Rack awareness** applies when members send `client.rack` and the host knows the replica
//! racks of partitions, and some partition is not on every rack. Then, before the plain ranges,
//! partitions are matched to consumers on a rack holding a replica, keeping each topic's
//! balance (every consumer still gets its quota or quota + 1) and co-partitioning (topics with
//! the same subscribers and partition count are matched partition by partition, on a consumer
//! whose rack suits all of them); what cannot be matched is handed out as plain ranges. This
//! follows Kafka's `assignWithRackMatching` step by step, and the ported
//! `RangeAssignorTest` rack cases check it.
//!
//! Members that get nothing still get an (empty) assignment. Subscribed topics the host does
//! not know (no partitions) are skipped, as Kafka skips topics missing from metadata.

use std::collections::BTreeMap;

use assignor_sdk::{AssignError, AssignRequest, Assignment};

#[cfg(test)]
mod kafka_rack_tests;
#[cfg(test)]
mod kafka_tests;
mod state;

use state::TopicAssignmentState;

/// Kafka's `RangeAssignor`: the answer of the `range` strategy for `request`.
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    Ok(assign_partitions(request, false))
}

/// Kafka's `RangeAssignor.assignPartitions`. `prefer_rack_aware_logic` is Kafka's test-only
/// switch (`AbstractPartitionAssignor.preferRackAwareLogic`) that runs the rack passes even
/// when every partition is on every rack; the strategy always runs with it off.
pub(crate) fn assign_partitions(
    request: &AssignRequest,
    prefer_rack_aware_logic: bool,
) -> Assignment {
    if !prefer_rack_aware_logic && request.members.iter().all(|m| m.rack().is_none()) {
        return plain_ranges(request);
    }
    let mut states = topic_states(request, prefer_rack_aware_logic);
    let mut assignment = Assignment::new(request);
    if states.iter().any(|s| s.needs_rack_aware_assignment) {
        assign_with_rack_matching(&mut states, &mut assignment);
    }
    for state in &mut states {
        state.assign_ranges(false, &mut assignment);
    }
    assignment
}

/// Kafka's ranges when no member has a rack, so racks cannot change anything: each topic's
/// partitions split over its subscribers in Kafka's order, the first `partitions %
/// subscribers` getting one more. The same answer as the rack-aware path's plain range pass,
/// by position and without per-topic state.
///
/// A topic that only one subscription covers (every topic of a homogeneous group) has that
/// subscription's members as its subscribers, so the share of the member at rank `i` among them
/// is known without walking the others: those topics are handed out member by member in
/// request order, the order of the answer, which the SDK then writes as it is. Topics covered by
/// several subscriptions go topic by topic over their merged subscribers, as Kafka does.
fn plain_ranges(request: &AssignRequest) -> Assignment {
    let mut assignment = Assignment::new(request);
    let groups = request.subscription_groups();
    let mut covering = vec![0u32; request.topics.len()];
    for group in &groups {
        for &t in group.topics.iter() {
            covering[t as usize] += 1;
        }
    }
    // Each member's subscription group and rank in it (Kafka's order).
    let mut place = vec![(usize::MAX, 0usize); request.members.len()];
    for (g, group) in groups.iter().enumerate() {
        for (i, &m) in group.members.iter().enumerate() {
            place[m as usize] = (g, i);
        }
    }
    // Per group, its topics that no other subscription covers, each with the quota and the
    // number of members getting one more, worked out once; and how many of its first members
    // get anything: past it a member is skipped without looking at its topics (with more
    // members than partitions, most of them).
    let shares: Vec<(usize, Vec<Share>)> = groups
        .iter()
        .map(|group| {
            let subscribers = group.members.len();
            let topics: Vec<Share> = group
                .topics
                .iter()
                .map(|&t| t as usize)
                .filter(|&t| covering[t] == 1)
                .filter_map(|t| {
                    let partitions = usize::try_from(request.topics[t].partition_count).ok()?;
                    (partitions > 0)
                        .then(|| (t, partitions / subscribers, partitions % subscribers))
                })
                .collect();
            let reach = topics
                .iter()
                .map(|&(_, quota, extra)| if quota > 0 { subscribers } else { extra })
                .max()
                .unwrap_or(0);
            (reach, topics)
        })
        .collect();
    for (m, &(g, i)) in place.iter().enumerate() {
        let Some((reach, topics)) = shares.get(g) else {
            continue;
        };
        if i >= *reach {
            continue;
        }
        for &(t, quota, extra) in topics {
            let count = quota + usize::from(i < extra);
            if count > 0 {
                let start = i * quota + i.min(extra);
                assignment.assign_all_indexed(m, t, (start..start + count).map(|p| p as i32));
            }
        }
    }
    for (t, topic) in request.topics.iter().enumerate() {
        let partitions = usize::try_from(topic.partition_count).unwrap_or(0);
        if covering[t] < 2 || partitions == 0 {
            continue;
        }
        let subscribers = request.subscriber_indices(t);
        let Some(quota) = partitions.checked_div(subscribers.len()) else {
            continue;
        };
        let extra = partitions % subscribers.len();
        let mut next = 0;
        for (i, &member) in subscribers.iter().enumerate() {
            let count = quota + usize::from(i < extra);
            if count == 0 {
                break;
            }
            assignment.assign_all_indexed(
                member as usize,
                t,
                (next..next + count).map(|p| p as i32),
            );
            next += count;
        }
    }
    assignment
}

/// A topic's split over its subscribers: (topic position, quota, members getting one more).
type Share = (usize, usize, usize);

/// One state per subscribed topic that has partitions, its subscribers in Kafka's order.
fn topic_states(
    request: &AssignRequest,
    prefer_rack_aware_logic: bool,
) -> Vec<TopicAssignmentState<'_>> {
    request
        .topics
        .iter()
        .zip(request.subscribers_by_topic())
        .filter(|(topic, subscribers)| topic.partition_count > 0 && !subscribers.is_empty())
        .map(|(topic, subscribers)| {
            let consumers = subscribers
                .into_iter()
                .map(|m| &request.members[m])
                .collect();
            TopicAssignmentState::new(topic, consumers, prefer_rack_aware_logic)
        })
        .collect()
}

/// Kafka's `assignWithRackMatching`: topics with the same subscribers and the same partition
/// count are matched together (co-partitioning first); any other topic that needs it gets a
/// rack-matching range pass of its own.
fn assign_with_rack_matching(states: &mut [TopicAssignmentState<'_>], assignment: &mut Assignment) {
    let mut groups: BTreeMap<(Vec<&str>, usize), Vec<usize>> = BTreeMap::new();
    for (i, state) in states.iter().enumerate() {
        let consumers = state
            .consumers
            .iter()
            .map(|(m, _)| m.member_id.as_str())
            .collect();
        groups
            .entry((consumers, state.partition_racks.len()))
            .or_default()
            .push(i);
    }
    for ((_, num_partitions), group) in groups {
        if group.len() > 1 {
            assign_co_partitioned_with_rack_matching(states, &group, num_partitions, assignment);
        } else if states[group[0]].needs_rack_aware_assignment {
            states[group[0]].assign_ranges(true, assignment);
        }
    }
}

/// Kafka's `assignCoPartitionedWithRackMatching`: partition `p` of every topic in `group` goes
/// to the first consumer whose rack suits `p` of all of them and that may still take one of
/// each; a consumer that may take no more leaves the rotation.
fn assign_co_partitioned_with_rack_matching(
    states: &mut [TopicAssignmentState<'_>],
    group: &[usize],
    num_partitions: usize,
    assignment: &mut Assignment,
) {
    let mut remaining: Vec<usize> = (0..states[group[0]].consumers.len()).collect();
    for p in 0..num_partitions {
        let matching = remaining.iter().position(|&c| {
            group
                .iter()
                .all(|&t| states[t].racks_match(c, p) && states[t].max_assignable(c) > 0)
        });
        let Some(i) = matching else { continue };
        let consumer = remaining[i];
        for &t in group {
            states[t].assign(consumer, &[p], assignment);
        }
        if group
            .iter()
            .all(|&t| states[t].max_assignable(consumer) == 0)
        {
            remaining.remove(i);
            if remaining.is_empty() {
                break;
            }
        }
    }
}
