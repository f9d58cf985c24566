//! Output checks: nothing an assignor returns reaches a client before it passes here.
//!
//! A valid assignment names only members of the group, gives each member only topics it
//! subscribes to, only partitions that exist, and no partition twice. For a cooperative strategy
//! (KIP-429) it also never hands a partition to a new owner while another member still owns it:
//! the owner must revoke it first, so the partition stays unassigned for one generation. A
//! member missing from the output gets nothing; partitions nobody got are allowed and counted.
//! Each failure is its own [`OutputError`] variant naming the culprit.
//!
//! Who owns a partition (`owners.rs`): the members listing it in `owned_partitions` at the
//! highest `owned_generation` among its claims. An older claim is stale (a member that missed a
//! generation), as in Kafka's sticky assignors; members tied at the highest generation all
//! count, so none of them may take it from another.
//!
//! Defined once for the whole host. The sandbox runs [`check_response`] on every module call
//! (so the registry's runs, its upload smoke call and the simulator all apply it), and the
//! coordinator uses [`strip_owned`] to make its fallback's output cooperative-safe under the
//! same ownership rule. The module is neutral (plain data in, typed errors out, neither
//! wasmtime nor tokio) so the sans-io coordinator can depend on it without depending on the
//! sandbox.
//!
//! The checks are linear in the size of the output (plus the owned partitions for cooperative
//! strategies) so they stay a small part of a 10,000-member call.

mod index;
mod owners;

use std::collections::HashMap;

use assignor_sdk::abi::v2::{self, Layout, ReadResponse};
use assignor_sdk::{
    AssignRequest, AssignResponse, MAX_STATE_BYTES, MemberAssignment, TopicPartitions,
};

pub use owners::strip_owned;

use index::{MemberIndex, topic_index};
use owners::Owners;

/// Why an assignment was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    #[error("member `{member}` is not in the group")]
    UnknownMember { member: String },
    #[error("the assignment names member index {index}; the group has {members} members (ABI v2)")]
    MemberIndexOutOfRange { index: u32, members: u32 },
    #[error("member `{member}` got topic index {index}; the request has {topics} topics (ABI v2)")]
    TopicIndexOutOfRange {
        member: String,
        index: u32,
        topics: u32,
    },
    #[error("member `{member}` appears twice in the assignment")]
    DuplicateMember { member: String },
    #[error("member `{member}` got topic `{topic}`, which is not a topic of this group")]
    UnknownTopic { member: String, topic: String },
    #[error("member `{member}` got topic `{topic}`, which it does not subscribe to")]
    NotSubscribed { member: String, topic: String },
    #[error(
        "member `{member}` got partition {partition} of topic `{topic}`, which has \
         {partition_count} partitions"
    )]
    PartitionOutOfRange {
        member: String,
        topic: String,
        partition: i32,
        partition_count: i32,
    },
    #[error("partition {topic}-{partition} is assigned to both `{first}` and `{second}`")]
    AssignedTwice {
        topic: String,
        partition: i32,
        first: String,
        second: String,
    },
    #[error(
        "partition {topic}-{partition} goes to `{assignee}` while `{owner}` still owns it; a \
         cooperative strategy must leave it unassigned until the owner has revoked it"
    )]
    StillOwned {
        topic: String,
        partition: i32,
        owner: String,
        assignee: String,
    },
    #[error(
        "the answer's state is {bytes} bytes; the host keeps at most {max} bytes per group \
         (keep less: what the strategy needs to remember, not a copy of the request)"
    )]
    StateTooLarge { bytes: usize, max: usize },
}

/// What the checks learned about a valid assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckSummary {
    /// Partitions given to some member.
    pub assigned_partitions: u64,
    /// Partitions of the group's topics that nobody got (allowed, reported).
    pub unassigned_partitions: u64,
}

/// Checks `response` against the `request` it answers. `cooperative` adds the KIP-429 safety
/// rule. The response's `error` field is not looked at: the caller handles it first.
pub fn check_response(
    request: &AssignRequest,
    response: &AssignResponse,
    cooperative: bool,
) -> Result<CheckSummary, OutputError> {
    let topics = topic_index(request);
    let members = MemberIndex::new(&request.members);
    check(request, response, cooperative, ByName { topics, members })
}

/// [`check_response`] for an answer read from ABI v2 (`assignor_sdk::abi::v2::read_response`),
/// whose entries already are positions in the request: `positions` gives them, `layout` the
/// subscription of each member as topic positions. The same rules and the same errors, with no
/// name looked up.
pub fn check_positioned(
    request: &AssignRequest,
    read: &ReadResponse,
    layout: &Layout,
    cooperative: bool,
) -> Result<CheckSummary, OutputError> {
    let resolve = ByPosition {
        read,
        layout,
        next_topic: 0,
    };
    check(request, &read.response, cooperative, resolve)
}

/// Every member and topic index of an ABI v2 answer decoded by names (`v2::decode_response`)
/// is inside `request`: run before `v2::response_to_model`, which indexes by them.
pub fn check_indices(request: &AssignRequest, response: &v2::Response) -> Result<(), OutputError> {
    let (members, topics) = (request.members.len(), request.topics.len());
    for a in &response.assignments {
        if a.member as usize >= members {
            return Err(OutputError::MemberIndexOutOfRange {
                index: a.member,
                members: members as u32,
            });
        }
        if let Some(tp) = a.partitions.iter().find(|tp| tp.topic as usize >= topics) {
            return Err(OutputError::TopicIndexOutOfRange {
                member: request.members[a.member as usize].member_id.clone(),
                index: tp.topic,
                topics: topics as u32,
            });
        }
    }
    Ok(())
}

