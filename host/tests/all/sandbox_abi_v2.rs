//! ABI v2 beside v1, with hand-written modules (inline WAT, no SDK, from docs/abi.md alone):
//! the sandbox tells a module's version at load and encodes each call for it, the registry
//! uploads and lists v2 modules, and the output checks refuse a v2 answer's faults, the
//! index faults v2 adds and the faults v1 has, each with its own typed error.

use assignor_host::registry::{Registry, RegistryConfig, UploadOptions};
use assignor_host::sandbox::{CallError, CallTag, OutputError};
use assignor_sdk::abi::v2::{self, Extras, Layout};

use crate::sandbox_support::*;

const TAG: CallTag<'static> = CallTag {
    module: "v2-test",
    version: 1,
};

/// A v2 `TopicPartitions`.
fn tp2(topic: u32, partitions: &[i32]) -> v2::TopicPartitions {
    v2::TopicPartitions {
        topic,
        partitions: partitions.to_vec(),
    }
}

/// A v2 `MemberAssignment` of the member at index `member`.
fn give2(member: u32, partitions: Vec<v2::TopicPartitions>) -> v2::MemberAssignment {
    v2::MemberAssignment {
        member,
        partitions,
        ..v2::MemberAssignment::default()
    }
}

/// [`valid_response`] in v2: members m1, m2, m3 are indices 0, 1, 2; topics a, b are 0, 1.
fn valid_v2() -> v2::Response {
    v2::Response {
        error: None,
        assignments: vec![
            give2(0, vec![tp2(0, &[0]), tp2(1, &[0])]),
            give2(1, vec![tp2(0, &[1, 2])]),
            give2(2, vec![tp2(1, &[1])]),
        ],
        rebalance_after_ms: None,
        state: None,
    }
}

/// A v2 module (`assignor_abi_version` 2) whose `assignor_assign` answers `answer` if the
/// request starts as docs/abi.md says a v2 request does (an array of 12 items, `9c`, whose
/// first item is 2), and an `error` answer otherwise.
fn v2_module(answer: &v2::Response) -> String {
    let answer = v2::encode(answer).unwrap();
    let refusal = v2::encode(&v2::Response {
        error: Some("not an ABI v2 request".into()),
        ..v2::Response::default()
    })
    .unwrap();
    let at = 4096;
    abi_module(
        2,
        &format!(
            r#"(data (i32.const 0) "{answer_data}")
  (data (i32.const {at}) "{refusal_data}")
  (func (export "assignor_assign") (param $ptr i32) (param $len i32) (result i64)
    (if (result i64)
      (i32.and
        (i32.eq (i32.load8_u (local.get $ptr)) (i32.const 0x9c))
        (i32.eq (i32.load8_u offset=1 (local.get $ptr)) (i32.const 0x02)))
      (then (i64.const {answer_len}))
      (else (i64.const {refusal_region}))))"#,
            answer_data = data_string(&answer),
            refusal_data = data_string(&refusal),
            answer_len = answer.len(),
            refusal_region = ((at as u64) << 32) | refusal.len() as u64,
        ),
    )
}

#[test]
fn v1_and_v2_modules_are_served_side_by_side_each_in_its_own_encoding() {
    let sandbox = sandbox();
    let v1 = sandbox
        .load(&wasm(&returning_response(&valid_response())))
        .unwrap();
    let v2_module = sandbox.load(&wasm(&v2_module(&valid_v2()))).unwrap();
    assert_eq!((v1.abi_version(), v2_module.abi_version()), (1, 2));

    let request = request();
    let from_v1 = sandbox.assign(&v1, TAG, &request, false).unwrap();
    let from_v2 = sandbox.assign(&v2_module, TAG, &request, false).unwrap();
    assert_eq!(from_v1.answer.to_response(&request), valid_response());
    assert_eq!(
        from_v2.answer.to_response(&request),
        valid_response(),
        "the v2 answer reads, in names, as the v1 one"
    );
    assert_eq!(from_v2.summary, from_v1.summary);

    let v2_bytes = v2::encode_request(&request, &Layout::new(&request).unwrap(), Extras::default())
        .unwrap()
        .len() as u64;
    assert_eq!(from_v2.stats.input_bytes, v2_bytes, "the v2 module got v2");
    let v1_bytes = assignor_sdk::encode(&request).unwrap().len() as u64;
    assert_eq!(from_v1.stats.input_bytes, v1_bytes, "the v1 module got v1");
}

#[test]
fn a_v2_module_uploads_and_is_listed_with_its_abi_version() {
    let config = RegistryConfig {
        builtins: vec![],
        ..RegistryConfig::default()
    };
    let registry = Registry::open(sandbox(), None, config).expect("registry");
    // Nothing assigned passes the smoke call's output checks whatever the synthetic group.
    let nothing = v2::Response::default();
    registry
        .upload(
            "hand-v2",
            &wasm(&v2_module(&nothing)),
            UploadOptions::default(),
        )
        .expect("a v2 module passes every upload check");
    let versions = registry.versions("hand-v2").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].meta.abi_version, 2);
    let report = registry.run("hand-v2", None, &request(), false).unwrap();
    assert!(report.answer.entries().is_empty());
    assert_eq!(report.unassigned_partitions, 5);
}

