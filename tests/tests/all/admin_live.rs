//! The admin API against live groups over real sockets: a pushed version changes a group's
//! assignment only at its next rebalance (triggered through the API), activating the old
//! version brings the old assignment back, and `/metrics` moves with Kafka requests,
//! rebalances, assignor calls and a failing module.

use assignor_host::builtins::builtin;
use assignor_host_tests::TestHost;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::admin_support::*;

async fn host() -> TestHost {
    TestHost::with_config(|c| {
        c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
            name: "orders".into(),
            partitions: 4,
            partition_racks: Vec::new(),
        }];
        c.coordinator.initial_rebalance_delay_ms = 0;
    })
    .await
}

fn range() -> &'static [u8] {
    builtin("range").expect("built in").wasm
}

fn roundrobin() -> &'static [u8] {
    builtin("roundrobin").expect("built in").wasm
}

#[tokio::test]
async fn a_new_version_applies_at_the_next_rebalance_and_activate_restores_the_old_one() {
    let host = host().await;
    let admin = Admin::new(&host);
    // Version 1 of `my-strategy` deals like Kafka's range, version 2 like roundrobin: on 4
    // partitions and 2 members, [0,1]/[2,3] against [0,2]/[1,3].
    assert_eq!(admin.push("my-strategy", range()).await["version"], 1);
    let (mut members, assigned) = two_members(&host, "app", "my-strategy").await;
    assert_eq!(assigned, [orders(&[0, 1]), orders(&[2, 3])]);
    let (_, detail) = admin.get("/v1/groups/app").await;
    assert_eq!(detail["strategy"], "my-strategy");
    assert_eq!(detail["module_version"], 1);

    let pushed = admin.push("my-strategy", roundrobin()).await;
    assert_eq!(
        (pushed["version"].clone(), pushed["active"].clone()),
        (json!(2), json!(true))
    );
    // An upload forces nothing: members keep heartbeating in their generation.
    for member in &mut members {
        assert_eq!(member.heartbeat().await, 0, "no rebalance after an upload");
    }
    let (_, detail) = admin.get("/v1/groups/app").await;
    assert_eq!(detail["module_version"], 1);

    // A simulation of version 2 on the live members shows what the rebalance will do, and
    // applies nothing.
    let (status, report) = admin
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"module": "my-strategy", "group": "app"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["version"], 2);
    assert_eq!(
        report["members"][0]["assignment"],
        json!({"orders": [0, 2]})
    );
    assert_eq!(
        report["members"][1]["assignment"],
        json!({"orders": [1, 3]})
    );
    assert_eq!(report["movement"]["moved"], 2);
    assert_eq!(report["movement"]["kept"], 2);
    for member in &mut members {
        assert_eq!(
            member.heartbeat().await,
            0,
            "a simulation starts no rebalance"
        );
    }

    let (status, answer) = admin
        .json(
            Method::POST,
            "/v1/groups/app/rebalance",
            json!({"reason": "try v2"}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let assigned = rejoin(&mut members).await;
    assert_eq!(
        assigned,
        [orders(&[0, 2]), orders(&[1, 3])],
        "version 2 deals round-robin"
    );
    let (_, detail) = admin.get("/v1/groups/app").await;
    assert_eq!(detail["module_version"], 2);
    let last = detail["history"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["module_version"], 2);
    assert_eq!(last["reason"], "operator request: try v2");
    assert_eq!(
        last["partitions_moved"], 2,
        "partitions 1 and 2 changed owner"
    );

    let (status, _) = admin
        .json(
            Method::POST,
            "/v1/modules/my-strategy/activate",
            json!({"version": 1}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = admin
        .send(Method::POST, "/v1/groups/app/rebalance", None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let assigned = rejoin(&mut members).await;
    assert_eq!(
        assigned,
        [orders(&[0, 1]), orders(&[2, 3])],
        "version 1 is back"
    );
    let (_, detail) = admin.get("/v1/groups/app").await;
    assert_eq!(detail["module_version"], 1);
    host.stop().await;
}

/// A module that answers every group with no assignments, and traps when its input contains
/// the bytes `explode` (a parameter name, say): it passes the upload's smoke call (which has
/// no parameters) and fails on a group configured with that parameter.
fn exploding_module() -> Vec<u8> {
    // `{"assignments": []}` in MessagePack: fixmap(1), fixstr(11) "assignments", fixarray(0).
    let wat = r#"(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\81\abassignments\90")
  (func (export "assignor_abi_version") (result i32) (i32.const 1))
  (func (export "assignor_alloc") (param $len i32) (result i32)
    (local $need i32)
    (local.set $need
      (i32.sub
        (i32.shr_u (i32.add (local.get $len) (i32.const 131071)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then (drop (memory.grow (local.get $need)))))
    (i32.const 65536))
  (func (export "assignor_assign") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32)
    (block $done
      (loop $scan
        (br_if $done (i32.gt_u (i32.add (local.get $i) (i32.const 8)) (local.get $len)))
        ;; the 7 bytes "explode", little-endian
        (if (i64.eq
              (i64.and
                (i64.load (i32.add (local.get $ptr) (local.get $i)))
                (i64.const 0x00ffffffffffffff))
              (i64.const 0x0065646f6c707865))
          (then unreachable))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (i64.const 14)))"#;
    wat::parse_str(wat).expect("the exploding module's WAT parses")
}

#[tokio::test]
async fn metrics_move_with_requests_rebalances_assignor_calls_and_failures() {
    let host = host().await;
    let admin = Admin::new(&host);
    assert_eq!(admin.push("boom", &exploding_module()).await["version"], 1);
    let (mut members, assigned) = two_members(&host, "metered", "range").await;
    assert_eq!(assigned, [orders(&[0, 1]), orders(&[2, 3])]);

    let before = admin.scrape().await;
    for _ in 0..3 {
        assert_eq!(members[0].heartbeat().await, 0);
    }
    let after = admin.scrape().await;
    let heartbeats = "assignor_host_kafka_requests_total{api=\"Heartbeat\"}";
    assert_eq!(
        sample(&after, heartbeats) - sample(&before, heartbeats),
        3.0
    );
    let none = "assignor_host_kafka_errors_total{api=\"Heartbeat\",error=\"NONE\"}";
    assert_eq!(sample(&after, none) - sample(&before, none), 3.0);
    let member_id_required =
        "assignor_host_kafka_errors_total{api=\"JoinGroup\",error=\"MEMBER_ID_REQUIRED\"}";
    assert_eq!(
        sample(&after, member_id_required),
        2.0,
        "one per member's first join"
    );
    // Generation 1 (a alone) and generation 2 (both) were computed by the built-in range.
    let range_ok =
        "assignor_host_assignor_calls_total{module=\"range\",version=\"0\",outcome=\"ok\"}";
    assert_eq!(sample(&after, range_ok), 2.0, "{after}");
    assert_eq!(
        sample(
            &after,
            "assignor_host_assignor_duration_seconds_count{module=\"range\",version=\"0\"}"
        ),
        2.0
    );
    assert!(
        sample(
            &after,
            "assignor_host_assignor_fuel_sum{module=\"range\",version=\"0\"}"
        ) > 0.0
    );
    assert!(
        sample(
            &after,
            "assignor_host_rebalances_total{group=\"metered\",reason=\"member_joined\"}"
        ) >= 1.0
    );
    assert_eq!(
        sample(&after, "assignor_host_groups{state=\"Stable\"}"),
        1.0
    );
    assert_eq!(
        sample(&after, "assignor_host_group_members{group=\"metered\"}"),
        2.0
    );
    assert_eq!(
        sample(
            &after,
            "assignor_host_module_active_version{module=\"boom\"}"
        ),
        1.0
    );

    // The operator points the group at `boom` with the parameter that makes it trap: the
    // group still gets an assignment (the fallback, range), and the failure is counted.
    let (status, body) = admin
        .json(
            Method::PUT,
            "/v1/groups/metered/config",
            json!({"strategy": "boom", "params": {"explode": "1"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = admin
        .send(Method::POST, "/v1/groups/metered/rebalance", None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let assigned = rejoin(&mut members).await;
    assert_eq!(
        assigned,
        [orders(&[0, 1]), orders(&[2, 3])],
        "the fallback assigned"
    );

    let failed = admin.scrape().await;
    let boom_failed =
        "assignor_host_assignor_calls_total{module=\"boom\",version=\"1\",outcome=\"failed\"}";
    assert_eq!(sample(&failed, boom_failed), 1.0, "{failed}");
    assert_eq!(sample(&failed, range_ok), 3.0, "the fallback run");
    assert_eq!(
        sample(
            &failed,
            "assignor_host_rebalances_total{group=\"metered\",reason=\"operator\"}"
        ),
        1.0
    );
    let (_, status) = admin.get("/v1/modules/boom/status").await;
    let recent = &status["versions"][0]["recent_failures"][0];
    assert_eq!(recent["group"], "metered");
    assert_eq!(recent["reason"], "trap");
    let (_, detail) = admin.get("/v1/groups/metered").await;
    assert_eq!(detail["last_run"]["fallback_used"], true);
    host.stop().await;
}

#[tokio::test]
async fn a_group_describe_lists_each_partitions_holder_and_committed_offset() {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;

    let host = host().await;
    let admin = Admin::new(&host);
    let (mut members, assigned) = two_members(&host, "lagging", "range").await;
    assert_eq!(assigned, [orders(&[0, 1]), orders(&[2, 3])]);
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("lagging")))
        .with_generation_id_or_member_epoch(members[0].generation)
        .with_member_id(StrBytes::from_string(members[0].id.clone()))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("orders")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(1)
                        .with_committed_offset(42),
                ]),
        ]);
    let answer = members[0].client.call(&commit, 8).await.unwrap();
    assert_eq!(answer.topics[0].partitions[0].error_code, 0);

    let (status, detail) = admin.get("/v1/groups/lagging").await;
    assert_eq!(status, StatusCode::OK);
    let lines = detail["offsets"].as_array().expect("offsets").clone();
    let line = |p: i64| lines.iter().find(|l| l["partition"] == p).cloned().unwrap();
    assert_eq!(lines.len(), 4, "every held partition: {lines:?}");
    assert_eq!(line(1)["committed"], 42);
    assert_eq!(line(1)["member"], json!(members[0].id));
    assert_eq!(line(2)["member"], json!(members[1].id));
    assert_eq!(
        line(0)["committed"],
        serde_json::Value::Null,
        "never committed"
    );
    // Standalone the host stores no records: no end, so no lag.
    assert_eq!(line(1)["end"], serde_json::Value::Null);
    assert_eq!(line(1)["lag"], serde_json::Value::Null);
}

/// Issue 14, defect 6: a restart used to forget each group's module version, last assignor
/// run and rebalance history (docs/coordinator.md, "Standalone": a restart loses nothing).
#[tokio::test]
async fn a_restart_keeps_each_groups_module_version_last_run_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |dir: std::path::PathBuf| {
        TestHost::with_config(move |c| {
            c.data_dir = dir;
            c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
                name: "orders".into(),
                partitions: 4,
                partition_racks: Vec::new(),
            }];
            c.coordinator.initial_rebalance_delay_ms = 0;
        })
    };
    let host = in_dir(dir.path().to_path_buf()).await;
    let admin = Admin::new(&host);
    assert_eq!(admin.push("my-strategy", range()).await["version"], 1);
    let (mut members, _) = two_members(&host, "app", "my-strategy").await;
    let (status, _) = admin
        .json(
            Method::POST,
            "/v1/groups/app/rebalance",
            json!({"reason": "before the restart"}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    rejoin(&mut members).await;
    let (_, before) = admin.get("/v1/groups/app").await;
    assert_eq!(before["module_version"], 1, "{before}");
    assert_eq!(before["last_run"]["module"], "my-strategy", "{before}");
    let history = before["history"].as_array().expect("history").clone();
    assert!(history.len() >= 2, "{before}");
    assert_eq!(
        history.last().unwrap()["reason"],
        "operator request: before the restart"
    );
    drop(members);
    host.stop().await;

    let host = in_dir(dir.path().to_path_buf()).await;
    let (status, after) = Admin::new(&host).get("/v1/groups/app").await;
    assert_eq!(status, StatusCode::OK, "{after}");
    for field in ["generation", "module_version", "last_run", "history"] {
        assert_eq!(after[field], before[field], "{field} after the restart");
    }
    host.stop().await;
}
