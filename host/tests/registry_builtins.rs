//! The embedded built-ins (`range`, `roundrobin`) run in the sandbox and answer exactly what
//! the same crates answer natively, on groups with heterogeneous subscriptions, static members
//! and racks.

mod sandbox_support;

use assignor_host::registry::{Registry, RegistryConfig};
use assignor_host::sandbox::check_response;
use assignor_sdk::{AssignRequest, AssignResponse, RebalanceProtocol};
use sandbox_support::*;

fn registry() -> Registry {
    Registry::open(sandbox(), None, RegistryConfig::default()).expect("registry")
}

/// The native path: what the module does, without the sandbox (decode, assign, encode).
fn native(name: &str, request: &AssignRequest) -> AssignResponse {
    let input: AssignRequest =
        assignor_sdk::decode(&assignor_sdk::encode(request).unwrap()).unwrap();
    let assignment = match name {
        "range" => assignor_range::assign(&input),
        "roundrobin" => assignor_roundrobin::assign(&input),
        other => panic!("no native {other}"),
    }
    .expect("native assignment");
    assignor_sdk::decode(&assignor_sdk::encode(&assignment.into_response()).unwrap()).unwrap()
}

/// Twelve members (three static, racks on some) over six topics with different partition
/// counts and subscriptions; topic `t3` has replica racks.
fn mixed_group() -> AssignRequest {
    let mut request = request();
    request.members = (0..12)
        .map(|i| {
            let topics: Vec<String> = (0..6)
                .filter(|t| (i + t) % 3 != 0)
                .map(|t| format!("t{t}"))
                .collect();
            let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
            let mut m = member(&format!("consumer-{i:02}"), &topics);
            if i % 4 == 1 {
                m.group_instance_id = Some(format!("instance-{}", 11 - i));
            }
            if i % 2 == 0 {
                m.rack_id = Some(format!("rack-{}", i % 3));
            }
            m
        })
        .collect();
    request.topics = (0..6).map(|t| topic(&format!("t{t}"), 3 + 5 * t)).collect();
    request.topics[3].partition_racks = (0..request.topics[3].partition_count)
        .map(|p| vec![format!("rack-{}", p % 3)])
        .collect();
    request
}

#[test]
fn builtins_are_registered_as_version_zero() {
    let registry = registry();
    let embedded: Vec<&str> = assignor_host::builtins::BUILTINS
        .iter()
        .map(|b| b.name)
        .collect();
    let listed: Vec<String> = registry.list().into_iter().map(|m| m.name).collect();
    assert_eq!(listed, embedded, "every embedded strategy is registered");
    assert!(registry.load_problems().is_empty());
    for name in &embedded {
        let version = &registry.versions(name).unwrap()[0];
        assert_eq!((version.version, version.meta.builtin), (0, true));
        assert_eq!(version.meta.info.name, *name);
    }
    for name in ["range", "roundrobin"] {
        let info = &registry.versions(name).unwrap()[0].meta.info;
        assert_eq!(info.rebalance_protocol, RebalanceProtocol::Eager);
    }
}

#[test]
fn builtins_in_the_sandbox_match_the_native_crates() {
    let registry = registry();
    for request in [request(), mixed_group(), smoke_group()] {
        for name in ["range", "roundrobin"] {
            let report = registry
                .run(name, None, &request, false)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let expected = native(name, &request);
            assert_eq!(report.response, expected, "{name} on {}", request.group_id);
            let summary = check_response(&request, &expected, false).unwrap();
            assert_eq!(report.unassigned_partitions, summary.unassigned_partitions);
            assert!(summary.assigned_partitions > 0);
        }
    }
}

fn smoke_group() -> AssignRequest {
    assignor_host::registry::smoke_request("range")
}
