//! Kafka's `UniformHeterogeneousAssignmentBuilder` (the KAFKA-17710 rework): the assignment of
//! a group whose members subscribe to different topics.
//!
//! 1. Every member keeps all its previous partitions of topics it still subscribes to.
//! 2. The partitions nobody holds go topic by topic to the least loaded subscriber (ties to the
//!    earlier member), topics ordered by partitions per subscriber (descending), then by
//!    subscriber count (ascending), then by id.
//! 3. At most [`MAX_ITERATION_COUNT`] passes over the topics with two or more subscribers move
//!    each topic's highest-numbered partitions from its most loaded subscribers to its least
//!    loaded ones, until the topic's subscribers differ by at most one or the most loaded have
//!    none of the topic left to give; a pass without a move ends the loop early.
//!
//! The result is exactly balanced when the subscribers of each topic share their subscription
//! and close to balanced otherwise (see Kafka's `balanceTopics` docs for an example where a
//! better balance exists). Loads are whole-group partition counts, as in Kafka.

use crate::group::{Group, NO_MEMBER};

mod balancer;

use balancer::MemberAssignmentBalancer;

/// The maximum number of passes of the final balancing phase. Kafka's reasoning: with shared
/// subscriptions the phase converges in one pass and detects it in a second; with overlapping
/// ones each pass roughly halves the imbalance.
pub const MAX_ITERATION_COUNT: usize = 16;

/// The owner of every global partition (see [`Group`]); partitions of topics nobody
/// subscribes to stay [`NO_MEMBER`].
pub fn build(group: &Group<'_>) -> Vec<u32> {
    let mut builder = Builder::new(group);
    builder.maybe_revoke_partitions();
    builder.assign_remaining_partitions();
    builder.balance();
    builder.owners
}

struct Builder<'g, 'a> {
    group: &'g Group<'a>,
    /// Per topic id, its subscribers' positions, ascending (empty: nobody subscribes).
    topic_subscribers: Vec<Vec<u32>>,
    /// Topic ids with at least one subscriber, ascending.
    subscribed_topic_ids: Vec<u32>,
    /// Kafka's `memberTargetAssignmentSizes`.
    sizes: Vec<i64>,
    /// Kafka's `targetAssignmentPartitionOwners`, by global partition.
    owners: Vec<u32>,
}

impl<'g, 'a> Builder<'g, 'a> {
    fn new(group: &'g Group<'a>) -> Self {
        let mut topic_subscribers = vec![Vec::new(); group.topic_count()];
        for m in 0..group.member_count() as u32 {
            for &t in group.subscription(m) {
                topic_subscribers[t as usize].push(m);
            }
        }
        let subscribed_topic_ids = (0..group.topic_count() as u32)
            .filter(|&t| !topic_subscribers[t as usize].is_empty())
            .collect();
        Builder {
            group,
            topic_subscribers,
            subscribed_topic_ids,
            sizes: vec![0; group.member_count()],
            owners: vec![NO_MEMBER; group.total_partitions()],
        }
    }

    /// Keeps every previous partition of a topic the member still subscribes to.
    fn maybe_revoke_partitions(&mut self) {
        let group = self.group;
        for m in 0..group.member_count() as u32 {
            for (t, partitions) in group.previous(m) {
                if !group.subscribes(m, t) {
                    continue;
                }
                let offset = group.offset(t);
                for &p in partitions {
                    self.owners[(offset + p) as usize] = m;
                }
                self.sizes[m as usize] += partitions.len() as i64;
            }
        }
    }

    /// Kafka's `topicComparator`: partitions per subscriber descending (compared as doubles,
    /// as Kafka does), then subscriber count ascending, then topic id ascending.
    fn sort_topic_ids(&self, topics: &mut [u32]) {
        let group = self.group;
        let subscribers = |t: u32| self.topic_subscribers[t as usize].len();
        topics.sort_by(|&a, &b| {
            let per_subscriber =
                |t: u32| f64::from(group.partition_count(t)) / subscribers(t) as f64;
            per_subscriber(b)
                .total_cmp(&per_subscriber(a))
                .then(subscribers(a).cmp(&subscribers(b)))
                .then(a.cmp(&b))
        });
    }

    /// Gives the partitions nobody holds, topic by topic, to the least loaded subscribers.
    fn assign_remaining_partitions(&mut self) {
        let group = self.group;
        let mut topics: Vec<u32> = self
            .subscribed_topic_ids
            .iter()
            .copied()
            .filter(|&t| {
                let offset = group.offset(t);
                (offset..offset + group.partition_count(t))
                    .any(|g| self.owners[g as usize] == NO_MEMBER)
            })
            .collect();
        self.sort_topic_ids(&mut topics);
        let mut balancer = MemberAssignmentBalancer::new(group.member_count());
        for t in topics {
            balancer.initialize(&self.topic_subscribers[t as usize], &self.sizes);
            let offset = group.offset(t);
            for g in offset..offset + group.partition_count(t) {
                if self.owners[g as usize] == NO_MEMBER {
                    let m = balancer.next_least_loaded_member(&self.sizes);
                    self.assign_partition(g, m);
                }
            }
        }
    }

