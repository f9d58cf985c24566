//! Bench-only exports (feature `probes`, never in the built-in module): the parts of a call,
//! so the `uniform` bench can time each of them inside the sandbox. Each takes the same input
//! as `assignor_assign` and returns a number derived from its work so nothing is optimised
//! away; the bench subtracts their times from one another.
//!
//! - `probe_decode(ptr, len)`: decode the `AssignRequest` only (ABI v2, else v1's serde form);
//! - `probe_index(ptr, len)`: decode and index the group ([`Group::new`]);
//! - `probe_owners(ptr, len)`: decode, index and run the builder (no `Assignment`);
//! - `probe_assignment(ptr, len)`: all of the above and the SDK `Assignment`, not encoded.

use assignor_sdk::AssignRequest;

use crate::group::Group;

fn input<'a>(ptr: i32, len: i32) -> &'a [u8] {
    // SAFETY: the host wrote `len` bytes at `ptr`, a buffer it got from `assignor_alloc`, and
    // the instance is dropped after the call.
    unsafe { core::slice::from_raw_parts(ptr as usize as *const u8, len as usize) }
}

/// An ABI v2 request (what the built-in is served), else any serde form of the model (the
/// bench's table of other encodings).
fn decode(ptr: i32, len: i32) -> Option<AssignRequest> {
    let bytes = input(ptr, len);
    assignor_sdk::abi::v2::decode_request(bytes)
        .ok()
        .or_else(|| assignor_sdk::decode::<AssignRequest>(bytes).ok())
}

#[unsafe(no_mangle)]
pub extern "C" fn probe_decode(ptr: i32, len: i32) -> i64 {
    decode(ptr, len).map_or(-1, |r| r.members.len() as i64)
}

#[unsafe(no_mangle)]
pub extern "C" fn probe_index(ptr: i32, len: i32) -> i64 {
    let Some(request) = decode(ptr, len) else {
        return -1;
    };
    Group::new(&request).map_or(-2, |g| g.total_partitions() as i64)
}

#[unsafe(no_mangle)]
pub extern "C" fn probe_owners(ptr: i32, len: i32) -> i64 {
    let Some(request) = decode(ptr, len) else {
        return -1;
    };
    let Ok(group) = Group::new(&request) else {
        return -2;
    };
    crate::owners(&group).map_or(-3, |o| o.iter().filter(|&&m| m != 0).count() as i64)
}

#[unsafe(no_mangle)]
pub extern "C" fn probe_assignment(ptr: i32, len: i32) -> i64 {
    let Some(request) = decode(ptr, len) else {
        return -1;
    };
    let Ok(group) = Group::new(&request) else {
        return -2;
    };
    let Ok(owners) = crate::owners(&group) else {
        return -3;
    };
    let assignment = crate::assignment(&group, &owners);
    assignment.member_ids().count() as i64
}
