//! Hostile modules, one per way a module can misbehave, each written as inline WAT. Every test
//! asserts the specific error, then runs a good module on the same sandbox to show the
//! failure left nothing behind.

use assignor_host::sandbox::{CallError, CallTag, LoadError, OutputError, Sandbox};
use assignor_sdk::{AssignResponse, LogLevel};

use crate::sandbox_support::*;

const TAG: CallTag<'static> = CallTag {
    module: "hostile",
    version: 1,
};

/// Loads a module that must load, and runs it on the test group.
fn run(sandbox: &Sandbox, wat: &str) -> Result<AssignResponse, CallError> {
    let module = sandbox.load(&wasm(wat)).expect("module loads");
    sandbox
        .assign(&module, TAG, &request(), false)
        .map(|outcome| outcome.answer.to_response(&request()))
        .map_err(|failure| failure.error)
}

/// The same sandbox still runs a good module and gets its exact answer.
fn assert_still_works(sandbox: &Sandbox) {
    let good = returning_response(&valid_response());
    assert_eq!(run(sandbox, &good), Ok(valid_response()));
}

#[test]
fn endless_loop_is_stopped_by_fuel() {
    let sandbox = sandbox_with(|l| l.fuel = 5_000_000);
    let module = sandbox
        .load(&wasm(&assigning("(loop $spin (br $spin)) (i64.const 0)")))
        .unwrap();
    let failure = sandbox.assign(&module, TAG, &request(), false).unwrap_err();
    assert_eq!(failure.error, CallError::OutOfFuel { budget: 5_000_000 });
    assert_eq!(
        failure.stats.fuel_used, 5_000_000,
        "stopped exactly at the budget"
    );
    assert_still_works(&sandbox);
}

#[test]
fn endless_loop_with_unbounded_fuel_hits_the_wall_clock_deadline() {
    let sandbox = sandbox_with(|l| {
        l.fuel = u64::MAX / 2;
        l.timeout = std::time::Duration::from_millis(30);
    });
    let result = run(
        &sandbox,
        &assigning("(loop $spin (br $spin)) (i64.const 0)"),
    );
    assert_eq!(result, Err(CallError::Timeout { deadline_ms: 30 }));
    assert_still_works(&sandbox);
}

#[test]
fn memory_grow_bomb_hits_the_memory_cap() {
    let sandbox = sandbox_with(|l| l.memory_bytes = 4 << 20);
    // Grow one page at a time until refused, then trap as a Rust guest's allocator would.
    let bomb = assigning(
        "(block $refused (loop $grow
           (br_if $refused (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
           (br $grow)))
         unreachable",
    );
    let module = sandbox.load(&wasm(&bomb)).unwrap();
    let failure = sandbox.assign(&module, TAG, &request(), false).unwrap_err();
    assert_eq!(
        failure.error,
        CallError::MemoryCap {
            cap_bytes: 4 << 20,
            requested_bytes: (4 << 20) + (64 << 10),
        }
    );
    assert_eq!(failure.stats.peak_memory_bytes, 4 << 20);
    assert_still_works(&sandbox);
}

