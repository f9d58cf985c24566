//! Keyed timers for one shard: scheduling a key replaces its deadline, cancelling forgets it,
//! and a stale heap entry (cancelled or replaced key) never fires. A binary heap ordered by
//! (deadline, sequence) with lazy deletion; rebuilt when stale entries pile up (heartbeats
//! re-arm the same keys all the time).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::coordinator::{Millis, TimerKey};

#[derive(Default)]
pub struct Timers {
    live: HashMap<TimerKey, (Millis, u64)>,
    heap: BinaryHeap<Reverse<(Millis, u64, TimerKey)>>,
    seq: u64,
}

impl Timers {
    /// Arms `key` for `at`, replacing any earlier deadline of the same key.
    pub fn schedule(&mut self, key: TimerKey, at: Millis) {
        self.seq += 1;
        self.live.insert(key.clone(), (at, self.seq));
        self.heap.push(Reverse((at, self.seq, key)));
        if self.heap.len() > 1024 && self.heap.len() > 2 * self.live.len() {
            self.compact();
        }
    }

    pub fn cancel(&mut self, key: &TimerKey) {
        self.live.remove(key);
    }

    /// Forgets every timer of the groups `released` names (their groups are gone).
    pub fn cancel_groups(&mut self, released: impl Fn(&str) -> bool) {
        self.live.retain(|key, _| !released(key.group()));
    }

    /// The earliest live deadline.
    pub fn next_deadline(&mut self) -> Option<Millis> {
        while let Some(Reverse((at, seq, key))) = self.heap.peek() {
            if self.live.get(key) == Some(&(*at, *seq)) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes and returns a live key whose deadline is at or before `now`, earliest first.
    pub fn pop_due(&mut self, now: Millis) -> Option<TimerKey> {
        let at = self.next_deadline()?;
        if at > now {
            return None;
        }
        let Reverse((_, _, key)) = self.heap.pop().expect("peeked");
        self.live.remove(&key);
        Some(key)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    fn compact(&mut self) {
        self.heap = self
            .live
            .iter()
            .map(|(k, (at, seq))| Reverse((*at, *seq, k.clone())))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(g: &str) -> TimerKey {
        TimerKey::Join { group: g.into() }
    }

    #[test]
    fn due_keys_fire_in_deadline_order() {
        let mut t = Timers::default();
        t.schedule(join("b"), 20);
        t.schedule(join("a"), 10);
        assert_eq!(t.next_deadline(), Some(10));
        assert_eq!(t.pop_due(5), None);
        assert_eq!(t.pop_due(25), Some(join("a")));
        assert_eq!(t.pop_due(25), Some(join("b")));
        assert_eq!(t.pop_due(25), None);
    }

    #[test]
    fn rescheduling_replaces_and_cancelling_forgets() {
        let mut t = Timers::default();
        t.schedule(join("a"), 10);
        t.schedule(join("a"), 30); // replaced: the 10 ms firing is stale
        t.schedule(join("b"), 15);
        t.cancel(&join("b"));
        assert_eq!(t.pop_due(20), None);
        assert_eq!(t.next_deadline(), Some(30));
        assert_eq!(t.pop_due(30), Some(join("a")));
        assert!(t.is_empty());
    }

    #[test]
    fn cancelling_groups_forgets_every_timer_of_those_groups_only() {
        let mut t = Timers::default();
        t.schedule(join("a"), 10);
        t.schedule(
            TimerKey::Heartbeat {
                group: "a".into(),
                member: "m".into(),
            },
            12,
        );
        t.schedule(join("b"), 15);
        t.cancel_groups(|g| g == "a");
        assert_eq!(t.pop_due(20), Some(join("b")));
        assert_eq!(t.pop_due(20), None);
        assert!(t.is_empty());
    }

    #[test]
    fn stale_entries_are_compacted() {
        let mut t = Timers::default();
        for i in 0..10_000 {
            t.schedule(join("a"), i);
        }
        assert!(t.heap.len() <= 2 * 1024 + 2, "heap {}", t.heap.len());
        assert_eq!(t.len(), 1);
        assert_eq!(t.pop_due(10_000), Some(join("a")));
    }
}
