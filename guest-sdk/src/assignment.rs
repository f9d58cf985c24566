//! What an author's function returns: [`Assignment`], a builder that always answers for every
//! member of the request, and [`AssignError`], the one error type a strategy reports.
//!
//! The builder records what it is given as runs (member, topic, a stretch of partitions) in one
//! flat buffer, members and topics by their position in the request, so giving a partition is
//! an append and giving a member more partitions of the topic it got last extends the last run.
//! The answer is put in order once, at the end ([`Assignment::into_response`] for the model,
//! the glue's ABI v2 encoding for the wire).

use std::fmt;

use crate::abi::{AssignRequest, AssignResponse, MemberAssignment, TopicPartitions};
use crate::hash::FxHashMap;

mod wire;

/// The result of one rebalance, built up partition by partition.
///
/// Invariants, so that the host and every client get a complete, canonical answer:
/// - every member of the request has an entry, even one that gets nothing (Kafka answers every
///   member's SyncGroup with an assignment, possibly empty);
/// - a member's partitions come out grouped by topic, topics sorted by name, partitions sorted
///   ascending, in member id order.
///
/// The builder does not second-guess the strategy: a partition given twice, to a member that
/// does not subscribe to its topic, or out of range reaches the host, whose output checks
/// refuse it with a message naming the culprit. The mistakes caught here are assigning to a
/// member id that is not in the request, or a topic that is not: the answer is then an error
/// naming it.
///
/// Cost: members and topics are found by position ([`Assignment::assign_indexed`]) or by a
/// binary search of the request's sorted ids and names, and nothing is allocated per member,
/// so building a 500,000-partition assignment takes about a millisecond.
#[derive(Debug, Clone, Default)]
pub struct Assignment {
    /// The request's member ids, concatenated, and where each ends.
    ids: String,
    id_ends: Vec<u32>,
    /// How to find an id: `None` when the request's ids are strictly sorted (binary search),
    /// else a map to the first position holding it.
    id_map: Option<FxHashMap<String, u32>>,
    /// Per request position, the slot answering for it (the first position with its id);
    /// `None` when no id repeats.
    alias: Option<Vec<u32>>,
    /// Ids given partitions that are not in the request (slots `known..`).
    unknown_ids: Vec<String>,
    /// The request's topic names, then names given that it does not have.
    topics: Vec<String>,
    known_topics: usize,
    topic_map: Option<FxHashMap<String, u32>>,
    runs: Vec<Run>,
    partitions: Vec<i32>,
    /// Whether the runs are already in answer order: member slots ascending, each member's
    /// topic slots ascending, each run's partitions ascending. Strategies that hand out
    /// partitions member by member (or partition by partition over members in order) keep it,
    /// and the ABI v2 answer is then written straight from the runs, with no plan.
    in_order: bool,
    user_data: Vec<(u32, Vec<u8>)>,
    metadata: Vec<(u32, Vec<u8>)>,
    rebalance_after_ms: Option<u64>,
    state: Option<Vec<u8>>,
}

/// `partitions[start..end]` of topic slot `topic` to member slot `member`.
#[derive(Debug, Clone, Copy)]
struct Run {
    member: u32,
    topic: u32,
    start: u32,
    end: u32,
}

