//! What an author's function returns: [`Assignment`], a builder that always answers for every
//! member of the request, and [`AssignError`], the one error type a strategy reports.

use std::fmt;

use crate::abi::{AssignRequest, AssignResponse, MemberAssignment, TopicPartitions};
use crate::hash::FxHashMap;

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
/// refuse it with a message naming the culprit. The one mistake caught here is assigning to a
/// member id that is not in the request: [`Assignment::into_response`] turns that into an
/// error response.
///
/// Cost: a member and a topic are found by hash, and giving a member more partitions of the
/// topic it got last is O(1), so building a 500,000-partition assignment takes milliseconds.
#[derive(Debug, Clone, Default)]
pub struct Assignment {
    /// Member id of each slot: the request's members in request order, then unknown ids.
    ids: Vec<String>,
    shares: Vec<Share>,
    slot_of: FxHashMap<String, usize>,
    /// Slots below this are members of the request.
    known: usize,
    /// Topic name of each topic id: the request's topics first.
    topics: Vec<String>,
    topic_of: FxHashMap<String, u32>,
    rebalance_after_ms: Option<u64>,
}

#[derive(Debug, Clone, Default)]
struct Share {
    /// (topic id, partitions), one entry per topic, in first-assigned order.
    topics: Vec<(u32, Vec<i32>)>,
    user_data: Option<Vec<u8>>,
    metadata: Option<Vec<u8>>,
}

impl Assignment {
    /// An assignment giving nothing to every member of `request`.
    pub fn new(request: &AssignRequest) -> Assignment {
        let mut assignment = Assignment::default();
        for member in &request.members {
            if !assignment.slot_of.contains_key(&member.member_id) {
                assignment.add_slot(&member.member_id);
            }
        }
        assignment.known = assignment.ids.len();
        for topic in &request.topics {
            assignment.topic_id(&topic.name);
        }
        assignment
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
        let topic = self.topic_id(topic);
        let share = self.share_mut(member_id);
        // Strategies mostly hand out partitions topic by topic: the last entry is the one.
        let entry = match share.topics.last() {
            Some((last, _)) if *last == topic => share.topics.len() - 1,
            _ => match share.topics.iter().position(|(t, _)| *t == topic) {
                Some(i) => i,
                None => {
                    share.topics.push((topic, Vec::new()));
                    share.topics.len() - 1
                }
            },
        };
        share.topics[entry].1.extend(partitions);
    }

    /// Sets the user data sent to `member_id` in its Assignment (e.g. a sticky strategy's
    /// generation marker).
    pub fn set_user_data(&mut self, member_id: &str, user_data: Vec<u8>) {
        self.share_mut(member_id).user_data = Some(user_data);
    }

    /// Sets raw assignment bytes for `member_id`, for protocol types other than `consumer`
    /// (the host sends them as they are instead of encoding a ConsumerProtocolAssignment).
    pub fn set_metadata(&mut self, member_id: &str, metadata: Vec<u8>) {
        self.share_mut(member_id).metadata = Some(metadata);
    }

    /// Asks the host to start another rebalance `ms` milliseconds after this one completes
    /// (e.g. to hand out partitions held for a departed member once its grace period ends).
    pub fn rebalance_after_ms(&mut self, ms: u64) {
        self.rebalance_after_ms = Some(ms);
    }

    /// The follow-up rebalance delay set with [`Self::rebalance_after_ms`].
    pub fn requested_rebalance_after_ms(&self) -> Option<u64> {
        self.rebalance_after_ms
    }

    /// The partitions of `topic` given to `member_id` so far, sorted.
    pub fn partitions(&self, member_id: &str, topic: &str) -> Vec<i32> {
        let (Some(&slot), Some(&topic)) = (self.slot_of.get(member_id), self.topic_of.get(topic))
        else {
            return Vec::new();
        };
        let mut list: Vec<i32> = self.shares[slot]
            .topics
            .iter()
            .filter(|(t, _)| *t == topic)
            .flat_map(|(_, list)| list.iter().copied())
            .collect();
        list.sort_unstable();
        list
    }

