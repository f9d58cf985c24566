//! The host's differences from Kafka, on purpose (docs/coordinator.md, "How the host
//! behaves"): the synthetic leader, per-member protocol names, strategy choice, the fallback
//! chain, host-started rebalances and the ABI request. Cooperative safety is in
//! `host_cooperative.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use assignor_sdk::{AssignResponse, MemberAssignment, Topic, TopicPartitions};
use kafka_protocol::ResponseError;

use super::context::*;
use crate::coordinator::view::Topics;
use crate::coordinator::{
    AdminError, Effect, Event, GroupConfig, GroupState, HOST_LEADER, Notice, RunOutcome, TimerKey,
};

pub(super) fn notices_of_run(ctx: &TestContext) -> Vec<(String, RunOutcome, bool)> {
    ctx.notices
        .iter()
        .filter_map(|n| match n {
            Notice::AssignorFinished {
                module,
                outcome,
                fallback,
                ..
            } => Some((module.clone(), outcome.clone(), *fallback)),
            _ => None,
        })
        .collect()
}

/// Joins members with the given protocol lists and completes the join phase.
pub(super) fn joined(
    ctx: &mut TestContext,
    lists: &[Join],
) -> Vec<kafka_protocol::messages::JoinGroupResponse> {
    let replies: Vec<_> = lists
        .iter()
        .map(|j| ctx.join_dynamic(j.clone()).1)
        .collect();
    ctx.settle(&replies);
    replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect()
}

pub(super) fn sync_all(
    ctx: &mut TestContext,
    rs: &[kafka_protocol::messages::JoinGroupResponse],
) -> Vec<kafka_protocol::messages::SyncGroupResponse> {
    let replies: Vec<_> = rs
        .iter()
        .map(|r| {
            let sync = Sync::new(G, &r.member_id, r.generation_id)
                .protocol(Some("consumer"), r.protocol_name.as_deref());
            ctx.sync(&sync)
        })
        .collect();
    replies
        .iter()
        .map(|r| ctx.sync_response(*r).clone())
        .collect()
}

#[test]
fn host_leader_is_synthetic_and_every_member_takes_the_follower_path() {
    let mut ctx = TestContext::new();
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G),
            Join::new(G).version(5),
            Join::new(G).version(7),
        ],
    );
    for r in &rs {
        assert_eq!(r.leader.as_str(), HOST_LEADER);
        assert!(r.members.is_empty());
        assert!(!ctx.has_member(G, HOST_LEADER));
    }
    let syncs = sync_all(&mut ctx, &rs);
    let total: usize = syncs
        .iter()
        .map(|s| assigned(&s.assignment)["t"].len())
        .sum();
    assert_eq!(total, 6, "the host computed the whole assignment");
}

#[test]
fn host_each_member_gets_back_its_own_spelling_of_the_strategy() {
    let mut ctx = TestContext::new();
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).names(&["RoundRobinAssigner"]),
            Join::new(G).names(&["roundrobin", "range"]),
        ],
    );
    assert_eq!(rs[0].protocol_name.as_deref(), Some("RoundRobinAssigner"));
    assert_eq!(rs[1].protocol_name.as_deref(), Some("roundrobin"));
    assert_eq!(ctx.runs.last().unwrap().strategy, "roundrobin");
    let syncs = sync_all(&mut ctx, &rs);
    assert_eq!(
        syncs[0].protocol_name.as_deref(),
        Some("RoundRobinAssigner"),
        "echoed in SyncGroup v5"
    );
    assert_eq!(syncs[1].protocol_name.as_deref(), Some("roundrobin"));
}

#[test]
fn host_vote_is_restricted_to_strategies_with_a_module() {
    let mut ctx = TestContext::new();
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).names(&["custom", "range"]),
            Join::new(G).names(&["custom", "range"]),
        ],
    );
    assert!(
        rs.iter()
            .all(|r| r.protocol_name.as_deref() == Some("range"))
    );
    assert!(rs.iter().all(|r| r.leader.as_str() == HOST_LEADER));
}

