//! The saved records' bytes: each group type round trips at the current version, version 1
//! rows (hosts before records were versioned) read as the same groups, and bytes from a newer
//! host or of no known shape are refused by name.

use serde_json::json;

use super::*;

fn consumer_group() -> SavedGroup {
    SavedGroup::Consumer(ConsumerGroupRecord {
        group_id: "k".into(),
        group_epoch: 7,
        assignment_epoch: 6,
        members: vec![ConsumerMemberRecord {
            member_id: "m-1".into(),
            instance_id: None,
            rack_id: Some("r1".into()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 45_000,
            topic_names: vec!["t".into()],
            topic_regex: None,
            server_assignor: Some("uniform".into()),
            member_epoch: 6,
            previous_member_epoch: 5,
            state: "stable".into(),
            assigned: vec![("t".into(), vec![0, 1])],
            pending_revocation: Vec::new(),
            target: vec![("t".into(), vec![0, 1])],
            classic: None,
        }],
        topics: vec![("t".into(), uuid::Uuid::from_u128(42), 2)],
        assignor: AssignorRecord {
            module_state: Some(ModuleState {
                strategy: "uniform".into(),
                bytes: serde_bytes::ByteBuf::from(vec![1, 2]),
            }),
            ..AssignorRecord::default()
        },
    })
}

fn classic_group() -> SavedGroup {
    SavedGroup::Classic(ClassicGroupRecord {
        group_id: "g".into(),
        generation_id: 3,
        protocol_type: Some("consumer".into()),
        protocol_key: Some("range".into()),
        strategy: Some("range".into()),
        pinned_version: Some(2),
        cooperative: false,
        leader_id: Some("c-1".into()),
        topic_counts: vec![("t".into(), 3)],
        members: vec![ClassicMemberRecord {
            member_id: "c-1".into(),
            group_instance_id: Some("i-1".into()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 30_000,
            session_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), serde_bytes::ByteBuf::from(vec![0, 1, 2]))],
            protocol_name: Some("range".into()),
            assignment: serde_bytes::ByteBuf::from(vec![0, 1]),
            given: vec![("t".into(), vec![0, 1, 2])],
        }],
        deferred: Some(DeferredRebalance { joined: 1, left: 2 }),
        assignor: AssignorRecord::default(),
    })
}

/// The version-1 row of [`classic_group`]: one map, the assignor's fields at its top level.
fn classic_v1() -> serde_json::Value {
    json!({
        "group_id": "g", "generation_id": 3, "protocol_type": "consumer",
        "protocol_key": "range", "strategy": "range", "pinned_version": 2,
        "cooperative": false, "leader_id": "c-1", "topic_counts": [["t", 3]],
        "members": [{
            "member_id": "c-1", "group_instance_id": "i-1", "client_id": "c",
            "client_host": "/127.0.0.1", "rebalance_timeout_ms": 30000,
            "session_timeout_ms": 10000, "protocol_type": "consumer",
            "protocols": [["range", [0, 1, 2]]], "protocol_name": "range",
            "assignment": [0, 1], "given": [["t", [0, 1, 2]]]
        }],
        "last_run": null, "history": [], "consumer": null, "deferred": {"joined": 1, "left": 2}
    })
}

fn bytes(value: &serde_json::Value) -> Vec<u8> {
    rmp_serde::to_vec_named(value).unwrap()
}

#[test]
fn each_group_type_reads_back_as_written_with_the_current_version_first() {
    for group in [classic_group(), consumer_group()] {
        let written = group.encode().unwrap();
        let probe: Version = rmp_serde::from_slice(&written).unwrap();
        assert_eq!(probe.version, Some(VERSION), "{group:?}");
        assert_eq!(SavedGroup::decode(&written).unwrap(), group);
    }
}

#[test]
fn a_version_1_classic_row_reads_as_the_same_group() {
    assert_eq!(
        SavedGroup::decode(&bytes(&classic_v1())).unwrap(),
        classic_group()
    );
}

/// Version 1 gained fields over time (`serde(default)`): a row from before each reads with
/// none of it.
#[test]
fn a_version_1_row_written_before_runs_history_and_module_state_were_kept_reads_with_none() {
    let mut row = classic_v1();
    let fields = row.as_object_mut().unwrap();
    for added in ["last_run", "history", "consumer", "deferred"] {
        assert!(fields.remove(added).is_some(), "{added}");
    }
    let SavedGroup::Classic(expected) = classic_group() else {
        unreachable!()
    };
    let read = SavedGroup::decode(&bytes(&row)).unwrap();
    assert_eq!(
        read,
        SavedGroup::Classic(ClassicGroupRecord {
            deferred: None,
            ..expected
        })
    );
}

/// Version 1 kept a consumer group in its `consumer` part, the classic fields left empty.
#[test]
fn a_version_1_consumer_row_reads_as_a_consumer_group_record() {
    let SavedGroup::Consumer(expected) = consumer_group() else {
        unreachable!()
    };
    let mut members = serde_json::to_value(&expected.members).unwrap();
    // A topic id is 16 bytes in MessagePack (a string only in JSON).
    let id: Vec<u8> = uuid::Uuid::from_u128(42).as_bytes().to_vec();
    let topics = json!([["t", id, 2]]);
    let row = json!({
        "group_id": "k", "generation_id": 7, "protocol_type": "consumer",
        "protocol_key": null, "strategy": null, "pinned_version": null, "cooperative": false,
        "leader_id": null, "topic_counts": [], "members": [],
        "last_run": null, "history": [],
        "consumer": {
            "group_epoch": 7, "assignment_epoch": 6, "members": members.take(), "topics": topics
        },
        "module_state": {"strategy": "uniform", "bytes": [1, 2]},
        "held": []
    });
    assert_eq!(
        SavedGroup::decode(&bytes(&row)).unwrap(),
        SavedGroup::Consumer(expected)
    );
}

#[test]
fn a_record_of_a_newer_host_or_of_no_known_shape_is_refused_by_name() {
    let newer = bytes(&json!({"version": VERSION + 1, "group": {"Streams": {}}}));
    let refused = SavedGroup::decode(&newer).unwrap_err().to_string();
    assert!(
        refused.contains("newer host") && refused.contains(&(VERSION + 1).to_string()),
        "{refused}"
    );
    let unknown = SavedGroup::decode(&bytes(
        &json!({"version": VERSION, "group": {"Streams": {}}}),
    ))
    .unwrap_err()
    .to_string();
    assert!(unknown.contains("version 2"), "{unknown}");
    let garbage = SavedGroup::decode(&[0xc1, 0x00]).unwrap_err().to_string();
    assert!(garbage.contains("not a group record"), "{garbage}");
}
