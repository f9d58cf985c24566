//! Turns the builders' owner array into the SDK's [`Assignment`], handing it the partitions in
//! answer order (members by their position in the request, each member's topics in order,
//! partitions ascending), so the SDK writes the answer straight from what it was given.
//!
//! Two ways, the same result:
//! - when the owners, read partition after partition, already come in request order (a first
//!   assignment of a homogeneous group: each member takes the next stretch of partitions),
//!   each stretch with one owner is handed over as it is read, in one pass;
//! - otherwise a counting sort groups the partitions by member (topic by topic, ascending
//!   within each), and each member's runs of one topic go over in one call.

use assignor_sdk::Assignment;

use crate::group::{Group, NO_MEMBER};

/// The builders' answer (`owners[partition]` = member position, or `NO_MEMBER`) as the
/// SDK's [`Assignment`]: each member's partitions, topic by topic.
pub fn assignment(group: &Group<'_>, owners: &[u32]) -> Assignment {
    let mut assignment = Assignment::new(group.request());
    if in_request_order(group, owners) {
        stretches(group, owners, &mut assignment);
    } else {
        by_member(group, owners, &mut assignment);
    }
    assignment
}

/// Whether the owners, partition after partition, are members in ascending request position.
fn in_request_order(group: &Group<'_>, owners: &[u32]) -> bool {
    let mut last = 0usize;
    let mut previous = NO_MEMBER;
    for &m in owners {
        if m == NO_MEMBER || m == previous {
            continue;
        }
        let slot = group.member_position(m);
        if slot < last {
            return false;
        }
        (last, previous) = (slot, m);
    }
    true
}

/// Hands over every stretch of partitions of one topic with one owner, in partition order.
fn stretches(group: &Group<'_>, owners: &[u32], assignment: &mut Assignment) {
    for t in 0..group.topic_count() as u32 {
        let offset = group.offset(t) as usize;
        let list = &owners[offset..offset + group.partition_count(t) as usize];
        let topic = group.topic_position(t);
        let mut p = 0;
        while p < list.len() {
            let m = list[p];
            let start = p;
            while p < list.len() && list[p] == m {
                p += 1;
            }
            if m != NO_MEMBER {
                let member = group.member_position(m);
                assignment.assign_all_indexed(member, topic, start as i32..p as i32);
            }
        }
    }
}

/// A counting sort of the partitions by the owner's request position, then each member's
/// runs of one topic in one call.
fn by_member(group: &Group<'_>, owners: &[u32], assignment: &mut Assignment) {
    let members = group.member_count();
    let mut start = vec![0u32; members + 1];
    for &m in owners {
        if m != NO_MEMBER {
            start[group.member_position(m) + 1] += 1;
        }
    }
    for s in 0..members {
        start[s + 1] += start[s];
    }
    let mut next = start.clone();
    let mut by_slot = vec![0u32; start[members] as usize];
    for (g, &m) in owners.iter().enumerate() {
        if m != NO_MEMBER {
            let slot = group.member_position(m);
            by_slot[next[slot] as usize] = g as u32;
            next[slot] += 1;
        }
    }
    for slot in 0..members {
        let mut list = &by_slot[start[slot] as usize..start[slot + 1] as usize];
        while let Some(&first) = list.first() {
            let t = group.topic_of(first);
            let (offset, end) = (group.offset(t), group.offset(t) + group.partition_count(t));
            let run = list.partition_point(|&g| g < end);
            assignment.assign_all_indexed(
                slot,
                group.topic_position(t),
                list[..run].iter().map(|&g| (g - offset) as i32),
            );
            list = &list[run..];
        }
    }
}
