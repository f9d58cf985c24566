//! What the benches report beside their tables, kept apart from the rest of `support` (and its
//! global allocator) so a bench with an allocator of its own (`coordinator.rs`, which counts
//! bytes) can include just this: `#[path = "support/report/mod.rs"] mod report;`.
//!
//! - `kafka`: Apache Kafka's own assignors, timed in the same run (a Java program per cell);
//! - `jsonl`: the machine-readable results, `target/bench/<bench>.jsonl`.
#![allow(dead_code, unused_imports, reason = "each bench uses part of it")]

pub mod jsonl;
pub mod kafka;

use std::fmt;

/// How members subscribe, as Kafka's benchmarks name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subscription {
    /// Every member subscribes to every topic.
    Homogeneous,
    /// Kafka's buckets (`AssignorBenchmarkUtils.createHeterogeneousBucketedMembers`): members
    /// and topics split into `min(5, members)` contiguous buckets of `ceil(members / buckets)`
    /// members and `ceil(topics / buckets)` topics; a member subscribes to its bucket's
    /// topics only, so the group is a union of disjoint homogeneous sub-groups.
    Heterogeneous,
}

impl Subscription {
    pub fn as_str(self) -> &'static str {
        match self {
            Subscription::Homogeneous => "homogeneous",
            Subscription::Heterogeneous => "heterogeneous",
        }
    }
}

impl fmt::Display for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether anyone owns partitions when the assignor runs, as Kafka's benchmarks name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignment {
    /// Nobody owns anything: a group's first assignment.
    Full,
    /// `members - 1` members own what a first assignment gave them and one member joins
    /// (`support::incremental_group`).
    Incremental,
}

impl Assignment {
    pub fn as_str(self) -> &'static str {
        match self {
            Assignment::Full => "full",
            Assignment::Incremental => "incremental",
        }
    }
}
