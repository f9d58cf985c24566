//! [`Answer`]: a module's answer as the host keeps it, every member and topic a position in
//! the request it answers.
//!
//! The model ([`AssignResponse`]) names members and topics, so reading a 10,000-member answer
//! into it costs a `String` per member and per (member, topic) entry, and a `Vec` per entry:
//! for `range` over 10 topics that is 200,000 allocations, most of the host's side of a call.
//! An ABI v2 answer already names everything by position, so the host reads it into this flat
//! form instead (three vectors, whatever the group's size), checks it there
//! (`assignor_wire::checks`), and turns positions into names only where bytes for a client are
//! written. A v1 answer, or a model built natively, is turned into one with
//! [`Answer::from_response`]; [`Answer::to_response`] gives the model back.
//!
//! An `Answer` is only meaningful with its request: positions index `request.members` and
//! `request.topics`. Nothing here checks them beyond what each method says; the output checks
//! do.

use std::fmt;

use super::{AssignRequest, AssignResponse, MemberAssignment, TopicPartitions};

/// An answer by positions: entries in the order the module gave them, each a member position
/// and runs of partitions by topic position.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    entries: Vec<AnswerEntry>,
    /// Every entry's topics, entry after entry; an entry owns `runs[previous end..runs_end]`.
    runs: Vec<Run>,
    /// Every run's partitions, run after run.
    partitions: Vec<i32>,
    /// As [`AssignResponse::rebalance_after_ms`].
    pub rebalance_after_ms: Option<u64>,
    /// As [`AssignResponse::state`].
    pub state: Option<Vec<u8>>,
}

/// One member's share: what [`MemberAssignment`] says, by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerEntry {
    /// The member's position in the request's `members`.
    pub member: u32,
    runs_end: u32,
    /// As [`MemberAssignment::user_data`].
    pub user_data: Option<Vec<u8>>,
    /// As [`MemberAssignment::metadata`].
    pub metadata: Option<Vec<u8>>,
}

/// Partitions `partitions[previous end..end]` of the topic at position `topic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    topic: u32,
    end: u32,
}

/// A name in a model answer that is not in its request ([`Answer::from_response`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// A member id the request does not have.
    Member {
        /// The id.
        member: String,
    },
    /// A topic the request does not have.
    Topic {
        /// The member it was given to.
        member: String,
        /// The topic's name.
        topic: String,
    },
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unresolved::Member { member } => write!(f, "member `{member}` is not in the group"),
            Unresolved::Topic { member, topic } => {
                write!(
                    f,
                    "member `{member}` got topic `{topic}`, which is not in the request"
                )
            }
        }
    }
}

impl std::error::Error for Unresolved {}

impl Answer {
    /// An answer with room for `entries` entries, `topics` (member, topic) runs and
    /// `partitions` partitions.
    pub fn with_capacity(entries: usize, topics: usize, partitions: usize) -> Answer {
        Answer {
            entries: Vec::with_capacity(entries),
            runs: Vec::with_capacity(topics),
            partitions: Vec::with_capacity(partitions),
            ..Answer::default()
        }
    }

    /// Starts the entry of the member at position `member`; the topics pushed next are its.
    pub fn push_entry(&mut self, member: u32) -> &mut AnswerEntry {
        self.entries.push(AnswerEntry {
            member,
            runs_end: self.runs.len() as u32,
            user_data: None,
            metadata: None,
        });
        self.entries.last_mut().expect("just pushed")
    }

    /// Gives the last entry's member `partitions` of the topic at position `topic`. Ignored
    /// before the first entry.
    pub fn push_topic(&mut self, topic: u32, partitions: impl IntoIterator<Item = i32>) {
        let Some(entry) = self.entries.last_mut() else {
            return;
        };
        self.partitions.extend(partitions);
        self.runs.push(Run {
            topic,
            end: self.partitions.len() as u32,
        });
        entry.runs_end = self.runs.len() as u32;
    }

    /// [`Self::push_topic`] with the partitions appended by `fill`, which may give up: then
    /// the answer is left half-pushed, and the caller drops it.
    pub(crate) fn push_topic_with(
        &mut self,
        topic: u32,
        fill: impl FnOnce(&mut Vec<i32>) -> Option<()>,
    ) -> Option<()> {
        let entry = self.entries.last_mut()?;
        fill(&mut self.partitions)?;
        self.runs.push(Run {
            topic,
            end: self.partitions.len() as u32,
        });
        entry.runs_end = self.runs.len() as u32;
        Some(())
    }

