//! Kafka's `ConstrainedAssignmentBuilder`: the fast path when every member subscribes to the
//! same topics. Linear in partitions plus `M log M`, so it is what makes a 2,000-member,
//! 200,000-partition group cheap.
//!
//! 1. Reassign previously owned partitions, members in Java `HashMap` order, each member's
//!    owned partitions sorted by (partition, topic): fewer than `minQuota` are all kept;
//!    `maxQuota` or more keep `maxQuota` while fewer than `expected` members are above
//!    `minQuota`; otherwise `minQuota` are kept. What is not kept (and, rack-aware, owned
//!    partitions on no replica of the member's rack) may be revoked.
//! 2. Rack-aware only: deal the unassigned partitions round robin to unfilled members on a
//!    rack holding a replica.
//! 3. Deal the rest round robin, members below `minQuota` first (sorted by member id), then
//!    members at `minQuota` that may take one more.
//!
//! `partitions_transferring_ownership` records every partition handed to a member other than
//! the one it was revoked from, and every partition that had several previous owners; the
//! cooperative flavour leaves those out of this round.

use std::collections::VecDeque;

use assignor_sdk::AssignError;

use crate::group::{Group, NONE};
use crate::ownership::Ownership;
use crate::rack::RackInfo;

pub struct Constrained<'g, 'a> {
    group: &'g Group<'a>,
    racks: &'g RackInfo,
    multiple_owners: &'g [bool],
    /// Partition -> the member it may be revoked from.
    maybe_revoked: Vec<u32>,
    /// Partition -> the member it goes to while someone else had it (`NONE` otherwise).
    pub transferring: Vec<u32>,
    under_min: Vec<u32>,
    exactly_min: VecDeque<u32>,
    min_quota: usize,
    max_quota: usize,
    expected_over_min: usize,
    current_over_min: usize,
    pub assignment: Vec<Vec<u32>>,
    assigned: Vec<bool>,
}

impl<'g, 'a> Constrained<'g, 'a> {
    pub fn new(group: &'g Group<'a>, racks: &'g RackInfo, ownership: &'g Ownership) -> Self {
        let members = group.members();
        let total = group.partitions();
        let min_quota = total / members;
        let max_quota = total.div_ceil(members);
        Constrained {
            group,
            racks,
            multiple_owners: &ownership.multiple_owners,
            maybe_revoked: vec![NONE; total],
            transferring: vec![NONE; total],
            under_min: Vec::new(),
            exactly_min: VecDeque::new(),
            min_quota,
            max_quota,
            expected_over_min: total % members,
            current_over_min: 0,
            assignment: vec![Vec::new(); members],
            assigned: vec![false; total],
        }
    }

    /// Runs the three steps; `owned` is each member's surviving previous ownership.
    pub fn build(mut self, owned: &[Vec<u32>]) -> Result<Self, AssignError> {
        self.assign_owned_partitions(owned);
        let mut unassigned: Vec<u32> = (0..self.group.partitions() as u32)
            .filter(|&gid| !self.assigned[gid as usize])
            .collect();
        let rank = &self.group.rank;
        self.under_min.sort_by_key(|&m| rank[m as usize]);
        self.exactly_min
            .make_contiguous()
            .sort_by_key(|&m| rank[m as usize]);
        self.racks.sort_by_rack_consumers(&mut unassigned);
        if self.racks.enabled {
            unassigned = self.assign_rack_aware_round_robin(unassigned);
        }
        self.assign_round_robin(&unassigned)?;
        self.verify_unfilled_members()?;
        Ok(self)
    }

    fn assign_owned_partitions(&mut self, owned: &[Vec<u32>]) {
        let group = self.group;
        for &m in &group.hash_order {
            let mut kept: Vec<u32> = Vec::new();
            for &gid in &owned[m as usize] {
                if self.racks.mismatch(m, gid) {
                    self.maybe_revoked[gid as usize] = m;
                } else {
                    kept.push(gid);
                }
            }
            kept.sort_by_key(|&gid| {
                (
                    group.partition_number(gid),
                    group.partition_topic[gid as usize],
                )
            });
            kept.retain(|&gid| !self.multiple_owners[gid as usize]);

            let take = if kept.len() < self.min_quota {
                self.under_min.push(m);
                kept.len()
            } else if kept.len() >= self.max_quota && self.current_over_min < self.expected_over_min
            {
                self.current_over_min += 1;
                if self.current_over_min == self.expected_over_min {
                    self.exactly_min.clear();
                }
                self.max_quota
            } else {
                if self.current_over_min < self.expected_over_min {
                    self.exactly_min.push_back(m);
                }
                self.min_quota
            };
            for &gid in &kept[take..] {
                self.maybe_revoked[gid as usize] = m;
            }
            for &gid in &kept[..take] {
                self.assigned[gid as usize] = true;
            }
            kept.truncate(take);
            self.assignment[m as usize] = kept;
        }
    }

