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

use assignor_sdk::abi::v2::{self, Layout};
use assignor_sdk::{Answer, AssignRequest, AssignResponse, MAX_STATE_BYTES, Unresolved};

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
    let answer = resolve(request, response)?;
    check(request, &answer, cooperative, |m, t| {
        subscribes_by_name(request, m, t)
    })
}

/// [`check_response`] for an answer already by positions (a v1 module's, resolved with
/// [`resolve`]): subscriptions are looked up by name.
pub fn check_named(
    request: &AssignRequest,
    answer: &Answer,
    cooperative: bool,
) -> Result<CheckSummary, OutputError> {
    check(request, answer, cooperative, |m, t| {
        subscribes_by_name(request, m, t)
    })
}

/// `response` by positions in `request`, for the checks and everything after them: a name
/// the request does not have is refused as the checks refuse it.
pub fn resolve(request: &AssignRequest, response: &AssignResponse) -> Result<Answer, OutputError> {
    Answer::from_response(request, response).map_err(|e| match e {
        Unresolved::Member { member } => OutputError::UnknownMember { member },
        Unresolved::Topic { member, topic } => OutputError::UnknownTopic { member, topic },
    })
}

/// [`check_response`] for an answer by positions (`assignor_sdk::abi::v2::read_response`, or
/// [`resolve`]), with `layout` giving each member's subscription as topic positions. The same
/// rules and the same errors, with no name looked up.
pub fn check_positioned(
    request: &AssignRequest,
    answer: &Answer,
    layout: &Layout,
    cooperative: bool,
) -> Result<CheckSummary, OutputError> {
    // An entry's topics mostly come in ascending order: the search for each starts where the
    // last one's ended, and the next topic of the subscription is tried first.
    let cursor = std::cell::Cell::new((usize::MAX, 0usize));
    check(request, answer, cooperative, |m, t| {
        let list = &layout.subscriptions[layout.subscription_of[m] as usize];
        let t = t as u32;
        let (member, last) = cursor.get();
        let from = if member == m && list.get(last).is_some_and(|&x| x <= t) {
            last
        } else {
            0
        };
        let at = match list.get(from) {
            Some(&x) if x == t => from,
            _ => from + list[from..].partition_point(|&x| x < t),
        };
        cursor.set((m, at));
        list.get(at) == Some(&t)
    })
}

/// Every member and topic index of an ABI v2 answer decoded by names (`v2::decode_response`)
/// is inside `request`: run before `v2::response_to_answer`, which trusts them.
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

/// Whether the member at `m` subscribes to the topic at `t`, by their names.
fn subscribes_by_name(request: &AssignRequest, m: usize, t: usize) -> bool {
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

/// The rules, on an answer whose positions are inside `request`. `subscribes(m, t)`: whether
/// the member at `m` subscribes to the topic at `t`.
fn check(
    request: &AssignRequest,
    answer: &Answer,
    cooperative: bool,
    subscribes: impl Fn(usize, usize) -> bool,
) -> Result<CheckSummary, OutputError> {
    if let Some(state) = answer.state.as_ref().filter(|s| s.len() > MAX_STATE_BYTES) {
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
    let name = |m: usize| request.members[m].member_id.clone();
    // assigned[topic][partition] = index of the member + 1; 0 while free. Filled lazily.
    let mut assigned: Vec<Vec<u32>> = vec![Vec::new(); request.topics.len()];
    let mut seen = vec![false; request.members.len()];
    let mut count = 0u64;

    for (i, entry) in answer.entries().iter().enumerate() {
        let m = entry.member as usize;
        if std::mem::replace(&mut seen[m], true) {
            return Err(OutputError::DuplicateMember { member: name(m) });
        }
        for (t, partitions) in answer.topics(i) {
            let t = t as usize;
            let topic = request.topics[t].name.as_str();
            if !subscribes(m, t) {
                return Err(OutputError::NotSubscribed {
                    member: name(m),
                    topic: topic.to_owned(),
                });
            }
            let partition_count = request.topics[t].partition_count;
            let slots = &mut assigned[t];
            if slots.is_empty() {
                slots.resize(usize::try_from(partition_count).unwrap_or(0), 0);
            }
            for &p in partitions {
                if p < 0 || p >= partition_count {
                    return Err(OutputError::PartitionOutOfRange {
                        member: name(m),
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
                        first: name(*slot as usize - 1),
                        second: name(m),
                    });
                }
                *slot = m as u32 + 1;
                if let Some(owner) = owners.as_ref().and_then(|o| o.other_than(t, p, Some(m))) {
                    return Err(OutputError::StillOwned {
                        topic: topic.to_owned(),
                        partition: p,
                        owner: name(owner),
                        assignee: name(m),
                    });
                }
            }
            count += partitions.len() as u64;
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
