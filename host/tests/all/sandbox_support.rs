//! Shared helpers of the sandbox and registry tests: a small group, hostile modules written as
//! inline WAT (no toolchain needed), MessagePack bytes spliced into WAT data segments, and the
//! fixture modules written without the SDK (`tests/fixtures/plain-abi`, `plain-abi-v2`) built
//! to wasm.

use std::sync::OnceLock;

use assignor_host::sandbox::{Sandbox, SandboxLimits};
use assignor_sdk::{
    AssignRequest, AssignResponse, Member, MemberAssignment, Topic, TopicPartitions,
};

/// One sandbox (one engine) for a whole test binary; tests that need other limits take a
/// handle on the same engine with [`Sandbox::with_limits`].
pub fn sandbox() -> Sandbox {
    Sandbox::shared_default()
}

/// The default sandbox with other limits.
pub fn sandbox_with(f: impl FnOnce(&mut SandboxLimits)) -> Sandbox {
    let mut limits = SandboxLimits::default();
    f(&mut limits);
    sandbox().with_limits(limits).expect("limits")
}

pub fn member(id: &str, topics: &[&str]) -> Member {
    Member {
        member_id: id.to_owned(),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    }
}

pub fn topic(name: &str, partitions: i32) -> Topic {
    Topic {
        name: name.to_owned(),
        partition_count: partitions,
        partition_racks: Vec::new(),
    }
}

/// The test group: `m1` subscribes to `a` (3 partitions) and `b` (2), `m2` to `a`, `m3` to `b`.
pub fn request() -> AssignRequest {
    AssignRequest {
        abi_version: 1,
        group_id: "g".to_owned(),
        generation_id: 7,
        protocol_type: "consumer".to_owned(),
        protocol_name: "test".to_owned(),
        now_ms: 1_000,
        params: Default::default(),
        members: vec![
            member("m1", &["a", "b"]),
            member("m2", &["a"]),
            member("m3", &["b"]),
        ],
        topics: vec![topic("a", 3), topic("b", 2)],
        ..AssignRequest::default()
    }
}

pub fn tp(topic: &str, partitions: &[i32]) -> TopicPartitions {
    TopicPartitions {
        topic: topic.to_owned(),
        partitions: partitions.to_vec(),
    }
}

pub fn give(member: &str, partitions: Vec<TopicPartitions>) -> MemberAssignment {
    MemberAssignment {
        member_id: member.to_owned(),
        partitions,
        user_data: None,
        metadata: None,
    }
}

/// A valid answer to [`request`]: every partition once, to subscribed members.
pub fn valid_response() -> AssignResponse {
    AssignResponse {
        error: None,
        assignments: vec![
            give("m1", vec![tp("a", &[0]), tp("b", &[0])]),
            give("m2", vec![tp("a", &[1, 2])]),
            give("m3", vec![tp("b", &[1])]),
        ],
        rebalance_after_ms: None,
        state: None,
    }
}

/// A WAT data string holding `bytes` (`\hh` escapes).
pub fn data_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:02x}")).collect()
}

/// An ABI v1 module around `items` (more functions, data segments). It exports `memory` (one
/// page to start), `assignor_abi_version` returning `abi`, and an `assignor_alloc` that grows
/// memory as needed and always answers 65536, so the first page is free for data segments.
pub fn abi_module(abi: i32, items: &str) -> String {
    importing("", abi, items)
}

/// [`abi_module`] with `imports` (import declarations) first, as wasm requires.
pub fn importing(imports: &str, abi: i32, items: &str) -> String {
    format!(
        r#"(module
  {imports}
  (memory (export "memory") 1)
  (func (export "assignor_abi_version") (result i32) (i32.const {abi}))
  (func (export "assignor_alloc") (param $len i32) (result i32)
    (local $need i32)
    ;; pages needed to hold [65536, 65536 + len), minus the pages there are
    (local.set $need
      (i32.sub
        (i32.shr_u (i32.add (local.get $len) (i32.const 131071)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then (drop (memory.grow (local.get $need)))))
    (i32.const 65536))
  {items}
)"#
    )
}

/// A module whose `assignor_assign` returns `bytes` (placed at address 0) whatever the input.
pub fn returning(bytes: &[u8]) -> String {
    abi_module(
        1,
        &format!(
            r#"(data (i32.const 0) "{}")
  (func (export "assignor_assign") (param i32 i32) (result i64) (i64.const {}))"#,
            data_string(bytes),
            bytes.len()
        ),
    )
}

/// A module returning `response`, encoded as the ABI wants (MessagePack, named fields).
pub fn returning_response(response: &AssignResponse) -> String {
    returning(&assignor_sdk::encode(response).expect("encode"))
}

/// A module whose `assignor_assign` runs `body` (which must leave an i64 or never return).
pub fn assigning(body: &str) -> String {
    abi_module(
        1,
        &format!(
            r#"(func $assign (export "assignor_assign") (param $ptr i32) (param $len i32) (result i64)
    {body})"#
        ),
    )
}

