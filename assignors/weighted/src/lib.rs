//! # weighted
//!
//! Partitions in proportion to member capacity: a member of weight 3 gets three times the
//! partitions of a member of weight 1.
//!
//! Parameters (`group set G --strategy weighted --param weights=big-*:3,canary:0`):
//!
//! | parameter | default | meaning |
//! |---|---|---|
//! | `weights` | none | comma-separated `PATTERN:WEIGHT` pairs; the first pattern a member matches (client id, client host or `group.instance.id`, globs with `*` and `?`, as in `filtered`) gives its weight |
//! | `weight.instance.<id>`, `weight.client.<id>`, `weight.default` | none | the host's weight parameters (ABI v2 input `weights`): the weight of a member no pattern of `weights` matches |
//!
//! A member nothing applies to weighs 1. Weight 0 gets nothing (unless every subscriber of a
//! topic weighs 0: then they share it equally, so every partition still has an owner).
//!
//! **The promise, per topic**: with `n` partitions and subscribers of weights `w_i` summing to
//! `W`, each subscriber gets `floor(n w_i / W)` or `ceil(n w_i / W)` partitions, within one of
//! its exact share, and every partition goes to exactly one subscriber. Which members get the
//! rounded-up counts is decided by the shortfall each has accumulated over the topics before
//! (by name order), so over many topics the totals follow the weights too rather than always
//! favouring the same members; a tie goes to Kafka's member order.
//!
//! **Sticky**: a member keeps the partitions it had (`previous_assignment`, or
//! `owned_partitions`) up to its count; the rest are handed out in partition order. The module
//! is eager: clients revoke everything at each rebalance and get mostly the same back.

use std::collections::BTreeMap;

use assignor_sdk::{AssignError, AssignRequest, Assignment, assignor};

#[cfg(test)]
mod tests;
pub mod weights;

use weights::Weights;

/// The `weighted` strategy: partitions in proportion to member weights, per topic.
#[assignor(
    name = "weighted",
    version = "0.1.0",
    description = "partitions in proportion to per-member weights (parameter `weights`, PATTERN:WEIGHT pairs), each member within one partition of its exact share per topic; sticky",
    protocol = "eager",
    inputs = "client, weights"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let rules = Weights::from_params(request)?;
    let weight: Vec<u64> = request
        .members
        .iter()
        .map(|m| u64::from(rules.of(m)))
        .collect();
    let previous = assignor_inner::previous_owners(request);
    let kafka_order = request.kafka_order();
    let mut rank = vec![0usize; request.members.len()];
    for (r, &m) in kafka_order.iter().enumerate() {
        rank[m as usize] = r;
    }
    // Partitions each member is short of its exact shares so far (negative: ahead).
    let mut shortfall = vec![0f64; request.members.len()];
    let mut assignment = Assignment::new(request);
    for (t, topic) in request.topics.iter().enumerate() {
        let subscribers = request.subscriber_indices(t);
        let n = u64::try_from(topic.partition_count).unwrap_or(0);
        if n == 0 || subscribers.is_empty() {
            continue;
        }
        let members: Vec<usize> = subscribers.iter().map(|&m| m as usize).collect();
        let counts = counts(n, &members, &weight, &rank, &mut shortfall);
        hand_out(t, n, &members, &counts, &previous, &mut assignment);
    }
    Ok(assignment)
}

/// How many partitions of a topic of `n` each of `members` gets: the floor of its exact share,
/// and one more for the `n - sum(floors)` members with the largest fractional share, chosen by
/// the fraction plus what they are already short of (`shortfall`, updated here). Only members
/// with a fraction can be rounded up, so every count is the floor or the ceiling of the share.
fn counts(
    n: u64,
    members: &[usize],
    weight: &[u64],
    rank: &[usize],
    shortfall: &mut [f64],
) -> Vec<u64> {
    let total: u64 = members.iter().map(|&m| weight[m]).sum();
    // Every subscriber weighs 0: they share the topic equally.
    let w = |m: usize| if total == 0 { 1 } else { weight[m] };
    let total = if total == 0 {
        members.len() as u64
    } else {
        total
    };
    // n * w fits in u128 for any u32 weight and i32 partition count.
    let share = |m: usize| (u128::from(n) * u128::from(w(m)), u128::from(total));
    let mut counts: Vec<u64> = members
        .iter()
        .map(|&m| {
            let (num, den) = share(m);
            (num / den) as u64
        })
        .collect();
    let extras = n - counts.iter().sum::<u64>();
    let mut candidates: Vec<(usize, f64)> = members
        .iter()
        .enumerate()
        .filter_map(|(i, &m)| {
            let (num, den) = share(m);
            let fraction = (num % den) as f64 / den as f64;
            (num % den != 0).then_some((i, shortfall[m] + fraction))
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(rank[members[a.0]].cmp(&rank[members[b.0]]))
    });
    for &(i, _) in candidates.iter().take(extras as usize) {
        counts[i] += 1;
    }
    for (i, &m) in members.iter().enumerate() {
        let (num, den) = share(m);
        shortfall[m] += num as f64 / den as f64 - counts[i] as f64;
    }
    counts
}

/// Gives topic `t`'s `n` partitions out by `counts`: each member first keeps what it had, up
/// to its count, then the free partitions go in order to members still under their count.
fn hand_out(
    t: usize,
    n: u64,
    members: &[usize],
    counts: &[u64],
    previous: &BTreeMap<(usize, i32), usize>,
    assignment: &mut Assignment,
) {
    let slot: BTreeMap<usize, usize> = members.iter().enumerate().map(|(i, &m)| (m, i)).collect();
    let mut left = counts.to_vec();
    let mut owner: Vec<Option<usize>> = vec![None; n as usize];
    for (p, owner) in owner.iter_mut().enumerate() {
        if let Some(&m) = previous.get(&(t, p as i32))
            && let Some(&i) = slot.get(&m)
            && left[i] > 0
        {
            left[i] -= 1;
            *owner = Some(m);
        }
    }
    let mut next = 0;
    for owner in owner.iter_mut().filter(|o| o.is_none()) {
        while left[next] == 0 {
            next += 1;
        }
        left[next] -= 1;
        *owner = Some(members[next]);
    }
    for (p, owner) in owner.into_iter().enumerate() {
        if let Some(m) = owner {
            assignment.assign_indexed(m, t, p as i32);
        }
    }
}

/// The module decodes, assigns and encodes, keeping nearly all it allocates until the call
/// ends: the SDK's bump allocator fits, as in the other built-ins.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