#[test]
fn host_relays_a_client_leader_when_no_module_serves_the_common_protocol() {
    let mut ctx = TestContext::new();
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).names(&["custom"]),
            Join::new(G).names(&["custom"]),
        ],
    );
    assert_ne!(rs[0].leader.as_str(), HOST_LEADER);
    assert!(
        rs.iter()
            .any(|r| r.leader == r.member_id && r.members.len() == 2)
    );
    assert!(ctx.runs.is_empty(), "no assignor runs in relay mode");
    assert_eq!(
        ctx.coordinator.group_detail(ctx.now, G).unwrap().mode,
        "relay"
    );
}

#[test]
fn host_operator_override_assigns_while_members_keep_their_voted_spelling() {
    let mut ctx = TestContext::new();
    let effects = ctx
        .coordinator
        .set_group_config(
            G,
            GroupConfig {
                strategy: Some("RoundRobinAssigner".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(
        matches!(&effects[0], Effect::PersistGroupConfig { config, .. } if config.strategy.as_deref() == Some("roundrobin"))
    );
    let rs = joined(&mut ctx, &[Join::new(G), Join::new(G)]);
    assert_eq!(ctx.runs.last().unwrap().strategy, "roundrobin");
    assert!(
        rs.iter()
            .all(|r| r.protocol_name.as_deref() == Some("range"))
    );
    let syncs = sync_all(&mut ctx, &rs);
    // Round robin interleaves: each member gets every other partition.
    let a = &assigned(&syncs[0].assignment)["t"];
    assert!(a.windows(2).all(|w| w[1] - w[0] == 2), "{a:?}");
}

#[test]
fn host_override_refuses_an_unknown_strategy_and_a_pin_without_strategy() {
    let mut ctx = TestContext::new();
    let err = ctx
        .coordinator
        .set_group_config(
            G,
            GroupConfig {
                strategy: Some("nope".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err, AdminError::UnknownStrategy("nope".into()));
    let err = ctx
        .coordinator
        .set_group_config(
            G,
            GroupConfig {
                pinned_version: Some(2),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err, AdminError::PinWithoutStrategy);
}

#[test]
fn host_stale_assignor_result_is_dropped() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hold;
    let (_, a) = ctx.join_dynamic(Join::new(G));
    ctx.advance(3_000);
    let first = ctx.held.remove(0);
    let ra = ctx.join_response(a).clone();
    // A new member: generation 1's run is obsolete.
    let (_, b) = ctx.join_dynamic(Join::new(G));
    ctx.join(&Join::new(G).member(&ra.member_id));
    assert_eq!(ctx.generation(G), 2);
    let second = ctx.held.remove(0);
    ctx.release(&first);
    ctx.assert_state(G, GroupState::CompletingRebalance);
    assert!(
        notices_of_run(&ctx)
            .iter()
            .any(|(_, o, _)| *o == RunOutcome::Stale)
    );
    ctx.release(&second);
    ctx.assert_state(G, GroupState::Stable);
    assert_eq!(ctx.join_response(b).generation_id, 2);
}

#[test]
fn host_failing_module_is_answered_by_the_fallback() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Script(Box::new(|run| {
        if run.strategy == "roundrobin" {
            Err("trap: unreachable".into())
        } else {
            native(&run.strategy, &run.request)
        }
    }));
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).names(&["roundrobin"]),
            Join::new(G).names(&["roundrobin"]),
        ],
    );
    let syncs = sync_all(&mut ctx, &rs);
    assert!(syncs.iter().all(|s| s.error_code == 0));
    let sizes: Vec<usize> = syncs
        .iter()
        .map(|s| assigned(&s.assignment)["t"].len())
        .collect();
    assert_eq!(sizes, vec![3, 3]);
    let runs = notices_of_run(&ctx);
    assert_eq!(
        runs[0],
        (
            "roundrobin".into(),
            RunOutcome::Failed("trap: unreachable".into()),
            false
        )
    );
    assert_eq!(runs[1], ("range".into(), RunOutcome::Ok, true));
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert!(detail.history.last().unwrap().fallback_used);
    // Still the member's own protocol name, whatever computed the assignment.
    assert!(
        syncs
            .iter()
            .all(|s| s.protocol_name.as_deref() == Some("roundrobin"))
    );
}

#[test]
fn host_stuck_module_times_out_and_the_fallback_answers_within_the_rebalance_timeout() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hang("roundrobin".into());
    let rs = joined(
        &mut ctx,
        &[Join::new(G).names(&["roundrobin"]).rebalance(20_000)],
    );
    let parked = ctx.sync(
        &Sync::new(G, &rs[0].member_id, rs[0].generation_id)
            .protocol(Some("consumer"), Some("roundrobin")),
    );
    let started = ctx.now;
    ctx.advance(9_999);
    assert!(!ctx.answered(parked));
    ctx.advance(1); // half the rebalance timeout
    assert_eq!(ctx.sync_response(parked).error_code, 0);
    assert!(ctx.now - started < 20_000);
    assert!(
        notices_of_run(&ctx)
            .iter()
            .any(|(m, o, _)| m == "roundrobin" && *o == RunOutcome::TimedOut)
    );
    let late = ctx.held.remove(0);
    ctx.release(&late);
    assert!(
        notices_of_run(&ctx)
            .iter()
            .any(|(_, o, _)| *o == RunOutcome::Stale),
        "late result dropped"
    );
}