/// The bytes to hand to the sandbox or the registry: `wat` compiled to a binary module (the host
/// takes binary wasm only, as an operator uploads it).
pub fn wasm(wat: &str) -> Vec<u8> {
    wat::parse_str(wat).unwrap_or_else(|e| panic!("test WAT does not parse: {e}"))
}

/// The marker the plain-abi fixture writes into every member's `user_data`.
pub const PLAIN_ABI_MARKER: &[u8; 16] = b"PLAIN-ABI:000000";

/// The plain-abi fixture (an ABI v1 module written without the SDK) built to wasm once per
/// test binary ([`fixture_wasm`]).
pub fn plain_abi_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let wasm = fixture_wasm("plain-abi");
        assert_eq!(
            wasm.windows(16).filter(|w| w == PLAIN_ABI_MARKER).count(),
            1,
            "the marker appears exactly once in the module"
        );
        wasm
    })
}

/// The marker the plain-abi-v2 fixture writes at the start of every member's `user_data`.
pub const PLAIN_ABI_V2_MARKER: &[u8; 16] = b"PLAIN-ABI-V2:000";

/// The optional inputs the plain-abi-v2 fixture declares, as they sit in its data (a list the
/// tests may rewrite, keeping its length).
pub const PLAIN_ABI_V2_INPUTS: &[u8; 24] = b"INPUTS=client           ";

/// The plain-abi-v2 fixture (an ABI v2 module written without the SDK) built to wasm once per
/// test binary ([`fixture_wasm`]).
pub fn plain_abi_v2_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let wasm = fixture_wasm("plain-abi-v2");
        for marker in [PLAIN_ABI_V2_MARKER.as_slice(), PLAIN_ABI_V2_INPUTS] {
            assert_eq!(
                wasm.windows(marker.len()).filter(|w| *w == marker).count(),
                1,
                "{} appears exactly once in the module",
                String::from_utf8_lossy(marker)
            );
        }
        wasm
    })
}

/// `tests/fixtures/<name>` built with `cargo build --target wasm32-unknown-unknown --release`
/// into `target/wasm-fixtures`, with the environment cargo gives tests scrubbed as a build
/// script would (so the outer build's flags do not leak in); the bytes of its `.wasm`.
pub fn fixture_wasm(name: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let fixture = root.join("tests/fixtures").join(name);
    let target_dir = root.join("target/wasm-fixtures");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .current_dir(&fixture)
        .args(["build", "--locked", "--release"])
        .args(["--target", "wasm32-unknown-unknown"])
        .arg("--manifest-path")
        .arg(fixture.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let keep = ["CARGO_HOME", "CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRY_"]
            .iter()
            .any(|k| key.starts_with(k));
        let outer = key.starts_with("CARGO_")
            || key.starts_with("__CARGO")
            || ["RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER"].contains(&&*key);
        if outer && !keep {
            command.env_remove(&*key);
        }
    }
    let output = command.output().expect("run cargo");
    assert!(
        output.status.success(),
        "building tests/fixtures/{name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let file = format!("{}.wasm", name.replace('-', "_"));
    std::fs::read(
        target_dir
            .join("wasm32-unknown-unknown/release")
            .join(&file),
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The plain-abi module with its marker set to `PLAIN-ABI:<n, six digits>`: distinct bytes
/// (so a distinct version) whose answers say which build produced them.
pub fn plain_abi_marked(n: u32) -> Vec<u8> {
    let mut wasm = plain_abi_wasm().to_vec();
    let at = wasm
        .windows(16)
        .position(|w| w == PLAIN_ABI_MARKER)
        .expect("marker");
    wasm[at..at + 16].copy_from_slice(plain_abi_marker(n).as_slice());
    wasm
}

pub fn plain_abi_marker(n: u32) -> Vec<u8> {
    format!("PLAIN-ABI:{n:06}").into_bytes()
}

/// A module answering every group with no assignments and `rebalance_after_ms = marker`, so a
/// response says which module produced it. Valid for any group, the smoke group included.
pub fn marked(marker: u64) -> Vec<u8> {
    wasm(&marked_text(marker))
}

/// [`marked`] as WebAssembly text.
pub fn marked_text(marker: u64) -> String {
    returning_response(&AssignResponse {
        rebalance_after_ms: Some(marker),
        ..AssignResponse::default()
    })
}