/// How the checks find the request's positions of an answer's members and topics.
trait Resolve {
    /// The position of the `i`-th entry's member.
    fn member(&mut self, i: usize, assignment: &MemberAssignment) -> Result<usize, OutputError>;
    /// The position of the next topic entry's topic (entries come in answer order).
    fn topic(&mut self, member: &str, tp: &TopicPartitions) -> Result<usize, OutputError>;
    /// Whether the member at `m` subscribes to the topic at `t`.
    fn subscribes(&self, request: &AssignRequest, m: usize, t: usize) -> bool;
}

struct ByName<'a> {
    topics: HashMap<&'a str, usize>,
    members: MemberIndex<'a>,
}

impl Resolve for ByName<'_> {
    fn member(&mut self, _: usize, assignment: &MemberAssignment) -> Result<usize, OutputError> {
        let name = assignment.member_id.as_str();
        self.members
            .find(name)
            .ok_or_else(|| OutputError::UnknownMember {
                member: name.to_owned(),
            })
    }

    fn topic(&mut self, member: &str, tp: &TopicPartitions) -> Result<usize, OutputError> {
        self.topics
            .get(tp.topic.as_str())
            .copied()
            .ok_or_else(|| OutputError::UnknownTopic {
                member: member.to_owned(),
                topic: tp.topic.clone(),
            })
    }

    fn subscribes(&self, request: &AssignRequest, m: usize, t: usize) -> bool {
        let member = &request.members[m];
        let topic = request.topics[t].name.as_str();
        if member.topics.is_sorted() {
            member
                .topics
                .binary_search_by(|t| t.as_str().cmp(topic))
                .is_ok()
        } else {
            member.topics.iter().any(|t| t == topic)
        }
    }
}

struct ByPosition<'a> {
    read: &'a ReadResponse,
    layout: &'a Layout,
    next_topic: usize,
}

impl Resolve for ByPosition<'_> {
    fn member(&mut self, i: usize, _: &MemberAssignment) -> Result<usize, OutputError> {
        Ok(self.read.members[i] as usize)
    }

    fn topic(&mut self, _: &str, _: &TopicPartitions) -> Result<usize, OutputError> {
        let t = self.read.topics[self.next_topic];
        self.next_topic += 1;
        Ok(t as usize)
    }

    fn subscribes(&self, _: &AssignRequest, m: usize, t: usize) -> bool {
        let s = self.layout.subscription_of[m] as usize;
        self.layout.subscriptions[s]
            .binary_search(&(t as u32))
            .is_ok()
    }
}

fn check(
    request: &AssignRequest,
    response: &AssignResponse,
    cooperative: bool,
    mut resolve: impl Resolve,
) -> Result<CheckSummary, OutputError> {
    if let Some(state) = response
        .state
        .as_ref()
        .filter(|s| s.len() > MAX_STATE_BYTES)
    {
        return Err(OutputError::StateTooLarge {
            bytes: state.len(),
            max: MAX_STATE_BYTES,
        });
    }
    let owners = if cooperative {
        Some(Owners::new(
            request,
            &topic_index(request),
            &MemberIndex::new(&request.members),
        ))
    } else {
        None
    };
    // assigned[topic][partition] = index of the member + 1; 0 while free. Filled lazily.
    let mut assigned: Vec<Vec<u32>> = vec![Vec::new(); request.topics.len()];
    let mut seen = vec![false; request.members.len()];
    let mut count = 0u64;

    for (i, assignment) in response.assignments.iter().enumerate() {
        let name = assignment.member_id.as_str();
        let m = resolve.member(i, assignment)?;
        if std::mem::replace(&mut seen[m], true) {
            return Err(OutputError::DuplicateMember {
                member: name.to_owned(),
            });
        }
        for tp in &assignment.partitions {
            let t = resolve.topic(name, tp)?;
            let topic = request.topics[t].name.as_str();
            if !resolve.subscribes(request, m, t) {
                return Err(OutputError::NotSubscribed {
                    member: name.to_owned(),
                    topic: topic.to_owned(),
                });
            }
            let partition_count = request.topics[t].partition_count;
            let slots = &mut assigned[t];
            if slots.is_empty() {
                slots.resize(usize::try_from(partition_count).unwrap_or(0), 0);
            }
            for &p in &tp.partitions {
                if p < 0 || p >= partition_count {
                    return Err(OutputError::PartitionOutOfRange {
                        member: name.to_owned(),
                        topic: topic.to_owned(),
                        partition: p,
                        partition_count,
                    });
                }
                let slot = &mut slots[p as usize];
                if *slot != 0 {
                    return Err(OutputError::AssignedTwice {
                        topic: topic.to_owned(),
                        partition: p,
                        first: request.members[*slot as usize - 1].member_id.clone(),
                        second: name.to_owned(),
                    });
                }
                *slot = m as u32 + 1;
                if let Some(owner) = owners.as_ref().and_then(|o| o.other_than(t, p, Some(m))) {
                    return Err(OutputError::StillOwned {
                        topic: topic.to_owned(),
                        partition: p,
                        owner: request.members[owner].member_id.clone(),
                        assignee: name.to_owned(),
                    });
                }
                count += 1;
            }
        }
    }

    let total: u64 = request
        .topics
        .iter()
        .map(|t| u64::try_from(t.partition_count).unwrap_or(0))
        .sum();
    Ok(CheckSummary {
        assigned_partitions: count,
        unassigned_partitions: total - count,
    })
}