    /// Step 2; returns the partitions it could not place, in order.
    fn assign_rack_aware_round_robin(&mut self, unassigned: Vec<u32>) -> Vec<u32> {
        let mut left = Vec::new();
        let mut next_unfilled = 0;
        for gid in unassigned {
            let mut consumer = NONE;
            if let Some(mut next) =
                self.racks
                    .next_rack_consumer(gid, &self.under_min, next_unfilled)
            {
                consumer = self.under_min[next];
                let count = self.assignment[consumer as usize].len() + 1;
                if count >= self.min_quota {
                    self.under_min.remove(next);
                    if count < self.max_quota && self.current_over_min < self.expected_over_min {
                        self.exactly_min.push_back(consumer);
                    }
                } else {
                    next += 1;
                }
                next_unfilled = if self.under_min.is_empty() {
                    0
                } else {
                    next % self.under_min.len()
                };
            } else if !self.exactly_min.is_empty() {
                let list = self.exactly_min.make_contiguous();
                if let Some(first) = self.racks.next_rack_consumer(gid, list, 0) {
                    consumer = list[first];
                    if self.assignment[consumer as usize].len() + 1 == self.max_quota {
                        self.exactly_min.remove(first);
                        self.current_over_min += 1;
                        if self.current_over_min == self.expected_over_min {
                            self.exactly_min.clear();
                        }
                    }
                }
            }
            if consumer == NONE {
                left.push(gid);
            } else {
                self.assign_new_partition(gid, consumer);
            }
        }
        left
    }

    /// Step 3. `under_min` is walked like Kafka's `LinkedList` iterator: in order, removing
    /// the member just returned, starting over when it runs out.
    fn assign_round_robin(&mut self, unassigned: &[u32]) -> Result<(), AssignError> {
        let mut removed = vec![false; self.under_min.len()];
        let mut alive = self.under_min.len();
        let mut pos = 0;
        for (i, &gid) in unassigned.iter().enumerate() {
            while pos < self.under_min.len() && removed[pos] {
                pos += 1;
            }
            let (consumer, slot) = if pos < self.under_min.len() {
                pos += 1;
                (self.under_min[pos - 1], Some(pos - 1))
            } else if alive == 0 {
                // Kafka: the members at minQuota that may still take one more, in order.
                let Some(consumer) = self.exactly_min.pop_front() else {
                    return Err(AssignError::new(format!(
                        "sticky (constrained): no more unfilled consumers to be assigned; {} \
                         partitions left (a bug in the assignor, please report it)",
                        unassigned.len() - i
                    )));
                };
                (consumer, None)
            } else {
                // Start over on the members still under minQuota.
                let mut compacted = Vec::with_capacity(alive);
                for (j, &m) in self.under_min.iter().enumerate() {
                    if !removed[j] {
                        compacted.push(m);
                    }
                }
                self.under_min = compacted;
                removed = vec![false; alive];
                pos = 1;
                (self.under_min[0], Some(0))
            };
            let count = self.assign_new_partition(gid, consumer);
            if count == self.min_quota {
                if let Some(slot) = slot {
                    removed[slot] = true;
                    alive -= 1;
                }
                self.exactly_min.push_back(consumer);
            } else if count == self.max_quota {
                self.current_over_min += 1;
            }
        }
        self.under_min = self
            .under_min
            .iter()
            .zip(&removed)
            .filter(|(_, r)| !**r)
            .map(|(&m, _)| m)
            .collect();
        Ok(())
    }

    fn assign_new_partition(&mut self, gid: u32, consumer: u32) -> usize {
        let p = gid as usize;
        self.assignment[consumer as usize].push(gid);
        self.assigned[p] = true;
        let revoked_from = self.maybe_revoked[p];
        if (revoked_from != NONE && revoked_from != consumer) || self.multiple_owners[p] {
            self.transferring[p] = consumer;
        }
        self.assignment[consumer as usize].len()
    }

    fn verify_unfilled_members(&self) -> Result<(), AssignError> {
        if self.under_min.is_empty() {
            return Ok(());
        }
        if self.current_over_min != self.expected_over_min {
            return Err(AssignError::new(format!(
                "sticky (constrained): {} members are above minQuota, {} expected, and no \
                 partitions are left for the members still under it (a bug in the assignor, \
                 please report it)",
                self.current_over_min, self.expected_over_min
            )));
        }
        for &m in &self.under_min {
            let count = self.assignment[m as usize].len();
            if count != self.min_quota {
                return Err(AssignError::new(format!(
                    "sticky (constrained): consumer `{}` got {count} partitions, short of \
                     minQuota {} (a bug in the assignor, please report it)",
                    self.group.request.members[m as usize].member_id, self.min_quota
                )));
            }
        }
        Ok(())
    }
}
