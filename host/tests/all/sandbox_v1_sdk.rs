//! A module built with the SDK as it was before ABI v2 keeps working, with the same answers:
//! `tests/fixtures/v1-sdk/range.wasm` is the built-in `range` built at commit fd2c386 (the SDK
//! then spoke ABI v1; the README there says how). Uploaded as version 1 of `range` beside
//! today's built-in (version 0), it passes every upload check, is listed as ABI v1 beside the
//! built-in's ABI v2, and on concrete groups (heterogeneous subscriptions, static members,
//! racks, more members than partitions) it answers exactly what today's built-in answers in the
//! sandbox and what `assignor_range::assign` answers natively through the v2 bytes.

use assignor_host::registry::{
    BuiltinSource, Registry, RegistryConfig, UploadOptions, sha256_hex, smoke_request,
};
use assignor_sdk::{AssignRequest, AssignResponse, RebalanceProtocol};

use crate::sandbox_support::*;

/// The module, as committed.
const V1_RANGE: &[u8] = include_bytes!("../../../tests/fixtures/v1-sdk/range.wasm");

/// Its sha256, as `tests/fixtures/v1-sdk/README.md` records it.
const V1_RANGE_SHA256: &str = "a79ee723d576943d80e26d69c4b0f60fb048e89f8a77a8c12e947afa3315e152";

/// A registry whose only built-in is `range` (version 0), with the v1 build uploaded over it as
/// version 1 (not activated, so the built-in stays the one a group would get).
fn registry() -> Registry {
    let config = RegistryConfig {
        builtins: BuiltinSource::embedded()
            .into_iter()
            .filter(|b| b.name == "range")
            .collect(),
        ..RegistryConfig::default()
    };
    let registry = Registry::open(sandbox(), None, config).expect("registry");
    let outcome = registry
        .upload(
            "range",
            V1_RANGE,
            UploadOptions {
                expected_sha256: Some(V1_RANGE_SHA256.into()),
                activate: false,
            },
        )
        .expect("the v1 build passes every upload check of today's host, the smoke call too");
    assert_eq!((outcome.version, outcome.created), (1, true));
    registry
}

fn group(members: Vec<assignor_sdk::Member>, topics: Vec<assignor_sdk::Topic>) -> AssignRequest {
    AssignRequest {
        members,
        topics,
        ..request()
    }
}

fn static_member(id: &str, instance: &str, topics: &[&str]) -> assignor_sdk::Member {
    assignor_sdk::Member {
        group_instance_id: Some(instance.into()),
        ..member(id, topics)
    }
}

fn racked(mut m: assignor_sdk::Member, rack: &str) -> assignor_sdk::Member {
    m.rack_id = Some(rack.into());
    m
}

/// Groups `range` treats differently, each with a name for the failure message.
fn groups() -> Vec<(&'static str, AssignRequest)> {
    // Static members come first, ordered by instance id (here the reverse of member ids),
    // then dynamic ones by member id.
    let statics = group(
        vec![
            static_member("c-1", "instance-z", &["t0", "t1"]),
            member("c-2", &["t0", "t1"]),
            static_member("c-3", "instance-a", &["t0"]),
            member("c-4", &["t1"]),
        ],
        vec![topic("t0", 5), topic("t1", 8)],
    );
    // KIP-881: members and replicas on racks; partitions go to members on a replica's rack
    // where the ranges allow.
    let mut racks = group(
        vec![
            racked(member("r-1", &["x", "y"]), "rack-a"),
            racked(member("r-2", &["x", "y"]), "rack-b"),
            racked(member("r-3", &["x"]), "rack-c"),
            member("r-4", &["y"]),
        ],
        vec![topic("x", 7), topic("y", 6)],
    );
    for t in &mut racks.topics {
        t.partition_racks = (0..t.partition_count)
            .map(|p| vec![format!("rack-{}", ["a", "b", "c"][p as usize % 3])])
            .collect();
    }
    // More members than partitions: the last subscribers get nothing.
    let crowded = group(
        (0..6)
            .map(|i| member(&format!("m-{i}"), &["small"]))
            .collect(),
        vec![topic("small", 4)],
    );
    vec![
        ("the support group", request()),
        ("static members", statics),
        ("racks", racks),
        ("more members than partitions", crowded),
        ("the smoke group", smoke_request("range")),
    ]
}