impl Assignment {
    /// An assignment giving nothing to every member of `request`.
    pub fn new(request: &AssignRequest) -> Assignment {
        let mut a = Assignment {
            in_order: true,
            ..Assignment::default()
        };
        let total: usize = request.members.iter().map(|m| m.member_id.len()).sum();
        a.ids.reserve(total);
        a.id_ends.reserve(request.members.len());
        for m in &request.members {
            a.ids.push_str(&m.member_id);
            a.id_ends.push(a.ids.len() as u32);
        }
        if !request.member_ids_sorted() {
            let mut map = FxHashMap::default();
            let mut alias = Vec::with_capacity(request.members.len());
            let mut repeats = false;
            for (i, m) in request.members.iter().enumerate() {
                let first = *map.entry(m.member_id.clone()).or_insert(i as u32);
                repeats |= first != i as u32;
                alias.push(first);
            }
            a.id_map = Some(map);
            a.alias = repeats.then_some(alias);
        }
        a.topics = request.topics.iter().map(|t| t.name.clone()).collect();
        a.known_topics = a.topics.len();
        if !a.topics.windows(2).all(|w| w[0] < w[1]) {
            let mut map = FxHashMap::default();
            for (i, t) in a.topics.iter().enumerate() {
                map.entry(t.clone()).or_insert(i as u32);
            }
            a.topic_map = Some(map);
        }
        a
    }

    /// Gives `topic`-`partition` to `member_id`.
    pub fn assign(&mut self, member_id: &str, topic: &str, partition: i32) {
        self.assign_all(member_id, topic, [partition]);
    }

    /// Gives every partition of `partitions` (of `topic`) to `member_id`.
    pub fn assign_all(
        &mut self,
        member_id: &str,
        topic: &str,
        partitions: impl IntoIterator<Item = i32>,
    ) {
        let member = self.member_slot(member_id);
        let topic = self.topic_slot(topic);
        self.push(member, topic, partitions);
    }

    /// Gives `partition` of the topic at position `topic` of `request.topics` to the member at
    /// position `member` of `request.members`: [`Self::assign`] without looking up a name, for
    /// strategies that work with the request's positions ([`AssignRequest::subscriber_indices`],
    /// [`AssignRequest::subscription_groups`]). A position outside the request is ignored.
    pub fn assign_indexed(&mut self, member: usize, topic: usize, partition: i32) {
        self.assign_all_indexed(member, topic, [partition]);
    }

    /// [`Self::assign_all`] by position (see [`Self::assign_indexed`]).
    pub fn assign_all_indexed(
        &mut self,
        member: usize,
        topic: usize,
        partitions: impl IntoIterator<Item = i32>,
    ) {
        if member >= self.id_ends.len() || topic >= self.known_topics {
            return;
        }
        let member = match &self.alias {
            Some(alias) => alias[member],
            None => member as u32,
        };
        self.push(member, topic as u32, partitions);
    }

    fn push(&mut self, member: u32, topic: u32, partitions: impl IntoIterator<Item = i32>) {
        let start = self.partitions.len() as u32;
        self.partitions.extend(partitions);
        let end = self.partitions.len() as u32;
        if start == end {
            return;
        }
        let added = &self.partitions[start as usize..];
        let mut in_order = added.is_sorted_by(|a, b| a < b);
        match self.runs.last_mut() {
            // Strategies mostly hand out partitions topic by topic: extend the last run.
            Some(last) if last.member == member && last.topic == topic && last.end == start => {
                in_order &= self.partitions[start as usize - 1] < added[0];
                last.end = end;
            }
            last => {
                in_order &= last.is_none_or(|l| (l.member, l.topic) < (member, topic));
                self.runs.push(Run {
                    member,
                    topic,
                    start,
                    end,
                });
            }
        }
        self.in_order &= in_order;
    }

    /// Sets the user data sent to `member_id` in its Assignment (e.g. a sticky strategy's
    /// generation marker).
    pub fn set_user_data(&mut self, member_id: &str, user_data: Vec<u8>) {
        let slot = self.member_slot(member_id);
        set(&mut self.user_data, slot, user_data);
    }

    /// Sets raw assignment bytes for `member_id`, for protocol types other than `consumer`
    /// (the host sends them as they are instead of encoding a ConsumerProtocolAssignment).
    pub fn set_metadata(&mut self, member_id: &str, metadata: Vec<u8>) {
        let slot = self.member_slot(member_id);
        set(&mut self.metadata, slot, metadata);
    }

