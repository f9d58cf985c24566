//! An [`Assignment`]'s ABI v2 answer, written byte by byte from its plan.
//!
//! The bytes are exactly rmp-serde's encoding of the `abi::v2::Response` the plan describes
//! (the same markers, the smallest integer forms, `bin` for bytes), so the host's readers
//! treat them as any other canonical answer; `tests` checks that re-encoding the decoded
//! answer gives the same bytes. Written directly because this is the largest thing a module
//! writes: 100,000 partitions are 100,000 integers, and serde's per-value calls cost several
//! times the bytes themselves inside wasm.

use super::{Assignment, Plan};

/// The v2 answer: `[nil, [[member, [[topic, [partition...]]...], user_data, metadata]...],
/// rebalance_after_ms, state]`, members as in `order`, `state` only when there is one.
pub(super) fn write_v2(assignment: &Assignment, order: &[u32], plan: &Plan) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity(assignment, plan.groups.len()));
    let user_data = by_slot(&assignment.user_data);
    let metadata = by_slot(&assignment.metadata);
    array(&mut out, if assignment.state.is_some() { 4 } else { 3 });
    out.push(NIL);
    array(&mut out, order.len());
    for (place, &slot) in order.iter().enumerate() {
        array(&mut out, 4);
        uint(&mut out, u64::from(slot));
        let groups = plan.groups_of(place);
        array(&mut out, groups.len());
        for g in groups {
            array(&mut out, 2);
            uint(&mut out, u64::from(g.topic));
            partitions(&mut out, assignment.planned(plan, g));
        }
        bytes(&mut out, find(&user_data, slot));
        bytes(&mut out, find(&metadata, slot));
    }
    match assignment.rebalance_after_ms {
        Some(ms) => uint(&mut out, ms),
        None => out.push(NIL),
    }
    if let Some(state) = &assignment.state {
        bytes(&mut out, Some(state));
    }
    out
}

/// [`write_v2`] for an assignment whose runs are already in answer order (see
/// `Assignment::in_order`): every member of the request in order, its runs as they are, no
/// plan and no copy of the partitions.
pub(super) fn write_v2_in_order(assignment: &Assignment) -> Vec<u8> {
    let members = assignment.id_ends.len();
    let mut out = Vec::with_capacity(capacity(assignment, assignment.runs.len()));
    let user_data = by_slot(&assignment.user_data);
    let metadata = by_slot(&assignment.metadata);
    array(&mut out, if assignment.state.is_some() { 4 } else { 3 });
    out.push(NIL);
    array(&mut out, members);
    let mut runs = assignment.runs.as_slice();
    for slot in 0..members as u32 {
        let count = runs.iter().take_while(|r| r.member == slot).count();
        let (mine, rest) = runs.split_at(count);
        runs = rest;
        array(&mut out, 4);
        uint(&mut out, u64::from(slot));
        array(&mut out, mine.len());
        for run in mine {
            array(&mut out, 2);
            uint(&mut out, u64::from(run.topic));
            partitions(&mut out, assignment.run(run));
        }
        bytes(&mut out, find(&user_data, slot));
        bytes(&mut out, find(&metadata, slot));
    }
    match assignment.rebalance_after_ms {
        Some(ms) => uint(&mut out, ms),
        None => out.push(NIL),
    }
    if let Some(state) = &assignment.state {
        bytes(&mut out, Some(state));
    }
    out
}

/// Room for the answer, so it is written without growing: per member about a dozen bytes
/// (headers, index, nils), per (member, topic) group up to eight, per partition up to three
/// (a partition below 65,536); user data, metadata and state as they are.
fn capacity(assignment: &Assignment, groups: usize) -> usize {
    let bytes = |list: &[(u32, Vec<u8>)]| list.iter().map(|(_, b)| b.len() + 5).sum::<usize>();
    16 + assignment.id_ends.len() * 12
        + groups * 8
        + assignment.partitions.len() * 3
        + bytes(&assignment.user_data)
        + bytes(&assignment.metadata)
        + assignment.state.as_ref().map_or(0, |s| s.len() + 5)
}

const NIL: u8 = 0xc0;

/// A list of partition numbers, each in rmp's smallest form (rmp's `write_sint` picks the
/// same markers: positive fixint, then `uint 8`, then `uint 16`), the common widths inline
/// and room made once for the list: this loop writes every partition of the answer.
#[inline(always)]
fn partitions(out: &mut Vec<u8>, list: &[i32]) {
    array(out, list.len());
    out.reserve(list.len() * 3);
    for &p in list {
        match p {
            0..=127 => out.push(p as u8),
            128..=255 => out.extend_from_slice(&[0xcc, p as u8]),
            256..=65535 => out.extend_from_slice(&[0xcd, (p >> 8) as u8, p as u8]),
            _ => sint(out, i64::from(p)),
        }
    }
}

