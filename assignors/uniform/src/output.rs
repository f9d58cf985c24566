//! Turns the builders' owner array into the SDK's [`Assignment`].
//!
//! A counting sort groups the partitions by member (topic by topic, ascending within each, so
//! every member's list is already in the order the answer wants), then each member's runs of
//! one topic go to the [`Assignment`] in one call: one member and topic lookup per run, not
//! per partition.

use assignor_sdk::Assignment;

use crate::group::{Group, NO_MEMBER};

/// The builders' answer (`owners[partition]` = member position, or `NO_MEMBER`) as the
/// SDK's [`Assignment`]: each member's partitions, topic by topic.
pub fn assignment(group: &Group<'_>, owners: &[u32]) -> Assignment {
    let members = group.member_count();
    let mut start = vec![0u32; members + 1];
    for &m in owners {
        if m != NO_MEMBER {
            start[m as usize + 1] += 1;
        }
    }
    for m in 0..members {
        start[m + 1] += start[m];
    }
    let mut next = start.clone();
    let mut by_member = vec![0u32; start[members] as usize];
    for (g, &m) in owners.iter().enumerate() {
        if m != NO_MEMBER {
            by_member[next[m as usize] as usize] = g as u32;
            next[m as usize] += 1;
        }
    }

    let mut assignment = Assignment::new(group.request());
    for m in 0..members as u32 {
        let member = group.member_position(m);
        let mut list = &by_member[start[m as usize] as usize..start[m as usize + 1] as usize];
        while let Some(&first) = list.first() {
            let t = group.topic_of(first);
            let (offset, end) = (group.offset(t), group.offset(t) + group.partition_count(t));
            let run = list.partition_point(|&g| g < end);
            assignment.assign_all_indexed(
                member,
                group.topic_position(t),
                list[..run].iter().map(|&g| (g - offset) as i32),
            );
            list = &list[run..];
        }
    }
    assignment
}
