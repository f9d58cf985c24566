//! Per-topic bookkeeping of the range assignor: Kafka's `RangeAssignor.TopicAssignmentState`.
//!
//! A topic's subscribers (in Kafka's member order) each get a quota of
//! `partition_count / subscribers` partitions, and the first `partition_count % subscribers`
//! consumers to exceed the quota keep one extra. The rack-aware passes and the plain range pass
//! all draw from the same pool of unassigned partitions, always the lowest-numbered first, so
//! whatever the racks leave over is still handed out as ranges.

use std::collections::BTreeSet;

use assignor_sdk::{Assignment, Member, Topic};

/// One subscribed topic's assignment in progress.
pub(crate) struct TopicAssignmentState<'a> {
    pub(crate) topic: &'a str,
    /// Subscribers in Kafka's member order, with their racks. Positions in this list are the
    /// "consumer" arguments of the methods below.
    pub(crate) consumers: Vec<(&'a Member, Option<&'a str>)>,
    pub(crate) needs_rack_aware_assignment: bool,
    /// Replica racks of each partition; empty when no subscriber has a rack (Kafka then does
    /// not look at partition racks at all, and groups the topic as having 0 partitions).
    pub(crate) partition_racks: Vec<BTreeSet<&'a str>>,
    unassigned: Unassigned,
    num_assigned_by_consumer: Vec<usize>,
    num_partitions_per_consumer: usize,
    remaining_consumers_with_extra_partition: usize,
}

impl<'a> TopicAssignmentState<'a> {
    /// `consumers` must be the topic's subscribers in Kafka's member order, without repeats.
    pub(crate) fn new(
        topic: &'a Topic,
        consumers: Vec<&'a Member>,
        prefer_rack_aware_logic: bool,
    ) -> Self {
        let partition_count = usize::try_from(topic.partition_count).unwrap_or(0);
        let consumers: Vec<(&Member, Option<&str>)> =
            consumers.into_iter().map(|m| (m, m.rack())).collect();
        let consumer_racks: BTreeSet<&str> = consumers.iter().filter_map(|c| c.1).collect();
        let partition_racks: Vec<BTreeSet<&str>> = if consumer_racks.is_empty() {
            Vec::new()
        } else {
            (0..partition_count)
                .map(|p| {
                    topic
                        .racks_of(p as i32)
                        .iter()
                        .map(String::as_str)
                        .collect()
                })
                .collect()
        };
        let all_partition_racks: BTreeSet<&str> =
            partition_racks.iter().flatten().copied().collect();
        let needs_rack_aware_assignment = use_rack_aware_assignment(
            &consumer_racks,
            &all_partition_racks,
            &partition_racks,
            prefer_rack_aware_logic,
        );
        let n = consumers.len();
        TopicAssignmentState {
            topic: &topic.name,
            needs_rack_aware_assignment,
            partition_racks,
            unassigned: Unassigned::new(partition_count),
            num_assigned_by_consumer: vec![0; n],
            // A topic without subscribers gets no state, but stay total: 0 consumers, 0 quota.
            num_partitions_per_consumer: partition_count.checked_div(n).unwrap_or(0),
            remaining_consumers_with_extra_partition: partition_count.checked_rem(n).unwrap_or(0),
            consumers,
        }
    }

    /// Whether `partition` has a replica on the consumer's rack; a consumer without a rack
    /// matches every partition.
    pub(crate) fn racks_match(&self, consumer: usize, partition: usize) -> bool {
        match self.consumers[consumer].1 {
            None => true,
            Some(rack) => self
                .partition_racks
                .get(partition)
                .is_some_and(|r| r.contains(rack)),
        }
    }

    /// How many more partitions of this topic the consumer may take and keep the topic balanced.
    pub(crate) fn max_assignable(&self, consumer: usize) -> usize {
        let extra = usize::from(self.remaining_consumers_with_extra_partition > 0);
        (self.num_partitions_per_consumer + extra)
            .saturating_sub(self.num_assigned_by_consumer[consumer])
    }

    pub(crate) fn has_unassigned(&self) -> bool {
        self.unassigned.remaining > 0
    }

    /// Kafka's `assignRanges` for this topic: each consumer in order takes the lowest-numbered
    /// unassigned partitions it may have (all of them, or only rack-matching ones), up to
    /// [`Self::max_assignable`].
    pub(crate) fn assign_ranges(&mut self, rack_matching_only: bool, assignment: &mut Assignment) {
        for consumer in 0..self.consumers.len() {
            if !self.has_unassigned() {
                break;
            }
            let limit = self.max_assignable(consumer);
            let partitions = if rack_matching_only {
                let matches = |p: usize| self.racks_match(consumer, p);
                self.unassigned.first_matching(limit, matches)
            } else {
                self.unassigned.first_matching(limit, |_| true)
            };
            if !partitions.is_empty() {
                self.assign(consumer, &partitions, assignment);
            }
        }
    }