#[test]
fn the_v1_build_is_the_committed_bytes_and_speaks_abi_v1() {
    assert_eq!(
        sha256_hex(V1_RANGE),
        V1_RANGE_SHA256,
        "see the fixture's README"
    );
    let module = sandbox().load(V1_RANGE).expect("today's sandbox loads it");
    assert_eq!(module.abi_version(), 1);
    let info = module.info().expect("it describes itself");
    assert_eq!(
        (
            info.name.as_str(),
            info.version.as_str(),
            info.rebalance_protocol
        ),
        ("range", "1.0.0", RebalanceProtocol::Eager)
    );
    assert!(info.inputs.is_empty(), "a v1 SDK knew no inputs");
}

#[test]
fn the_registry_lists_the_v1_build_as_abi_v1_beside_the_v2_builtin() {
    let registry = registry();
    let range: Vec<_> = registry
        .list()
        .into_iter()
        .filter(|m| m.name == "range")
        .collect();
    assert_eq!(range.len(), 1);
    assert_eq!(
        (range[0].active_version, &range[0].versions[..]),
        (0, &[0, 1][..])
    );
    let versions = registry.versions("range").unwrap();
    let listed: Vec<_> = versions
        .iter()
        .map(|v| {
            (
                v.version,
                v.meta.builtin,
                v.meta.abi_version,
                v.meta.info.version.as_str(),
            )
        })
        .collect();
    assert_eq!(listed, [(0, true, 2, "1.1.0"), (1, false, 1, "1.0.0")]);
}

#[test]
fn the_v1_build_answers_exactly_what_todays_range_answers() {
    let registry = registry();
    let inputs = registry.versions("range").unwrap()[0]
        .meta
        .info
        .inputs
        .clone();
    for (name, request) in groups() {
        let v1 = registry
            .run("range", Some(1), &request, false)
            .unwrap_or_else(|e| panic!("{name}: the v1 build failed: {e}"));
        let v2 = registry
            .run("range", Some(0), &request, false)
            .unwrap_or_else(|e| panic!("{name}: the built-in failed: {e}"));
        assert_eq!((v1.version, v2.version), (1, 0));
        let native = assignor_sdk::glue::call(&request, &inputs, assignor_range::assign)
            .unwrap_or_else(|e| panic!("{name}: native range failed: {e}"));
        let v1 = v1.answer.to_response(&request);
        assert_eq!(
            v1,
            v2.answer.to_response(&request),
            "{name}: v1 build vs built-in"
        );
        assert_eq!(v1, native, "{name}: v1 build vs native");
        let given: usize = v1
            .assignments
            .iter()
            .flat_map(|a| &a.partitions)
            .map(|tp| tp.partitions.len())
            .sum();
        let partitions: i32 = request.topics.iter().map(|t| t.partition_count).sum();
        assert_eq!(
            given, partitions as usize,
            "{name}: range assigns every partition"
        );
    }
}

#[test]
fn the_v1_build_gives_the_support_group_its_ranges() {
    // m1 on `a` (3 partitions) and `b` (2), m2 on `a`, m3 on `b`: `a` splits 2 + 1 over m1,
    // m2; `b` 1 + 1 over m1, m3.
    let registry = registry();
    let report = registry.run("range", Some(1), &request(), false).unwrap();
    let expected = AssignResponse {
        assignments: vec![
            give("m1", vec![tp("a", &[0, 1]), tp("b", &[0])]),
            give("m2", vec![tp("a", &[2])]),
            give("m3", vec![tp("b", &[1])]),
        ],
        ..AssignResponse::default()
    };
    assert_eq!(report.answer.to_response(&request()), expected);
}
