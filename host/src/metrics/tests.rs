//! The metrics move with the notices and responses that feed them, and the text a scrape sees
//! names them as documented.

use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, HeartbeatResponse, ResponseKind};

use super::*;
use crate::coordinator::RebalanceReason;

/// The value of the sample `name{labels}` in `text`, if present (labels in registration
/// order, as the encoder writes them).
fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.trim().parse().ok())
}

#[test]
fn kafka_responses_count_requests_and_each_error_code() {
    let metrics = Metrics::new();
    let ok = ResponseKind::Heartbeat(HeartbeatResponse::default());
    let rebalancing = ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(27));
    metrics.kafka_response(ApiKey::Heartbeat, &ok);
    metrics.kafka_response(ApiKey::Heartbeat, &rebalancing);
    metrics.kafka_response(ApiKey::Heartbeat, &rebalancing);
    let text = metrics.encode();
    assert_eq!(
        sample(
            &text,
            "assignor_host_kafka_requests_total{api=\"Heartbeat\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "assignor_host_kafka_errors_total{api=\"Heartbeat\",error=\"REBALANCE_IN_PROGRESS\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            "assignor_host_kafka_errors_total{api=\"Heartbeat\",error=\"NONE\"}"
        ),
        Some(1.0)
    );
}

#[test]
fn assignor_notices_count_calls_by_outcome_and_observe_duration_and_fuel() {
    let metrics = Metrics::new();
    let finished = |outcome, fuel| Notice::AssignorFinished {
        group: Arc::from("g"),
        generation: 3,
        module: "sticky".into(),
        version: Some(2),
        outcome,
        duration_us: 250,
        fuel,
        fallback: false,
    };
    metrics.notice(&finished(RunOutcome::Ok, 40_000));
    metrics.notice(&finished(RunOutcome::Failed("trap".into()), 10));
    metrics.notice(&finished(RunOutcome::Stale, 0));
    let text = metrics.encode();
    let calls = |outcome: &str| {
        sample(
            &text,
            &format!(
                "assignor_host_assignor_calls_total{{module=\"sticky\",version=\"2\",\
                 outcome=\"{outcome}\"}}"
            ),
        )
    };
    assert_eq!(calls("ok"), Some(1.0), "{text}");
    assert_eq!(calls("failed"), Some(1.0));
    assert_eq!(calls("stale"), Some(1.0));
    // A stale result says nothing about how long the module takes: not observed.
    assert_eq!(
        sample(
            &text,
            "assignor_host_assignor_duration_seconds_count{module=\"sticky\",version=\"2\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            "assignor_host_assignor_fuel_sum{module=\"sticky\",version=\"2\"}"
        ),
        Some(40_010.0)
    );
}

#[test]
fn rebalances_are_counted_by_group_and_bounded_reason() {
    let metrics = Metrics::new();
    for reason in [
        RebalanceReason::MemberAdded {
            member: Arc::from("consumer-1-abc"),
        },
        RebalanceReason::SessionExpired {
            member: Arc::from("consumer-2"),
        },
        RebalanceReason::Operator {
            why: Some("new module version".into()),
        },
    ] {
        metrics.notice(&Notice::RebalanceStarted {
            group: Arc::from("orders"),
            generation: 1,
            reason,
        });
    }
    let text = metrics.encode();
    for category in ["member_joined", "session_expired", "operator"] {
        let line =
            format!("assignor_host_rebalances_total{{group=\"orders\",reason=\"{category}\"}}");
        assert_eq!(sample(&text, &line), Some(1.0), "{line}\n{text}");
    }
    assert!(
        !text.contains("consumer-1-abc"),
        "member ids never become labels"
    );
}

#[test]
fn reason_categories_follow_the_coordinators_wording() {
    let m = || Arc::from("m-1");
    let cases = [
        (
            RebalanceReason::MemberAdded { member: m() },
            "adding new member m-1",
            "member_joined",
        ),
        (
            RebalanceReason::MemberJoinedDuringRebalance { member: m() },
            "member m-1 joined during PreparingRebalance",
            "member_joined",
        ),
        (
            RebalanceReason::ProtocolsChanged { member: m() },
            "member m-1 changed its protocols",
            "member_rejoined",
        ),
        (
            RebalanceReason::LeaderRejoined { member: m() },
            "leader m-1 rejoined",
            "member_rejoined",
        ),
        (
            RebalanceReason::StaticMemberReplaced { member: m() },
            "static member m-1 replaced during CompletingRebalance",
            "static_member",
        ),
        (
            RebalanceReason::MembersLeft {
                members: vec![(m(), None)],
            },
            "members left: m-1 (not provided)",
            "member_left",
        ),
        (
            RebalanceReason::SessionExpired {
                member: Arc::from("left-over-1"),
            },
            "member left-over-1 session expired",
            "session_expired",
        ),
        (
            RebalanceReason::SyncExpired,
            "members did not send SyncGroup in time",
            "sync_expired",
        ),
        (
            RebalanceReason::PartitionCountChanged {
                topic: "t".into(),
                before: 1,
                after: 2,
            },
            "partition count of topic t changed from 1 to 2",
            "metadata_changed",
        ),
        (
            RebalanceReason::AssignorFollowUp,
            "the assignor asked for a rebalance",
            "assignor_requested",
        ),
        (
            RebalanceReason::Operator { why: None },
            "operator request",
            "operator",
        ),
        (
            RebalanceReason::Stabilized {
                joined: 6,
                left: 6,
                waited_ms: 21_000,
            },
            "membership settled after 21000 ms (6 joined, 6 left)",
            "stabilized",
        ),
    ];
    for (reason, text, category) in cases {
        assert_eq!(reason.to_string(), text);
        assert_eq!(reason.category(), category, "{reason}");
    }
}

#[test]
fn group_gauges_are_recomputed_from_the_current_list() {
    let metrics = Metrics::new();
    let summary = |id: &str, state: &str, members| GroupSummary {
        group_id: id.into(),
        group_type: "classic",
        state: state.to_owned(),
        protocol_type: Some("consumer".into()),
        members,
        strategy: Some("range".into()),
    };
    metrics.refresh_groups(&[
        summary("a", "Stable", 3),
        summary("b", "Stable", 2),
        summary("c", "Empty", 0),
    ]);
    metrics.refresh_groups(&[summary("a", "Stable", 4)]);
    let text = metrics.encode();
    assert_eq!(
        sample(&text, "assignor_host_groups{state=\"Stable\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "assignor_host_groups{state=\"Empty\"}"),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, "assignor_host_group_members{group=\"a\"}"),
        Some(4.0)
    );
    assert_eq!(
        sample(&text, "assignor_host_group_members{group=\"b\"}"),
        None
    );
    assert_eq!(sample(&text, "assignor_host_members"), Some(4.0));
}

#[test]
fn a_cluster_nodes_gauges_show_its_shards_and_lease_and_a_lone_host_shows_none() {
    let metrics = Metrics::new();
    assert!(
        !metrics.encode().contains("assignor_host_cluster_"),
        "a node of no cluster has no cluster series"
    );
    metrics.refresh_cluster(ClusterSample {
        cluster: "payments".into(),
        held: 17,
        serving: 12,
        leased: true,
        lease_left_ms: 6_500,
        nodes: 3,
        unreachable: 1,
        rejected_records: 2,
    });
    let text = metrics.encode();
    let at = |name: &str| {
        sample(
            &text,
            &format!("assignor_host_{name}{{cluster=\"payments\"}}"),
        )
    };
    assert_eq!(at("cluster_shards_held"), Some(17.0), "{text}");
    assert_eq!(at("cluster_shards_serving"), Some(12.0));
    assert_eq!(at("cluster_leased"), Some(1.0));
    assert_eq!(at("cluster_lease_left_seconds"), Some(6.5));
    assert_eq!(at("cluster_nodes"), Some(3.0));
    assert_eq!(at("cluster_nodes_unreachable"), Some(1.0));
    assert_eq!(at("cluster_module_records_rejected"), Some(2.0));
    metrics.refresh_cluster(ClusterSample {
        cluster: "payments".into(),
        ..ClusterSample::default()
    });
    let text = metrics.encode();
    let at = |name: &str| {
        sample(
            &text,
            &format!("assignor_host_{name}{{cluster=\"payments\"}}"),
        )
    };
    assert_eq!(at("cluster_leased"), Some(0.0), "the lease ran out");
    assert_eq!(at("cluster_shards_serving"), Some(0.0));
}
