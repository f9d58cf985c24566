//! Who owns a partition, for the cooperative rule, and the stripping that makes an assignment
//! obey it.
//!
//! Ownership comes from the members' `owned_partitions`. When several members claim one
//! partition, only the claims with the highest `owned_generation` count: an older claim is
//! stale (a member that missed a generation, a zombie), as in Kafka's sticky assignors
//! (`AbstractStickyAssignor` keeps the highest generation's claim). Members tied at that
//! generation all count as owners, so the partition may go to none of them while another
//! still claims it. [`super::check_response`] refuses an output that breaks the rule and
//! [`strip_owned`] removes what would break it; both ask [`Owners::other_than`], so an output
//! that went through `strip_owned` always passes the cooperative check.

use std::collections::HashMap;

use assignor_sdk::{Answer, AssignRequest};

use super::index::{MemberIndex, topic_index};

/// The current owners of every claimed partition of the request's topics.
pub(super) struct Owners {
    /// (topic index, partition) -> the claims at the highest generation seen.
    claims: HashMap<(usize, i32), Claim>,
}

/// The claims on one partition at its highest claimed generation.
struct Claim {
    generation: i32,
    /// Index of the first member claiming at `generation`.
    owner: usize,
    /// Other members claiming at the same generation (almost always empty, so no allocation).
    tied: Vec<usize>,
}

impl Owners {
    /// Reads every member's claims. Claims on topics outside the request and claims by members
    /// not in the index are ignored: they cannot block an assignment of this group.
    pub(super) fn new(
        request: &AssignRequest,
        topics: &HashMap<&str, usize>,
        members: &MemberIndex<'_>,
    ) -> Owners {
        let mut claims: HashMap<(usize, i32), Claim> = HashMap::new();
        for member in &request.members {
            let Some(m) = members.find(&member.member_id) else {
                continue;
            };
            let generation = member.owned_generation;
            for tp in &member.owned_partitions {
                let Some(&t) = topics.get(tp.topic.as_str()) else {
                    continue;
                };
                for &p in &tp.partitions {
                    let claim = claims.entry((t, p)).or_insert(Claim {
                        generation,
                        owner: m,
                        tied: Vec::new(),
                    });
                    if generation > claim.generation {
                        *claim = Claim {
                            generation,
                            owner: m,
                            tied: Vec::new(),
                        };
                    } else if generation == claim.generation
                        && claim.owner != m
                        && !claim.tied.contains(&m)
                    {
                        claim.tied.push(m);
                    }
                }
            }
        }
        Owners { claims }
    }

    /// A current owner of `(topic, partition)` other than `assignee` (`None`: a member outside
    /// the group, which owns nothing), if any. The partition may go to `assignee` only when
    /// this is `None`.
    pub(super) fn other_than(
        &self,
        topic: usize,
        partition: i32,
        assignee: Option<usize>,
    ) -> Option<usize> {
        let claim = self.claims.get(&(topic, partition))?;
        std::iter::once(claim.owner)
            .chain(claim.tied.iter().copied())
            .find(|&o| Some(o) != assignee)
    }
}

/// Removes from each member's share every partition another member still owns (the rule
/// above), and returns how many were removed. Those partitions stay unassigned for one
/// generation; their owners revoke them and rejoin, and the next round hands them over.
///
/// For an output computed without the cooperative rule (the coordinator's fallback and its
/// native range); the result passes [`super::check_positioned`] with `cooperative` whenever
/// the input passed it without.
pub fn strip_owned(request: &AssignRequest, answer: &mut Answer) -> u64 {
    let topics = topic_index(request);
    let members = MemberIndex::new(&request.members);
    let owners = Owners::new(request, &topics, &members);
    answer.retain(|m, t, p| owners.other_than(t as usize, p, Some(m as usize)).is_none())
}
