//! The request in index form, built once per call: members by position in Kafka's order,
//! topics by name rank, every partition by one global number, subscriptions resolved to topic
//! ids, previous assignments checked and de-duplicated.
//!
//! This is Kafka's `GroupSpec` plus `SubscribedTopicDescriber` for the builders, shaped so that
//! their loops touch integers and flat arrays only: resolving a 10,000-member group's names is
//! done here, once, and mostly by comparing a member's subscription with the previous
//! member's (groups are usually homogeneous, so the second member onwards costs one slice
//! comparison each).

use std::collections::BTreeMap;

use assignor_sdk::{AssignError, AssignRequest, Member, Topic};

/// "No member": the owner of a partition nobody holds.
pub const NO_MEMBER: u32 = u32::MAX;

/// One group, in index form. Positions, topic ids and global partition numbers are the only
/// keys the builders use:
/// - member position `m` in `0..member_count()`: Kafka's member order (static members by
///   `group.instance.id`, then dynamic members by member id);
/// - topic id `t` in `0..topic_count()`: the known topics (positive partition count) by name;
/// - global partition `g` in `0..total_partitions()`: `offset(t) + partition`, so topic by
///   topic, partitions ascending.
#[derive(Debug)]
pub struct Group<'a> {
    request: &'a AssignRequest,
    /// Request index of the member at each position.
    members: Vec<u32>,
    /// Request index of the topic with each id.
    topics: Vec<u32>,
    /// First global partition of each topic id, then the total.
    offsets: Vec<u32>,
    /// Index into `subscriptions` of each member position.
    subscription_of: Vec<u32>,
    /// Distinct subscriptions as sorted, de-duplicated topic ids (unknown names left out).
    subscriptions: Vec<Vec<u32>>,
    /// Whether every member subscribes to the same set of names (Kafka's `HOMOGENEOUS`).
    homogeneous: bool,
    /// Per member position, the range of `entries` holding its previous assignment.
    previous: Vec<u32>,
    entries: Vec<PreviousEntry>,
    /// Partition numbers of the entries.
    partitions: Vec<u32>,
    /// Bit `g`: some member's previous assignment holds global partition `g`.
    claimed: Vec<u64>,
}

/// One topic of a member's previous assignment: its valid, first-claimed partitions.
#[derive(Debug, Clone, Copy)]
struct PreviousEntry {
    topic: u32,
    start: u32,
    end: u32,
}

impl<'a> Group<'a> {
    /// Indexes `request`. Fails, naming the culprit, on what the host never sends: a member id
    /// or topic name listed twice, or a group too large for 32-bit indices.
    pub fn new(request: &'a AssignRequest) -> Result<Group<'a>, AssignError> {
        if request.members.len() >= NO_MEMBER as usize {
            return Err(AssignError::new(format!(
                "the group has {} members; this module handles fewer than 2^32",
                request.members.len()
            )));
        }
        check_unique_members(request)?;
        let topics = topic_ids(&request.topics)?;
        let mut offsets = Vec::with_capacity(topics.len() + 1);
        let mut total: u64 = 0;
        for &i in &topics {
            offsets.push(total as u32);
            total += request.topics[i as usize].partition_count as u64;
            if total > u64::from(u32::MAX) {
                return Err(AssignError::new(
                    "the subscribed topics hold more than 2^32 - 1 partitions; this module \
                     numbers partitions in 32 bits",
                ));
            }
        }
        offsets.push(total as u32);
        let mut group = Group {
            request,
            members: request.kafka_order().into_owned(),
            topics,
            offsets,
            subscription_of: Vec::new(),
            subscriptions: Vec::new(),
            homogeneous: true,
            previous: Vec::new(),
            entries: Vec::new(),
            partitions: Vec::new(),
            claimed: vec![0; (total as usize).div_ceil(64)],
        };
        group.resolve_subscriptions();
        group.resolve_previous();
        Ok(group)
    }

    /// The request this group indexes.
    pub fn request(&self) -> &'a AssignRequest {
        self.request
    }

    /// Kafka's `GroupSpec.memberIds().size()`.
    pub fn member_count(&self) -> usize {
        self.members.len()
    }