#[test]
fn host_when_the_fallback_fails_too_the_native_range_assigns() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Fail("out of fuel".into());
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).names(&["roundrobin"]),
            Join::new(G).names(&["roundrobin"]),
        ],
    );
    let syncs = sync_all(&mut ctx, &rs);
    let mut all: Vec<i32> = syncs
        .iter()
        .flat_map(|s| assigned(&s.assignment)["t"].clone())
        .collect();
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(notices_of_run(&ctx).last().unwrap().0, "native-range");
}

#[test]
fn host_partition_count_change_starts_a_rebalance() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    // A topic nobody subscribes to changes: nothing happens.
    let mut topics = default_topics().by_name().clone();
    topics.get_mut("u").unwrap().partition_count = 9;
    ctx.event(Event::TopicsChanged(Arc::new(Topics::with_derived_ids(
        topics.clone(),
    ))));
    ctx.assert_state(G, GroupState::Stable);
    topics.get_mut("t").unwrap().partition_count = 8;
    ctx.event(Event::TopicsChanged(Arc::new(Topics::with_derived_ids(
        topics,
    ))));
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[0], generation),
        ResponseError::RebalanceInProgress.code()
    );
    let ra = ctx.join(&Join::new(G).member(&ids[0]));
    let rb = ctx.join(&Join::new(G).member(&ids[1]));
    let rs = vec![ctx.join_response(ra).clone(), ctx.join_response(rb).clone()];
    let syncs = sync_all(&mut ctx, &rs);
    let total: usize = syncs
        .iter()
        .map(|s| assigned(&s.assignment)["t"].len())
        .sum();
    assert_eq!(total, 8);
}

#[test]
fn host_a_missing_topic_is_left_out_until_its_creation_starts_a_rebalance() {
    let mut ctx = TestContext::new();
    let j = Join::new(G).protocols(&[("range", sub(&["t", "later"]))]);
    ctx.stable_group(j, 1);
    let request = &ctx.runs.last().unwrap().request;
    assert_eq!(*request.members[0].topics, ["t"]);
    assert_eq!(request.topics.len(), 1);
    let mut topics = default_topics().by_name().clone();
    topics.insert(
        "later".into(),
        Topic {
            name: "later".into(),
            partition_count: 2,
            partition_racks: vec![],
        },
    );
    ctx.event(Event::TopicsChanged(Arc::new(Topics::with_derived_ids(
        topics,
    ))));
    ctx.assert_state(G, GroupState::PreparingRebalance);
}

#[test]
fn host_rebalance_after_ms_starts_a_rebalance() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Script(Box::new(|run| {
        let mut response = native("range", &run.request)?;
        if run.generation_id == 1 {
            response.rebalance_after_ms = Some(5_000);
        }
        Ok(response)
    }));
    ctx.stable_group(Join::new(G), 1);
    assert!(ctx.armed(&TimerKey::FollowUp { group: G.into() }));
    ctx.advance(4_999);
    ctx.assert_state(G, GroupState::Stable);
    ctx.advance(1);
    ctx.assert_state(G, GroupState::PreparingRebalance);
}