    /// Asks the host to start another rebalance `ms` milliseconds after this one completes
    /// (e.g. to hand out partitions held for a departed member once its grace period ends).
    pub fn rebalance_after_ms(&mut self, ms: u64) {
        self.rebalance_after_ms = Some(ms);
    }

    /// Bytes for the host to keep with the group and hand back in the next request
    /// ([`AssignRequest::state`]): what the strategy remembers between rebalances. Needs
    /// `inputs = "state"` in `#[assignor]`; at most [`crate::MAX_STATE_BYTES`].
    pub fn set_state(&mut self, state: Vec<u8>) {
        self.state = Some(state);
    }

    /// The bytes set with [`Self::set_state`].
    pub fn state(&self) -> Option<&[u8]> {
        self.state.as_deref()
    }

    /// The follow-up rebalance delay set with [`Self::rebalance_after_ms`].
    pub fn requested_rebalance_after_ms(&self) -> Option<u64> {
        self.rebalance_after_ms
    }

    /// The partitions of `topic` given to `member_id` so far, sorted.
    pub fn partitions(&self, member_id: &str, topic: &str) -> Vec<i32> {
        let (Some(member), Some(topic)) = (self.find_member(member_id), self.find_topic(topic))
        else {
            return Vec::new();
        };
        let mut list: Vec<i32> = self
            .runs
            .iter()
            .filter(|r| r.member == member && r.topic == topic)
            .flat_map(|r| self.run(r).iter().copied())
            .collect();
        list.sort_unstable();
        list
    }

