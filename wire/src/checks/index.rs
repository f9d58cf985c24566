//! Lookups the checks share: a member's position in the request by id, a topic's position by
//! name.

use std::collections::HashMap;

use assignor_sdk::{AssignRequest, Member};

/// Topic name -> index in `request.topics`.
pub(super) fn topic_index(request: &AssignRequest) -> HashMap<&str, usize> {
    request
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect()
}

/// Member id -> index in `request.members`. The host sends members sorted, so this is a binary
/// search; a hash map covers a request built by hand in any order.
pub(super) enum MemberIndex<'a> {
    Sorted(&'a [Member]),
    Hashed(HashMap<&'a str, usize>),
}

impl<'a> MemberIndex<'a> {
    pub(super) fn new(members: &'a [Member]) -> MemberIndex<'a> {
        if members.is_sorted_by(|a, b| a.member_id < b.member_id) {
            MemberIndex::Sorted(members)
        } else {
            MemberIndex::Hashed(
                members
                    .iter()
                    .enumerate()
                    .map(|(i, m)| (m.member_id.as_str(), i))
                    .collect(),
            )
        }
    }

    pub(super) fn find(&self, id: &str) -> Option<usize> {
        match self {
            MemberIndex::Sorted(members) => members
                .binary_search_by(|m| m.member_id.as_str().cmp(id))
                .ok(),
            MemberIndex::Hashed(map) => map.get(id).copied(),
        }
    }
}
