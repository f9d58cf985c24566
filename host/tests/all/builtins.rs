//! The embedded built-in strategies are valid ABI v2 modules: they compile on a default
//! wasmtime `Engine`, export exactly the functions of the ABI with their signatures, import
//! nothing but `assignor.log`, were built with the 64 KiB stack of the module profile, and
//! describe themselves under their directory's name. One bare call per module checks the
//! export glue's pointer packing against the same strategy compiled natively; running modules
//! for real (limits, pooling, output checks) is the sandbox's business and tested there.

use assignor_host::builtins::{BUILTINS, builtin};
use assignor_sdk::abi::v2::{self, Extras, Layout};
use assignor_sdk::abi::{
    self, ABI_V1, ABI_V2, ABI_VERSION, AssignRequest, AssignorInfo, Member, RebalanceProtocol,
    Topic,
};
use wasmtime::{Engine, ExternType, Instance, Linker, Module, Store, ValType};

fn compile(engine: &Engine, name: &str, wasm: &[u8]) -> Module {
    Module::new(engine, wasm).unwrap_or_else(|e| panic!("built-in {name} does not compile: {e:?}"))
}

fn params_results(ty: &ExternType) -> Option<(Vec<String>, Vec<String>)> {
    let f = ty.func()?;
    let show = |v: ValType| v.to_string();
    Some((
        f.params().map(show).collect(),
        f.results().map(show).collect(),
    ))
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn range_and_roundrobin_are_embedded() {
    assert!(builtin("range").is_some());
    assert!(builtin("roundrobin").is_some());
}

#[test]
fn every_builtin_exports_the_abi_and_imports_only_log() {
    let engine = Engine::default();
    let expected: [(&str, &[&str], &[&str]); 4] = [
        (abi::EXPORT_ABI_VERSION, &[], &["i32"]),
        (abi::EXPORT_ALLOC, &["i32"], &["i32"]),
        (abi::EXPORT_ASSIGN, &["i32", "i32"], &["i64"]),
        (abi::EXPORT_DESCRIBE, &[], &["i64"]),
    ];
    for b in BUILTINS {
        let module = compile(&engine, b.name, b.wasm);
        for (export, params, results) in expected {
            let ty = module
                .get_export(export)
                .unwrap_or_else(|| panic!("{} does not export {export}", b.name));
            let (p, r) = params_results(&ty)
                .unwrap_or_else(|| panic!("{}: {export} is not a function", b.name));
            assert_eq!(
                (p, r),
                (strings(params), strings(results)),
                "{}: {export}",
                b.name
            );
        }
        let memory = module
            .get_export(abi::EXPORT_MEMORY)
            .and_then(|t| t.memory().cloned());
        let memory = memory.unwrap_or_else(|| panic!("{} does not export its memory", b.name));
        // Stack (64 KiB), data and heap start fit in a few pages; Rust's default 1 MiB stack
        // alone would need 16. More means .cargo/config.toml did not reach the module build.
        assert!(
            memory.minimum() < 16,
            "{}: {} initial pages",
            b.name,
            memory.minimum()
        );
        for import in module.imports() {
            let what = (import.module(), import.name());
            assert_eq!(
                what,
                (abi::IMPORT_MODULE, abi::IMPORT_LOG),
                "{} imports {what:?}",
                b.name
            );
            let (p, r) = params_results(&import.ty()).expect("log is a function");
            assert_eq!(
                (p, r),
                (vec!["i32".to_string(); 3], vec![]),
                "{}: log signature",
                b.name
            );
        }
    }
}

fn instantiate(engine: &Engine, name: &str, wasm: &[u8]) -> (Store<()>, Instance) {
    let module = compile(engine, name, wasm);
    let mut store = Store::new(engine, ());
    let mut linker = Linker::new(engine);
    linker
        .func_wrap(
            abi::IMPORT_MODULE,
            abi::IMPORT_LOG,
            |_: i32, _: i32, _: i32| {},
        )
        .unwrap();
    let instance = linker.instantiate(&mut store, &module).unwrap();
    (store, instance)
}

/// The bytes at `(ptr << 32) | len` in the instance's memory.
fn read_packed(store: &mut Store<()>, instance: &Instance, packed: i64) -> Vec<u8> {
    let memory = instance
        .get_memory(&mut *store, abi::EXPORT_MEMORY)
        .unwrap();
    let (ptr, len) = (
        (packed as u64 >> 32) as usize,
        (packed as u64 & 0xffff_ffff) as usize,
    );
    memory.data(&*store)[ptr..ptr + len].to_vec()
}

/// What the host does for one call: alloc, write the input, assign, read the output bytes.
fn call_assign(engine: &Engine, name: &str, wasm: &[u8], input: &[u8]) -> Vec<u8> {
    let (mut store, instance) = instantiate(engine, name, wasm);
    let alloc = instance
        .get_typed_func::<i32, i32>(&mut store, abi::EXPORT_ALLOC)
        .unwrap();
    let assign = instance
        .get_typed_func::<(i32, i32), i64>(&mut store, abi::EXPORT_ASSIGN)
        .unwrap();
    let len = i32::try_from(input.len()).unwrap();
    let ptr = alloc.call(&mut store, len).unwrap();
    let memory = instance.get_memory(&mut store, abi::EXPORT_MEMORY).unwrap();
    memory.write(&mut store, ptr as usize, input).unwrap();
    let packed = assign.call(&mut store, (ptr, len)).unwrap();
    read_packed(&mut store, &instance, packed)
}

/// The v2 bytes the host sends for `request` to a module that reads no optional input.
fn encode_v2(request: &AssignRequest) -> Vec<u8> {
    let layout = Layout::new(request).unwrap();
    v2::encode_request(request, &layout, Extras::default()).unwrap()
}

/// The `error` of a v2 answer.
fn v2_error(output: &[u8]) -> Option<String> {
    v2::decode_response(output).unwrap().error
}

#[test]
fn every_builtin_describes_itself_under_its_name() {
    let engine = Engine::default();
    for b in BUILTINS {
        let (mut store, instance) = instantiate(&engine, b.name, b.wasm);
        let version = instance
            .get_typed_func::<(), i32>(&mut store, abi::EXPORT_ABI_VERSION)
            .unwrap();
        assert_eq!(version.call(&mut store, ()).unwrap(), ABI_VERSION as i32);
        assert_eq!(ABI_VERSION, ABI_V2, "the SDK builds v2 modules");
        let describe = instance
            .get_typed_func::<(), i64>(&mut store, abi::EXPORT_DESCRIBE)
            .unwrap();
        let packed = describe.call(&mut store, ()).unwrap();
        let info: AssignorInfo = abi::decode(&read_packed(&mut store, &instance, packed)).unwrap();
        assert_eq!(info.name, b.name);
        // Kafka's cooperative-sticky is the one built-in that speaks COOPERATIVE.
        let expected = if b.name == "cooperative-sticky" {
            RebalanceProtocol::Cooperative
        } else {
            RebalanceProtocol::Eager
        };
        assert_eq!(info.rebalance_protocol, expected, "{}", b.name);
        assert!(
            !info.version.is_empty() && !info.description.is_empty(),
            "{info:?}"
        );
    }
}

fn small_group() -> AssignRequest {
    let member = |id: &str, instance: Option<&str>, topics: &[&str]| Member {
        member_id: id.into(),
        group_instance_id: instance.map(Into::into),
        topics: topics.iter().map(|t| t.to_string()).collect(),
        owned_generation: -1,
        ..Member::default()
    };
    AssignRequest {
        abi_version: ABI_VERSION,
        group_id: "g".into(),
        protocol_type: "consumer".into(),
        protocol_name: "test".into(),
        members: vec![
            member("m1", None, &["t1", "t2"]),
            member("m2", Some("static"), &["t1"]),
            member("m3", None, &["t1", "t2"]),
        ],
        topics: vec![
            Topic {
                name: "t1".into(),
                partition_count: 5,
                partition_racks: vec![],
            },
            Topic {
                name: "t2".into(),
                partition_count: 3,
                partition_racks: vec![],
            },
        ],
        ..AssignRequest::default()
    }
}

#[test]
fn the_exports_answer_what_the_strategy_answers_natively() {
    let engine = Engine::default();
    let request = small_group();
    let input = encode_v2(&request);
    let native = [
        (
            "range",
            assignor_range::assign(&request).unwrap().into_response(),
        ),
        (
            "roundrobin",
            assignor_roundrobin::assign(&request)
                .unwrap()
                .into_response(),
        ),
    ];
    for (name, expected) in native {
        let b = builtin(name).unwrap();
        let output = call_assign(&engine, name, b.wasm, &input);
        let got = v2::response_to_model(&request, v2::decode_response(&output).unwrap());
        assert_eq!(got, expected, "{name}");
        assert_eq!(got.assignments.len(), 3, "{name}: every member answered");
    }
}

#[test]
fn malformed_input_gets_an_error_response_not_a_trap() {
    let engine = Engine::default();
    // A v1 request (named-field map) to a v2 module.
    let mut wrong_version = small_group();
    wrong_version.abi_version = ABI_V1;
    let wrong_version = abi::encode(&wrong_version).unwrap();
    for b in BUILTINS {
        let garbage = v2_error(&call_assign(&engine, b.name, b.wasm, b"\xc1 not msgpack"));
        let error = garbage.unwrap_or_else(|| panic!("{}: no error for garbage", b.name));
        assert!(
            error.starts_with("malformed AssignRequest"),
            "{}: {error}",
            b.name
        );
        let empty = v2_error(&call_assign(&engine, b.name, b.wasm, b""));
        assert!(empty.is_some(), "{}: no error for empty input", b.name);
        let version = v2_error(&call_assign(&engine, b.name, b.wasm, &wrong_version));
        assert_eq!(
            version.as_deref(),
            Some("this module speaks assignor ABI v2, but the request is ABI v1"),
            "{}",
            b.name
        );
    }
}

/// The build script, compiled here too so its decisions are tested.
#[path = "../../build.rs"]
#[allow(dead_code)]
mod build_script;

#[test]
fn the_module_build_does_not_inherit_the_host_builds_settings() {
    let scrubbed = |key: &str| build_script::scrubbed(&std::ffi::OsString::from(key));
    for outer in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "CARGO_PROFILE_RELEASE_LTO",
        "CARGO_FEATURE_DEFAULT",
        "CARGO_CFG_TARGET_ARCH",
        "CARGO_MANIFEST_DIR",
        "__CARGO_DEFAULT_LIB_METADATA",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "TARGET",
        "PROFILE",
        "OPT_LEVEL",
        "MAKEFLAGS",
    ] {
        assert!(scrubbed(outer), "{outer} must not reach the module build");
    }
    for kept in [
        "CARGO_HOME",
        "CARGO_NET_OFFLINE",
        "CARGO_HTTP_PROXY",
        "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "CARGO",
        "PATH",
        "HOME",
    ] {
        assert!(!scrubbed(kept), "{kept} must reach the module build");
    }
}

