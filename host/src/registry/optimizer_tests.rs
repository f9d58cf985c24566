//! Uploads served by baseline code, then by their optimised code: the swap, the cache and a
//! restart, a version deleted while it is compiled, a failed optimising compile, and the
//! modules Winch cannot take. The worker is held with its gate while a test looks at the
//! baseline state, so nothing depends on timing.

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use assignor_sdk::AssignResponse;

use super::Optimization;
use crate::registry::{Checked, Registry, RegistryConfig, UploadError, UploadOptions};
use crate::sandbox::{Sandbox, Tier};
use crate::store::Store;

fn sandbox() -> Sandbox {
    Sandbox::shared_default()
}

/// A registry without built-ins; with a store and a precompiled cache in `dir` if given.
fn registry(dir: Option<&Path>) -> Registry {
    let config = RegistryConfig {
        builtins: Vec::new(),
        cache_dir: dir.map(|d| d.join("cache")),
        ..RegistryConfig::default()
    };
    let store = dir.map(|d| Store::open(d).expect("store"));
    Registry::open(sandbox(), store, config).expect("registry")
}

fn builtin(name: &str) -> &'static [u8] {
    crate::builtins::builtin(name).expect("built-in").wasm
}

/// The artifacts in `dir`'s cache.
fn cached(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("cache")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn an_upload_is_served_by_baseline_code_then_by_its_optimised_code() {
    let registry = registry(None);
    let request = crate::registry::smoke_request("spread");
    let hold = registry.optimizer.hold();
    let outcome = registry
        .upload("spread", builtin("range"), UploadOptions::default())
        .unwrap();
    assert!(outcome.active && outcome.created);
    let version = registry.resolve("spread", None).unwrap();
    assert_eq!(version.compiled().tier(), Tier::Baseline);
    assert_eq!(
        registry.optimization("spread", 1),
        Some(Optimization::Pending)
    );
    let first = registry.run("spread", None, &request, false).unwrap();

    drop(hold);
    registry.finish_optimizing();
    let same = registry.resolve("spread", None).unwrap();
    assert!(
        Arc::ptr_eq(&version, &same),
        "the same version, health and all"
    );
    assert_eq!(version.compiled().tier(), Tier::Optimized);
    assert_eq!(registry.optimization("spread", 1), Some(Optimization::Done));
    let second = registry.run("spread", None, &request, false).unwrap();
    assert_eq!((first.version, second.version), (1, 1));
    assert_eq!(first.answer, second.answer);
    assert_eq!(first.stats.fuel_used, second.stats.fuel_used);
    let status = registry.status("spread").unwrap();
    assert_eq!(
        status.versions[0].health.successes, 2,
        "one health for both tiers"
    );
}

#[test]
fn only_optimised_code_is_cached_and_a_restart_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let registry = registry(Some(dir.path()));
        let hold = registry.optimizer.hold();
        registry
            .upload("spread", builtin("range"), UploadOptions::default())
            .unwrap();
        assert_eq!(cached(dir.path()), Vec::<String>::new(), "no baseline code");
        drop(hold);
        // Dropped with its optimising compile queued: the drop finishes it.
    }
    assert_eq!(cached(dir.path()).len(), 1, "{:?}", cached(dir.path()));
    let registry = registry(Some(dir.path()));
    let version = registry.resolve("spread", None).unwrap();
    assert!(version.meta.precompiled, "read from the cache");
    assert_eq!(version.compiled().tier(), Tier::Optimized);
    assert_eq!(registry.optimization("spread", 1), Some(Optimization::Done));
}

#[test]
fn a_version_deleted_while_it_is_optimised_leaves_no_cached_code() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(Some(dir.path()));
    let hold = registry.optimizer.hold();
    registry
        .upload("spread", builtin("range"), UploadOptions::default())
        .unwrap();
    registry.delete("spread").unwrap();
    drop(hold);
    registry.finish_optimizing();
    assert_eq!(cached(dir.path()), Vec::<String>::new());
    assert_eq!(registry.optimization("spread", 1), None);
}

