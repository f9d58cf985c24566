//! The parts of Java's collections that decide Kafka's sticky output: `String.hashCode`,
//! `TopicPartition.hashCode`, and the iteration order of a `java.util.HashMap` / `HashSet`.
//!
//! Kafka's `AbstractStickyAssignor` walks its members through `HashMap`s (which member keeps
//! `maxQuota` partitions, which of two claims of equal standing is seen first), and its general
//! builder takes "any" partition out of a `HashSet<TopicPartition>`. Those choices are part of
//! the answer, so to give the answer a Java leader gives for the same group, the orders are
//! reproduced here rather than replaced by a sorted order.
//!
//! What is modelled: a table of `16 << k` buckets that doubles when its size passes 3/4 of the
//! capacity (Java's defaults), a key's bucket `(h ^ (h >>> 16)) & (capacity - 1)`, buckets
//! iterated in index order and keys inside a bucket in insertion order (a resize splits a
//! bucket without reordering it). Not modelled: "treeified" buckets (8 or more keys in one
//! bucket of a table of 64 or more, or a resize forced by 8 colliding keys in a smaller
//! table). With distinct member ids and partitions that needs a run of hash collisions far
//! outside anything a consumer group produces; the order would then differ from Java's inside
//! that bucket only, and the assignment would still be valid, balanced and sticky.

use std::collections::{BTreeSet, HashMap};

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping.
pub fn string_hash(s: &str) -> i32 {
    let mut h: i32 = 0;
    if s.is_ascii() {
        for b in s.bytes() {
            h = h.wrapping_mul(31).wrapping_add(i32::from(b));
        }
    } else {
        for unit in s.encode_utf16() {
            h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
        }
    }
    h
}

/// Kafka's `TopicPartition.hashCode`: `31 * (31 + partition) + topic.hashCode()`.
pub fn topic_partition_hash(topic_hash: i32, partition: i32) -> i32 {
    31i32
        .wrapping_add(partition)
        .wrapping_mul(31)
        .wrapping_add(topic_hash)
}

/// `HashMap.hash`: the high half folded into the low half.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// The capacity a default `HashMap` has after `n` insertions: 16, doubled while `n` exceeds
/// three quarters of it.
pub fn capacity_for(n: usize) -> usize {
    let mut capacity = 16;
    while n > capacity / 4 * 3 {
        capacity *= 2;
    }
    capacity
}

/// The order in which a `HashMap<String, _>` filled with `keys` (in this order) iterates them,
/// as indices into `keys`. Keys are distinct.
pub fn hash_map_order(keys: &[&str]) -> Vec<usize> {
    let mask = capacity_for(keys.len()) as u32 - 1;
    let mut order: Vec<(u32, usize)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (spread(string_hash(k)) & mask, i))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| i).collect()
}

/// A `HashSet<TopicPartition>` as far as `iterator().next()` is concerned: which element comes
/// first. Elements are partition ids with their Java hash; the set grows like Java's (it never
/// shrinks while it holds anything).
#[derive(Debug, Default, Clone)]
pub struct JavaHashSet {
    capacity: usize,
    next_seq: u64,
    /// (bucket, insertion sequence, element): iteration order.
    ordered: BTreeSet<(u32, u64, u32)>,
    /// element -> (hash, bucket, sequence).
    entries: HashMap<u32, (i32, u32, u64)>,
}

impl JavaHashSet {
    /// Adds `element` (whose Java hash is `hash`); no effect if it is already there.
    pub fn insert(&mut self, element: u32, hash: i32) {
        if self.entries.contains_key(&element) {
            return;
        }
        if self.capacity == 0 {
            self.capacity = 16;
        }
        let bucket = spread(hash) & (self.capacity as u32 - 1);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.ordered.insert((bucket, seq, element));
        self.entries.insert(element, (hash, bucket, seq));
        if self.entries.len() > self.capacity / 4 * 3 {
            self.capacity *= 2;
            let mask = self.capacity as u32 - 1;
            self.ordered.clear();
            for (&e, entry) in self.entries.iter_mut() {
                entry.1 = spread(entry.0) & mask;
                self.ordered.insert((entry.1, entry.2, e));
            }
        }
    }

    /// Removes `element`; returns whether it was there.
    pub fn remove(&mut self, element: u32) -> bool {
        match self.entries.remove(&element) {
            Some((_, bucket, seq)) => {
                self.ordered.remove(&(bucket, seq, element));
                true
            }
            None => false,
        }
    }

    /// What `iterator().next()` returns.
    pub fn first(&self) -> Option<u32> {
        self.ordered.first().map(|&(_, _, e)| e)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains(&self, element: u32) -> bool {
        self.entries.contains_key(&element)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_is_javas() {
        // Values of "...".hashCode() in Java.
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("a"), 97);
        assert_eq!(string_hash("consumer1"), 0xe6e7fafbu32 as i32);
        assert_eq!(string_hash("hello world"), 1794106052);
        // Outside the BMP Java hashes the two surrogates.
        assert_eq!(string_hash("\u{1F600}"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn topic_partition_hash_is_kafkas() {
        let topic = string_hash("topic");
        assert_eq!(topic_partition_hash(topic, 0), 31 * 31 + topic);
        assert_eq!(topic_partition_hash(topic, 2), 31 * 33 + topic);
    }

    #[test]
    fn capacity_doubles_past_three_quarters() {
        assert_eq!(capacity_for(0), 16);
        assert_eq!(capacity_for(12), 16);
        assert_eq!(capacity_for(13), 32);
        assert_eq!(capacity_for(24), 32);
        assert_eq!(capacity_for(25), 64);
        assert_eq!(capacity_for(2000), 4096);
    }

    #[test]
    fn hash_map_order_matches_java() {
        // new HashMap<>() with consumer1..4 put in order iterates consumer4, 3, 2, 1.
        let keys = ["consumer1", "consumer2", "consumer3", "consumer4"];
        assert_eq!(hash_map_order(&keys), [3, 2, 1, 0]);
        // "c0" and "c1" are in buckets 13 and 14 of 16.
        assert_eq!(hash_map_order(&["c1", "c0"]), [1, 0]);
    }

    #[test]
    fn keys_sharing_a_bucket_keep_insertion_order() {
        // "Aa" and "BB" have the same String.hashCode.
        assert_eq!(string_hash("Aa"), string_hash("BB"));
        assert_eq!(hash_map_order(&["BB", "Aa"]), [0, 1]);
        assert_eq!(hash_map_order(&["Aa", "BB"]), [0, 1]);
    }

    #[test]
    fn hash_set_first_follows_buckets_then_insertion_and_survives_resizes() {
        let mut set = JavaHashSet::default();
        // Hashes 5 and 21 share bucket 5 of 16 but not of 32.
        set.insert(1, 21);
        set.insert(2, 5);
        assert_eq!(set.first(), Some(1));
        for e in 10..22 {
            set.insert(e, 30 + e as i32 * 32);
        }
        // 14 elements: capacity 32; buckets 5 (element 2), 21 (element 1), 30 (the rest).
        assert_eq!(set.first(), Some(2));
        assert!(set.remove(2));
        assert!(!set.remove(2));
        assert_eq!(set.first(), Some(1));
        assert!(set.contains(1) && !set.is_empty());
    }
}
