//! Scenarios become the request a live group would send, bad scenarios are refused by name,
//! and a simulation of the built-in `range` reports its known assignment, balance and
//! movement.

use std::collections::BTreeMap;
use std::io::Write;

use assignor_sdk::TopicPartitions;
use bytes::Bytes;
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::Decodable;

use super::*;

const SCENARIO: &str = r#"{
  "group_id": "orders-app",
  "params": { "mode": "fast" },
  "topics": [
    { "name": "orders", "partitions": 6 },
    { "name": "unused", "partitions": 2 },
    { "name": "audit", "partitions": 1 }
  ],
  "members": [
    { "id": "c-2", "subscription": ["orders"], "current": { "orders": [3, 4, 5] } },
    { "id": "c-1", "rack": "a", "subscription": ["orders", "audit"],
      "current": { "orders": [0, 1, 2] } },
    { "id": "c-3", "instance_id": "host-3", "subscription": ["orders"] }
  ]
}"#;

fn scenario() -> Scenario {
    serde_json::from_str(SCENARIO).expect("the documented shape parses")
}

fn range() -> &'static [u8] {
    crate::builtins::builtin("range")
        .expect("range is built in")
        .wasm
}

fn sandbox() -> Sandbox {
    Sandbox::shared_default()
}

fn tp(topic: &str, partitions: &[i32]) -> TopicPartitions {
    TopicPartitions {
        topic: topic.into(),
        partitions: partitions.to_vec(),
    }
}

#[test]
fn a_scenario_becomes_the_request_a_live_group_would_send() {
    let request = scenario().to_request("range").unwrap();
    assert_eq!(request.group_id, "orders-app");
    assert_eq!(request.protocol_name, "range");
    assert_eq!(request.generation_id, 1);
    assert_eq!(request.params["mode"], "fast");
    let ids: Vec<&str> = request
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(ids, ["c-1", "c-2", "c-3"], "members sorted by id");
    let topics: Vec<&str> = request.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        topics,
        ["audit", "orders"],
        "only subscribed topics, sorted"
    );

    let c1 = &request.members[0];
    assert_eq!(*c1.topics, ["audit", "orders"]);
    assert_eq!(c1.previous_assignment, vec![tp("orders", &[0, 1, 2])]);
    assert_eq!(
        c1.owned_partitions, c1.previous_assignment,
        "owned defaults to current"
    );
    assert_eq!(c1.owned_generation, 0, "owned in the previous generation");
    assert_eq!(c1.rack_id.as_deref(), Some("a"));
    let c3 = &request.members[2];
    assert_eq!(c3.group_instance_id.as_deref(), Some("host-3"));
    assert!(c3.owned_partitions.is_empty());
    assert_eq!(c3.owned_generation, -1);

    // The metadata is a real v3 Subscription, as a Java client sends it.
    let mut bytes = Bytes::from(c1.metadata.clone());
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    let _ = bytes.split_to(2);
    let subscription = ConsumerProtocolSubscription::decode(&mut bytes, version).unwrap();
    assert_eq!(version, 3);
    let subscribed: Vec<String> = subscription.topics.iter().map(|t| t.to_string()).collect();
    assert_eq!(subscribed, ["audit", "orders"]);
    assert_eq!(subscription.owned_partitions[0].partitions, [0, 1, 2]);
    assert_eq!(subscription.rack_id.as_deref(), Some("a"));
}

#[test]
fn bad_scenarios_are_refused_naming_the_culprit() {
    type Break<'a> = &'a dyn Fn(&mut Scenario);
    let cases: [(Break<'_>, &str); 6] = [
        (
            &|s| s.members[0].subscription.push("nope".into()),
            "member c-2 subscribes to topic nope",
        ),
        (
            &|s| {
                s.members[0].current.insert("orders".into(), vec![6]);
            },
            "orders-6",
        ),
        (
            &|s| {
                s.members[2].current.insert("orders".into(), vec![0]);
            },
            "orders-0 is in the current assignment of both c-1 and c-3",
        ),
        (
            &|s| s.members[1].id = "c-2".into(),
            "member c-2 is listed twice",
        ),
        (
            &|s| s.topics[0].partitions = 0,
            "topic orders has 0 partitions",
        ),
        (&|s| s.members.clear(), "there are no members"),
    ];
    for (break_it, expected) in cases {
        let mut s = scenario();
        break_it(&mut s);
        let error = s.to_request("range").unwrap_err().to_string();
        assert!(
            error.contains(expected),
            "{error:?} should name {expected:?}"
        );
    }
}

#[test]
fn simulating_range_reports_assignment_balance_and_movement() {
    let sandbox = sandbox();
    let module = sandbox.load(range()).unwrap();
    let request = scenario().to_request("range").unwrap();
    let report = simulate(&sandbox, &module, "range", Some(0), &request).unwrap();

    let assigned: BTreeMap<&str, BTreeMap<String, Vec<i32>>> = report
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), m.assignment.clone()))
        .collect();
    // Kafka's range: static members first (by instance id), then by member id; orders has 6
    // partitions over 3 members -> 2 each; audit has one subscriber.
    assert_eq!(
        assigned["c-3"],
        BTreeMap::from([("orders".into(), vec![0, 1])])
    );
    assert_eq!(
        assigned["c-1"],
        BTreeMap::from([("audit".into(), vec![0]), ("orders".into(), vec![2, 3])])
    );
    assert_eq!(
        assigned["c-2"],
        BTreeMap::from([("orders".into(), vec![4, 5])])
    );

    assert_eq!(report.balance.partitions, 7);
    assert_eq!(report.balance.assigned, 7);
    assert_eq!(report.balance.unassigned, 0);
    assert!(report.unassigned.is_empty());
    assert_eq!(
        (report.balance.min_per_member, report.balance.max_per_member),
        (2, 3)
    );
    // Before: c-1 0,1,2 and c-2 3,4,5. After: 0,1 move to c-3 and 3 to c-1; 2, 4 and 5 stay;
    // audit-0 had no owner.
    assert_eq!(report.movement.previously_assigned, 6);
    assert_eq!(report.movement.kept, 3);
    assert_eq!(report.movement.moved, 3);
    assert_eq!(report.movement.newly_assigned, 1);
    assert_eq!(report.movement.revoked, 0);
    let c1 = report
        .members
        .iter()
        .find(|m| m.member_id == "c-1")
        .unwrap();
    assert_eq!((c1.gained, c1.lost), (2, 2));
    let c2 = report
        .members
        .iter()
        .find(|m| m.member_id == "c-2")
        .unwrap();
    assert_eq!((c2.gained, c2.lost), (0, 1));
    assert!(report.usage.fuel > 0 && report.usage.peak_memory_bytes > 0);
    assert_eq!(report.version, Some(0));
}

