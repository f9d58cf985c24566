//! What survives and what heals: a restart restores versions and active pointers from the
//! store and code from the precompiled cache (a corrupt cache file is recompiled), and a
//! version that keeps failing is quarantined with backoff, then recovers (fake clock).

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use assignor_host::registry::{
    BuiltinSource, ManualClock, Registry, RegistryConfig, RunErrorKind, UploadOptions, sha256_hex,
};
use assignor_host::sandbox::CallError;
use assignor_host::store::Store;

use crate::sandbox_support::*;

fn open(dir: &Path, builtins: Vec<BuiltinSource>) -> Registry {
    let store = Store::open(dir).expect("store");
    let config = RegistryConfig {
        builtins,
        cache_dir: Some(dir.join("cache")),
        ..RegistryConfig::default()
    };
    Registry::open(sandbox(), Some(store), config).expect("registry")
}

fn builtin(name: &str, wasm: Vec<u8>) -> BuiltinSource {
    BuiltinSource {
        name: name.to_owned(),
        wasm: Cow::Owned(wasm),
    }
}

fn marker(registry: &Registry, name: &str) -> (u32, u64) {
    let report = registry.run(name, None, &request(), false).expect("runs");
    (report.version, report.answer.rebalance_after_ms.unwrap())
}

fn precompiled(registry: &Registry, name: &str) -> Vec<(u32, bool)> {
    registry
        .versions(name)
        .unwrap()
        .iter()
        .map(|v| (v.version, v.meta.precompiled))
        .collect()
}

#[test]
fn a_restart_restores_versions_active_pointers_and_precompiled_code() {
    let dir = tempfile::tempdir().unwrap();
    {
        let registry = open(dir.path(), vec![builtin("range", marked(100))]);
        for (name, m) in [("spread", 1), ("spread", 2), ("spread", 3), ("range", 4)] {
            registry
                .upload(name, &marked(m), UploadOptions::default())
                .unwrap();
        }
        registry.activate("spread", 2).unwrap();
        registry.delete_version("spread", 3).unwrap();
        registry.rollback("range").unwrap();
        assert_eq!(
            precompiled(&registry, "spread"),
            [(1, false), (2, false)],
            "compiled in this process"
        );
    }

    let registry = open(dir.path(), vec![builtin("range", marked(100))]);
    assert!(registry.load_problems().is_empty());
    assert_eq!(
        marker(&registry, "spread"),
        (2, 2),
        "active pointer restored"
    );
    assert_eq!(
        marker(&registry, "range"),
        (0, 100),
        "rollback to the built-in restored"
    );
    assert_eq!(
        precompiled(&registry, "spread"),
        [(1, true), (2, true)],
        "read from the precompiled cache, not compiled"
    );
    assert_eq!(precompiled(&registry, "range"), [(0, true), (1, true)]);
    let meta = &registry.versions("spread").unwrap()[0].meta;
    assert_eq!(meta.sha256, sha256_hex(&marked(1)));
    // Deleted versions stay deleted and their numbers stay used.
    let next = registry
        .upload("spread", &marked(5), UploadOptions::default())
        .unwrap();
    assert_eq!(next.version, 4);
}

#[test]
fn a_corrupt_cache_file_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    {
        let registry = open(dir.path(), vec![]);
        registry
            .upload("spread", &marked(1), UploadOptions::default())
            .unwrap();
    }
    let sha = sha256_hex(&marked(1));
    let cached: Vec<_> = std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&sha))
        .collect();
    assert_eq!(cached.len(), 1, "one artifact for the module: {cached:?}");
    let mut bytes = std::fs::read(&cached[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&cached[0], &bytes).unwrap();

    {
        let registry = open(dir.path(), vec![]);
        assert_eq!(precompiled(&registry, "spread"), [(1, false)], "recompiled");
        assert_eq!(marker(&registry, "spread"), (1, 1));
    }
    let registry = open(dir.path(), vec![]);
    assert_eq!(
        precompiled(&registry, "spread"),
        [(1, true)],
        "the recompiled artifact was written back"
    );
}

#[test]
fn deleting_the_last_version_of_some_wasm_removes_its_cache_file() {
    let dir = tempfile::tempdir().unwrap();
    let registry = open(dir.path(), vec![]);
    registry
        .upload("a", &marked(1), UploadOptions::default())
        .unwrap();
    registry
        .upload("b", &marked(1), UploadOptions::default())
        .unwrap();
    // Uploads serve baseline code first; the optimised artifact is cached when it is in.
    registry.finish_optimizing();
    let artifacts = || std::fs::read_dir(dir.path().join("cache")).unwrap().count();
    assert_eq!(artifacts(), 1, "same bytes, one artifact");
    registry.delete("a").unwrap();
    assert_eq!(artifacts(), 1, "still used by `b`");
    registry.delete("b").unwrap();
    assert_eq!(artifacts(), 0);
}