/// `open` with `serve_first` (the server's start): a built-in missing from the cache is served
/// by baseline code at once, optimised in the background like an upload, cached when optimised,
/// and read from the cache as optimised code by the next start.
#[test]
fn a_first_start_serves_built_ins_on_baseline_code_then_caches_their_optimised_code() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let config = RegistryConfig {
            builtins: crate::registry::BuiltinSource::embedded()
                .into_iter()
                .filter(|b| b.name == "range")
                .collect(),
            cache_dir: Some(dir.path().join("cache")),
            serve_first: true,
            ..RegistryConfig::default()
        };
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let registry = tracing::subscriber::with_default(subscriber, || {
            Registry::open(sandbox(), None, config).expect("registry")
        });
        let log = String::from_utf8(log.0.lock().clone()).unwrap();
        let restored = log
            .lines()
            .find(|l| l.contains("module registry restored"))
            .unwrap_or_else(|| panic!("the restore is logged: {log}"))
            .to_owned();
        (registry, restored)
    };
    let request = crate::registry::smoke_request("range");

    let (registry, restored) = open();
    assert!(
        restored.contains("baseline=1") && restored.contains("precompiled=0"),
        "served by baseline code: {restored}"
    );
    let first = registry.run("range", None, &request, false).unwrap();
    registry.finish_optimizing();
    let version = registry.resolve("range", None).unwrap();
    assert_eq!(version.compiled().tier(), Tier::Optimized);
    assert_eq!(registry.optimization("range", 0), Some(Optimization::Done));
    assert_eq!(cached(dir.path()).len(), 1, "{:?}", cached(dir.path()));
    let second = registry.run("range", None, &request, false).unwrap();
    assert_eq!(first.answer, second.answer);
    assert_eq!(first.stats.fuel_used, second.stats.fuel_used);
    drop(registry);

    let (registry, restored) = open();
    assert!(
        restored.contains("baseline=0") && restored.contains("precompiled=1"),
        "read from the cache: {restored}"
    );
    let version = registry.resolve("range", None).unwrap();
    assert!(version.meta.precompiled);
    assert_eq!(version.compiled().tier(), Tier::Optimized);
}

/// Log output, for a test's own subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_optimising_compile_leaves_the_version_serving_baseline_code() {
    let registry = registry(None);
    let Checked::New(prepared) = registry.prepare("spread", builtin("range"), None).unwrap() else {
        panic!("new bytes");
    };
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    // The optimiser is handed other bytes than the module's: Cranelift's module describes
    // itself otherwise, so it is refused, as any failure of the optimising compile would be.
    // Its worker starts under this test's subscriber, and logs to it.
    tracing::subscriber::with_default(subscriber, || {
        let _writer = registry.writer.lock();
        let other = builtin("roundrobin");
        registry
            .commit("spread", 1, *prepared, other, 0, true)
            .unwrap();
    });
    registry.finish_optimizing();
    let log = String::from_utf8(log.0.lock().clone()).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("optimising compile failed"))
        .unwrap_or_else(|| panic!("the failure is logged: {log}"));
    assert!(
        line.contains("ERROR") && line.contains("module=\"spread\"") && line.contains("version=1"),
        "{line}"
    );
    match registry.optimization("spread", 1) {
        Some(Optimization::Failed(reason)) => {
            assert!(reason.contains("assignor_describe"), "{reason}")
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    let version = registry.resolve("spread", None).unwrap();
    assert_eq!(version.compiled().tier(), Tier::Baseline);
    let request = crate::registry::smoke_request("spread");
    registry
        .run("spread", None, &request, false)
        .expect("baseline code goes on serving");
}

/// A module answering an empty assignment through a tail call, which Winch does not compile.
fn tail_calling() -> Vec<u8> {
    let response = AssignResponse {
        error: None,
        assignments: Vec::new(),
        rebalance_after_ms: None,
        state: None,
    };
    let bytes = assignor_sdk::encode(&response).expect("encode");
    let data: String = bytes.iter().map(|b| format!("\\{b:02x}")).collect();
    wat::parse_str(format!(
        r#"(module
  (memory (export "memory") 2)
  (data (i32.const 0) "{data}")
  (func (export "assignor_abi_version") (result i32) (i32.const 1))
  (func (export "assignor_alloc") (param i32) (result i32) (i32.const 65536))
  (func $answer (result i64) (i64.const {len}))
  (func (export "assignor_assign") (param i32 i32) (result i64) (return_call $answer)))"#,
        len = bytes.len()
    ))
    .expect("WAT")
}

