//! The last resort of the fallback chain: Kafka's range assignment computed natively, for when
//! both the selected module and the fallback strategy failed (or the fallback is the module
//! that failed). Valid by construction (only members of the request, only subscribed topics,
//! every partition once), so it needs no output check; for a cooperative group the caller
//! strips it with [`assignor_wire::checks::strip_owned`] like any fallback output.

use std::collections::BTreeMap;

use assignor_sdk::{AssignRequest, AssignResponse, MemberAssignment, TopicPartitions};

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
        state: None,
    }
}
