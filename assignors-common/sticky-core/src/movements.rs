//! Kafka's `AbstractStickyAssignor.PartitionMovements`: where each partition moved during the
//! general builder's balancing, so that a partition about to move back along a path another
//! one took is swapped for that one ("the actual partition to be moved"), and so that the
//! result can be checked for stickiness (no two consumers trading partitions of one topic).
//!
//! The partitions moved between a pair of consumers sit in a Java `HashSet`, and Kafka takes
//! "the first" of them: [`JavaHashSet`] reproduces which one that is.

use std::collections::HashMap;

use crate::group::Group;
use crate::java::JavaHashSet;

/// `(source, destination)` member pair (Kafka's `ConsumerPair`).
type Pair = (u32, u32);

#[derive(Default)]
pub struct Movements {
    by_topic: HashMap<u32, HashMap<Pair, JavaHashSet>>,
    of_partition: HashMap<u32, Pair>,
}

impl Movements {
    fn remove_record(&mut self, group: &Group<'_>, gid: u32) -> Option<Pair> {
        let pair = self.of_partition.remove(&gid)?;
        let topic = group.partition_topic[gid as usize];
        if let Some(pairs) = self.by_topic.get_mut(&topic) {
            if let Some(set) = pairs.get_mut(&pair) {
                set.remove(gid);
                if set.is_empty() {
                    pairs.remove(&pair);
                }
            }
            if pairs.is_empty() {
                self.by_topic.remove(&topic);
            }
        }
        Some(pair)
    }

    fn add_record(&mut self, group: &Group<'_>, gid: u32, pair: Pair) {
        self.of_partition.insert(gid, pair);
        let topic = group.partition_topic[gid as usize];
        self.by_topic
            .entry(topic)
            .or_default()
            .entry(pair)
            .or_default()
            .insert(gid, group.partition_hash(gid));
    }

    /// `movePartition`: records `gid` moving from `old` to `new`; a partition moving back to
    /// where it started is no longer a movement.
    pub fn move_partition(&mut self, group: &Group<'_>, gid: u32, old: u32, new: u32) {
        match self.remove_record(group, gid) {
            Some((source, _)) => {
                if source != new {
                    self.add_record(group, gid, (source, new));
                }
            }
            None => self.add_record(group, gid, (old, new)),
        }
    }

    /// `getTheActualPartitionToBeMoved`: if a partition of the same topic already moved from
    /// `new` to (the original owner of `gid`), move that one back instead.
    pub fn actual_partition_to_move(&self, group: &Group<'_>, gid: u32, old: u32, new: u32) -> u32 {
        let topic = group.partition_topic[gid as usize];
        let Some(pairs) = self.by_topic.get(&topic) else {
            return gid;
        };
        let old = self
            .of_partition
            .get(&gid)
            .map_or(old, |&(source, _)| source);
        pairs
            .get(&(new, old))
            .and_then(JavaHashSet::first)
            .unwrap_or(gid)
    }

    /// `isSticky`: no topic has partitions that moved both from `a` to `b` and from `b` to `a`.
    pub fn is_sticky(&self) -> bool {
        self.by_topic.values().all(|pairs| {
            pairs
                .keys()
                .all(|&(a, b)| a == b || !pairs.contains_key(&(b, a)))
        })
    }
}
