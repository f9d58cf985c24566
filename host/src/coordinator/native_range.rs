//! The last resort of the fallback chain: Kafka's range assignment computed natively, for when
//! both the selected module and the fallback strategy failed (or the fallback is the module
//! that failed). Valid by construction (only members of the request, only subscribed topics,
//! every partition once), so it needs no output check; for a cooperative group the caller
//! strips it with [`assignor_wire::checks::strip_owned`] like any fallback output.

use std::ops::Range;

use assignor_sdk::{Answer, AssignRequest};

/// Kafka's range split per topic over its subscribers (sorted by member id): the last resort
/// when both the module and the fallback failed. By positions in `request`, like a module's
/// checked answer; every member gets an entry.
pub fn native_range(request: &AssignRequest) -> Answer {
    let mut order: Vec<usize> = (0..request.members.len()).collect();
    order.sort_by(|&a, &b| {
        request.members[a]
            .member_id
            .cmp(&request.members[b].member_id)
    });
    let mut shares: Vec<Vec<(u32, Range<i32>)>> = vec![Vec::new(); request.members.len()];
    for (t, topic) in request.topics.iter().enumerate() {
        let subscribers: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&m| request.members[m].topics.contains(&topic.name))
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        let n = topic.partition_count.max(0) as usize;
        let (per, extra) = (n / subscribers.len(), n % subscribers.len());
        let mut next = 0;
        for (i, &m) in subscribers.iter().enumerate() {
            let take = per + usize::from(i < extra);
            if take > 0 {
                shares[m].push((t as u32, next as i32..(next + take) as i32));
            }
            next += take;
        }
    }
    let mut answer = Answer::with_capacity(order.len(), 0, 0);
    for &m in &order {
        answer.push_entry(m as u32);
        for (t, partitions) in std::mem::take(&mut shares[m]) {
            answer.push_topic(t, partitions);
        }
    }
    answer
}
