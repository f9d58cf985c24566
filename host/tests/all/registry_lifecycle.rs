//! The registry's life cycle: upload, activate, roll back, delete; built-ins superseded and
//! restored; refused uploads changing nothing; aliases, pinned versions, the coordinator's
//! view. Modules are inline WAT that answer with a marker (`rebalance_after_ms`), so every
//! assertion says which module actually ran.

use std::borrow::Cow;

use assignor_host::registry::{
    BuiltinSource, Registry, RegistryConfig, RegistryError, RegistrySettings, RunErrorKind,
    UploadError, UploadOptions,
};
use assignor_host::sandbox::{CallError, LoadError, OutputError};
use assignor_sdk::{AssignorInfo, RebalanceProtocol};

use crate::sandbox_support::*;

fn registry_with(builtins: Vec<BuiltinSource>) -> Registry {
    let config = RegistryConfig {
        builtins,
        ..RegistryConfig::default()
    };
    Registry::open(sandbox(), None, config).expect("registry")
}

fn builtin(name: &str, wasm: Vec<u8>) -> BuiltinSource {
    BuiltinSource {
        name: name.to_owned(),
        wasm: Cow::Owned(wasm),
    }
}

/// Runs `name` on the test group: `(version, marker)` of what ran, or why not.
fn run(registry: &Registry, name: &str) -> Result<(u32, u64), RunErrorKind> {
    run_pinned(registry, name, None)
}

fn run_pinned(
    registry: &Registry,
    name: &str,
    pin: Option<u32>,
) -> Result<(u32, u64), RunErrorKind> {
    registry
        .run(name, pin, &request(), false)
        .map(|r| {
            (
                r.version,
                r.answer.rebalance_after_ms.expect("marked module"),
            )
        })
        .map_err(|e| e.kind)
}

fn upload(registry: &Registry, name: &str, wasm: &[u8]) -> u32 {
    registry
        .upload(name, wasm, UploadOptions::default())
        .expect("upload accepted")
        .version
}

#[test]
fn upload_activate_rollback_delete() {
    let registry = registry_with(vec![]);
    assert_eq!(run(&registry, "spread"), Err(RunErrorKind::NotFound));

    assert_eq!(upload(&registry, "spread", &marked(11)), 1);
    assert_eq!(run(&registry, "spread"), Ok((1, 11)));
    assert_eq!(upload(&registry, "spread", &marked(22)), 2);
    assert_eq!(run(&registry, "spread"), Ok((2, 22)), "an upload activates");

    assert_eq!(registry.rollback("spread").unwrap(), 1);
    assert_eq!(run(&registry, "spread"), Ok((1, 11)));
    registry.activate("spread", 2).unwrap();
    assert_eq!(run(&registry, "spread"), Ok((2, 22)));

    assert!(matches!(
        registry.delete_version("spread", 2),
        Err(RegistryError::ActiveVersion { version: 2, .. })
    ));
    assert!(matches!(
        registry.activate("spread", 9),
        Err(RegistryError::VersionNotFound { version: 9, .. })
    ));
    registry.rollback("spread").unwrap();
    registry.delete_version("spread", 2).unwrap();
    let versions: Vec<u32> = registry
        .versions("spread")
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(versions, [1]);
    assert!(matches!(
        registry.rollback("spread"),
        Err(RegistryError::NoPreviousVersion { version: 1, .. })
    ));

    // Numbers are never reused: the next upload is 3, not 2.
    assert_eq!(upload(&registry, "spread", &marked(33)), 3);
    let deleted = registry.delete("spread").unwrap();
    assert_eq!(deleted.removed_versions, [1, 3]);
    assert_eq!(deleted.active, None);
    assert_eq!(run(&registry, "spread"), Err(RunErrorKind::NotFound));
    assert!(registry.view().modules.is_empty());
}

#[test]
fn an_upload_supersedes_a_builtin_and_deleting_it_returns_to_the_builtin() {
    let registry = registry_with(vec![builtin("spread", marked(100))]);
    assert_eq!(
        run(&registry, "spread"),
        Ok((0, 100)),
        "the built-in is version 0"
    );

    assert_eq!(upload(&registry, "spread", &marked(1)), 1);
    assert_eq!(run(&registry, "spread"), Ok((1, 1)));
    assert_eq!(registry.rollback("spread").unwrap(), 0);
    assert_eq!(run(&registry, "spread"), Ok((0, 100)));
    registry.activate("spread", 1).unwrap();

    assert!(matches!(
        registry.delete_version("spread", 0),
        Err(RegistryError::Builtin { .. })
    ));
    let deleted = registry.delete("spread").unwrap();
    assert_eq!(
        (deleted.removed_versions, deleted.active),
        (vec![1], Some(0))
    );
    assert_eq!(run(&registry, "spread"), Ok((0, 100)));
    assert!(matches!(
        registry.delete("spread"),
        Err(RegistryError::Builtin { .. })
    ));
    let list = registry.list();
    assert_eq!(list.len(), 1);
    assert!(list[0].has_builtin);
    assert_eq!(list[0].versions, [0]);
}

