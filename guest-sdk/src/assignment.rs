//! What an author's function returns: [`Assignment`], a builder that always answers for every
//! member of the request, and [`AssignError`], the one error type a strategy reports.

use std::collections::BTreeMap;
use std::fmt;

use crate::abi::{AssignRequest, AssignResponse, MemberAssignment, TopicPartitions};

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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Member id -> its share; contains every member of the request.
    members: BTreeMap<String, Share>,
    /// Member ids given partitions that are not in the request, in first-use order.
    unknown: Vec<String>,
    rebalance_after_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Share {
    topics: BTreeMap<String, Vec<i32>>,
    user_data: Option<Vec<u8>>,
    metadata: Option<Vec<u8>>,
}

impl Assignment {
    /// An assignment giving nothing to every member of `request`.
    pub fn new(request: &AssignRequest) -> Assignment {
        let members = request
            .members
            .iter()
            .map(|m| (m.member_id.clone(), Share::default()))
            .collect();
        Assignment {
            members,
            unknown: Vec::new(),
            rebalance_after_ms: None,
        }
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
        let share = self.share_mut(member_id);
        match share.topics.get_mut(topic) {
            Some(list) => list.extend(partitions),
            None => {
                let list: Vec<i32> = partitions.into_iter().collect();
                share.topics.insert(topic.to_owned(), list);
            }
        }
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
        let mut list = self
            .members
            .get(member_id)
            .and_then(|s| s.topics.get(topic))
            .cloned()
            .unwrap_or_default();
        list.sort_unstable();
        list
    }

    /// Every partition given to `member_id`, as `(topic, partition)`, topics by name and
    /// partitions ascending. Handy in tests: `assert_eq!(a.of("m1"), [("t", 0), ("t", 1)])`.
    pub fn of(&self, member_id: &str) -> Vec<(&str, i32)> {
        let Some(share) = self.members.get(member_id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (topic, list) in &share.topics {
            let mut list = list.clone();
            list.sort_unstable();
            out.extend(list.into_iter().map(|p| (topic.as_str(), p)));
        }
        out
    }

    /// The member ids this assignment answers for, in id order (every member of the request,
    /// plus any unknown id partitions were given to).
    pub fn member_ids(&self) -> impl Iterator<Item = &str> {
        self.members.keys().map(String::as_str)
    }

    /// The wire answer: one [`MemberAssignment`] per member in member id order, topics by name,
    /// partitions ascending. If partitions were given to a member id that is not in the
    /// request, the answer is an error naming it instead.
    pub fn into_response(self) -> AssignResponse {
        if let Some(id) = self.unknown.first() {
            return AssignResponse {
                error: Some(format!(
                    "the assignment gives partitions to member `{id}`, which is not in the request"
                )),
                ..AssignResponse::default()
            };
        }
        let assignments = self
            .members
            .into_iter()
            .map(|(member_id, share)| MemberAssignment {
                member_id,
                partitions: share
                    .topics
                    .into_iter()
                    .filter(|(_, list)| !list.is_empty())
                    .map(|(topic, mut partitions)| {
                        partitions.sort_unstable();
                        TopicPartitions { topic, partitions }
                    })
                    .collect(),
                user_data: share.user_data,
                metadata: share.metadata,
            })
            .collect();
        AssignResponse {
            error: None,
            assignments,
            rebalance_after_ms: self.rebalance_after_ms,
        }
    }

    fn share_mut(&mut self, member_id: &str) -> &mut Share {
        if !self.members.contains_key(member_id) {
            self.unknown.push(member_id.to_owned());
            self.members.insert(member_id.to_owned(), Share::default());
        }
        self.members.get_mut(member_id).expect("inserted above")
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