#[test]
fn the_local_runner_reads_both_files_and_names_the_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("range.wasm");
    std::fs::write(&wasm, range()).unwrap();
    let path = dir.path().join("group.json");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(SCENARIO.as_bytes())
        .unwrap();
    let report = run_local(&wasm, &path, SandboxLimits::default(), Metering::Fuel).unwrap();
    assert_eq!(report.module, "range");
    assert_eq!(report.version, None);
    assert_eq!(report.balance.assigned, 7);

    let not_wasm = dir.path().join("not.wasm");
    std::fs::write(&not_wasm, b"hello").unwrap();
    let error = run_local(&not_wasm, &path, SandboxLimits::default(), Metering::Fuel).unwrap_err();
    assert!(matches!(error, SimulateError::Load(_)), "{error}");
}

#[test]
fn the_local_runner_meters_as_the_host_is_configured() {
    // `[sandbox] metering` applies to `simulate --module` as on the host: epoch counts no fuel.
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("range.wasm");
    std::fs::write(&wasm, range()).unwrap();
    let path = dir.path().join("group.json");
    std::fs::write(&path, SCENARIO).unwrap();
    let fuel = run_local(&wasm, &path, SandboxLimits::default(), Metering::Fuel).unwrap();
    let epoch = run_local(&wasm, &path, SandboxLimits::default(), Metering::Epoch).unwrap();
    assert!(fuel.usage.fuel > 0);
    assert_eq!(epoch.usage.fuel, 0);
    assert_eq!(epoch.members, fuel.members, "the same answer either way");
}

#[test]
fn a_failing_call_reports_what_it_used() {
    let limits = SandboxLimits {
        fuel: 1_000,
        ..SandboxLimits::default()
    };
    let base = sandbox();
    let module = base.load(range()).unwrap();
    let sandbox = base.with_limits(limits).unwrap();
    let request = scenario().to_request("range").unwrap();
    match simulate(&sandbox, &module, "range", None, &request) {
        Err(SimulateError::Call(failed)) => {
            let (error, usage) = (&failed.error, &failed.usage);
            assert!(
                matches!(error, CallError::OutOfFuel { budget: 1_000 }),
                "{error}"
            );
            assert!(usage.input_bytes > 0, "the request was written: {usage:?}");
        }
        other => panic!("expected an out-of-fuel failure, got {other:?}"),
    }
}

#[test]
fn toml_scenarios_read_like_json_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("group.toml");
    std::fs::write(
        &path,
        r#"
        [[topics]]
        name = "t"
        partitions = 2
        [[members]]
        id = "m"
        subscription = ["t"]
        current = { t = [1] }
        "#,
    )
    .unwrap();
    let scenario = Scenario::from_file(&path).unwrap();
    assert_eq!(scenario.members[0].current["t"], [1]);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"topics\": [], \"member\": []}").unwrap();
    let error = Scenario::from_file(&bad).unwrap_err().to_string();
    assert!(
        error.contains("bad.json") && error.contains("member"),
        "{error}"
    );
}

#[test]
fn the_documented_scenario_example_is_valid() {
    let doc = include_str!("../../../docs/operating.md");
    let section = &doc[doc.find("## Scenario files").expect("the section")..];
    let start = section.find("```json\n").expect("a JSON example") + "```json\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let scenario: Scenario = serde_json::from_str(example).expect("the example parses");
    let request = scenario.to_request("range").expect("the example is valid");
    assert_eq!(request.members.len(), 3);
    assert_eq!(request.topics[0].partition_racks.len(), 6);
}
