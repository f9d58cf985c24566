//! Well-behaved calls: what a call reports (stats, logs, describe info, unassigned partitions),
//! the cooperative safety rule, the log budget, and concurrent calls beyond the pool size.

use assignor_host::sandbox::{
    CallError, CallTag, LoadError, OutputError, PoolConfig, Sandbox, SandboxLimits, check_response,
};
use assignor_sdk::{AssignResponse, AssignorInfo, LogLevel, RebalanceProtocol};

use crate::sandbox_support::*;

const TAG: CallTag<'static> = CallTag {
    module: "test",
    version: 3,
};

#[test]
fn a_call_reports_its_stats_and_the_exact_response() {
    let sandbox = sandbox();
    let module = sandbox
        .load(&wasm(&returning_response(&valid_response())))
        .unwrap();
    let outcome = sandbox.assign(&module, TAG, &request(), false).unwrap();
    assert_eq!(outcome.answer.to_response(&request()), valid_response());
    let expected_output = assignor_sdk::encode(&valid_response()).unwrap().len() as u64;
    let expected_input = assignor_sdk::encode(&request()).unwrap().len() as u64;
    assert_eq!(outcome.stats.output_bytes, expected_output);
    assert_eq!(outcome.stats.input_bytes, expected_input);
    // alloc grew memory from one page to two to hold the input at 65536.
    assert_eq!(outcome.stats.peak_memory_bytes, 2 << 16);
    assert!(outcome.stats.fuel_used > 0);
    assert_eq!(outcome.summary.assigned_partitions, 5);
    assert_eq!(outcome.summary.unassigned_partitions, 0);
}

#[test]
fn fuel_used_is_deterministic() {
    let sandbox = sandbox();
    let module = sandbox
        .load(&wasm(&returning_response(&valid_response())))
        .unwrap();
    let fuel: Vec<u64> = (0..5)
        .map(|_| {
            sandbox
                .assign(&module, TAG, &request(), false)
                .unwrap()
                .stats
                .fuel_used
        })
        .collect();
    assert!(fuel.windows(2).all(|w| w[0] == w[1]), "{fuel:?}");
}

#[test]
fn members_left_out_get_nothing_and_unassigned_partitions_are_counted() {
    let sandbox = sandbox();
    let response = AssignResponse {
        assignments: vec![give("m2", vec![tp("a", &[2])])],
        ..AssignResponse::default()
    };
    let module = sandbox.load(&wasm(&returning_response(&response))).unwrap();
    let outcome = sandbox.assign(&module, TAG, &request(), false).unwrap();
    assert_eq!(outcome.summary.assigned_partitions, 1);
    assert_eq!(outcome.summary.unassigned_partitions, 4);
}

#[test]
fn a_member_listed_twice_is_refused() {
    let mut response = valid_response();
    response.assignments.push(give("m3", vec![]));
    assert_eq!(
        check_response(&request(), &response, false),
        Err(OutputError::DuplicateMember {
            member: "m3".into()
        })
    );
}

/// `m2` still owns a-1 from the last generation; the module moves it to `m1`.
fn handover_request() -> assignor_sdk::AssignRequest {
    let mut request = request();
    request.members[1].owned_partitions = vec![tp("a", &[1, 2])];
    request.members[1].owned_generation = 6;
    request
}

fn moving_a1_to_m1() -> AssignResponse {
    AssignResponse {
        assignments: vec![
            give("m1", vec![tp("a", &[0, 1]), tp("b", &[0])]),
            give("m2", vec![tp("a", &[2])]),
            give("m3", vec![tp("b", &[1])]),
        ],
        ..AssignResponse::default()
    }
}

#[test]
fn cooperative_strategy_may_not_move_a_partition_its_owner_still_holds() {
    let sandbox = sandbox();
    let module = sandbox
        .load(&wasm(&returning_response(&moving_a1_to_m1())))
        .unwrap();
    let failure = sandbox
        .assign(&module, TAG, &handover_request(), true)
        .unwrap_err();
    assert_eq!(
        failure.error,
        CallError::Invalid(OutputError::StillOwned {
            topic: "a".into(),
            partition: 1,
            owner: "m2".into(),
            assignee: "m1".into(),
        })
    );
    // The same move is fine for an eager strategy (everyone revoked before joining).
    assert!(
        sandbox
            .assign(&module, TAG, &handover_request(), false)
            .is_ok()
    );
}

#[test]
fn cooperative_handover_in_two_steps_passes() {
    // Generation N: a-1 is left unassigned while m2 revokes it.
    let step_one = AssignResponse {
        assignments: vec![
            give("m1", vec![tp("a", &[0]), tp("b", &[0])]),
            give("m2", vec![tp("a", &[2])]),
            give("m3", vec![tp("b", &[1])]),
        ],
        ..AssignResponse::default()
    };
    let summary = check_response(&handover_request(), &step_one, true).unwrap();
    assert_eq!(summary.unassigned_partitions, 1);
    // Generation N+1: m2 no longer lists a-1, so it may go to m1.
    let mut next = handover_request();
    next.members[1].owned_partitions = vec![tp("a", &[2])];
    assert!(check_response(&next, &moving_a1_to_m1(), true).is_ok());
}

