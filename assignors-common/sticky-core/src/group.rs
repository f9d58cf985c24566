//! The group as the sticky builders see it: Kafka's `partitionsPerTopic` and subscriptions,
//! turned into dense indices so that a 2,000-member, 200,000-partition group is a few flat
//! arrays rather than maps of strings.
//!
//! - Topics: the subscribed topics the host knows with at least one partition (Kafka's
//!   `partitionsPerTopic` leaves out topics with no metadata), numbered in Java's string order
//!   of their names.
//! - Partitions: one id per partition, topic by topic in that order, partitions ascending, so
//!   sorting ids is Kafka's sort by `(topic, partition)`.
//! - Members: indices into `request.members`; `rank` is the member id's place in Java's string
//!   order (Kafka sorts member ids as Java strings); `hash_order` is the order a Java `HashMap`
//!   keyed by member id iterates them in (see [`crate::java`]).

use std::collections::HashMap;

use assignor_sdk::{AssignRequest, TopicPartitions, java_string_order};

use crate::java;

/// "No member" / "no partition" in the dense arrays.
pub const NONE: u32 = u32::MAX;

pub struct Group<'a> {
    pub request: &'a AssignRequest,
    /// Topic names in Java order (the topic index is the position here).
    pub topic_names: Vec<&'a str>,
    /// Index into `request.topics` of each topic.
    pub topic_source: Vec<usize>,
    /// First partition id of each topic; `offsets[topics]` is the partition count.
    pub offsets: Vec<u32>,
    /// `String.hashCode` of each topic name.
    pub topic_hash: Vec<i32>,
    topic_index: HashMap<&'a str, u32>,
    /// Topic of each partition id.
    pub partition_topic: Vec<u32>,
    /// Member id rank in Java string order, per member.
    pub rank: Vec<u32>,
    /// Member of each rank.
    pub by_rank: Vec<u32>,
    /// Members in Java `HashMap` iteration order.
    pub hash_order: Vec<u32>,
    /// Per member, a bitset of subscribed topic indices.
    subscribed: Vec<u64>,
    words: usize,
    /// Kafka's `allSubscriptionsEqual`: every member subscribes to the same set of topics.
    pub all_subscriptions_equal: bool,
}

impl<'a> Group<'a> {
    pub fn new(request: &'a AssignRequest) -> Group<'a> {
        let members = &request.members;
        // partitionsPerTopic: subscribed topics that exist, by Java name order.
        let mut wanted: HashMap<&str, ()> = HashMap::new();
        let mut previous: &[String] = &[];
        for m in members {
            // Members mostly share one subscription: look at each distinct list once.
            if !same_list(&m.topics, previous) {
                for t in m.topics.iter() {
                    wanted.insert(t.as_str(), ());
                }
                previous = &*m.topics;
            }
        }
        let mut topic_source: Vec<usize> = request
            .topics
            .iter()
            .enumerate()
            .filter(|(_, t)| t.partition_count > 0 && wanted.contains_key(t.name.as_str()))
            .map(|(i, _)| i)
            .collect();
        topic_source
            .sort_by(|&a, &b| java_string_order(&request.topics[a].name, &request.topics[b].name));
        topic_source.dedup_by(|a, b| request.topics[*a].name == request.topics[*b].name);
        let topic_names: Vec<&str> = topic_source
            .iter()
            .map(|&i| request.topics[i].name.as_str())
            .collect();
        let mut offsets = Vec::with_capacity(topic_names.len() + 1);
        let mut partition_topic = Vec::new();
        let mut next = 0u32;
        for (t, &source) in topic_source.iter().enumerate() {
            offsets.push(next);
            let count = request.topics[source].partition_count as u32;
            partition_topic.extend(std::iter::repeat_n(t as u32, count as usize));
            next += count;
        }
        offsets.push(next);
        let topic_index: HashMap<&str, u32> = topic_names
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i as u32))
            .collect();
        let topic_hash = topic_names.iter().map(|n| java::string_hash(n)).collect();

        let mut by_rank: Vec<u32> = (0..members.len() as u32).collect();
        by_rank.sort_by(|&a, &b| {
            java_string_order(
                &members[a as usize].member_id,
                &members[b as usize].member_id,
            )
        });
        let mut rank = vec![0u32; members.len()];
        for (r, &m) in by_rank.iter().enumerate() {
            rank[m as usize] = r as u32;
        }
        let ids: Vec<&str> = members.iter().map(|m| m.member_id.as_str()).collect();
        let hash_order: Vec<u32> = java::hash_map_order(&ids)
            .into_iter()
            .map(|i| i as u32)
            .collect();

