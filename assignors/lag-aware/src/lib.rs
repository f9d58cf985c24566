//! # lag-aware
//!
//! Balances the work waiting for each member rather than the number of partitions: the lag of
//! a partition is its end offset minus the group's committed offset (ABI v2 input `lag`; real
//! in proxy mode, where the host knows end offsets from the upstream), and each member's total
//! lag is kept close to the group's average.
//!
//! | parameter | default | meaning |
//! |---|---|---|
//! | `inner` | `range` | the strategy for topics without lag data: `range`, `roundrobin`, `sticky`, `cooperative-sticky`, `uniform` |
//!
//! How a group is assigned:
//! - A topic is **measured** when every one of its partitions has both offsets. Topics that
//!   are not (standalone mode knows no end offsets, a partition never committed) are assigned
//!   by `inner`, run on the same members over those topics alone.
//! - The measured partitions with lag, largest first, each go to the subscriber with the least
//!   total lag (ties: fewer partitions, then Kafka's member order), unless the partition's
//!   previous owner (`previous_assignment`, else `owned_partitions`) can keep it: it keeps it
//!   when its total with the partition stays within the largest single partition lag of the
//!   least loaded subscriber's.
//! - Measured partitions with no lag change nobody's total; per topic, a previous owner keeps
//!   them up to the topic's even share of them, and the others go to the subscriber with the
//!   fewest partitions.
//!
//! **The promise** (members with the same subscription): every member's total lag is within
//! the largest single partition's lag of the ideal (the group's total lag divided by the
//! members), because no member ever gets a partition while it is more than that largest lag
//! above the least loaded one; so the highest and lowest totals differ by at most that lag. The
//! module is eager: clients revoke everything at each rebalance, and the stickiness above keeps
//! most partitions where they were.

use std::collections::{BTreeMap, BTreeSet};

use assignor_inner::{Inner, assign_subgroup, previous_owners, with_topics};
use assignor_sdk::{AssignError, AssignRequest, Assignment, assignor};

#[cfg(test)]
mod tests;

/// The `lag-aware` strategy.
#[assignor(
    name = "lag-aware",
    version = "0.1.0",
    description = "balances the total lag (end - committed offset) per member, within the largest partition's lag of the ideal, keeping partitions with their owner where the balance allows; topics without lag data by the `inner` strategy (default range)",
    protocol = "eager",
    inputs = "lag, racks, user_data"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    if let Some(key) = request.params.keys().find(|k| *k != "inner") {
        return Err(AssignError::new(format!(
            "unknown parameter `{key}`: lag-aware reads `inner` only"
        )));
    }
    let inner = Inner::from_params(&request.params, "inner", Inner::Range)?;
    let measured: Vec<bool> = (request.topics.iter().enumerate())
        .map(|(t, topic)| topic.partitions().all(|p| request.lag_of(t, p).is_some()))
        .collect();
    let mut assignment = if measured.iter().all(|m| *m) {
        Assignment::new(request)
    } else {
        let part = with_topics(request, |t| !measured[t]);
        assign_subgroup(inner, request, &part, |_, _, _| true)?
    };
    Balancer::new(request).run(&measured, &mut assignment);
    Ok(assignment)
}

/// The measured partitions' placement: members grouped by subscription, each group an ordered
/// set so the least loaded subscriber of a topic is the first of the groups covering it.
struct Balancer<'a> {
    request: &'a AssignRequest,
    /// Per member: total lag, partitions given, position in Kafka's order.
    load: Vec<i64>,
    count: Vec<u64>,
    rank: Vec<usize>,
    /// Per member, its subscription group; per topic, the groups subscribing to it.
    group_of: Vec<usize>,
    covering: Vec<Vec<usize>>,
    /// Per group, its members by the current key.
    pools: Vec<BTreeSet<(i64, u64, usize, usize)>>,
}

