//! Host-side behaviour around the rebalance itself: restore from a snapshot (stable groups
//! resume without a rebalance), the admin views and hooks, DeleteGroups, shutdown, and
//! deterministic member ids.

use kafka_protocol::ResponseError;

use super::context::*;
use crate::coordinator::{
    AdminError, Coordinator, CoordinatorConfig, DeleteGroup, Effect, Event, GroupRequest,
    GroupResponse, GroupState, RestoredGroup, RunOutcome,
};

#[test]
fn host_a_persisted_stable_group_resumes_without_a_rebalance() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    ctx.commit(G, 8, &ids[0], generation, &[("t", 0, 5, Some("meta"))]);
    let snapshot = ctx
        .persisted
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::PersistGroup(s) => Some((**s).clone()),
            _ => None,
        })
        .unwrap();
    let offsets = ctx
        .persisted
        .iter()
        .flat_map(|e| match e {
            Effect::CommitOffsets { offsets, .. } => offsets.clone(),
            _ => Vec::new(),
        })
        .collect();
    let before = ctx.sync(&Sync::new(G, &ids[0], generation));
    let assignment = ctx.sync_response(before).assignment.clone();

    let mut restarted = TestContext::new();
    restarted.coordinator = Coordinator::new(
        CoordinatorConfig::default(),
        default_topics(),
        default_strategies(),
    );
    restarted.event(Event::Restore(Box::new(RestoredGroup {
        group_id: G.into(),
        snapshot: Some(snapshot),
        offsets,
        config: None,
    })));
    restarted.assert_state(G, GroupState::Stable);
    assert_eq!(restarted.generation(G), generation);
    assert_eq!(restarted.heartbeat(G, &ids[1], generation), 0);
    let after = restarted.sync(&Sync::new(G, &ids[0], generation));
    assert_eq!(restarted.sync_response(after).assignment, assignment);
    assert_eq!(restarted.rebalances_started(), 0);
    // Sessions were re-armed from the restart: a silent member expires after its session.
    restarted.advance(10_000);
    assert!(!restarted.has_member(G, &ids[0]));
    let reply = restarted.send(
        G,
        8,
        "c",
        GroupRequest::OffsetFetch(crate::coordinator::OffsetFetchQuery {
            topics: None,
            require_stable: false,
            member_id: None,
            member_epoch: -1,
        }),
    );
    let Some(GroupResponse::OffsetFetch(f)) = restarted.responses.get(&reply) else {
        panic!()
    };
    assert_eq!(f.topics[0].1[0].committed_offset, 5);
    assert_eq!(f.topics[0].1[0].metadata.as_deref(), Some("meta"));
}

#[test]
fn host_admin_detail_trigger_and_simulate_request() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert_eq!(detail.mode, "host");
    assert_eq!(detail.strategy.as_deref(), Some("range"));
    assert_eq!(detail.generation, generation);
    assert_eq!(detail.members.len(), 2);
    assert!(
        detail
            .members
            .iter()
            .all(|m| m.subscription == vec!["t"] && m.assignment["t"].len() == 3)
    );
    assert_eq!(detail.last_run.as_ref().unwrap().outcome, RunOutcome::Ok);
    assert_eq!(detail.history.len(), 1);
    let json = serde_json::to_value(&detail).unwrap();
    assert_eq!(json["state"], "Stable");
    let summaries = ctx.coordinator.group_summaries();
    assert_eq!(summaries[0].members, 2);

    let request = ctx
        .coordinator
        .assign_request(ctx.now, G, "roundrobin")
        .unwrap();
    assert_eq!(request.protocol_name, "roundrobin");
    assert_eq!(request.generation_id, generation + 1);
    assert_eq!(request.members.len(), 2);

    assert_eq!(
        ctx.coordinator
            .trigger_rebalance(ctx.now, "nope", Some("x".into()))
            .unwrap_err(),
        AdminError::GroupNotFound("nope".into())
    );
    let effects = ctx
        .coordinator
        .trigger_rebalance(ctx.now, G, Some("operator asked".into()))
        .unwrap();
    ctx.apply(effects);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[0], generation),
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn host_delete_group_only_when_empty() {
    let mut ctx = TestContext::new();
    let delete = |ctx: &mut TestContext, g: &str| {
        let reply = ctx.send(g, 2, "admin", GroupRequest::DeleteGroup(DeleteGroup));
        match ctx.responses.get(&reply) {
            Some(GroupResponse::DeleteGroup(code)) => *code,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(
        delete(&mut ctx, "nope"),
        ResponseError::GroupIdNotFound.code()
    );
    let (ids, _) = ctx.stable_group(Join::new(G), 1);
    assert_eq!(delete(&mut ctx, G), ResponseError::NonEmptyGroup.code());
    ctx.leave(G, 3, &[(&ids[0], None)]);
    assert_eq!(delete(&mut ctx, G), 0);
    assert!(
        ctx.persisted
            .iter()
            .any(|e| matches!(e, Effect::DeleteGroup { group_id, .. } if group_id == G))
    );
    assert_eq!(ctx.state(G), GroupState::Dead);
}

#[test]
fn host_shutdown_answers_parked_requests_with_coordinator_not_available() {
    let mut ctx = TestContext::new();
    let (_, parked) = ctx.join_dynamic(Join::new(G));
    let effects = ctx.coordinator.shutdown();
    ctx.apply(effects);
    assert_eq!(
        ctx.join_response(parked).error_code,
        ResponseError::CoordinatorNotAvailable.code()
    );
}

#[test]
fn host_member_ids_are_deterministic_for_a_seed() {
    let ids = |seed| {
        let mut ctx = TestContext::with_config(CoordinatorConfig {
            seed,
            ..Default::default()
        });
        let reply = ctx.join(&Join::new(G));
        ctx.join_response(reply).member_id.to_string()
    };
    assert_eq!(ids(7), ids(7));
    assert_ne!(ids(7), ids(8));
}