// Writing into a `Vec` cannot fail, so rmp's `io::Error`s are never there to ignore. The
// one-byte forms (fixarray, positive fixint) are written inline: they are nearly every array
// and index of an answer.
#[inline(always)]
fn array(out: &mut Vec<u8>, len: usize) {
    if len < 16 {
        out.push(0x90 | len as u8);
    } else {
        let _ = rmp::encode::write_array_len(out, len as u32);
    }
}

#[inline(always)]
fn uint(out: &mut Vec<u8>, v: u64) {
    if v < 128 {
        out.push(v as u8);
    } else {
        let _ = rmp::encode::write_uint(out, v);
    }
}

fn sint(out: &mut Vec<u8>, v: i64) {
    let _ = rmp::encode::write_sint(out, v);
}

#[inline(always)]
fn bytes(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(b) => {
            let _ = rmp::encode::write_bin(out, b);
        }
        None => out.push(NIL),
    }
}

/// Per-member bytes sorted by slot, so each member's lookup is a binary search (a strategy
/// may set user data for every member of a large group).
fn by_slot(list: &[(u32, Vec<u8>)]) -> Vec<(u32, &[u8])> {
    let mut sorted: Vec<(u32, &[u8])> = list.iter().map(|(s, b)| (*s, b.as_slice())).collect();
    sorted.sort_by_key(|&(s, _)| s);
    sorted
}

fn find<'a>(sorted: &[(u32, &'a [u8])], slot: u32) -> Option<&'a [u8]> {
    sorted
        .binary_search_by_key(&slot, |&(s, _)| s)
        .ok()
        .map(|i| sorted[i].1)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::Assignment;
    use crate::abi::v2;
    use crate::abi::{AssignRequest, Member, Topic};

    fn request(members: usize, partitions: i32) -> AssignRequest {
        let topics: Arc<[String]> = vec!["a".to_owned(), "b".to_owned()].into();
        AssignRequest {
            members: (0..members)
                .map(|i| Member {
                    member_id: format!("m{i:03}"),
                    topics: topics.clone(),
                    ..Member::default()
                })
                .collect(),
            topics: ["a", "b"]
                .iter()
                .map(|n| Topic {
                    name: (*n).into(),
                    partition_count: partitions,
                    partition_racks: Vec::new(),
                })
                .collect(),
            ..AssignRequest::default()
        }
    }

    /// The written bytes are canonical: decoding them with rmp-serde and encoding the result
    /// again gives the same bytes. Partition numbers and counts cross every integer width.
    #[test]
    fn the_answer_is_rmp_serdes_encoding() {
        for (members, partitions) in [(0, 0), (1, 1), (3, 200), (40, 70_000)] {
            let request = request(members, partitions);
            let mut a = Assignment::new(&request);
            for p in 0..partitions {
                let m = (p as usize * 7) % members.max(1);
                a.assign_indexed(m, (p % 2) as usize, p);
            }
            if members > 1 {
                a.set_user_data("m001", vec![1; 300]);
                a.set_metadata("m000", vec![2; 70_000]);
                a.rebalance_after_ms(u64::from(u32::MAX) + 1);
                a.set_state(vec![3; members * 1000]);
            }
            let bytes = a.to_v2_bytes().unwrap();
            let decoded: v2::Response = v2::decode(&bytes).unwrap();
            assert_eq!(decoded.assignments.len(), members);
            assert_eq!(
                v2::encode(&decoded).unwrap(),
                bytes,
                "{members} x {partitions}"
            );
        }
    }

    /// Runs given in answer order are written straight from the runs; given in any other
    /// order they go through the plan. Both give the same bytes for the same assignment.
    #[test]
    fn in_order_and_planned_answers_are_the_same_bytes() {
        let request = request(5, 9);
        let mut pairs: Vec<(usize, usize, i32)> = Vec::new();
        for p in 0..9 {
            pairs.push(((p as usize * 3) % 5, 0, p));
            pairs.push(((p as usize * 2) % 5, 1, p));
        }
        let build = |order: &[(usize, usize, i32)]| {
            let mut a = Assignment::new(&request);
            for &(m, t, p) in order {
                a.assign_indexed(m, t, p);
            }
            a.set_user_data("m003", vec![4, 2]);
            a
        };
        let mut sorted = pairs.clone();
        sorted.sort();
        let in_order = build(&sorted);
        assert!(in_order.in_order, "sorted pairs keep the answer order");
        let shuffled = build(&pairs);
        assert!(!shuffled.in_order);
        assert_eq!(
            in_order.to_v2_bytes().unwrap(),
            shuffled.to_v2_bytes().unwrap()
        );
        // A run extended with a lower partition is out of order.
        let mut late = Assignment::new(&request);
        late.assign_all_indexed(0, 0, [3, 4]);
        late.assign_indexed(0, 0, 1);
        assert!(!late.in_order);
        let mut early = Assignment::new(&request);
        early.assign_all_indexed(0, 0, [1, 3, 4]);
        assert_eq!(late.to_v2_bytes().unwrap(), early.to_v2_bytes().unwrap());
    }
}