/// Fails on the test group (input under 1000 bytes) and succeeds on bigger input (the smoke
/// group, or the test group padded with a parameter), so it passes upload and then misbehaves.
fn fails_on_small_groups() -> Vec<u8> {
    let empty = assignor_sdk::encode(&assignor_sdk::AssignResponse::default()).unwrap();
    wasm(&abi_module(
        1,
        &format!(
            r#"(data (i32.const 0) "{}")
  (func (export "assignor_assign") (param $ptr i32) (param $len i32) (result i64)
    (if (i32.lt_u (local.get $len) (i32.const 1000)) (then unreachable))
    (i64.const {}))"#,
            data_string(&empty),
            empty.len()
        ),
    ))
}

#[test]
fn a_failing_version_is_quarantined_with_backoff_and_recovers() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let config = RegistryConfig {
        builtins: vec![],
        clock: clock.clone(),
        ..RegistryConfig::default()
    };
    let registry = Registry::open(sandbox(), None, config).unwrap();
    registry
        .upload("flaky", &fails_on_small_groups(), UploadOptions::default())
        .unwrap();
    let small = request();
    assert!(assignor_sdk::encode(&small).unwrap().len() < 1000);
    let mut big = request();
    big.params.insert("padding".into(), "x".repeat(1000));
    let run = |req| registry.run("flaky", None, req, false).map_err(|e| e.kind);
    let is_trap =
        |r: Result<_, RunErrorKind>| matches!(r, Err(RunErrorKind::Call(CallError::Trap { .. })));

    for _ in 0..3 {
        assert!(is_trap(run(&small)));
    }
    match run(&big) {
        Err(RunErrorKind::Quarantined {
            until_ms,
            last_error,
        }) => {
            assert_eq!(until_ms, 1_001_000, "first quarantine: 1 s");
            assert!(last_error.contains("unreachable"), "{last_error}");
        }
        other => panic!("expected Quarantined, got {other:?}"),
    }
    let status = registry.status("flaky").unwrap();
    let health = &status.versions[0].health;
    assert_eq!(
        (health.calls, health.failures, health.consecutive_failures),
        (3, 3, 3)
    );
    assert_eq!(health.quarantined_until_ms, Some(1_001_000));
    assert_eq!(health.recent_failures.len(), 3);
    assert_eq!(health.recent_failures[0].group, "g");
    assert_eq!(health.recent_failures[0].generation, 7);
    assert_eq!(health.recent_failures[0].reason, "trap");
    assert!(registry.list()[0].quarantined);

    // The backoff expires; the probe fails; the next quarantine is twice as long.
    clock.advance(Duration::from_secs(1));
    assert!(is_trap(run(&small)));
    assert!(matches!(
        run(&big),
        Err(RunErrorKind::Quarantined {
            until_ms: 1_003_000,
            ..
        })
    ));

    // The backoff expires; the probe succeeds; everything is cleared.
    clock.advance(Duration::from_secs(2));
    assert!(run(&big).is_ok());
    let health = &registry.status("flaky").unwrap().versions[0].health;
    assert_eq!(health.consecutive_failures, 0);
    assert_eq!(health.quarantined_until_ms, None);
    assert_eq!(health.successes, 1);
    assert_eq!(health.failures_by_reason["trap"], 4);
    // One failure after a success is not a quarantine.
    assert!(is_trap(run(&small)));
    assert!(run(&big).is_ok());
}

#[test]
fn host_side_failures_do_not_quarantine_a_module() {
    let clock = Arc::new(ManualClock::new(0));
    let config = RegistryConfig {
        builtins: vec![],
        clock,
        ..RegistryConfig::default()
    };
    // Room for the smoke group (about 1.3 KB), not for the padded group.
    let sandbox = sandbox_with(|l| l.max_input_bytes = 2_000);
    let registry = Registry::open(sandbox, None, config).unwrap();
    registry
        .upload("spread", &marked(1), UploadOptions::default())
        .unwrap();
    let mut big = request();
    big.params.insert("padding".into(), "x".repeat(2_000));
    for _ in 0..5 {
        let err = registry.run("spread", None, &big, false).unwrap_err();
        assert!(matches!(
            err.kind,
            RunErrorKind::Call(CallError::InputTooLarge { .. })
        ));
    }
    assert!(registry.run("spread", None, &request(), false).is_ok());
    let health = &registry.status("spread").unwrap().versions[0].health;
    assert_eq!((health.failures, health.quarantined_until_ms), (5, None));
}
