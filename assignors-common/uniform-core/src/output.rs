//! Turns the builders' owner array into the SDK's [`Assignment`]: every stretch of partitions
//! of one topic with one owner, in partition order, in one call each.
//!
//! When the owners, read partition after partition, come in request order (a first assignment
//! of a homogeneous group: each member takes the next stretch of partitions), that is already
//! the answer's order and the SDK writes the answer straight from it; otherwise the SDK puts
//! the stretches in order itself, once, when it writes the answer.

use assignor_sdk::Assignment;

use crate::group::{Group, NO_MEMBER};

/// The builders' answer (`owners[partition]` = member position, or `NO_MEMBER`) as the
/// SDK's [`Assignment`].
pub fn assignment(group: &Group<'_>, owners: &[u32]) -> Assignment {
    let mut assignment = Assignment::new(group.request());
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
    assignment
}