    /// Every partition given to `member_id`, as `(topic, partition)`, topics by name and
    /// partitions ascending. Handy in tests: `assert_eq!(a.of("m1"), [("t", 0), ("t", 1)])`.
    pub fn of(&self, member_id: &str) -> Vec<(&str, i32)> {
        let Some(member) = self.find_member(member_id) else {
            return Vec::new();
        };
        let mut out: Vec<(&str, i32)> = self
            .runs
            .iter()
            .filter(|r| r.member == member)
            .flat_map(|r| {
                let topic = self.topics[r.topic as usize].as_str();
                self.run(r).iter().map(move |&p| (topic, p))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// The member ids this assignment answers for, in id order (every member of the request,
    /// plus any unknown id partitions were given to).
    pub fn member_ids(&self) -> impl Iterator<Item = &str> {
        let mut ids: Vec<&str> = self
            .answered()
            .map(|s| self.id(s))
            .chain(self.unknown_ids.iter().map(String::as_str))
            .collect();
        ids.sort_unstable();
        ids.into_iter()
    }

    /// The wire answer: one [`MemberAssignment`] per member in member id order, topics by name,
    /// partitions ascending. If partitions were given to a member id or a topic that is not in
    /// the request, the answer is an error naming it instead.
    pub fn into_response(self) -> AssignResponse {
        if let Some(error) = self.mistake() {
            return error_response(error);
        }
        // Topics ranked by name, so entries sort by integer.
        let rank = self.topic_rank(true);
        let mut order: Vec<u32> = self.answered().collect();
        if !order.windows(2).all(|w| self.id(w[0]) < self.id(w[1])) {
            order.sort_by(|&a, &b| self.id(a).cmp(self.id(b)));
        }
        let plan = self.plan(&order, &rank);
        let mut user_data = self.user_data.clone();
        let mut metadata = self.metadata.clone();
        let assignments = order
            .iter()
            .enumerate()
            .map(|(i, &slot)| MemberAssignment {
                member_id: self.id(slot).to_owned(),
                partitions: plan
                    .groups_of(i)
                    .iter()
                    .map(|g| TopicPartitions {
                        topic: self.topics[g.topic as usize].clone(),
                        partitions: self.planned(&plan, g).to_vec(),
                    })
                    .collect(),
                user_data: take(&mut user_data, slot),
                metadata: take(&mut metadata, slot),
            })
            .collect();
        AssignResponse {
            error: None,
            assignments,
            rebalance_after_ms: self.rebalance_after_ms,
            state: self.state,
        }
    }

    /// The ABI v2 answer: [`Self::into_response`]'s content with members and topics by their
    /// position in the request, members in request order, written straight from the runs.
    pub fn to_v2_bytes(&self) -> Result<Vec<u8>, rmp_serde::encode::Error> {
        if let Some(error) = self.mistake() {
            return crate::abi::v2::encode(&crate::abi::v2::Response {
                error: Some(error),
                ..Default::default()
            });
        }
        if self.in_order && self.alias.is_none() {
            // Runs in request order (v2 answers name topics by position, already in order).
            return Ok(wire::write_v2_in_order(self));
        }
        let rank = self.topic_rank(false);
        let order: Vec<u32> = self.answered().collect();
        let plan = self.plan(&order, &rank);
        Ok(wire::write_v2(self, &order, &plan))
    }

    /// The first mistake the answer cannot carry: an unknown member id or topic.
    fn mistake(&self) -> Option<String> {
        if let Some(id) = self.unknown_ids.first() {
            return Some(format!(
                "the assignment gives partitions to member `{id}`, which is not in the request"
            ));
        }
        self.topics.get(self.known_topics).map(|t| {
            format!("the assignment gives partitions of topic `{t}`, which is not in the request")
        })
    }

    /// The slots that answer for the request's members: each distinct id once, in request
    /// order.
    fn answered(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.id_ends.len() as u32).filter(|&i| match &self.alias {
            Some(alias) => alias[i as usize] == i,
            None => true,
        })
    }

    fn id(&self, slot: u32) -> &str {
        let slot = slot as usize;
        match self.id_ends.get(slot) {
            Some(&end) => {
                let start = if slot == 0 { 0 } else { self.id_ends[slot - 1] };
                &self.ids[start as usize..end as usize]
            }
            None => &self.unknown_ids[slot - self.id_ends.len()],
        }
    }

    fn find_member(&self, member_id: &str) -> Option<u32> {
        match &self.id_map {
            Some(map) => map.get(member_id).copied(),
            None => {
                let (mut low, mut high) = (0usize, self.id_ends.len());
                while low < high {
                    let mid = (low + high) / 2;
                    match self.id(mid as u32).cmp(member_id) {
                        std::cmp::Ordering::Less => low = mid + 1,
                        std::cmp::Ordering::Greater => high = mid,
                        std::cmp::Ordering::Equal => return Some(mid as u32),
                    }
                }
                None
            }
        }
        .or_else(|| {
            self.unknown_ids
                .iter()
                .position(|id| id == member_id)
                .map(|i| (self.id_ends.len() + i) as u32)
        })
    }

    fn member_slot(&mut self, member_id: &str) -> u32 {
        match self.find_member(member_id) {
            Some(slot) => slot,
            None => {
                self.unknown_ids.push(member_id.to_owned());
                (self.id_ends.len() + self.unknown_ids.len() - 1) as u32
            }
        }
    }

    fn find_topic(&self, topic: &str) -> Option<u32> {
        let known = &self.topics[..self.known_topics];
        match &self.topic_map {
            Some(map) => map.get(topic).copied(),
            None => known
                .binary_search_by(|t| t.as_str().cmp(topic))
                .ok()
                .map(|i| i as u32),
        }
        .or_else(|| {
            self.topics[self.known_topics..]
                .iter()
                .position(|t| t == topic)
                .map(|i| (self.known_topics + i) as u32)
        })
    }

    fn topic_slot(&mut self, topic: &str) -> u32 {
        match self.find_topic(topic) {
            Some(slot) => slot,
            None => {
                self.topics.push(topic.to_owned());
                (self.topics.len() - 1) as u32
            }
        }
    }

    fn run(&self, run: &Run) -> &[i32] {
        &self.partitions[run.start as usize..run.end as usize]
    }

    /// Per topic slot, its place in the answer: by name (`by_name`, the model's order) or by
    /// position (v2, where the host's topics are in name order anyway).
    fn topic_rank(&self, by_name: bool) -> Vec<u32> {
        let mut by: Vec<u32> = (0..self.topics.len() as u32).collect();
        if by_name && !self.topics.windows(2).all(|w| w[0] < w[1]) {
            by.sort_by(|&a, &b| self.topics[a as usize].cmp(&self.topics[b as usize]));
        }
        let mut rank = vec![0u32; self.topics.len()];
        for (r, &t) in by.iter().enumerate() {
            rank[t as usize] = r as u32;
        }
        rank
    }

    /// The runs put in answer order: members as in `order`, each member's topics by `rank`,
    /// partitions ascending, one group per (member, topic).
    fn plan(&self, order: &[u32], rank: &[u32]) -> Plan {
        let slots = self.id_ends.len() + self.unknown_ids.len();
        let mut place = vec![u32::MAX; slots];
        for (i, &slot) in order.iter().enumerate() {
            place[slot as usize] = i as u32;
        }
        // Counting sort of the runs by member place, keeping the order they were given in.
        let mut first = vec![0u32; order.len() + 1];
        for r in &self.runs {
            let p = place[r.member as usize];
            if p != u32::MAX {
                first[p as usize + 1] += 1;
            }
        }
        for i in 0..order.len() {
            first[i + 1] += first[i];
        }
        let mut next = first.clone();
        let mut sorted = vec![0u32; first[order.len()] as usize];
        for (i, r) in self.runs.iter().enumerate() {
            let p = place[r.member as usize];
            if p != u32::MAX {
                sorted[next[p as usize] as usize] = i as u32;
                next[p as usize] += 1;
            }
        }
        let mut plan = Plan {
            groups: Vec::with_capacity(sorted.len()),
            group_ends: Vec::with_capacity(order.len()),
            merged: Vec::new(),
        };
        for m in 0..order.len() {
            let runs = &mut sorted[first[m] as usize..first[m + 1] as usize];
            let ordered = runs.windows(2).all(|w| {
                rank[self.runs[w[0] as usize].topic as usize]
                    <= rank[self.runs[w[1] as usize].topic as usize]
            });
            if !ordered {
                runs.sort_by_key(|&r| rank[self.runs[r as usize].topic as usize]);
            }
            let mut i = 0;
            while i < runs.len() {
                let run = self.runs[runs[i] as usize];
                let same = runs[i..]
                    .iter()
                    .take_while(|&&r| self.runs[r as usize].topic == run.topic)
                    .count();
                let list = self.run(&run);
                if same == 1 && list.is_sorted() {
                    // One sorted run: written from where it is, not copied.
                    plan.groups.push(Group {
                        topic: run.topic,
                        start: run.start,
                        end: run.end,
                        merged: false,
                    });
                } else {
                    let start = plan.merged.len();
                    for &r in &runs[i..i + same] {
                        plan.merged
                            .extend_from_slice(self.run(&self.runs[r as usize]));
                    }
                    plan.merged[start..].sort_unstable();
                    plan.groups.push(Group {
                        topic: run.topic,
                        start: start as u32,
                        end: plan.merged.len() as u32,
                        merged: true,
                    });
                }
                i += same;
            }
            plan.group_ends.push(plan.groups.len() as u32);
        }
        plan
    }

    /// The partitions of a planned group, wherever they are.
    fn planned<'a>(&'a self, plan: &'a Plan, g: &Group) -> &'a [i32] {
        let list = if g.merged {
            &plan.merged
        } else {
            &self.partitions
        };
        &list[g.start as usize..g.end as usize]
    }
}

/// The answer in order: `groups` are (member, topic) groups, the member at place `i` owning
/// `groups[group_ends[i - 1]..group_ends[i]]`; a group's partitions are a run of the
/// assignment's own, or (a topic given in several runs, or unsorted) sorted in `merged`.
struct Plan {
    groups: Vec<Group>,
    group_ends: Vec<u32>,
    merged: Vec<i32>,
}

struct Group {
    topic: u32,
    start: u32,
    end: u32,
    merged: bool,
}

impl Plan {
    fn groups_of(&self, place: usize) -> &[Group] {
        let start = if place == 0 {
            0
        } else {
            self.group_ends[place - 1]
        };
        &self.groups[start as usize..self.group_ends[place] as usize]
    }
}

fn set(list: &mut Vec<(u32, Vec<u8>)>, slot: u32, bytes: Vec<u8>) {
    match list.iter_mut().find(|(s, _)| *s == slot) {
        Some(entry) => entry.1 = bytes,
        None => list.push((slot, bytes)),
    }
}

fn take(list: &mut [(u32, Vec<u8>)], slot: u32) -> Option<Vec<u8>> {
    list.iter_mut()
        .find(|(s, _)| *s == slot)
        .map(|(_, bytes)| std::mem::take(bytes))
}

fn error_response(message: String) -> AssignResponse {
    AssignResponse {
        error: Some(message),
        ..AssignResponse::default()
    }
}

/// A strategy's refusal to assign, with a message for the operator. The host records it
/// (metrics, tracing, the group's admin status) and assigns with the configured fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignError {
    message: String,
}

impl AssignError {
    /// An error with this message; say what was wrong with the input and what to change.
    pub fn new(message: impl Into<String>) -> AssignError {
        AssignError {
            message: message.into(),
        }
    }