#[test]
fn refused_uploads_leave_the_active_version_unchanged() {
    let config = RegistryConfig {
        builtins: vec![],
        settings: RegistrySettings {
            max_module_bytes: 64 << 10,
            ..RegistrySettings::default()
        },
        ..RegistryConfig::default()
    };
    let registry = Registry::open(sandbox(), None, config).unwrap();
    upload(&registry, "spread", &marked(7));
    let view = registry.view();

    let up = |wasm: &[u8]| registry.upload("spread", wasm, UploadOptions::default());
    let unchanged = |what: &str| {
        assert_eq!(run(&registry, "spread"), Ok((1, 7)), "after {what}");
        assert_eq!(registry.view(), view, "after {what}");
        assert_eq!(
            registry.versions("spread").unwrap().len(),
            1,
            "after {what}"
        );
    };

    match up(&vec![0u8; 65 << 10]) {
        Err(UploadError::TooLarge { bytes, cap }) => assert_eq!((bytes, cap), (65 << 10, 64 << 10)),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    unchanged("a module over the size cap");

    let options = UploadOptions {
        expected_sha256: Some("00".repeat(32)),
        activate: true,
    };
    match registry.upload("spread", &marked(8), options) {
        Err(UploadError::Sha256Mismatch { actual, .. }) => {
            assert_eq!(actual, assignor_host::registry::sha256_hex(&marked(8)))
        }
        other => panic!("expected Sha256Mismatch, got {other:?}"),
    }
    unchanged("a sha256 mismatch");

    assert!(matches!(
        up(b"\0asm\x01\0\0\0garbage"),
        Err(UploadError::Load(LoadError::Compile { .. }))
    ));
    unchanged("bytes that do not compile");

    // The text of a module that would pass every check once assembled.
    let text = marked_text(8);
    assert!(wasm(&text).starts_with(b"\0asm"), "the text assembles");
    match up(text.as_bytes()) {
        Err(UploadError::Load(LoadError::Text)) => {}
        other => panic!("expected WebAssembly text to be refused, got {other:?}"),
    }
    let message = up(format!("\u{feff}\n  ;; a comment\n{text}").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("WebAssembly text (WAT)") && message.contains("binary .wasm"),
        "{message}"
    );
    unchanged("WebAssembly text");

    let wasi = returning(b"").replace(
        "(module",
        r#"(module (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))"#,
    );
    let err = up(&wasm(&wasi)).unwrap_err();
    assert!(
        err.to_string()
            .contains("`wasi_snapshot_preview1.fd_write`"),
        "names the import: {err}"
    );
    unchanged("a WASI import");

    assert!(matches!(
        up(&wasm(&abi_module(1, ""))),
        Err(UploadError::Load(LoadError::MissingExport {
            name: "assignor_assign"
        }))
    ));
    unchanged("a missing export");

    let v3 = abi_module(
        3,
        r#"(func (export "assignor_assign") (param i32 i32) (result i64) (i64.const 0))"#,
    );
    assert!(matches!(
        up(&wasm(&v3)),
        Err(UploadError::Load(LoadError::AbiVersion { found: 3 }))
    ));
    unchanged("ABI version 3");

    assert!(matches!(
        up(&wasm(&returning(b"\xc1"))),
        Err(UploadError::Smoke(CallError::Malformed { .. }))
    ));
    unchanged("a smoke call answering garbage");

    let mut bad = valid_response();
    bad.assignments.truncate(1);
    match up(&wasm(&returning_response(&bad))) {
        Err(UploadError::Smoke(CallError::Invalid(OutputError::UnknownMember { member }))) => {
            assert_eq!(member, "m1")
        }
        other => panic!("expected an invalid smoke answer, got {other:?}"),
    }
    unchanged("a smoke call naming members that do not exist");

    assert!(matches!(
        up(&wasm(&assigning("unreachable"))),
        Err(UploadError::Smoke(CallError::Trap { .. }))
    ));
    unchanged("a smoke call that traps");

    assert!(matches!(
        registry.upload("no spaces", &marked(9), UploadOptions::default()),
        Err(UploadError::InvalidName { .. })
    ));
    // A URL path resolves these segments away, so the module could never be shown or
    // deleted again; Kafka refuses them as topic names for the same reason.
    for dots in [".", ".."] {
        match registry.upload(dots, &marked(9), UploadOptions::default()) {
            Err(UploadError::InvalidName { name, reason }) => {
                assert_eq!(name, dots);
                assert!(reason.contains("URL"), "{reason}");
            }
            other => panic!("expected {dots:?} to be refused as a name, got {other:?}"),
        }
    }
    assert!(matches!(
        registry.upload("RoundRobinAssigner", &marked(9), UploadOptions::default()),
        Err(UploadError::AliasName {
            canonical: "roundrobin",
            ..
        })
    ));
    unchanged("invalid names");
    let inner = registry.upload("v1..2", &marked(9), UploadOptions::default());
    assert!(inner.is_ok(), "dots inside a name stay allowed: {inner:?}");
    assert_eq!(registry.versions("v1..2").unwrap().len(), 1);
}

#[test]
fn a_smoke_call_that_never_finishes_is_stopped_by_fuel() {
    let sandbox = sandbox_with(|l| l.fuel = 2_000_000);
    let config = RegistryConfig {
        builtins: vec![],
        ..RegistryConfig::default()
    };
    let registry = Registry::open(sandbox, None, config).unwrap();
    let spin = assigning("(loop $spin (br $spin)) (i64.const 0)");
    assert!(matches!(
        registry.upload("spin", &wasm(&spin), UploadOptions::default()),
        Err(UploadError::Smoke(CallError::OutOfFuel {
            budget: 2_000_000
        }))
    ));
    assert!(registry.list().is_empty());
}

#[test]
fn uploading_the_same_bytes_again_reuses_the_version() {
    let registry = registry_with(vec![]);
    upload(&registry, "spread", &marked(1));
    upload(&registry, "spread", &marked(2));
    let again = registry
        .upload("spread", &marked(1), UploadOptions::default())
        .unwrap();
    assert_eq!(
        (again.version, again.created, again.active),
        (1, false, true)
    );
    assert_eq!(run(&registry, "spread"), Ok((1, 1)));
    assert_eq!(registry.versions("spread").unwrap().len(), 2);
}

#[test]
fn an_upload_without_activation_is_kept_but_not_run() {
    let registry = registry_with(vec![]);
    upload(&registry, "spread", &marked(1));
    let options = UploadOptions {
        activate: false,
        ..UploadOptions::default()
    };
    let staged = registry.upload("spread", &marked(2), options).unwrap();
    assert_eq!((staged.version, staged.active), (2, false));
    assert_eq!(run(&registry, "spread"), Ok((1, 1)));
    assert_eq!(run_pinned(&registry, "spread", Some(2)), Ok((2, 2)));
}

#[test]
fn a_pinned_version_runs_that_version() {
    let registry = registry_with(vec![]);
    upload(&registry, "spread", &marked(1));
    upload(&registry, "spread", &marked(2));
    assert_eq!(run_pinned(&registry, "spread", Some(1)), Ok((1, 1)));
    assert_eq!(
        run_pinned(&registry, "spread", Some(7)),
        Err(RunErrorKind::VersionNotFound)
    );
}

#[test]
fn aliases_resolve_to_the_canonical_module() {
    let registry = registry_with(vec![builtin("roundrobin", marked(5))]);
    let report = registry
        .run("RoundRobinAssigner", None, &request(), false)
        .unwrap();
    assert_eq!((report.module.as_str(), report.version), ("roundrobin", 0));
    let view = registry.view();
    assert_eq!(view.canonical("RoundRobinAssigner"), Some("roundrobin"));
    assert_eq!(
        registry.versions("RoundRobinAssigner").unwrap()[0].name,
        "roundrobin"
    );
}

#[test]
fn describe_info_and_defaults_are_recorded() {
    let registry = registry_with(vec![]);
    let outcome = registry
        .upload("spread", &marked(1), UploadOptions::default())
        .unwrap();
    assert_eq!(
        outcome.info,
        AssignorInfo {
            name: "spread".into(),
            version: String::new(),
            description: String::new(),
            rebalance_protocol: RebalanceProtocol::Eager,
            inputs: Vec::new(),
            in_place: false,
        },
        "a module without assignor_describe gets the defaults"
    );
    let meta = &registry.versions("spread").unwrap()[0].meta;
    assert_eq!(meta.size, marked(1).len() as u64);
    assert_eq!(meta.sha256, assignor_host::registry::sha256_hex(&marked(1)));
    assert!(!meta.builtin);
}

#[test]
fn the_view_follows_every_change() {
    let registry = registry_with(vec![builtin("range", marked(0))]);
    let mut changes = registry.subscribe();
    assert_eq!(
        changes.borrow_and_update().modules["range"].active_version,
        0
    );

    upload(&registry, "range", &marked(1));
    assert!(changes.has_changed().unwrap());
    assert_eq!(
        changes.borrow_and_update().modules["range"].active_version,
        1
    );

    upload(&registry, "spread", &marked(2));
    assert!(changes.borrow_and_update().modules.contains_key("spread"));

    registry.rollback("range").unwrap();
    assert_eq!(
        changes.borrow_and_update().modules["range"].active_version,
        0
    );

    registry.delete("spread").unwrap();
    let view = changes.borrow_and_update().clone();
    assert!(!view.modules.contains_key("spread"));
    assert_eq!(*view, registry.view());
    assert_eq!(view.aliases["RoundRobinAssigner"], "roundrobin");
}