#[test]
fn builtin_directories_are_read_by_their_package_name() {
    use build_script::package_name;
    let range = "[package]\nname = \"assignor-range\"\nversion = \"0.1.0\"\n";
    assert_eq!(package_name(range).as_deref(), Some("assignor-range"));
    let later = "[lib]\nname = \"x\"\n\n[package]\nversion.workspace = true\nname=\"assignor-y\"\n";
    assert_eq!(package_name(later).as_deref(), Some("assignor-y"));
    assert_eq!(package_name("[dependencies]\nname = \"x\"\n"), None);
}

/// The composite built-ins link the algorithms of range and the others (`assignors-common/`):
/// their modules must still export only their own glue and answer what the same code answers
/// natively.
#[test]
fn composite_modules_answer_what_they_answer_natively() {
    let engine = Engine::default();
    type Native = fn(&AssignRequest) -> Result<assignor_sdk::Assignment, assignor_sdk::AssignError>;
    let cases: [(&str, (&str, &str), Native); 3] = [
        ("filtered", ("exclude", "static"), assignor_filtered::assign),
        (
            "weighted",
            ("weights", "static:3"),
            assignor_weighted::assign,
        ),
        // No lag data in the request: every topic goes to the inner strategy.
        (
            "lag-aware",
            ("inner", "roundrobin"),
            assignor_lag_aware::assign,
        ),
    ];
    for (name, (key, value), native) in cases {
        let mut request = small_group();
        request.params.insert(key.to_string(), value.to_string());
        let expected = native(&request).unwrap().into_response();
        let b = builtin(name).unwrap();
        let output = call_assign(&engine, name, b.wasm, &encode_v2(&request));
        let got = v2::response_to_model(&request, v2::decode_response(&output).unwrap());
        assert_eq!(got, expected, "{name}");
        let m2 = got
            .assignments
            .iter()
            .find(|a| a.member_id == "m2")
            .unwrap();
        let count: usize = m2.partitions.iter().map(|tp| tp.partitions.len()).sum();
        // m2 (static, on t1 only): excluded; weight 3 of 5 on t1's 5 partitions; dealt first
        // by roundrobin, so t1's partitions 0 and 3.
        let expected_count = match name {
            "filtered" => 0,
            "weighted" => 3,
            _ => 2,
        };
        assert_eq!(count, expected_count, "{name}: {m2:?}");
    }
}

