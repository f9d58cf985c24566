//! The coordinator's own checks of an assignment before anything reaches a client (members
//! exist, topics subscribed, partitions in range and assigned once, cooperative safety), the
//! cooperative stripping of a fallback's output, and the native range assignment that is the
//! last resort when both the module and the fallback failed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use assignor_sdk::{
    AssignRequest, AssignResponse, Member as AbiMember, MemberAssignment, TopicPartitions,
};

/// The coordinator's own checks of a module's output: members exist, topics are subscribed by
/// that member, partitions are in range and assigned once, and (cooperative) no partition goes
/// to a new owner while another member still lists it as owned.
pub fn check_output(
    request: &AssignRequest,
    response: &AssignResponse,
    cooperative: bool,
) -> Result<(), String> {
    let members: HashMap<&str, &AbiMember> = request
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), m))
        .collect();
    let counts: HashMap<&str, i32> = request
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.partition_count))
        .collect();
    let owners = owned_by(request);
    let mut seen_members = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for a in &response.assignments {
        let Some(member) = members.get(a.member_id.as_str()) else {
            return Err(format!("assignment for unknown member {}", a.member_id));
        };
        if !seen_members.insert(a.member_id.as_str()) {
            return Err(format!("member {} assigned twice", a.member_id));
        }
        for tp in &a.partitions {
            if tp.partitions.is_empty() {
                continue;
            }
            if !member.topics.contains(&tp.topic) {
                return Err(format!(
                    "member {} is given topic {} it does not subscribe to",
                    a.member_id, tp.topic
                ));
            }
            let count = counts.get(tp.topic.as_str()).copied().unwrap_or(0);
            for &p in &tp.partitions {
                if p < 0 || p >= count {
                    return Err(format!(
                        "partition {}-{p} out of range (topic has {count})",
                        tp.topic
                    ));
                }
                if !seen.insert((tp.topic.as_str(), p)) {
                    return Err(format!("partition {}-{p} assigned twice", tp.topic));
                }
                if cooperative
                    && let Some(owner) = owners.get(&(tp.topic.as_str(), p))
                    && *owner != a.member_id
                {
                    return Err(format!(
                        "partition {}-{p} moves from {owner} to {} in one generation (cooperative)",
                        tp.topic, a.member_id
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Partition -> the member that lists it in `owned_partitions`.
fn owned_by(request: &AssignRequest) -> HashMap<(&str, i32), &str> {
    let mut owners = HashMap::new();
    for m in &request.members {
        for tp in &m.owned_partitions {
            for &p in &tp.partitions {
                owners.insert((tp.topic.as_str(), p), m.member_id.as_str());
            }
        }
    }
    owners
}

/// Removes from each member's assignment every partition another member still owns; returns
/// how many were removed. Those partitions stay unassigned for one generation.
pub fn strip_owned(request: &AssignRequest, response: &mut AssignResponse) -> u64 {
    let owners = owned_by(request);
    let mut stripped = 0;
    for a in &mut response.assignments {
        for tp in &mut a.partitions {
            let before = tp.partitions.len();
            tp.partitions.retain(|p| {
                owners
                    .get(&(tp.topic.as_str(), *p))
                    .is_none_or(|owner| *owner == a.member_id)
            });
            stripped += (before - tp.partitions.len()) as u64;
        }
    }
    stripped
}

/// Kafka's range split per topic over its subscribers (sorted by member id): the last resort
/// when both the module and the fallback failed.
pub fn native_range(request: &AssignRequest) -> AssignResponse {
    let mut per_member: BTreeMap<&str, Vec<TopicPartitions>> = request
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), Vec::new()))
        .collect();
    for topic in &request.topics {
        let subscribers: Vec<&str> = request
            .members
            .iter()
            .filter(|m| m.topics.contains(&topic.name))
            .map(|m| m.member_id.as_str())
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        let n = topic.partition_count.max(0) as usize;
        let (per, extra) = (n / subscribers.len(), n % subscribers.len());
        let mut next = 0;
        for (i, member) in subscribers.iter().enumerate() {
            let take = per + usize::from(i < extra);
            if take > 0 {
                per_member
                    .get_mut(member)
                    .expect("listed")
                    .push(TopicPartitions {
                        topic: topic.name.clone(),
                        partitions: (next..next + take).map(|p| p as i32).collect(),
                    });
            }
            next += take;
        }
    }
    AssignResponse {
        error: None,
        assignments: per_member
            .into_iter()
            .map(|(id, partitions)| MemberAssignment {
                member_id: id.to_string(),
                partitions,
                user_data: None,
                metadata: None,
            })
            .collect(),
        rebalance_after_ms: None,
    }
}
