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

use assignor_sdk::{AssignRequest, AssignResponse, Member};

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
    let owners = if cooperative {
        Some(Owners::new(request, &topics, &members))
    } else {
        None
    };
    // assigned[topic][partition] = index of the member + 1; 0 while free. Filled lazily.
    let mut assigned: Vec<Vec<u32>> = vec![Vec::new(); request.topics.len()];
    let mut seen = vec![false; request.members.len()];
    let mut count = 0u64;

    for assignment in &response.assignments {
        let name = assignment.member_id.as_str();
        let m = members
            .find(name)
            .ok_or_else(|| OutputError::UnknownMember {
                member: name.to_owned(),
            })?;
        if std::mem::replace(&mut seen[m], true) {
            return Err(OutputError::DuplicateMember {
                member: name.to_owned(),
            });
        }
        let member = &request.members[m];
        let sorted_subscription = member.topics.is_sorted();
        for tp in &assignment.partitions {
            let topic = tp.topic.as_str();
            let t = *topics.get(topic).ok_or_else(|| OutputError::UnknownTopic {
                member: name.to_owned(),
                topic: topic.to_owned(),
            })?;
            if !subscribes(member, topic, sorted_subscription) {
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

fn subscribes(member: &Member, topic: &str, sorted: bool) -> bool {
    if sorted {
        member
            .topics
            .binary_search_by(|t| t.as_str().cmp(topic))
            .is_ok()
    } else {
        member.topics.iter().any(|t| t == topic)
    }
}