impl<'a> Balancer<'a> {
    fn new(request: &'a AssignRequest) -> Balancer<'a> {
        let n = request.members.len();
        let mut rank = vec![0; n];
        for (r, &m) in request.kafka_order().iter().enumerate() {
            rank[m as usize] = r;
        }
        let groups = request.subscription_groups();
        let mut group_of = vec![0; n];
        let mut covering = vec![Vec::new(); request.topics.len()];
        for (g, group) in groups.iter().enumerate() {
            group.members.iter().for_each(|&m| group_of[m as usize] = g);
            group
                .topics
                .iter()
                .for_each(|&t| covering[t as usize].push(g));
        }
        Balancer {
            request,
            load: vec![0; n],
            count: vec![0; n],
            rank,
            group_of,
            covering,
            pools: vec![BTreeSet::new(); groups.len()],
        }
    }

    /// The ordering key of member `m`: by total lag first (`by_lag`), else by count.
    fn key(&self, m: usize, by_lag: bool) -> (i64, u64, usize, usize) {
        if by_lag {
            (self.load[m], self.count[m], self.rank[m], m)
        } else {
            (self.count[m] as i64, 0, self.rank[m], m)
        }
    }

    fn fill_pools(&mut self, by_lag: bool) {
        self.pools.iter_mut().for_each(BTreeSet::clear);
        for m in 0..self.request.members.len() {
            let key = self.key(m, by_lag);
            self.pools[self.group_of[m]].insert(key);
        }
    }

    /// Whether member `m` subscribes to topic `t`.
    fn subscribes(&self, m: usize, t: usize) -> bool {
        self.covering[t].contains(&self.group_of[m])
    }

    /// The least loaded subscriber of topic `t`, if it has any.
    fn least(&self, t: usize) -> Option<usize> {
        self.covering[t]
            .iter()
            .filter_map(|&g| self.pools[g].first())
            .min()
            .map(|k| k.3)
    }

    fn give(&mut self, m: usize, t: usize, p: i32, lag: i64, by_lag: bool, to: &mut Assignment) {
        let g = self.group_of[m];
        let old = self.key(m, by_lag);
        self.pools[g].remove(&old);
        self.load[m] += lag;
        self.count[m] += 1;
        let key = self.key(m, by_lag);
        self.pools[g].insert(key);
        to.assign_indexed(m, t, p);
    }

    fn run(mut self, measured: &[bool], assignment: &mut Assignment) {
        let request = self.request;
        let owners = previous_owners(request);
        let mut lagging = Vec::new();
        let mut idle = Vec::new();
        for (t, topic) in request
            .topics
            .iter()
            .enumerate()
            .filter(|(t, _)| measured[*t])
        {
            for p in topic.partitions() {
                let lag = request.lag_of(t, p).unwrap_or(0);
                let list = if lag > 0 { &mut lagging } else { &mut idle };
                list.push((lag, t, p));
            }
        }
        lagging.sort_by(|a, b| b.0.cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        let largest = lagging.first().map_or(0, |x| x.0);
        self.fill_pools(true);
        for (lag, t, p) in lagging {
            let Some(least) = self.least(t) else { continue };
            let owner = owners.get(&(t, p)).copied().filter(|&o| {
                self.subscribes(o, t) && self.load[o] + lag <= self.load[least] + largest
            });
            self.give(owner.unwrap_or(least), t, p, lag, true, assignment);
        }
        self.fill_pools(false);
        // Per topic: owners keep theirs up to the topic's even share, the rest by count.
        idle.sort_by_key(|&(_, t, p)| (t, !owners.contains_key(&(t, p)), p));
        let mut kept: BTreeMap<usize, u64> = BTreeMap::new();
        let mut topic = usize::MAX;
        let mut share = 0;
        for (_, t, p) in idle {
            if t != topic {
                topic = t;
                kept.clear();
                let idle_here = request.topics[t]
                    .partitions()
                    .filter(|&q| request.lag_of(t, q) == Some(0));
                let subscribers = request.subscriber_indices(t).len() as u64;
                share = (idle_here.count() as u64).div_ceil(subscribers.max(1));
            }
            let Some(least) = self.least(t) else { continue };
            let owner = owners
                .get(&(t, p))
                .copied()
                .filter(|&o| self.subscribes(o, t) && kept.get(&o).copied().unwrap_or(0) < share);
            if let Some(o) = owner {
                *kept.entry(o).or_default() += 1;
            }
            self.give(owner.unwrap_or(least), t, p, 0, false, assignment);
        }
    }
}

/// The module decodes, assigns and encodes, keeping nearly all it allocates until the call
/// ends: the SDK's bump allocator fits, as in the other built-ins.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
