//! A module's answer, as the sandbox reads it, against a small group: ABI v1 (named fields,
//! rmp-serde) or ABI v2 (positions), eager or cooperative, picked by the first byte.
//!
//! Whatever a hostile module returns: no panic, no allocation by a count its bytes cannot
//! hold, and an answer the checks pass accounts for every partition exactly once (assigned
//! plus unassigned is the group's partition count). For v2 the two readers must agree: when
//! the fast reader (`read_response`, positions, checked by `check_positioned`) takes an
//! answer, rmp-serde reads the same answer from it, its indices are in range, and the checks
//! by name on its model give the same verdict; this is the promise `host/src/sandbox/wire.rs`
//! relies on.
#![no_main]

use std::sync::Arc;

use assignor_fuzz::{PARTITIONS, group as request};
use assignor_sdk::abi::v2;
use assignor_sdk::{Answer, AssignRequest, AssignResponse};
use assignor_wire::checks::{CheckSummary, check_indices, check_positioned, check_response};
use libfuzzer_sys::fuzz_target;

fn accounts_for_every_partition(verdict: &Result<CheckSummary, impl std::fmt::Debug>) {
    if let Ok(summary) = verdict {
        assert_eq!(
            summary.assigned_partitions + summary.unassigned_partitions,
            PARTITIONS
        );
    }
}

/// The host's rmp-serde path for a v2 answer, with the verdict of the checks by name on the
/// answer's model: rmp-serde, indices, positions, names, the checks.
fn by_names(
    request: &AssignRequest,
    bytes: &[u8],
    cooperative: bool,
) -> Option<(
    Answer,
    Result<CheckSummary, assignor_wire::checks::OutputError>,
)> {
    let response = v2::decode_response(bytes).ok()?;
    if response.error.is_some() {
        return None;
    }
    if let Err(e) = check_indices(request, &response) {
        return Some((Answer::default(), Err(e)));
    }
    let answer = v2::response_to_answer(response);
    let verdict = check_response(request, &answer.to_response(request), cooperative);
    Some((answer, verdict))
}

fuzz_target!(|data: &[u8]| {
    let [mode, bytes @ ..] = data else {
        return;
    };
    let cooperative = mode & 1 == 1;
    let request = request(cooperative);
    if mode & 2 == 0 {
        if let Ok(response) = assignor_sdk::decode::<AssignResponse>(bytes)
            && response.error.is_none()
        {
            accounts_for_every_partition(&check_response(&request, &response, cooperative));
        }
        return;
    }
    let layout = Arc::new(v2::Layout::new(&request).expect("the fixed request lays out"));
    let slow = by_names(&request, bytes, cooperative);
    if let Some((_, verdict)) = &slow {
        accounts_for_every_partition(verdict);
    }
    if let Some(read) = v2::read_response(&request, bytes) {
        let fast = check_positioned(&request, &read, &layout, cooperative);
        accounts_for_every_partition(&fast);
        let (answer, verdict) = slow.expect("rmp-serde reads what the fast reader read");
        assert_eq!(answer, read, "both readers build the same answer");
        assert_eq!(verdict, fast, "both checks decide the same way");
    }
});