    /// The member at position `m`.
    pub fn member(&self, m: u32) -> &'a Member {
        &self.request.members[self.members[m as usize] as usize]
    }

    /// The position in `request.members` of the member at position `m`.
    pub fn member_position(&self, m: u32) -> usize {
        self.members[m as usize] as usize
    }

    /// The position in `request.topics` of the topic with id `t`.
    pub fn topic_position(&self, t: u32) -> usize {
        self.topics[t as usize] as usize
    }

    /// Number of known topics (ids `0..topic_count()`).
    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    /// The topic with id `t`.
    pub fn topic(&self, t: u32) -> &'a Topic {
        &self.request.topics[self.topics[t as usize] as usize]
    }

    /// Kafka's `SubscribedTopicDescriber.numPartitions`.
    pub fn partition_count(&self, t: u32) -> u32 {
        self.offsets[t as usize + 1] - self.offsets[t as usize]
    }

    /// Global number of partition 0 of topic `t`.
    pub fn offset(&self, t: u32) -> u32 {
        self.offsets[t as usize]
    }

    /// Partitions of all known topics.
    pub fn total_partitions(&self) -> usize {
        self.offsets[self.topics.len()] as usize
    }

    /// The topic holding global partition `g`.
    pub fn topic_of(&self, g: u32) -> u32 {
        (self.offsets.partition_point(|&o| o <= g) - 1) as u32
    }

    /// Whether every member subscribes to the same topic names, known or not (Kafka's
    /// `SubscriptionType.HOMOGENEOUS`, decided on names like `ModernGroup.subscriptionType`).
    pub fn is_homogeneous(&self) -> bool {
        self.homogeneous
    }

    /// The known topics member `m` subscribes to, as sorted ids.
    pub fn subscription(&self, m: u32) -> &[u32] {
        &self.subscriptions[self.subscription_of[m as usize] as usize]
    }

    /// Whether member `m` subscribes to topic `t`.
    pub fn subscribes(&self, m: u32, t: u32) -> bool {
        self.subscription(m).binary_search(&t).is_ok()
    }

    /// Member `m`'s previous assignment, topic by topic as the request lists it: each topic id
    /// with the partitions (numbers within the topic) that are in range and that no member
    /// before `m` listed.
    pub fn previous(&self, m: u32) -> impl Iterator<Item = (u32, &[u32])> {
        let range = self.previous[m as usize] as usize..self.previous[m as usize + 1] as usize;
        self.entries[range]
            .iter()
            .map(|e| (e.topic, &self.partitions[e.start as usize..e.end as usize]))
    }

    /// Kafka's `GroupSpec.isPartitionAssigned`: whether some member's previous assignment
    /// holds global partition `g`.
    pub fn is_claimed(&self, g: u32) -> bool {
        self.claimed[g as usize / 64] & (1 << (g % 64)) != 0
    }

    /// Bits `64 * w .. 64 * w + 63` of [`Self::is_claimed`], for skipping unclaimed stretches.
    pub fn claimed_word(&self, w: u32) -> u64 {
        self.claimed[w as usize]
    }

    fn topic_id(&self, name: &str) -> Option<u32> {
        self.topics
            .binary_search_by(|&i| self.request.topics[i as usize].name.as_str().cmp(name))
            .ok()
            .map(|t| t as u32)
    }

    /// One pass over the members: a subscription equal to the previous member's (as listed)
    /// reuses its resolution; any other is put in canonical form (sorted, de-duplicated names)
    /// and looked up among the distinct ones seen so far.
    fn resolve_subscriptions(&mut self) {
        let request = self.request;
        if request.is_indexed() {
            return self.resolve_indexed_subscriptions();
        }
        let mut distinct: BTreeMap<Vec<&str>, u32> = BTreeMap::new();
        let mut subscriptions: Vec<Vec<u32>> = Vec::new();
        let mut last: Option<(&[String], u32)> = None;
        let mut subscription_of = Vec::with_capacity(self.members.len());
        for &i in &self.members {
            let listed: &[String] = &request.members[i as usize].topics;
            let id = match last {
                Some((topics, id)) if topics == listed => id,
                _ => {
                    let mut names: Vec<&str> = listed.iter().map(String::as_str).collect();
                    names.sort_unstable();
                    names.dedup();
                    match distinct.get(&names) {
                        Some(&id) => id,
                        None => {
                            let id = subscriptions.len() as u32;
                            // Names sort as topic ids do, so the ids come out sorted.
                            subscriptions
                                .push(names.iter().filter_map(|n| self.topic_id(n)).collect());
                            distinct.insert(names, id);
                            id
                        }
                    }
                }
            };
            subscription_of.push(id);
            last = Some((listed, id));
        }
        self.homogeneous = distinct.len() <= 1;
        self.subscriptions = subscriptions;
        self.subscription_of = subscription_of;
    }

    /// [`Self::resolve_subscriptions`] for a request that came with its index (ABI v2): the
    /// distinct subscriptions are the request's own, already as topic positions, so no name is
    /// compared. Only known topics reach the index, as only known names reach the request.
    fn resolve_indexed_subscriptions(&mut self) {
        let request = self.request;
        let mut id_of = vec![u32::MAX; request.topics.len()];
        for (t, &i) in self.topics.iter().enumerate() {
            id_of[i as usize] = t as u32;
        }
        let mut position = vec![0u32; request.members.len()];
        for (p, &i) in self.members.iter().enumerate() {
            position[i as usize] = p as u32;
        }
        let groups = request.subscription_groups();
        let mut subscription_of = vec![0u32; self.members.len()];
        self.subscriptions = groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                for &m in group.members.iter() {
                    subscription_of[position[m as usize] as usize] = g as u32;
                }
                // Positions and ids both follow names, so the ids come out sorted.
                group
                    .topics
                    .iter()
                    .map(|&t| id_of[t as usize])
                    .filter(|&t| t != u32::MAX)
                    .collect()
            })
            .collect();
        self.homogeneous = groups.len() <= 1;
        self.subscription_of = subscription_of;
    }

    /// Reads every member's `previous_assignment` in member order; the first member to list a
    /// partition claims it.
    fn resolve_previous(&mut self) {
        let request = self.request;
        self.previous = Vec::with_capacity(self.members.len() + 1);
        self.previous.push(0);
        for m in 0..self.members.len() {
            let member = &request.members[self.members[m] as usize];
            for listed in &member.previous_assignment {
                let Some(t) = self.topic_id(&listed.topic) else {
                    continue;
                };
                let (offset, count) = (self.offset(t), self.partition_count(t));
                let start = self.partitions.len() as u32;
                for &p in &listed.partitions {
                    if p < 0 || p as u32 >= count {
                        continue;
                    }
                    let g = offset + p as u32;
                    let (word, bit) = (g as usize / 64, 1u64 << (g % 64));
                    if self.claimed[word] & bit == 0 {
                        self.claimed[word] |= bit;
                        self.partitions.push(p as u32);
                    }
                }
                let end = self.partitions.len() as u32;
                self.entries.push(PreviousEntry {
                    topic: t,
                    start,
                    end,
                });
            }
            self.previous.push(self.entries.len() as u32);
        }
    }
}