    /// Gives `partitions` (unassigned ones) to `consumer`.
    pub(crate) fn assign(
        &mut self,
        consumer: usize,
        partitions: &[usize],
        assignment: &mut Assignment,
    ) {
        let member = &self.consumers[consumer].0.member_id;
        assignment.assign_all(member, self.topic, partitions.iter().map(|&p| p as i32));
        self.unassigned.take(partitions);
        self.num_assigned_by_consumer[consumer] += partitions.len();
        if self.num_assigned_by_consumer[consumer] > self.num_partitions_per_consumer {
            self.remaining_consumers_with_extra_partition = self
                .remaining_consumers_with_extra_partition
                .saturating_sub(1);
        }
    }
}

/// Kafka's `AbstractPartitionAssignor.useRackAwareAssignment`: only when consumers have racks
/// that some partitions are on, and not every partition is on every rack (then racks cannot
/// make a difference), unless the test-only `prefer_rack_aware_logic` forces it.
pub(crate) fn use_rack_aware_assignment(
    consumer_racks: &BTreeSet<&str>,
    partition_racks: &BTreeSet<&str>,
    racks_per_partition: &[BTreeSet<&str>],
    prefer_rack_aware_logic: bool,
) -> bool {
    if consumer_racks.is_empty() || consumer_racks.is_disjoint(partition_racks) {
        false
    } else if prefer_rack_aware_logic {
        true
    } else {
        !racks_per_partition
            .iter()
            .all(|racks| racks == partition_racks)
    }
}

/// The unassigned partitions of a topic, scanned lowest first (Kafka keeps them in a
/// `LinkedHashSet` in partition order). Taking from the front is amortized O(1) per partition.
struct Unassigned {
    taken: Vec<bool>,
    /// Every partition below `front` is taken.
    front: usize,
    remaining: usize,
}

impl Unassigned {
    fn new(partition_count: usize) -> Self {
        Unassigned {
            taken: vec![false; partition_count],
            front: 0,
            remaining: partition_count,
        }
    }

    /// Up to `limit` unassigned partitions accepted by `matches`, lowest first.
    fn first_matching(&self, limit: usize, matches: impl Fn(usize) -> bool) -> Vec<usize> {
        let mut out = Vec::new();
        let mut p = self.front;
        while out.len() < limit && p < self.taken.len() {
            if !self.taken[p] && matches(p) {
                out.push(p);
            }
            p += 1;
        }
        out
    }

    fn take(&mut self, partitions: &[usize]) {
        for &p in partitions {
            if !std::mem::replace(&mut self.taken[p], true) {
                self.remaining -= 1;
            }
        }
        while self.front < self.taken.len() && self.taken[self.front] {
            self.front += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<'a>(racks: &[&'a str]) -> BTreeSet<&'a str> {
        racks.iter().copied().collect()
    }

    /// AbstractPartitionAssignorTest.testUseRackAwareAssignment
    #[test]
    fn test_use_rack_aware_assignment() {
        let all = set(&["a", "b", "c"]);
        let two = set(&["a", "b"]);
        let on_all: Vec<_> = (0..10).map(|_| all.clone()).collect();
        let on_subset: Vec<_> = (0..10).map(|i| set(&[["a", "b", "c"][i % 3]])).collect();
        let none = BTreeSet::new();
        for prefer in [false, true] {
            let f = |c: &BTreeSet<&str>, p: &BTreeSet<&str>, per: &[BTreeSet<&str>]| {
                use_rack_aware_assignment(c, p, per, prefer)
            };
            assert!(!f(&none, &none, &on_all));
            assert!(!f(&none, &all, &on_all));
            assert!(!f(&all, &none, &[]));
            assert!(!f(&set(&["d"]), &all, &on_all));
            assert_eq!(f(&all, &all, &on_all), prefer);
            assert_eq!(f(&two, &all, &on_all), prefer);
            assert!(f(&all, &all, &on_subset));
            assert!(f(&two, &all, &on_subset));
        }
        assert!(!use_rack_aware_assignment(
            &set(&["a", "d"]),
            &all,
            &on_all,
            false
        ));
        assert!(use_rack_aware_assignment(
            &set(&["a", "d"]),
            &all,
            &on_subset,
            false
        ));
    }

    #[test]
    fn unassigned_hands_out_lowest_first_and_skips_taken() {
        let mut u = Unassigned::new(6);
        assert_eq!(u.first_matching(2, |p| p % 2 == 1), [1, 3]);
        u.take(&[1, 3]);
        assert_eq!(u.first_matching(10, |_| true), [0, 2, 4, 5]);
        u.take(&[0]);
        assert_eq!((u.front, u.remaining), (2, 3));
        assert!(u.first_matching(0, |_| true).is_empty());
    }
}