    /// The message the host shows.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for AssignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AssignError {}

impl From<String> for AssignError {
    fn from(message: String) -> AssignError {
        AssignError::new(message)
    }
}

impl From<&str> for AssignError {
    fn from(message: &str) -> AssignError {
        AssignError::new(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Member;

    fn request(ids: &[&str]) -> AssignRequest {
        AssignRequest {
            members: ids
                .iter()
                .map(|id| Member {
                    member_id: id.to_string(),
                    ..Member::default()
                })
                .collect(),
            topics: ["t", "t1", "t2"]
                .map(|name| crate::abi::Topic {
                    name: name.into(),
                    partition_count: 8,
                    ..Default::default()
                })
                .to_vec(),
            ..AssignRequest::default()
        }
    }

    #[test]
    fn every_member_gets_an_entry_even_when_given_nothing() {
        let mut a = Assignment::new(&request(&["m2", "m1", "m3"]));
        a.assign("m2", "t", 0);
        let response = a.into_response();
        assert_eq!(response.error, None);
        let ids: Vec<_> = response
            .assignments
            .iter()
            .map(|m| m.member_id.as_str())
            .collect();
        assert_eq!(ids, ["m1", "m2", "m3"]);
        assert!(response.assignments[0].partitions.is_empty());
        assert!(response.assignments[2].partitions.is_empty());
    }

    #[test]
    fn partitions_come_out_grouped_by_topic_sorted() {
        let mut a = Assignment::new(&request(&["m"]));
        a.assign("m", "t2", 5);
        a.assign_all("m", "t1", [3, 1]);
        a.assign("m", "t2", 0);
        a.assign("m", "t1", 2);
        assert_eq!(
            a.of("m"),
            [("t1", 1), ("t1", 2), ("t1", 3), ("t2", 0), ("t2", 5)]
        );
        assert_eq!(a.partitions("m", "t2"), [0, 5]);
        let response = a.into_response();
        assert_eq!(
            response.assignments[0].partitions,
            [
                TopicPartitions {
                    topic: "t1".into(),
                    partitions: vec![1, 2, 3]
                },
                TopicPartitions {
                    topic: "t2".into(),
                    partitions: vec![0, 5]
                },
            ]
        );
    }

    #[test]
    fn a_member_listed_twice_is_answered_once() {
        let a = Assignment::new(&request(&["m", "m", "n"]));
        let ids: Vec<_> = a
            .into_response()
            .assignments
            .into_iter()
            .map(|m| m.member_id)
            .collect();
        assert_eq!(ids, ["m", "n"]);
    }

    #[test]
    fn request_topics_sort_by_name_and_an_unknown_topic_is_an_error() {
        let mut req = request(&["m"]);
        req.topics = ["d", "b"]
            .map(|name| crate::abi::Topic {
                name: name.into(),
                ..Default::default()
            })
            .to_vec();
        let mut a = Assignment::new(&req);
        a.assign("m", "d", 0);
        a.assign("m", "b", 0);
        let topics: Vec<_> = a.clone().into_response().assignments[0]
            .partitions
            .iter()
            .map(|tp| tp.topic.clone())
            .collect();
        assert_eq!(topics, ["b", "d"]);
        a.assign("m", "c", 0);
        assert_eq!(
            a.into_response().error.as_deref(),
            Some("the assignment gives partitions of topic `c`, which is not in the request")
        );
    }

    #[test]
    fn duplicates_are_kept_for_the_host_to_refuse() {
        let mut a = Assignment::new(&request(&["m"]));
        a.assign("m", "t", 1);
        a.assign("m", "t", 1);
        assert_eq!(
            a.into_response().assignments[0].partitions[0].partitions,
            [1, 1]
        );
    }

    #[test]
    fn unknown_member_turns_into_an_error_naming_it() {
        let mut a = Assignment::new(&request(&["m"]));
        a.assign("ghost", "t", 0);
        assert_eq!(a.member_ids().collect::<Vec<_>>(), ["ghost", "m"]);
        let response = a.into_response();
        assert_eq!(
            response.error.as_deref(),
            Some("the assignment gives partitions to member `ghost`, which is not in the request")
        );
        assert!(response.assignments.is_empty());
    }

    #[test]
    fn user_data_metadata_and_follow_up_rebalance_reach_the_response() {
        let mut a = Assignment::new(&request(&["m1", "m2"]));
        a.set_user_data("m1", vec![1, 2]);
        a.set_metadata("m2", vec![9]);
        a.rebalance_after_ms(30_000);
        assert_eq!(a.requested_rebalance_after_ms(), Some(30_000));
        let response = a.into_response();
        assert_eq!(response.rebalance_after_ms, Some(30_000));
        assert_eq!(response.assignments[0].user_data, Some(vec![1, 2]));
        assert_eq!(response.assignments[0].metadata, None);
        assert_eq!(response.assignments[1].metadata, Some(vec![9]));
    }

    #[test]
    fn indexed_and_named_assignments_meet_in_one_answer() {
        let mut a = Assignment::new(&request(&["m1", "m2"]));
        a.assign_indexed(1, 2, 3);
        a.assign("m2", "t2", 1);
        a.assign_all_indexed(0, 0, [2, 0]);
        a.assign_indexed(9, 0, 0); // outside the request: ignored
        assert_eq!(a.of("m2"), [("t2", 1), ("t2", 3)]);
        let v2: crate::abi::v2::Response =
            crate::abi::v2::decode(&a.to_v2_bytes().unwrap()).unwrap();
        let tp =
            |topic, partitions: Vec<i32>| crate::abi::v2::TopicPartitions { topic, partitions };
        assert_eq!(v2.assignments[0].partitions, [tp(0, vec![0, 2])]);
        assert_eq!(v2.assignments[1].partitions, [tp(2, vec![1, 3])]);
        assert_eq!(v2.assignments.len(), 2);
    }

    #[test]
    fn assign_error_carries_its_message() {
        let e: AssignError = "no topics".into();
        assert_eq!(e.to_string(), "no topics");
        assert_eq!(AssignError::from(String::from("x")).message(), "x");
    }
}