fn check_unique_members(request: &AssignRequest) -> Result<(), AssignError> {
    let duplicate = if request.member_ids_sorted() {
        None
    } else {
        let mut ids: Vec<&str> = request
            .members
            .iter()
            .map(|m| m.member_id.as_str())
            .collect();
        ids.sort_unstable();
        ids.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
    };
    match duplicate {
        Some(id) => Err(AssignError::new(format!(
            "member `{id}` is listed twice in the request"
        ))),
        None => Ok(()),
    }
}

/// Request indices of the known topics (positive partition count), sorted by name.
fn topic_ids(topics: &[Topic]) -> Result<Vec<u32>, AssignError> {
    let mut ids: Vec<u32> = (0..topics.len() as u32)
        .filter(|&i| topics[i as usize].partition_count > 0)
        .collect();
    let name = |i: u32| topics[i as usize].name.as_str();
    if !ids.windows(2).all(|w| name(w[0]) < name(w[1])) {
        ids.sort_by(|&a, &b| name(a).cmp(name(b)));
        if let Some(w) = ids.windows(2).find(|w| name(w[0]) == name(w[1])) {
            return Err(AssignError::new(format!(
                "topic `{}` is listed twice in the request",
                name(w[0])
            )));
        }
    }
    Ok(ids)
}