        let words = topic_names.len().div_ceil(64).max(1);
        let mut subscribed = vec![0u64; words * members.len()];
        let mut previous: Option<(&[String], usize)> = None;
        for (m, member) in members.iter().enumerate() {
            let row = m * words;
            match previous {
                // The usual case: the same subscription as the member before.
                Some((topics, from)) if same_list(topics, &member.topics) => {
                    subscribed.copy_within(from..from + words, row);
                }
                _ => {
                    for t in member.topics.iter() {
                        if let Some(&i) = topic_index.get(t.as_str()) {
                            subscribed[row + i as usize / 64] |= 1 << (i % 64);
                        }
                    }
                }
            }
            previous = Some((&*member.topics, row));
        }
        let all_subscriptions_equal = subscriptions_equal(request);
        Group {
            request,
            topic_names,
            topic_source,
            offsets,
            topic_hash,
            topic_index,
            partition_topic,
            rank,
            by_rank,
            hash_order,
            subscribed,
            words,
            all_subscriptions_equal,
        }
    }

    pub fn members(&self) -> usize {
        self.request.members.len()
    }

    pub fn topics(&self) -> usize {
        self.topic_names.len()
    }

    pub fn partitions(&self) -> usize {
        self.partition_topic.len()
    }

    /// Partition ids of topic `t`.
    pub fn partitions_of(&self, t: u32) -> std::ops::Range<u32> {
        self.offsets[t as usize]..self.offsets[t as usize + 1]
    }

    pub fn partition_count(&self, t: u32) -> u32 {
        self.offsets[t as usize + 1] - self.offsets[t as usize]
    }

    /// The partition number of partition id `gid`.
    pub fn partition_number(&self, gid: u32) -> i32 {
        (gid - self.offsets[self.partition_topic[gid as usize] as usize]) as i32
    }

    /// The id of `topic`-`partition`, if the topic is one of the group's and the partition
    /// exists.
    pub fn gid(&self, topic: &str, partition: i32) -> Option<u32> {
        let t = *self.topic_index.get(topic)?;
        let p = u32::try_from(partition).ok()?;
        (p < self.partition_count(t)).then(|| self.offsets[t as usize] + p)
    }

    pub fn subscribes(&self, member: u32, topic: u32) -> bool {
        self.subscribed[member as usize * self.words + topic as usize / 64] >> (topic % 64) & 1 == 1
    }

    /// The topics `member` subscribes to that are in the group (Kafka's
    /// `consumer2AllPotentialTopics`), ascending.
    pub fn topics_of(&self, member: u32) -> impl Iterator<Item = u32> + '_ {
        (0..self.topics() as u32).filter(move |&t| self.subscribes(member, t))
    }

    /// Kafka's `TopicPartition.hashCode` of partition id `gid`.
    pub fn partition_hash(&self, gid: u32) -> i32 {
        let t = self.partition_topic[gid as usize];
        java::topic_partition_hash(self.topic_hash[t as usize], self.partition_number(gid))
    }

    /// The partition ids of `list`, leaving out topics that are not the group's and partitions
    /// that do not exist (Kafka keeps claims only on topics of `partitionsPerTopic`; a partition
    /// beyond the topic's count cannot be assigned), each once, in the order listed.
    pub fn resolve(&self, list: &[TopicPartitions], seen: &mut [u32], stamp: u32) -> Vec<u32> {
        let mut out = Vec::new();
        for tp in list {
            let Some(&t) = self.topic_index.get(tp.topic.as_str()) else {
                continue;
            };
            let count = self.partition_count(t);
            for &p in &tp.partitions {
                let Ok(p) = u32::try_from(p) else { continue };
                if p >= count {
                    continue;
                }
                let gid = self.offsets[t as usize] + p;
                if seen[gid as usize] != stamp {
                    seen[gid as usize] = stamp;
                    out.push(gid);
                }
            }
        }
        out
    }
}

/// Whether every member subscribes to the same set of topics (duplicates ignored).
///
/// Kafka's loop differs in one case: it takes the first non-empty subscription it meets (in
/// `HashMap` order) as the reference, so members before it with no subscription do not count,
/// and the constrained builder then counts them in the quotas and may hand them partitions
/// they do not subscribe to. Here a member with no subscription makes the group unequal.
fn subscriptions_equal(request: &AssignRequest) -> bool {
    let Some(first) = request.members.first() else {
        return true;
    };
    let first_set = topic_set(&first.topics);
    // Clients send their topics sorted, so equal subscriptions are mostly equal lists.
    request.members[1..]
        .iter()
        .all(|m| same_list(&m.topics, &first.topics) || topic_set(&m.topics) == first_set)
}

/// Equal topic lists, by pointer first: members with one subscription share one list (the
/// request's `Arc`; `Arc<[T]>`'s own `==` has no pointer shortcut, as `[T]` is unsized), and
/// comparing every name per member was a sixth (10 topics) to a third (100 topics) of a
/// 10,000-member call in wasm, where `memcmp` is a byte loop.
fn same_list(a: &[String], b: &[String]) -> bool {
    std::ptr::eq(a, b) || a == b
}

fn topic_set(topics: &[String]) -> Vec<&str> {
    let mut set: Vec<&str> = topics.iter().map(String::as_str).collect();
    set.sort_unstable();
    set.dedup();
    set
}
