//! Who owned what before this rebalance: each member's `MemberData` (Kafka's name), and the
//! claims that survive when members disagree.
//!
//! Where the data comes from depends on the flavour:
//! - `sticky` (eager): Kafka's `StickyAssignor.memberData` reads only the user data (previous
//!   assignment and generation) and ignores `owned_partitions`, which an eager client empties
//!   before it rejoins. When a member sent no user data (a new member, or a client whose sticky
//!   implementation sends none, such as a restarted static member), the host's
//!   `previous_assignment` stands in, at generation `generation_id - 1` (the host installed it in
//!   an earlier generation than the one being formed). That fallback is this host's addition.
//! - `cooperative-sticky`: `owned_partitions` with `owned_generation` (Subscription v2+). For
//!   v0/v1 subscriptions the generation comes from user data: Kafka's 4-byte generation, or
//!   the generation of a whole `StickyAssignor` V1 record (librdkafka's cooperative-sticky user
//!   data, which Kafka's Java leader would misread), else the first four bytes as Kafka reads
//!   them.
//!
//! Conflicts (Kafka's `allSubscriptionsEqual` loop, members in Java `HashMap` order): a claim
//! on a partition already claimed wins if its generation is higher, loses if lower, and with
//! equal generations neither member keeps it and the partition is recorded as having multiple
//! previous owners. The generation compared is each member's `MemberData` generation (Kafka
//! reads the other member's from its Subscription field, which is the same value for every
//! cooperative client on Subscription v2+).

use assignor_sdk::{AssignRequest, Member};

use crate::Flavor;
use crate::group::{Group, NONE};
use crate::user_data::{
    DEFAULT_GENERATION, MemberData, read_cooperative, read_sticky, read_sticky_v1_exactly,
    read_sticky_with,
};

/// Previous ownership after conflicts are settled.
pub struct Ownership {
    /// Each member's surviving claims, in the order its member data lists them (Kafka's
    /// `consumerToOwnedPartitions`).
    pub owned: Vec<Vec<u32>>,
    /// Each member's claims before conflicts (valid partitions, each once).
    pub claims: Vec<Vec<u32>>,
    /// Each member's `MemberData` generation.
    pub generation: Vec<i32>,
    /// Kafka's `maxGeneration`.
    pub max_generation: i32,
    /// Partitions claimed by two members of the same generation.
    pub multiple_owners: Vec<bool>,
    /// Number of conflicting claims seen (for the log).
    pub conflicts: usize,
}

/// Kafka's `memberData(subscription)` for `member`.
pub fn member_data(request: &AssignRequest, member: &Member, flavor: Flavor) -> MemberData {
    match flavor {
        Flavor::Sticky => match member.user_data.as_deref() {
            Some(bytes) if !bytes.is_empty() => read_sticky(bytes),
            _ if !member.previous_assignment.is_empty() => MemberData {
                partitions: member.previous_assignment.clone(),
                generation: request
                    .generation_id
                    .saturating_sub(1)
                    .max(DEFAULT_GENERATION),
            },
            _ => MemberData {
                partitions: Vec::new(),
                generation: DEFAULT_GENERATION,
            },
        },
        Flavor::CooperativeSticky => MemberData {
            partitions: member.owned_partitions.clone(),
            generation: cooperative_generation(member),
        },
    }
}

/// [`member_data`] resolved to partition ids (valid ones, each once) without building the
/// lists: the same data, read in place.
fn resolved_member_data(
    group: &Group<'_>,
    member: &Member,
    flavor: Flavor,
    seen: &mut [u32],
    stamp: u32,
) -> (Vec<u32>, i32) {
    match flavor {
        Flavor::Sticky => match member.user_data.as_deref() {
            Some(bytes) if !bytes.is_empty() => {
                let mut out = Vec::new();
                let generation = read_sticky_with(bytes, |topic, p| {
                    if let Some(gid) = group.gid(topic, p)
                        && seen[gid as usize] != stamp
                    {
                        seen[gid as usize] = stamp;
                        out.push(gid);
                    }
                });
                match generation {
                    Some(generation) => (out, generation),
                    None => (Vec::new(), DEFAULT_GENERATION),
                }
            }
            _ if !member.previous_assignment.is_empty() => (
                group.resolve(&member.previous_assignment, seen, stamp),
                previous_assignment_generation(group.request),
            ),
            _ => (Vec::new(), DEFAULT_GENERATION),
        },
        Flavor::CooperativeSticky => (
            group.resolve(&member.owned_partitions, seen, stamp),
            cooperative_generation(member),
        ),
    }
}

/// The generation the host's `previous_assignment` counts at: the one before the generation
/// being formed.
fn previous_assignment_generation(request: &AssignRequest) -> i32 {
    request
        .generation_id
        .saturating_sub(1)
        .max(DEFAULT_GENERATION)
}

/// `CooperativeStickyAssignor.memberData`'s generation.
fn cooperative_generation(member: &Member) -> i32 {
    if member.owned_generation >= 0 {
        return member.owned_generation;
    }
    match member.user_data.as_deref() {
        None => DEFAULT_GENERATION,
        Some(bytes) if bytes.len() == 4 => read_cooperative(bytes),
        Some(bytes) => read_sticky_v1_exactly(bytes).unwrap_or_else(|| read_cooperative(bytes)),
    }
}

/// Reads every member's data and settles conflicting claims.
pub fn settle(group: &Group<'_>, flavor: Flavor) -> Ownership {
    let request = group.request;
    let n = group.members();
    let mut seen = vec![NONE; group.partitions()];
    let mut claims = Vec::with_capacity(n);
    let mut generation = Vec::with_capacity(n);
    for (m, member) in request.members.iter().enumerate() {
        let (list, g) = resolved_member_data(group, member, flavor, &mut seen, m as u32);
        claims.push(list);
        generation.push(g);
    }

    // allPreviousPartitionsToOwner, and whether that member really holds it (not after a tie).
    let mut holder = seen;
    holder.fill(NONE);
    let mut held = vec![false; group.partitions()];
    let mut multiple_owners = vec![false; group.partitions()];
    let mut max_generation = DEFAULT_GENERATION;
    let mut conflicts = 0;
    for &m in &group.hash_order {
        let g = generation[m as usize];
        max_generation = max_generation.max(g);
        for &gid in &claims[m as usize] {
            let p = gid as usize;
            let other = holder[p];
            if other == NONE {
                holder[p] = m;
                held[p] = true;
                continue;
            }
            conflicts += 1;
            let other_generation = generation[other as usize];
            if g == other_generation {
                multiple_owners[p] = true;
                held[p] = false;
                holder[p] = m;
            } else if g > other_generation {
                held[p] = true;
                holder[p] = m;
            }
        }
    }
    let owned = claims
        .iter()
        .enumerate()
        .map(|(m, list)| {
            list.iter()
                .copied()
                .filter(|&gid| held[gid as usize] && holder[gid as usize] == m as u32)
                .collect()
        })
        .collect();
    Ownership {
        owned,
        claims,
        generation,
        max_generation,
        multiple_owners,
        conflicts,
    }
}