#[test]
fn unreachable_is_a_trap_with_the_wasm_backtrace() {
    let sandbox = sandbox();
    match run(&sandbox, &assigning("unreachable")) {
        Err(CallError::Trap {
            trap,
            backtrace,
            guest_message,
        }) => {
            assert!(trap.contains("unreachable"), "{trap}");
            assert!(
                backtrace.contains("assign"),
                "backtrace names the function: {backtrace}"
            );
            assert_eq!(guest_message, None);
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_still_works(&sandbox);
}

#[test]
fn a_trap_carries_the_last_error_the_module_logged() {
    let sandbox = sandbox();
    let wat = importing(
        r#"(import "assignor" "log" (func $log (param i32 i32 i32)))"#,
        1,
        r#"(data (i32.const 0) "panicked at src/lib.rs:3: no members")
  (func (export "assignor_assign") (param i32 i32) (result i64)
    (call $log (i32.const 1) (i32.const 0) (i32.const 36))
    unreachable)"#,
    );
    let module = sandbox.load(&wasm(&wat)).unwrap();
    let failure = sandbox.assign(&module, TAG, &request(), false).unwrap_err();
    match &failure.error {
        CallError::Trap { guest_message, .. } => assert_eq!(
            guest_message.as_deref(),
            Some("panicked at src/lib.rs:3: no members")
        ),
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_eq!(failure.logs.len(), 1);
    assert_eq!(failure.logs[0].level, LogLevel::Error);
    assert_still_works(&sandbox);
}

#[test]
fn missing_export_is_refused_at_load() {
    let sandbox = sandbox();
    let err = sandbox.load(&wasm(&abi_module(1, ""))).err().unwrap();
    assert_eq!(
        err,
        LoadError::MissingExport {
            name: "assignor_assign"
        }
    );
    assert_still_works(&sandbox);
}

#[test]
fn webassembly_text_is_refused_with_how_to_get_the_binary() {
    let sandbox = sandbox();
    let text = returning_response(&valid_response());
    // The same module assembled loads; its text does not, however it starts.
    assert!(sandbox.load(&wasm(&text)).is_ok());
    for variant in [
        text.clone(),
        format!("\n\t {text}"),
        format!(";; strategy\n{text}"),
        format!("(; block ;) {text}"),
        format!("\u{feff}{text}"),
    ] {
        let error = sandbox.load(variant.as_bytes()).err();
        assert_eq!(error, Some(LoadError::Text), "{variant:.40}");
        assert!(matches!(
            sandbox.compile(variant.as_bytes()),
            Err(LoadError::Text)
        ));
    }
    let message = LoadError::Text.to_string();
    assert!(
        message.starts_with("this is WebAssembly text (WAT); upload the binary .wasm")
            && message.contains("wat2wasm")
            && message.contains("wasm-tools parse"),
        "{message}"
    );
    // Other non-wasm bytes are the compiler's to describe (a bad magic header).
    match sandbox.load(b"MZ\x90\0 not a module") {
        Err(LoadError::Compile { message }) => assert!(message.contains("magic"), "{message}"),
        other => panic!("expected a compile error, got {:?}", other.err()),
    }
    assert_still_works(&sandbox);
}

#[test]
fn export_with_the_wrong_signature_is_refused_at_load() {
    let sandbox = sandbox();
    let wat = abi_module(
        1,
        r#"(func (export "assignor_assign") (param i32 i32) (result i32) (i32.const 0))"#,
    );
    match sandbox.load(&wasm(&wat)) {
        Err(LoadError::WrongExportType {
            name: "assignor_assign",
            expected,
            found,
        }) => {
            assert_eq!(expected, "a function (i32, i32) -> i64");
            assert!(found.contains("i32"), "{found}");
        }
        other => panic!("expected WrongExportType, got {:?}", other.err()),
    }
    assert_still_works(&sandbox);
}

#[test]
fn wrong_abi_version_is_refused_at_load() {
    let sandbox = sandbox();
    for version in [0, 3, -1] {
        let wat = abi_module(
            version,
            r#"(func (export "assignor_assign") (param i32 i32) (result i64) (i64.const 0))"#,
        );
        assert_eq!(
            sandbox.load(&wasm(&wat)).err(),
            Some(LoadError::AbiVersion { found: version })
        );
    }
    assert_still_works(&sandbox);
}

#[test]
fn wasi_import_is_refused_and_named() {
    let sandbox = sandbox();
    let wat = returning(b"").replace(
        "(module",
        r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))"#,
    );
    let err = sandbox.load(&wasm(&wat)).err().unwrap();
    assert_eq!(
        err,
        LoadError::ForbiddenImport {
            module: "wasi_snapshot_preview1".into(),
            name: "fd_write".into(),
            kind: "function".into(),
        }
    );
    assert!(
        err.to_string()
            .contains("`wasi_snapshot_preview1.fd_write`")
    );
    assert_still_works(&sandbox);
}

#[test]
fn foreign_import_is_refused_and_named() {
    let sandbox = sandbox();
    let wat = returning(b"").replace(
        "(module",
        r#"(module (import "env" "now_ms" (func (result i64)))"#,
    );
    assert_eq!(
        sandbox.load(&wasm(&wat)).err(),
        Some(LoadError::ForbiddenImport {
            module: "env".into(),
            name: "now_ms".into(),
            kind: "function".into(),
        })
    );
    assert_still_works(&sandbox);
}

#[test]
fn log_import_with_the_wrong_signature_is_refused() {
    let sandbox = sandbox();
    let wat = returning(b"").replace(
        "(module",
        r#"(module (import "assignor" "log" (func (param i32 i32)))"#,
    );
    match sandbox.load(&wasm(&wat)) {
        Err(LoadError::WrongImportSignature { found }) => {
            assert!(found.contains("i32"), "{found}")
        }
        other => panic!("expected WrongImportSignature, got {:?}", other.err()),
    }
    assert_still_works(&sandbox);
}

#[test]
fn memory_that_starts_over_the_cap_is_refused_at_load() {
    let sandbox = sandbox_with(|l| l.memory_bytes = 1 << 20);
    let wat = returning(b"").replace(
        r#"(memory (export "memory") 1)"#,
        r#"(memory (export "memory") 32)"#,
    );
    assert_eq!(
        sandbox.load(&wasm(&wat)).err(),
        Some(LoadError::MemoryTooLarge {
            minimum_bytes: 2 << 20,
            cap_bytes: 1 << 20
        })
    );
    assert_still_works(&sandbox);
}

#[test]
fn garbage_output_is_malformed_messagepack() {
    let sandbox = sandbox();
    // 0xc1 is the one byte MessagePack never uses.
    match run(&sandbox, &returning(b"\xc1garbage")) {
        Err(CallError::Malformed { what, .. }) => assert_eq!(what, "AssignResponse"),
        other => panic!("expected Malformed, got {other:?}"),
    }
    assert_still_works(&sandbox);
}

#[test]
fn output_over_the_cap_is_refused() {
    let sandbox = sandbox_with(|l| l.max_output_bytes = 1024);
    // Claims 4096 bytes at address 0: inside memory, over the cap.
    let wat = assigning("(i64.const 4096)");
    assert_eq!(
        run(&sandbox, &wat),
        Err(CallError::OutputTooLarge {
            bytes: 4096,
            cap: 1024
        })
    );
    assert_still_works(&sandbox);
}

#[test]
fn output_pointer_outside_memory_is_refused() {
    let sandbox = sandbox();
    // (16 MiB << 32) | 10: a region far past the module's memory.
    let wat = assigning(&format!("(i64.const {})", (16u64 << 20 << 32) | 10));
    match run(&sandbox, &wat) {
        Err(CallError::BadPointer {
            export, ptr, len, ..
        }) => {
            assert_eq!((export, ptr, len), ("assignor_assign", 16 << 20, 10));
        }
        other => panic!("expected BadPointer, got {other:?}"),
    }
    assert_still_works(&sandbox);
}

#[test]
fn alloc_returning_a_pointer_outside_memory_is_refused() {
    let sandbox = sandbox();
    let wat = returning(b"").replace("(i32.const 65536))", "(i32.const -16))");
    match run(&sandbox, &wat) {
        Err(CallError::BadPointer { export, .. }) => assert_eq!(export, "assignor_alloc"),
        other => panic!("expected BadPointer, got {other:?}"),
    }
    assert_still_works(&sandbox);
}

#[test]
fn input_over_the_cap_is_refused_before_the_guest_runs() {
    let sandbox = sandbox_with(|l| l.max_input_bytes = 16);
    match run(&sandbox, &returning_response(&valid_response())) {
        Err(CallError::InputTooLarge { bytes, cap: 16 }) => assert!(bytes > 16),
        other => panic!("expected InputTooLarge, got {other:?}"),
    }
    assert_still_works(&crate::sandbox_support::sandbox());
}

#[test]
fn guest_error_is_reported_with_its_message() {
    let sandbox = sandbox();
    let response = AssignResponse {
        error: Some("no member subscribes to anything".into()),
        ..valid_response()
    };
    assert_eq!(
        run(&sandbox, &returning_response(&response)),
        Err(CallError::Guest {
            message: "no member subscribes to anything".into()
        })
    );
    assert_still_works(&sandbox);
}

#[test]
fn partition_assigned_twice_names_both_members() {
    let sandbox = sandbox();
    let mut response = valid_response();
    response.assignments[1] = give("m2", vec![tp("a", &[0, 1, 2])]);
    assert_eq!(
        run(&sandbox, &returning_response(&response)),
        Err(CallError::Invalid(OutputError::AssignedTwice {
            topic: "a".into(),
            partition: 0,
            first: "m1".into(),
            second: "m2".into(),
        }))
    );
    assert_still_works(&sandbox);
}

#[test]
fn unknown_member_is_refused() {
    let sandbox = sandbox();
    let mut response = valid_response();
    response.assignments.push(give("ghost", vec![]));
    assert_eq!(
        run(&sandbox, &returning_response(&response)),
        Err(CallError::Invalid(OutputError::UnknownMember {
            member: "ghost".into()
        }))
    );
    assert_still_works(&sandbox);
}

#[test]
fn unsubscribed_topic_is_refused() {
    let sandbox = sandbox();
    let mut response = valid_response();
    response.assignments[2] = give("m3", vec![tp("b", &[1]), tp("a", &[])]);
    assert_eq!(
        run(&sandbox, &returning_response(&response)),
        Err(CallError::Invalid(OutputError::NotSubscribed {
            member: "m3".into(),
            topic: "a".into()
        }))
    );
    assert_still_works(&sandbox);
}

#[test]
fn unknown_topic_is_refused() {
    let sandbox = sandbox();
    let mut response = valid_response();
    response.assignments[0].partitions.push(tp("zzz", &[0]));
    assert_eq!(
        run(&sandbox, &returning_response(&response)),
        Err(CallError::Invalid(OutputError::UnknownTopic {
            member: "m1".into(),
            topic: "zzz".into()
        }))
    );
    assert_still_works(&sandbox);
}

#[test]
fn partition_out_of_range_is_refused() {
    let sandbox = sandbox();
    let mut response = valid_response();
    response.assignments[2] = give("m3", vec![tp("b", &[1, 2])]);
    assert_eq!(
        run(&sandbox, &returning_response(&response)),
        Err(CallError::Invalid(OutputError::PartitionOutOfRange {
            member: "m3".into(),
            topic: "b".into(),
            partition: 2,
            partition_count: 2,
        }))
    );
    assert_still_works(&sandbox);
}

#[test]
fn a_builtin_on_the_bump_allocator_past_the_memory_cap_ends_in_memory_cap() {
    // Built-in range uses the SDK's bump allocator; when the cap refuses its growth it must end
    // like any allocator's refusal: a memory-cap error, the sandbox usable afterwards.
    let sandbox = sandbox_with(|l| l.memory_bytes = 2 << 20);
    let wasm = assignor_host::builtins::builtin("range")
        .expect("built-in range")
        .wasm;
    let module = sandbox.load(wasm).unwrap();
    let names: Vec<String> = (0..20).map(|t| format!("t{t:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut group = request();
    // 20,000 members: about 0.5 MB of request, and several MiB once decoded.
    group.members = (0..20_000)
        .map(|i| member(&format!("member-{i:05}"), &names))
        .collect();
    group.topics = names.iter().map(|t| topic(t, 100)).collect();
    let failure = sandbox.assign(&module, TAG, &group, false).unwrap_err();
    assert!(
        matches!(failure.error, CallError::MemoryCap { cap_bytes, .. } if cap_bytes == 2 << 20),
        "expected the memory cap, got {:?}",
        failure.error
    );
    assert_still_works(&sandbox);
}
