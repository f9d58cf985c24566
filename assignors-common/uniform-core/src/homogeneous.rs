//! Kafka's `UniformHomogeneousAssignmentBuilder`: the assignment of a group whose members all
//! subscribe to the same topics, as it is after KAFKA-18688 ("fix uniform homogeneous assignor
//! stability", Kafka 4.1).
//!
//! Balance first, then stickiness:
//! 1. `P` partitions over `M` members: each gets `P / M`, and `P % M` of them one more.
//! 2. Members in order keep their previous partitions up to `P / M + 1` while extra slots
//!    remain, else up to `P / M`; whatever is over is revoked. A member that filled the extra
//!    slot from its own partitions claims one of the `P % M` extras; one that did not gives its
//!    extra slot back.
//! 3. The extras nobody claimed go to the *last* members still short, in order; then the
//!    partitions nobody holds (topic by topic, ascending), followed by the revoked ones in
//!    revocation order, fill the members still short, first member first.
//!
//! Claiming extras by what members already hold (step 2) is what makes the answer independent
//! of member order for a balanced group: a member that had `P / M + 1` keeps all of them
//! whoever comes first. Handing the unclaimed extras to the last members (step 3) rather than
//! the first is Kafka's choice too, kept so the ported tests hold member for member.

use assignor_sdk::AssignError;

use crate::group::{Group, NO_MEMBER};

/// The owner of every global partition (see [`Group`]); partitions of topics nobody
/// subscribes to stay [`NO_MEMBER`]. The group must have members, all with the same
/// subscription.
pub fn build(group: &Group<'_>) -> Result<Vec<u32>, AssignError> {
    let mut owners = vec![NO_MEMBER; group.total_partitions()];
    let topics = group.subscription(0);
    if topics.is_empty() {
        return Ok(owners);
    }
    let mut subscribed = vec![false; group.topic_count()];
    for &t in topics {
        subscribed[t as usize] = true;
    }
    let total: u64 = topics
        .iter()
        .map(|&t| u64::from(group.partition_count(t)))
        .sum();
    let members = group.member_count() as u64;
    let minimum_member_quota = total / members;
    let mut remaining_members_to_get_an_extra_partition = total % members;

    // maybeRevokePartitions
    let mut revoked: Vec<u32> = Vec::new();
    let mut unfilled_members: Vec<(u32, u64)> = Vec::new();
    for m in 0..members as u32 {
        let mut quota = minimum_member_quota;
        let mut quota_has_extra_partition = false;
        if remaining_members_to_get_an_extra_partition > 0 {
            quota += 1;
            quota_has_extra_partition = true;
        }
        for (t, partitions) in group.previous(m) {
            if !subscribed[t as usize] {
                // Not subscribed any more: dropped (and nobody may take it).
                continue;
            }
            let offset = group.offset(t);
            for &p in partitions {
                if quota > 0 {
                    quota -= 1;
                    owners[(offset + p) as usize] = m;
                } else {
                    revoked.push(offset + p);
                }
            }
        }
        if quota > 0 && quota_has_extra_partition {
            // Give up the extra partition quota for another member to claim.
            quota -= 1;
            quota_has_extra_partition = false;
        }
        if quota == 0 && quota_has_extra_partition {
            remaining_members_to_get_an_extra_partition -= 1;
        }
        if quota > 0
            || (remaining_members_to_get_an_extra_partition > 0 && !quota_has_extra_partition)
        {
            unfilled_members.push((m, quota));
        }
    }

    // assignRemainingPartitions: the last members still short take the unclaimed extras.
    for (_, quota) in unfilled_members.iter_mut().rev() {
        if remaining_members_to_get_an_extra_partition == 0 {
            break;
        }
        remaining_members_to_get_an_extra_partition -= 1;
        *quota += 1;
    }
    // The partitions nobody holds, topic by topic (whole 64-partition words at a time when
    // none is claimed), then the revoked ones in revocation order.
    let mut unassigned: Vec<u32> = Vec::with_capacity(owners.len());
    for &t in topics {
        let (offset, end) = (group.offset(t), group.offset(t) + group.partition_count(t));
        let mut g = offset;
        while g < end {
            if g % 64 == 0 && end - g >= 64 && group.claimed_word(g / 64) == 0 {
                unassigned.extend(g..g + 64);
                g += 64;
                continue;
            }
            if !group.is_claimed(g) {
                unassigned.push(g);
            }
            g += 1;
        }
    }
    unassigned.extend_from_slice(&revoked);
    let mut next = 0usize;
    for (m, quota) in unfilled_members {
        let take = (quota as usize).min(unassigned.len() - next);
        for &g in &unassigned[next..next + take] {
            owners[g as usize] = m;
        }
        next += take;
    }
    if next < unassigned.len() {
        return Err(AssignError::new("Partitions were left unassigned"));
    }
    Ok(owners)
}