    /// The last entry pushed.
    pub(crate) fn last_entry_mut(&mut self) -> Option<&mut AnswerEntry> {
        self.entries.last_mut()
    }

    /// The entries, in the order the module gave them.
    pub fn entries(&self) -> &[AnswerEntry] {
        &self.entries
    }

    /// The topics of entry `i` in the order given, each with its partitions as given.
    pub fn topics(&self, i: usize) -> impl ExactSizeIterator<Item = (u32, &[i32])> + '_ {
        let runs_start = if i == 0 {
            0
        } else {
            self.entries[i - 1].runs_end as usize
        };
        let runs = &self.runs[runs_start..self.entries[i].runs_end as usize];
        let mut start = match runs_start {
            0 => 0,
            r => self.runs[r - 1].end as usize,
        };
        runs.iter().map(move |run| {
            let list = &self.partitions[start..run.end as usize];
            start = run.end as usize;
            (run.topic, list)
        })
    }

    /// Partitions given, counting one given twice twice.
    pub fn partition_count(&self) -> usize {
        self.partitions.len()
    }

    /// For each of `members` member positions, the index of its first entry, or `None`.
    pub fn entry_of(&self, members: usize) -> Vec<Option<u32>> {
        let mut of = vec![None; members];
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(slot) = of.get_mut(e.member as usize)
                && slot.is_none()
            {
                *slot = Some(i as u32);
            }
        }
        of
    }

    /// Keeps only the partitions for which `keep(member, topic, partition)` holds, in order,
    /// and returns how many were removed. Entries and their topics stay, possibly empty.
    pub fn retain(&mut self, mut keep: impl FnMut(u32, u32, i32) -> bool) -> u64 {
        let (mut read, mut write, mut run) = (0usize, 0usize, 0usize);
        for entry in &self.entries {
            while run < entry.runs_end as usize {
                let r = &mut self.runs[run];
                while read < r.end as usize {
                    let p = self.partitions[read];
                    if keep(entry.member, r.topic, p) {
                        self.partitions[write] = p;
                        write += 1;
                    }
                    read += 1;
                }
                r.end = write as u32;
                run += 1;
            }
        }
        let removed = (self.partitions.len() - write) as u64;
        self.partitions.truncate(write);
        removed
    }

    /// The answer a model gives, by positions in `request`, in the same order. A member id or
    /// a topic `request` does not have is refused, naming the first one; a member listed twice
    /// stays listed twice (the output checks refuse it).
    pub fn from_response(
        request: &AssignRequest,
        response: &AssignResponse,
    ) -> Result<Answer, Unresolved> {
        let topics = response
            .assignments
            .iter()
            .map(|a| a.partitions.len())
            .sum();
        let partitions = response
            .assignments
            .iter()
            .flat_map(|a| &a.partitions)
            .map(|tp| tp.partitions.len())
            .sum();
        let mut answer = Answer::with_capacity(response.assignments.len(), topics, partitions);
        for a in &response.assignments {
            let member = request
                .member_index(&a.member_id)
                .ok_or_else(|| Unresolved::Member {
                    member: a.member_id.clone(),
                })?;
            let entry = answer.push_entry(member as u32);
            entry.user_data = a.user_data.clone();
            entry.metadata = a.metadata.clone();
            for tp in &a.partitions {
                let topic = request
                    .topic_index(&tp.topic)
                    .ok_or_else(|| Unresolved::Topic {
                        member: a.member_id.clone(),
                        topic: tp.topic.clone(),
                    })?;
                answer.push_topic(topic as u32, tp.partitions.iter().copied());
            }
        }
        answer.rebalance_after_ms = response.rebalance_after_ms;
        answer.state = response.state.clone();
        Ok(answer)
    }

    /// The model of this answer to `request`: names for positions, in the same order. Every
    /// position must be inside `request` (the output checks make sure of it).
    pub fn to_response(&self, request: &AssignRequest) -> AssignResponse {
        AssignResponse {
            error: None,
            assignments: self
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| MemberAssignment {
                    member_id: request.members[e.member as usize].member_id.clone(),
                    partitions: self
                        .topics(i)
                        .map(|(t, list)| TopicPartitions {
                            topic: request.topics[t as usize].name.clone(),
                            partitions: list.to_vec(),
                        })
                        .collect(),
                    user_data: e.user_data.clone(),
                    metadata: e.metadata.clone(),
                })
                .collect(),
            rebalance_after_ms: self.rebalance_after_ms,
            state: self.state.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::abi::{Member, Topic};

    fn request() -> AssignRequest {
        let topics: Arc<[String]> = vec!["a".to_owned(), "b".to_owned()].into();
        AssignRequest {
            members: ["m0", "m1", "m2"]
                .iter()
                .map(|id| Member {
                    member_id: (*id).into(),
                    topics: topics.clone(),
                    ..Member::default()
                })
                .collect(),
            topics: ["a", "b"]
                .iter()
                .map(|n| Topic {
                    name: (*n).into(),
                    partition_count: 4,
                    partition_racks: Vec::new(),
                })
                .collect(),
            ..AssignRequest::default()
        }
    }

    fn tp(topic: &str, partitions: &[i32]) -> TopicPartitions {
        TopicPartitions {
            topic: topic.into(),
            partitions: partitions.to_vec(),
        }
    }

    fn response() -> AssignResponse {
        AssignResponse {
            error: None,
            assignments: vec![
                MemberAssignment {
                    member_id: "m2".into(),
                    partitions: vec![tp("b", &[3, 1]), tp("a", &[0])],
                    user_data: Some(vec![7]),
                    metadata: None,
                },
                MemberAssignment {
                    member_id: "m0".into(),
                    partitions: vec![],
                    user_data: None,
                    metadata: Some(vec![8]),
                },
                MemberAssignment {
                    member_id: "m1".into(),
                    partitions: vec![tp("a", &[]), tp("a", &[2, 1])],
                    user_data: None,
                    metadata: None,
                },
            ],
            rebalance_after_ms: Some(5),
            state: Some(vec![9]),
        }
    }

    /// Positions, order, empty lists and bytes all survive the trip from names and back.
    #[test]
    fn a_model_answer_goes_to_positions_and_back_unchanged() {
        let request = request();
        let answer = Answer::from_response(&request, &response()).unwrap();
        let members: Vec<u32> = answer.entries().iter().map(|e| e.member).collect();
        assert_eq!(members, [2, 0, 1]);
        let first: Vec<(u32, Vec<i32>)> = answer.topics(0).map(|(t, p)| (t, p.to_vec())).collect();
        assert_eq!(first, [(1, vec![3, 1]), (0, vec![0])]);
        assert_eq!(answer.topics(1).len(), 0);
        assert_eq!(answer.partition_count(), 5);
        assert_eq!(answer.entry_of(4), [Some(1), Some(2), Some(0), None]);
        assert_eq!(answer.to_response(&request), response());
    }

    #[test]
    fn unknown_names_are_refused_naming_them() {
        let request = request();
        let mut bad = response();
        bad.assignments[1].member_id = "ghost".into();
        assert_eq!(
            Answer::from_response(&request, &bad),
            Err(Unresolved::Member {
                member: "ghost".into()
            })
        );
        let mut bad = response();
        bad.assignments[2].partitions[1].topic = "zzz".into();
        assert_eq!(
            Answer::from_response(&request, &bad),
            Err(Unresolved::Topic {
                member: "m1".into(),
                topic: "zzz".into()
            })
        );
    }

    /// `retain` removes exactly the refused partitions, keeps every entry and topic, and
    /// reports how many went.
    #[test]
    fn retain_keeps_order_and_reports_what_it_removed() {
        let request = request();
        let mut answer = Answer::from_response(&request, &response()).unwrap();
        let removed = answer.retain(|m, t, p| !(m == 2 && t == 1) && p != 2);
        assert_eq!(removed, 3);
        let mut expected = response();
        expected.assignments[0].partitions[0].partitions.clear();
        expected.assignments[2].partitions[1].partitions = vec![1];
        assert_eq!(answer.to_response(&request), expected);
    }

    #[test]
    fn topics_pushed_before_any_entry_are_ignored() {
        let mut answer = Answer::default();
        answer.push_topic(0, [1, 2]);
        assert_eq!(answer, Answer::default());
    }
}