#[test]
fn host_assignment_uses_the_member_subscription_version() {
    let mut ctx = TestContext::new();
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).protocols(&[("range", subscription(1, &["t"], &[], -1))]),
            Join::new(G).protocols(&[("range", {
                let mut b = bytes::BytesMut::from(&sub(&["t"])[..]);
                b[0..2].copy_from_slice(&9i16.to_be_bytes());
                b.freeze()
            })]),
        ],
    );
    let syncs = sync_all(&mut ctx, &rs);
    assert_eq!(&syncs[0].assignment[..2], &1i16.to_be_bytes());
    assert_eq!(
        &syncs[1].assignment[..2],
        &3i16.to_be_bytes(),
        "clamped to 3"
    );
}

#[test]
fn host_assignment_lists_only_subscribed_topics() {
    let mut ctx = TestContext::new();
    let rs = joined(
        &mut ctx,
        &[
            Join::new(G).protocols(&[("range", sub(&["t"]))]),
            Join::new(G).protocols(&[("range", sub(&["t", "u"]))]),
        ],
    );
    let syncs = sync_all(&mut ctx, &rs);
    let (a, b) = (
        assigned(&syncs[0].assignment),
        assigned(&syncs[1].assignment),
    );
    assert_eq!(a.keys().collect::<Vec<_>>(), vec!["t"]);
    assert_eq!(b["u"].len(), 3);
}

#[test]
fn host_assign_request_carries_sorted_members_previous_assignment_owned_and_params() {
    let mut ctx = TestContext::new();
    let mut params = BTreeMap::new();
    params.insert("weight".to_string(), "2".to_string());
    ctx.coordinator
        .set_group_config(
            G,
            GroupConfig {
                params: params.clone(),
                ..Default::default()
            },
        )
        .unwrap();
    let (ids, generation) =
        ctx.stable_group(Join::new(G).protocols(&[("range", sub(&["u", "t"]))]), 3);
    let first = ctx.runs[0].request.clone();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(
        first
            .members
            .iter()
            .map(|m| m.member_id.clone())
            .collect::<Vec<_>>(),
        sorted
    );
    assert_eq!(
        first
            .topics
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        vec!["t", "u"]
    );
    assert_eq!(first.params, params);
    assert_eq!(first.protocol_name, "range");
    assert_eq!(first.generation_id, 1);
    assert!(
        first
            .members
            .iter()
            .all(|m| m.previous_assignment.is_empty() && !m.metadata.is_empty())
    );
    // Member 0 rejoins owning t-0 at generation 1.
    let meta = subscription(3, &["t", "u"], &[("t", &[0])], generation);
    ctx.join(&Join::new(G).member(&ids[0]).protocols(&[("range", meta)]));
    for id in &ids[1..] {
        ctx.join(
            &Join::new(G)
                .member(id)
                .protocols(&[("range", sub(&["u", "t"]))]),
        );
    }
    let second = ctx.runs.last().unwrap().request.clone();
    let m0 = second
        .members
        .iter()
        .find(|m| m.member_id == ids[0])
        .unwrap();
    assert_eq!(
        m0.owned_partitions,
        vec![TopicPartitions {
            topic: "t".into(),
            partitions: vec![0]
        }]
    );
    assert_eq!(m0.owned_generation, generation);
    let given = &first
        .members
        .iter()
        .find(|m| m.member_id == ids[0])
        .unwrap();
    let _ = given;
    let detail_before: Vec<_> = m0.previous_assignment.clone();
    assert!(
        !detail_before.is_empty(),
        "previous_assignment is what the host gave last time"
    );
}

#[test]
fn host_other_protocol_types_carry_raw_assignment_bytes() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Script(Box::new(|run| {
        Ok(AssignResponse {
            assignments: run
                .request
                .members
                .iter()
                .map(|m| MemberAssignment {
                    member_id: m.member_id.clone(),
                    metadata: Some(format!("task for {}", m.member_id).into_bytes()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }));
    let raw = bytes::Bytes::from_static(b"connect metadata");
    let rs = joined(
        &mut ctx,
        &[Join::new(G)
            .protocol_type("connect")
            .protocols(&[("range", raw.clone())])],
    );
    assert_eq!(ctx.runs[0].request.members[0].metadata, raw.to_vec());
    assert!(ctx.runs[0].request.members[0].topics.is_empty());
    let reply = ctx.sync(
        &Sync::new(G, &rs[0].member_id, rs[0].generation_id)
            .protocol(Some("connect"), Some("range")),
    );
    assert_eq!(
        ctx.sync_response(reply).assignment,
        format!("task for {}", rs[0].member_id).into_bytes()
    );
}