    /// Every partition given to `member_id`, as `(topic, partition)`, topics by name and
    /// partitions ascending. Handy in tests: `assert_eq!(a.of("m1"), [("t", 0), ("t", 1)])`.
    pub fn of(&self, member_id: &str) -> Vec<(&str, i32)> {
        let Some(&slot) = self.slot_of.get(member_id) else {
            return Vec::new();
        };
        let mut out: Vec<(&str, i32)> = self.shares[slot]
            .topics
            .iter()
            .flat_map(|(t, list)| {
                list.iter()
                    .map(move |&p| (self.topics[*t as usize].as_str(), p))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// The member ids this assignment answers for, in id order (every member of the request,
    /// plus any unknown id partitions were given to).
    pub fn member_ids(&self) -> impl Iterator<Item = &str> {
        let mut ids: Vec<&str> = self.ids.iter().map(String::as_str).collect();
        ids.sort_unstable();
        ids.into_iter()
    }

    /// The wire answer: one [`MemberAssignment`] per member in member id order, topics by name,
    /// partitions ascending. If partitions were given to a member id that is not in the
    /// request, the answer is an error naming it instead.
    pub fn into_response(self) -> AssignResponse {
        if let Some(id) = self.ids.get(self.known) {
            return AssignResponse {
                error: Some(format!(
                    "the assignment gives partitions to member `{id}`, which is not in the request"
                )),
                ..AssignResponse::default()
            };
        }
        // Topic ids ranked by name, so entries sort by integer.
        let mut by_name: Vec<u32> = (0..self.topics.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| self.topics[a as usize].cmp(&self.topics[b as usize]));
        let mut rank = vec![0u32; self.topics.len()];
        for (r, &t) in by_name.iter().enumerate() {
            rank[t as usize] = r as u32;
        }
        let mut order: Vec<usize> = (0..self.ids.len()).collect();
        if !self.ids.is_sorted() {
            order.sort_by(|&a, &b| self.ids[a].cmp(&self.ids[b]));
        }
        let Assignment {
            mut ids,
            mut shares,
            topics,
            rebalance_after_ms,
            ..
        } = self;
        let assignments = order
            .into_iter()
            .map(|slot| {
                let share = std::mem::take(&mut shares[slot]);
                let mut entries = share.topics;
                entries.retain(|(_, list)| !list.is_empty());
                entries.sort_by_key(|(t, _)| rank[*t as usize]);
                MemberAssignment {
                    member_id: std::mem::take(&mut ids[slot]),
                    partitions: entries
                        .into_iter()
                        .map(|(t, mut partitions)| {
                            if !partitions.is_sorted() {
                                partitions.sort_unstable();
                            }
                            TopicPartitions {
                                topic: topics[t as usize].clone(),
                                partitions,
                            }
                        })
                        .collect(),
                    user_data: share.user_data,
                    metadata: share.metadata,
                }
            })
            .collect();
        AssignResponse {
            error: None,
            assignments,
            rebalance_after_ms,
        }
    }

    fn add_slot(&mut self, member_id: &str) -> usize {
        let slot = self.ids.len();
        self.ids.push(member_id.to_owned());
        self.shares.push(Share::default());
        self.slot_of.insert(member_id.to_owned(), slot);
        slot
    }

    fn share_mut(&mut self, member_id: &str) -> &mut Share {
        let slot = match self.slot_of.get(member_id) {
            Some(&slot) => slot,
            None => self.add_slot(member_id),
        };
        &mut self.shares[slot]
    }

    fn topic_id(&mut self, topic: &str) -> u32 {
        if let Some(&id) = self.topic_of.get(topic) {
            return id;
        }
        let id = self.topics.len() as u32;
        self.topics.push(topic.to_owned());
        self.topic_of.insert(topic.to_owned(), id);
        id
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
    fn request_topics_and_new_topics_sort_together_by_name() {
        let mut req = request(&["m"]);
        req.topics = ["b", "d"]
            .map(|name| crate::abi::Topic {
                name: name.into(),
                ..Default::default()
            })
            .to_vec();
        let mut a = Assignment::new(&req);
        a.assign("m", "d", 0);
        a.assign("m", "c", 0);
        a.assign("m", "a", 0);
        a.assign("m", "b", 0);
        let topics: Vec<_> = a.into_response().assignments[0]
            .partitions
            .iter()
            .map(|tp| tp.topic.clone())
            .collect();
        assert_eq!(topics, ["a", "b", "c", "d"]);
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
    fn assign_error_carries_its_message() {
        let e: AssignError = "no topics".into();
        assert_eq!(e.to_string(), "no topics");
        assert_eq!(AssignError::from(String::from("x")).message(), "x");
    }
}