/// `hold-departed` in wasm remembers through the kept state as it does natively: its answer's
/// `state`, sent back with the next request (input `state`), holds a departed member's
/// partitions.
#[test]
fn hold_departed_remembers_through_the_kept_state_in_wasm() {
    let engine = Engine::default();
    let b = builtin("hold-departed").unwrap();
    let inputs: v2::Inputs = [abi::Input::Client, abi::Input::State]
        .into_iter()
        .collect();
    let call = |request: &AssignRequest| {
        let layout = Layout::new(request).unwrap();
        let extras = Extras {
            inputs,
            ..Extras::default()
        };
        let bytes = v2::encode_request(request, &layout, extras).unwrap();
        let output = call_assign(&engine, "hold-departed", b.wasm, &bytes);
        v2::response_to_model(request, v2::decode_response(&output).unwrap())
    };
    let first = small_group();
    let answer = call(&first);
    assert_eq!(
        answer,
        assignor_hold_departed::assign(&first)
            .unwrap()
            .into_response()
    );
    let kept = answer.state.clone().expect("the module keeps state");
    let m3: Vec<(String, i32)> = answer
        .assignments
        .iter()
        .filter(|a| a.member_id == "m3")
        .flat_map(|a| a.partitions.iter())
        .flat_map(|tp| tp.partitions.iter().map(|&p| (tp.topic.clone(), p)))
        .collect();
    assert!(!m3.is_empty());

    // m3 is gone: its partitions are held, the others keep theirs, a follow-up is asked for.
    let mut second = small_group();
    second.members.retain(|m| m.member_id != "m3");
    second.now_ms = 1_000;
    second.state = Some(kept);
    let answer = call(&second);
    assert_eq!(
        answer,
        assignor_hold_departed::assign(&second)
            .unwrap()
            .into_response()
    );
    assert_eq!(answer.rebalance_after_ms, Some(30_000));
    for a in &answer.assignments {
        for tp in &a.partitions {
            for &p in &tp.partitions {
                assert!(
                    !m3.contains(&(tp.topic.clone(), p)),
                    "{}-{p} held",
                    tp.topic
                );
            }
        }
    }
}