/// The failure of a v2 module answering `answer` to [`request`].
fn v2_failure(answer: &v2::Response) -> CallError {
    let sandbox = sandbox();
    let module = sandbox.load(&wasm(&v2_module(answer))).unwrap();
    sandbox
        .assign(&module, TAG, &request(), false)
        .expect_err("the answer is refused")
        .error
}

#[test]
fn a_member_index_outside_the_request_is_refused() {
    let mut answer = valid_v2();
    answer.assignments.push(give2(3, vec![]));
    assert_eq!(
        v2_failure(&answer),
        CallError::Invalid(OutputError::MemberIndexOutOfRange {
            index: 3,
            members: 3
        })
    );
}

#[test]
fn a_topic_index_outside_the_request_is_refused() {
    let mut answer = valid_v2();
    answer.assignments[0].partitions.push(tp2(2, &[0]));
    assert_eq!(
        v2_failure(&answer),
        CallError::Invalid(OutputError::TopicIndexOutOfRange {
            member: "m1".into(),
            index: 2,
            topics: 2
        })
    );
}

#[test]
fn v1_faults_are_refused_in_v2_with_the_same_errors() {
    // Each fault as v1 spells it and as v2 does; the host refuses both with the same error.
    let mut twice_v1 = valid_response();
    twice_v1.assignments.push(give("m3", vec![]));
    let mut twice_v2 = valid_v2();
    twice_v2.assignments.push(give2(2, vec![]));

    let mut unsubscribed_v1 = valid_response();
    unsubscribed_v1.assignments[1]
        .partitions
        .push(tp("b", &[1]));
    unsubscribed_v1.assignments[2].partitions.clear();
    let mut unsubscribed_v2 = valid_v2();
    unsubscribed_v2.assignments[1].partitions.push(tp2(1, &[1]));
    unsubscribed_v2.assignments[2].partitions.clear();

    let mut out_of_range_v1 = valid_response();
    out_of_range_v1.assignments[1].partitions[0]
        .partitions
        .push(3);
    let mut out_of_range_v2 = valid_v2();
    out_of_range_v2.assignments[1].partitions[0]
        .partitions
        .push(3);

    let mut given_twice_v1 = valid_response();
    given_twice_v1.assignments[1].partitions[0]
        .partitions
        .push(0);
    let mut given_twice_v2 = valid_v2();
    given_twice_v2.assignments[1].partitions[0]
        .partitions
        .push(0);

    let sandbox = sandbox();
    let cases = [
        ("a member answered twice", twice_v1, twice_v2),
        ("an unsubscribed topic", unsubscribed_v1, unsubscribed_v2),
        ("a partition out of range", out_of_range_v1, out_of_range_v2),
        ("a partition given twice", given_twice_v1, given_twice_v2),
    ];
    for (fault, as_v1, as_v2) in cases {
        let v1 = sandbox.load(&wasm(&returning_response(&as_v1))).unwrap();
        let v1_error = sandbox
            .assign(&v1, TAG, &request(), false)
            .expect_err(fault)
            .error;
        assert!(
            matches!(v1_error, CallError::Invalid(_)),
            "{fault}: v1 {v1_error:?}"
        );
        assert_eq!(v2_failure(&as_v2), v1_error, "{fault}");
    }
}

#[test]
fn a_v2_error_answer_fails_the_call_with_its_message() {
    let answer = v2::Response {
        error: Some("cannot assign this group".into()),
        ..v2::Response::default()
    };
    match v2_failure(&answer) {
        CallError::Guest { message } => assert_eq!(message, "cannot assign this group"),
        other => panic!("expected the guest's error, got {other:?}"),
    }
}

/// A v2 answer whose `state` is one byte over the 4 MiB the host keeps is refused with its own
/// error. The module writes only the header: `[nil, [], nil, bin32 of 4 MiB + 1]`, the bytes
/// themselves being the zeroed memory after it.
#[test]
fn a_state_over_the_cap_is_refused() {
    let len = assignor_sdk::MAX_STATE_BYTES as u32 + 1;
    let mut header = vec![0x94, 0xc0, 0x90, 0xc0, 0xc6];
    header.extend_from_slice(&len.to_be_bytes());
    let module = abi_module(
        2,
        &format!(
            r#"(data (i32.const 0) "{header}")
  (func (export "assignor_assign") (param $ptr i32) (param $len i32) (result i64)
    (drop (memory.grow (i32.const 80)))
    (i64.const {total}))"#,
            header = data_string(&header),
            total = header.len() as u64 + u64::from(len),
        ),
    );
    let sandbox = sandbox();
    let module = sandbox.load(&wasm(&module)).unwrap();
    let failure = sandbox
        .assign(&module, TAG, &request(), false)
        .expect_err("the answer is refused");
    assert_eq!(
        failure.error,
        CallError::Invalid(OutputError::StateTooLarge {
            bytes: len as usize,
            max: assignor_sdk::MAX_STATE_BYTES,
        })
    );
    assert!(
        failure
            .error
            .to_string()
            .contains("keeps at most 4194304 bytes per group"),
        "{}",
        failure.error
    );
}