/// A module answering an empty assignment after recursing 6,000 calls deep through a function
/// with 40 unused locals: Winch's frames overflow the stack there, Cranelift's do not.
fn recursing_deep() -> Vec<u8> {
    let response = AssignResponse::default();
    let bytes = assignor_sdk::encode(&response).expect("encode");
    let data: String = bytes.iter().map(|b| format!("\\{b:02x}")).collect();
    let locals = "(local i64)".repeat(40);
    wat::parse_str(format!(
        r#"(module
  (memory (export "memory") 2)
  (data (i32.const 0) "{data}")
  (func (export "assignor_abi_version") (result i32) (i32.const 1))
  (func (export "assignor_alloc") (param i32) (result i32) (i32.const 65536))
  (func $deep (param $n i32) (result i32) {locals}
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (call $deep (i32.sub (local.get $n) (i32.const 1))))))
  (func (export "assignor_assign") (param i32 i32) (result i64)
    (drop (call $deep (i32.const 6000)))
    (i64.const {len})))"#,
        len = bytes.len()
    ))
    .expect("WAT")
}

#[test]
fn a_module_whose_smoke_call_fails_on_baseline_code_only_is_judged_on_cranelifts() {
    let registry = registry(None);
    let _hold = registry.optimizer.hold();
    let outcome = registry
        .upload("deep", &recursing_deep(), UploadOptions::default())
        .expect("Cranelift's code passes the smoke call");
    assert!(outcome.active);
    let version = registry.resolve("deep", None).unwrap();
    assert_eq!(version.compiled().tier(), Tier::Optimized);
    assert_eq!(registry.optimization("deep", 1), Some(Optimization::Done));
}

#[test]
fn a_module_winch_cannot_compile_is_uploaded_with_cranelift() {
    let registry = registry(None);
    let _hold = registry.optimizer.hold();
    let outcome = registry
        .upload("tail", &tail_calling(), UploadOptions::default())
        .unwrap();
    assert!(outcome.active);
    let version = registry.resolve("tail", None).unwrap();
    assert_eq!(
        version.compiled().tier(),
        Tier::Optimized,
        "nothing to swap later"
    );
    assert_eq!(registry.optimization("tail", 1), Some(Optimization::Done));
}

#[test]
fn a_refused_upload_changes_nothing_and_caches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry(Some(dir.path()));
    // A module that traps on every call fails the smoke call.
    let bad = wat::parse_str(
        r#"(module
  (memory (export "memory") 2)
  (func (export "assignor_abi_version") (result i32) (i32.const 1))
  (func (export "assignor_alloc") (param i32) (result i32) (i32.const 65536))
  (func (export "assignor_assign") (param i32 i32) (result i64) (unreachable)))"#,
    )
    .unwrap();
    let refused = registry.upload("spread", &bad, UploadOptions::default());
    assert!(matches!(refused, Err(UploadError::Smoke(_))), "{refused:?}");
    registry.finish_optimizing();
    assert!(registry.list().is_empty());
    assert_eq!(registry.optimization("spread", 1), None);
    assert_eq!(cached(dir.path()), Vec::<String>::new());
}