    /// Kafka's `balance` and `balanceTopics`.
    fn balance(&mut self) {
        let mut topics: Vec<u32> = self
            .subscribed_topic_ids
            .iter()
            .copied()
            .filter(|&t| self.topic_subscribers[t as usize].len() >= 2)
            .collect();
        if topics.is_empty() {
            return;
        }
        self.sort_topic_ids(&mut topics);
        let mut scratch = Scratch::new(self.group.member_count());
        let mut balancer = MemberAssignmentBalancer::new(self.group.member_count());
        // The index in `topics` of the last topic that was rebalanced.
        let mut last_rebalance_topic_index: Option<usize> = None;
        for _ in 0..MAX_ITERATION_COUNT {
            for (index, &t) in topics.iter().enumerate() {
                if last_rebalance_topic_index == Some(index) {
                    // A whole pass since the last move: nothing more to do.
                    return;
                }
                let reassigned = self.balance_topic(t, &mut balancer, &mut scratch);
                if reassigned > 0 || last_rebalance_topic_index.is_none() {
                    last_rebalance_topic_index = Some(index);
                }
            }
        }
    }

    /// Kafka's `balanceTopic`: moves partitions of `t` from its most to its least loaded
    /// subscribers; returns how many moved.
    fn balance_topic(
        &mut self,
        t: u32,
        balancer: &mut MemberAssignmentBalancer,
        scratch: &mut Scratch,
    ) -> usize {
        let imbalance = balancer.initialize(&self.topic_subscribers[t as usize], &self.sizes);
        if imbalance <= 1 {
            return 0;
        }
        // The topic's partitions grouped by owner, ascending within each owner, and each
        // owner's range in that list.
        let offset = self.group.offset(t);
        let owner_key = |g: u32| match self.owners[g as usize] {
            NO_MEMBER => -1,
            m => i64::from(m),
        };
        scratch.partitions.clear();
        scratch
            .partitions
            .extend(offset..offset + self.group.partition_count(t));
        scratch.partitions.sort_by_key(|&g| (owner_key(g), g));
        scratch.epoch += 1;
        for (i, &g) in scratch.partitions.iter().enumerate() {
            let m = self.owners[g as usize];
            if m == NO_MEMBER {
                continue;
            }
            let m = m as usize;
            if scratch.stamp[m] != scratch.epoch {
                scratch.stamp[m] = scratch.epoch;
                scratch.start[m] = i as u32;
            }
            scratch.end[m] = i as u32 + 1;
        }

        let mut reassigned = 0;
        while !balancer.is_balanced() {
            // The most loaded subscriber that still holds a partition of the topic.
            let most_loaded = loop {
                let Some(m) = balancer.next_most_loaded_member(&self.sizes) else {
                    break None;
                };
                let m_ = m as usize;
                if scratch.stamp[m_] != scratch.epoch || scratch.end[m_] <= scratch.start[m_] {
                    balancer.exclude_most_loaded_member();
                    continue;
                }
                break Some(m_);
            };
            let Some(most_loaded) = most_loaded else {
                break;
            };
            scratch.end[most_loaded] -= 1;
            let g = scratch.partitions[scratch.end[most_loaded] as usize];
            let least_loaded = balancer.next_least_loaded_member(&self.sizes);
            // Ranges one partition apart or less: moving would not help.
            if balancer.is_balanced() {
                break;
            }
            self.assign_partition(g, least_loaded);
            reassigned += 1;
        }
        reassigned
    }

    fn assign_partition(&mut self, g: u32, m: u32) {
        let old = self.owners[g as usize];
        if old != NO_MEMBER {
            self.sizes[old as usize] -= 1;
        }
        self.owners[g as usize] = m;
        self.sizes[m as usize] += 1;
    }
}

/// Per-member scratch of `balance_topic`, reused across topics: a member's range in the
/// partition list is valid only when its stamp is the current epoch, so nothing is cleared
/// between topics (Kafka clears two hash maps instead).
struct Scratch {
    partitions: Vec<u32>,
    epoch: u32,
    stamp: Vec<u32>,
    start: Vec<u32>,
    end: Vec<u32>,
}

impl Scratch {
    fn new(members: usize) -> Scratch {
        Scratch {
            partitions: Vec::new(),
            epoch: 0,
            stamp: vec![0; members],
            start: vec![0; members],
            end: vec![0; members],
        }
    }
}
