//! KIP-429 for `cooperative-sticky`: partitions that change owner are revoked in this round
//! and handed out in the next.
//!
//! 1. Kafka's `CooperativeStickyAssignor.adjustAssignment`: every partition in
//!    `partitionsTransferringOwnership` is taken out of its new owner's assignment. The
//!    constrained builder records that set as it goes; after the general builder it is
//!    computed as Kafka does, from the members' `owned_partitions`: partitions added to one
//!    member that another member owned and no longer gets.
//! 2. The host's safety rule, which Kafka's step 1 does not always meet: a partition goes to a
//!    member only if no other member claims it at the highest generation among its claimants
//!    (`owned_partitions` with `owned_generation`). The cases this adds to step 1 are claims
//!    tied at one generation that Kafka's general builder settles on one of the claimants; the
//!    host would refuse such an output, so the partition waits a round instead.
//!
//! The members whose partitions were revoked rejoin at once (a KIP-429 client does that after
//! losing a partition), and the next round assigns what was left out.

use crate::group::{Group, NONE};

/// Partition -> the member it would have gone to, for the partitions left out this round.
pub type Withheld = Vec<(u32, u32)>;

/// Kafka's `computePartitionsTransferringOwnership` for the general builder: partitions
/// given to a member that did not own them, which some member owned and no longer gets.
pub fn transferring_ownership(group: &Group<'_>, assignment: &[Vec<u32>]) -> Vec<u32> {
    let mut assigned_to = vec![NONE; group.partitions()];
    for (m, list) in assignment.iter().enumerate() {
        for &gid in list {
            assigned_to[gid as usize] = m as u32;
        }
    }
    let mut revoked = vec![false; group.partitions()];
    let mut kept = vec![false; group.partitions()];
    let mut seen = vec![NONE; group.partitions()];
    for (m, member) in group.request.members.iter().enumerate() {
        for gid in group.resolve(&member.owned_partitions, &mut seen, m as u32) {
            if assigned_to[gid as usize] == m as u32 {
                kept[gid as usize] = true;
            } else {
                revoked[gid as usize] = true;
            }
        }
    }
    (0..group.partitions())
        .map(|p| {
            if revoked[p] && !kept[p] {
                assigned_to[p]
            } else {
                NONE
            }
        })
        .collect()
}

/// Takes `transferring` partitions and those the host's rule forbids out of `assignment`;
/// returns what was left out, by partition.
pub fn adjust(group: &Group<'_>, assignment: &mut [Vec<u32>], transferring: &[u32]) -> Withheld {
    let claims = Claims::new(group);
    let mut withheld = Vec::new();
    for (m, list) in assignment.iter_mut().enumerate() {
        let m = m as u32;
        list.retain(|&gid| {
            let keep = transferring[gid as usize] != m && !claims.held_by_other(gid, m);
            if !keep {
                withheld.push((gid, m));
            }
            keep
        });
    }
    withheld.sort_unstable();
    withheld
}

/// The claims the host's cooperative check counts: for each partition, the members claiming
/// it at the highest `owned_generation` among its claimants (one of them, and how many).
struct Claims {
    generation: Vec<i32>,
    owner: Vec<u32>,
    /// Claimants at `generation`, counting up to 2.
    count: Vec<u8>,
}

impl Claims {
    fn new(group: &Group<'_>) -> Claims {
        let n = group.partitions();
        let mut claims = Claims {
            generation: vec![i32::MIN; n],
            owner: vec![NONE; n],
            count: vec![0; n],
        };
        let mut seen = vec![NONE; n];
        for (m, member) in group.request.members.iter().enumerate() {
            let generation = member.owned_generation;
            for gid in group.resolve(&member.owned_partitions, &mut seen, m as u32) {
                let p = gid as usize;
                if claims.count[p] == 0 || generation > claims.generation[p] {
                    claims.generation[p] = generation;
                    claims.owner[p] = m as u32;
                    claims.count[p] = 1;
                } else if generation == claims.generation[p] {
                    claims.count[p] = 2;
                }
            }
        }
        claims
    }

    /// Whether a member other than `member` claims `gid` at the highest generation.
    fn held_by_other(&self, gid: u32, member: u32) -> bool {
        let p = gid as usize;
        self.count[p] >= 2 || (self.count[p] == 1 && self.owner[p] != member)
    }
}