#[test]
fn a_stale_claim_from_an_older_generation_does_not_block_the_owner() {
    // m1 claims a-1 from generation 3, m2 from generation 6: m2 is the owner; m2 keeping it
    // is fine, and the check names m2 (not m1) when it moves.
    let mut request = handover_request();
    request.members[0].owned_partitions = vec![tp("a", &[1])];
    request.members[0].owned_generation = 3;
    let keep = valid_response();
    assert!(check_response(&request, &keep, true).is_ok());
    match check_response(&request, &moving_a1_to_m1(), true) {
        Err(OutputError::StillOwned { owner, .. }) => assert_eq!(owner, "m2"),
        other => panic!("expected StillOwned, got {other:?}"),
    }
}

#[test]
fn describe_info_is_read_at_load() {
    let sandbox = sandbox();
    let info = AssignorInfo {
        name: "sticky-test".into(),
        version: "1.2.3".into(),
        description: "keeps partitions".into(),
        rebalance_protocol: RebalanceProtocol::Cooperative,
        inputs: Vec::new(),
        in_place: false,
    };
    let bytes = assignor_sdk::encode(&info).unwrap();
    let wat = returning(b"").replace(
        "(data (i32.const 0) \"\")",
        &format!(
            r#"(data (i32.const 1024) "{}")
  (func (export "assignor_describe") (result i64) (i64.const {}))"#,
            data_string(&bytes),
            (1024u64 << 32) | bytes.len() as u64
        ),
    );
    let module = sandbox.load(&wasm(&wat)).unwrap();
    assert_eq!(module.info(), Some(&info));
}

#[test]
fn describe_returning_garbage_is_refused_at_load() {
    let sandbox = sandbox();
    let wat = returning(b"\xc1").replace(
        "(func (export \"assignor_assign\")",
        "(func (export \"assignor_describe\") (result i64) (i64.const 1))\n  (func (export \"assignor_assign\")",
    );
    match sandbox.load(&wasm(&wat)) {
        Err(LoadError::Call {
            step: "assignor_describe",
            error: CallError::Malformed { what, .. },
        }) => assert_eq!(what, "AssignorInfo"),
        other => panic!("expected a malformed describe, got {:?}", other.err()),
    }
}

/// A module that logs `count` lines of `len` bytes (the byte 'x') at info level, then answers.
fn chatty(count: u32, len: u32) -> String {
    let answer = assignor_sdk::encode(&valid_response()).unwrap();
    importing(
        r#"(import "assignor" "log" (func $log (param i32 i32 i32)))"#,
        1,
        &format!(
            r#"(data (i32.const 0) "{answer}")
  (func (export "assignor_assign") (param i32 i32) (result i64)
    (local $i i32)
    (memory.fill (i32.const 8192) (i32.const 120) (i32.const {len}))
    (block $done (loop $more
      (br_if $done (i32.ge_u (local.get $i) (i32.const {count})))
      (call $log (i32.const 3) (i32.const 8192) (i32.const {len}))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $more)))
    (i64.const {answer_len}))"#,
            answer = data_string(&answer),
            answer_len = answer.len(),
        ),
    )
}

#[test]
fn guest_logs_are_kept_truncated_and_bounded() {
    let sandbox = sandbox_with(|l| {
        l.max_log_lines = 3;
        l.max_log_line_bytes = 10;
    });
    let module = sandbox.load(&wasm(&chatty(5, 25))).unwrap();
    let outcome = sandbox.assign(&module, TAG, &request(), false).unwrap();
    assert_eq!(
        outcome.answer.to_response(&request()),
        valid_response(),
        "logging never fails a call"
    );
    assert_eq!(outcome.logs.len(), 3);
    for line in &outcome.logs {
        assert_eq!(line.level, LogLevel::Info);
        assert_eq!(line.message, "xxxxxxxxxx [truncated]");
    }
}

#[test]
fn guest_log_byte_budget_cuts_the_last_line() {
    let sandbox = sandbox_with(|l| {
        l.max_log_bytes = 25;
        l.max_log_line_bytes = 1024;
    });
    let module = sandbox.load(&wasm(&chatty(4, 10))).unwrap();
    let outcome = sandbox.assign(&module, TAG, &request(), false).unwrap();
    let kept: Vec<&str> = outcome.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(
        kept,
        ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx [truncated]"],
        "25 bytes kept, the fourth line dropped"
    );
}

#[test]
#[allow(clippy::result_large_err)]
fn calls_beyond_the_pool_size_wait_for_a_slot() {
    let sandbox = Sandbox::new(
        PoolConfig {
            max_instances: 2,
            ..PoolConfig::default()
        },
        SandboxLimits::default(),
    )
    .unwrap();
    let module = sandbox
        .load(&wasm(&returning_response(&valid_response())))
        .unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    (0..25)
                        .map(|_| sandbox.assign(&module, TAG, &request(), false))
                        .filter(|r| {
                            r.as_ref()
                                .is_ok_and(|o| o.answer.to_response(&request()) == valid_response())
                        })
                        .count()
                })
            })
            .collect();
        let ok: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(
            ok, 200,
            "every call got its own instance and the right answer"
        );
    });
}

#[test]
fn memory_cap_above_the_pool_is_a_configuration_error() {
    let limits = SandboxLimits {
        memory_bytes: 1 << 30,
        ..SandboxLimits::default()
    };
    assert!(matches!(
        sandbox().with_limits(limits),
        Err(assignor_host::sandbox::SandboxError::MemoryAbovePool { .. })
    ));
}
