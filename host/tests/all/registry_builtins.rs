//! The embedded built-ins (`range`, `roundrobin`) run in the sandbox and answer exactly what
//! the same crates answer natively, on groups with heterogeneous subscriptions, static members
//! and racks.

use assignor_host::registry::{Registry, RegistryConfig};
use assignor_host::sandbox::check_response;
use assignor_sdk::{AssignRequest, AssignResponse, RebalanceProtocol};

use crate::sandbox_support::*;

/// One registry with the embedded built-ins for the whole binary: compiling them is the
/// expensive part, and every test here only runs them.
fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::open(sandbox(), None, RegistryConfig::default()).expect("registry")
    })
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
    // The coordinator learns from the view which modules' answers may apply in place.
    let view = registry.view();
    let in_place: Vec<&str> = view
        .modules
        .iter()
        .filter(|(_, e)| e.in_place)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(in_place, ["hold-departed"]);
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
            assert_eq!(
                report.answer.to_response(&request),
                expected,
                "{name} on {}",
                request.group_id
            );
            let summary = check_response(&request, &expected, false).unwrap();
            assert_eq!(report.unassigned_partitions, summary.unassigned_partitions);
            assert!(summary.assigned_partitions > 0);
        }
    }
}

fn smoke_group() -> AssignRequest {
    assignor_host::registry::smoke_request("range")
}

/// The built-in `cooperative-sticky` and the host's cooperative safety check agree: when a
/// member joins, the first round withholds the partitions that must move (their owners still
/// hold them), and the next round hands them over, each round passing the check.
#[test]
fn cooperative_sticky_hands_partitions_over_in_two_rounds_under_the_safety_check() {
    let registry = registry();
    let module = registry.resolve("cooperative-sticky", None).unwrap();
    assert!(module.is_cooperative(), "described as cooperative");
    let owned_after = |request: &AssignRequest, report: &assignor_host::registry::RunReport| {
        let mut next = request.clone();
        next.generation_id += 1;
        for member in &mut next.members {
            member.owned_generation = request.generation_id;
            member.owned_partitions = report
                .answer
                .to_response(request)
                .assignments
                .iter()
                .find(|a| a.member_id == member.member_id)
                .map(|a| a.partitions.clone())
                .unwrap_or_default();
        }
        next
    };
    // Every request below lists m1, m2 (and m3) in that order: the member's position.
    let count = |report: &assignor_host::registry::RunReport, member: &str| -> usize {
        let m = ["m1", "m2", "m3"]
            .iter()
            .position(|&id| id == member)
            .unwrap() as u32;
        let answer = &report.answer;
        (0..answer.entries().len())
            .filter(|&i| answer.entries()[i].member == m)
            .flat_map(|i| answer.topics(i).map(|(_, list)| list.len()))
            .sum()
    };

    let mut first = request();
    first.members = vec![member("m1", &["t"]), member("m2", &["t"])];
    first.topics = vec![topic("t", 6)];
    let round0 = registry
        .run("cooperative-sticky", None, &first, true)
        .unwrap();
    assert_eq!((count(&round0, "m1"), count(&round0, "m2")), (3, 3));

    // m3 joins; m1 and m2 still own three partitions each.
    let mut joined = owned_after(&first, &round0);
    joined.members.push(member("m3", &["t"]));
    let round1 = registry
        .run("cooperative-sticky", None, &joined, true)
        .expect("the first round passes the cooperative check");
    assert_eq!(
        count(&round1, "m3"),
        0,
        "nothing moves while owners hold it"
    );
    assert_eq!(
        round1.unassigned_partitions, 2,
        "two partitions are being revoked"
    );

    let settled = owned_after(&joined, &round1);
    let round2 = registry
        .run("cooperative-sticky", None, &settled, true)
        .expect("the second round passes the cooperative check");
    assert_eq!(round2.unassigned_partitions, 0);
    assert_eq!(
        (
            count(&round2, "m1"),
            count(&round2, "m2"),
            count(&round2, "m3")
        ),
        (2, 2, 2)
    );
}
