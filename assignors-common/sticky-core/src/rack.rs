//! Kafka's `AbstractStickyAssignor.RackInfo` (KIP-881): consumer racks, replica racks per
//! partition, and whether the assignment is rack-aware at all.
//!
//! Rack-aware assignment is used when some consumer has a rack, some partition has a replica
//! on a consumer's rack, and not every partition is on the same set of racks (or always, with
//! Kafka's test-only `preferRackAwareLogic`). Otherwise `consumer_rack` and `partition_racks`
//! stay empty and every rack check answers "no mismatch", as in Kafka.

use std::collections::HashMap;

use crate::group::{Group, NONE};

pub struct RackInfo {
    /// Rack of each member (interned), `NONE` without one; all `NONE` when not rack-aware.
    consumer_rack: Vec<u32>,
    /// Racks of each partition's replicas (interned, distinct); empty when not rack-aware.
    partition_racks: Vec<Vec<u32>>,
    /// Kafka's `numConsumersByPartition`: consumers on the racks of each partition; empty when
    /// no consumer has a rack.
    consumers_by_partition: Vec<u32>,
    /// Whether rack-aware assignment is on (Kafka: `!consumerRacks.isEmpty()`).
    pub enabled: bool,
}

/// The id of rack `r`, numbering racks in the order first seen (consumer racks come first).
fn intern<'a>(interned: &mut HashMap<&'a str, u32>, r: &'a str) -> u32 {
    let next = interned.len() as u32;
    *interned.entry(r).or_insert(next)
}

impl RackInfo {
    pub fn new(group: &Group<'_>, prefer_rack_aware_logic: bool) -> RackInfo {
        let request = group.request;
        let mut interned: HashMap<&str, u32> = HashMap::new();
        let rack_of: Vec<u32> = request
            .members
            .iter()
            .map(|m| m.rack().map_or(NONE, |r| intern(&mut interned, r)))
            .collect();
        let disabled = RackInfo {
            consumer_rack: vec![NONE; group.members()],
            partition_racks: Vec::new(),
            consumers_by_partition: Vec::new(),
            enabled: false,
        };
        if rack_of.iter().all(|&r| r == NONE) {
            return disabled;
        }
        let consumer_racks = interned.len();
        let mut consumers_on_rack = vec![0u32; consumer_racks];
        for &r in &rack_of {
            if r != NONE {
                consumers_on_rack[r as usize] += 1;
            }
        }
        let mut partition_racks = Vec::with_capacity(group.partitions());
        for (t, &source) in group.topic_source.iter().enumerate() {
            let topic = &request.topics[source];
            for p in 0..group.partition_count(t as u32) {
                let mut racks: Vec<u32> = topic
                    .racks_of(p as i32)
                    .iter()
                    .map(|r| intern(&mut interned, r))
                    .collect();
                racks.sort_unstable();
                racks.dedup();
                partition_racks.push(racks);
            }
        }
        let consumers_by_partition = partition_racks
            .iter()
            .map(|racks| {
                racks
                    .iter()
                    .filter_map(|&r| consumers_on_rack.get(r as usize))
                    .sum()
            })
            .collect();

        // useRackAwareAssignment(consumerRacks, partitionRacks, racksPerPartition).
        let mut all_partition_racks: Vec<u32> = partition_racks.iter().flatten().copied().collect();
        all_partition_racks.sort_unstable();
        all_partition_racks.dedup();
        let overlap = all_partition_racks
            .iter()
            .any(|&r| (r as usize) < consumer_racks);
        let use_racks = overlap
            && (prefer_rack_aware_logic
                || partition_racks.iter().any(|r| *r != all_partition_racks));
        if !use_racks {
            return RackInfo {
                consumers_by_partition,
                ..disabled
            };
        }
        RackInfo {
            consumer_rack: rack_of,
            partition_racks,
            consumers_by_partition,
            enabled: true,
        }
    }

    /// Kafka's `racksMismatch`: the consumer has a rack and no replica of the partition is on
    /// it.
    pub fn mismatch(&self, member: u32, gid: u32) -> bool {
        let rack = self.consumer_rack[member as usize];
        rack != NONE
            && !self
                .partition_racks
                .get(gid as usize)
                .is_some_and(|racks| racks.contains(&rack))
    }

    /// The member's rack when rack-aware.
    pub fn rack(&self, member: u32) -> Option<u32> {
        let rack = self.consumer_rack[member as usize];
        (rack != NONE).then_some(rack)
    }

    /// The replica racks of a partition when rack-aware (empty otherwise).
    pub fn racks_of(&self, gid: u32) -> &[u32] {
        self.partition_racks
            .get(gid as usize)
            .map_or(&[], Vec::as_slice)
    }

    /// Kafka's `sortPartitionsByRackConsumers`: a stable sort by the number of consumers on
    /// the partition's racks, when some consumer has a rack.
    pub fn sort_by_rack_consumers(&self, partitions: &mut [u32]) {
        if !self.consumers_by_partition.is_empty() {
            partitions.sort_by_key(|&gid| self.consumers_by_partition[gid as usize]);
        }
    }

    /// Kafka's `nextRackConsumer`: from `first`, circularly, the position in `list` of the
    /// first consumer on a rack holding `gid`, or `None`.
    pub fn next_rack_consumer(&self, gid: u32, list: &[u32], first: usize) -> Option<usize> {
        let racks = self.racks_of(gid);
        if racks.is_empty() || list.is_empty() {
            return None;
        }
        (0..list.len())
            .map(|i| (first + i) % list.len())
            .find(|&i| self.rack(list[i]).is_some_and(|r| racks.contains(&r)))
    }
}
