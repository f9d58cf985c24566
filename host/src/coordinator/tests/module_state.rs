//! A module's kept state (ABI v2 `state`): what its answer asks the host to keep is in the
//! group's next request to the same strategy, persisted with the group and restored, left as
//! it was by a round the fallback assigned, and not sent to another strategy. Also: a later
//! answer without `rebalance_after_ms` cancels the follow-up an earlier one asked for.

use std::sync::Arc;

use super::context::*;
use super::host::sync_all;
use crate::coordinator::view::Topics;
use crate::coordinator::{
    Coordinator, CoordinatorConfig, Effect, Event, GroupConfig, GroupState, ModuleState,
    RestoredGroup, SavedGroup, TimerKey,
};

/// The runner: range's answer, keeping `[generation]` and asking for a follow-up in 1 s from
/// generation 1; generation `fail_at` fails instead.
fn keeping(fail_at: i32) -> Runner {
    Runner::Script(Box::new(move |run| {
        if run.generation_id == fail_at && run.strategy == "range" && !run.fallback {
            return Err("the module trapped".into());
        }
        let mut response = native("range", &run.request)?;
        response.state = Some(vec![run.generation_id as u8]);
        if run.generation_id == 1 {
            response.rebalance_after_ms = Some(1_000);
        }
        Ok(response)
    }))
}

fn last_snapshot(ctx: &TestContext) -> SavedGroup {
    ctx.persisted
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::PersistGroup(s) => Some((**s).clone()),
            _ => None,
        })
        .expect("a snapshot")
}

/// Every member of the stable group `ids` rejoins and syncs (a rebalance started).
fn rejoin(ctx: &mut TestContext, ids: &[String]) {
    let replies: Vec<_> = ids
        .iter()
        .map(|id| ctx.join(&Join::new(G).member(id)))
        .collect();
    ctx.settle(&replies);
    let rs: Vec<_> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    sync_all(ctx, &rs);
    ctx.assert_state(G, GroupState::Stable);
}

/// A partition added to `t`: the group rebalances.
fn grow(ctx: &mut TestContext, count: i32) {
    let mut topics = default_topics().by_name().clone();
    topics.get_mut("t").unwrap().partition_count = count;
    ctx.event(Event::TopicsChanged(Arc::new(Topics::with_derived_ids(
        topics,
    ))));
    ctx.assert_state(G, GroupState::PreparingRebalance);
}

#[test]
fn what_a_module_keeps_comes_back_in_its_next_request_and_survives_a_restart() {
    let mut ctx = TestContext::new();
    ctx.runner = keeping(-1);
    let (ids, _) = ctx.stable_group(Join::new(G), 2);
    assert_eq!(ctx.runs[0].request.state, None, "a new group has none");
    let kept = last_snapshot(&ctx)
        .assignor()
        .module_state
        .clone()
        .expect("persisted");
    assert_eq!(kept.strategy, "range");
    assert_eq!(kept.bytes.as_slice(), [1]);

    // The follow-up of generation 1: generation 2's request carries what generation 1 kept.
    assert!(ctx.armed(&TimerKey::FollowUp { group: G.into() }));
    ctx.advance(1_000);
    rejoin(&mut ctx, &ids);
    assert_eq!(
        ctx.runs.last().unwrap().request.state.as_deref(),
        Some(&[1][..])
    );
    // Generation 2 asked for no follow-up.
    assert!(!ctx.armed(&TimerKey::FollowUp { group: G.into() }));
    let snapshot = last_snapshot(&ctx);
    assert_eq!(
        snapshot
            .assignor()
            .module_state
            .as_ref()
            .unwrap()
            .bytes
            .as_slice(),
        [2]
    );

    // After a restart the restored group sends it on.
    let mut restarted = TestContext::new();
    restarted.coordinator = Coordinator::new(
        CoordinatorConfig::default(),
        default_topics(),
        default_strategies(),
    );
    restarted.runner = keeping(-1);
    restarted.event(Event::Restore(Box::new(RestoredGroup {
        group_id: G.into(),
        snapshot: Some(snapshot),
        offsets: Vec::new(),
        config: None,
    })));
    restarted.assert_state(G, GroupState::Stable);
    grow(&mut restarted, 8);
    rejoin(&mut restarted, &ids);
    assert_eq!(
        restarted.runs.last().unwrap().request.state.as_deref(),
        Some(&[2][..])
    );
}

#[test]
fn a_round_the_fallback_assigned_leaves_the_modules_state_as_it_was() {
    let mut ctx = TestContext::new();
    ctx.runner = keeping(2);
    let (ids, _) = ctx.stable_group(Join::new(G), 2);
    ctx.advance(1_000);
    rejoin(&mut ctx, &ids);
    let snapshot = last_snapshot(&ctx);
    let last = snapshot.assignor().history.last().unwrap();
    assert!(last.generation == 2 && last.fallback_used, "{last:?}");
    assert_eq!(
        snapshot
            .assignor()
            .module_state
            .as_ref()
            .unwrap()
            .bytes
            .as_slice(),
        [1]
    );
    grow(&mut ctx, 8);
    rejoin(&mut ctx, &ids);
    assert_eq!(
        ctx.runs.last().unwrap().request.state.as_deref(),
        Some(&[1][..])
    );
}

#[test]
fn another_strategy_starts_without_the_state() {
    let mut ctx = TestContext::new();
    ctx.runner = keeping(-1);
    let (ids, _) = ctx.stable_group(Join::new(G), 2);
    let config = GroupConfig {
        strategy: Some("roundrobin".into()),
        ..Default::default()
    };
    let effects = ctx.coordinator.set_group_config(G, config).unwrap();
    ctx.apply(effects);
    grow(&mut ctx, 8);
    rejoin(&mut ctx, &ids);
    let run = ctx.runs.last().unwrap();
    assert_eq!(
        (run.strategy.as_str(), run.request.state.as_deref()),
        ("roundrobin", None)
    );
    let state = ModuleState {
        strategy: "range".into(),
        bytes: serde_bytes::ByteBuf::from(vec![1]),
    };
    assert_eq!(state.for_strategy("range"), Some(&[1][..]));
    assert_eq!(state.for_strategy("roundrobin"), None);
}

#[test]
fn a_later_answer_without_a_follow_up_cancels_the_earlier_one() {
    let mut ctx = TestContext::new();
    ctx.runner = keeping(-1);
    let (ids, _) = ctx.stable_group(Join::new(G), 2);
    assert!(ctx.armed(&TimerKey::FollowUp { group: G.into() }));
    // Another rebalance before the follow-up is due: its answer asks for none.
    grow(&mut ctx, 8);
    rejoin(&mut ctx, &ids);
    assert!(!ctx.armed(&TimerKey::FollowUp { group: G.into() }));
    let started = ctx.rebalances_started();
    ctx.advance(2_000);
    ctx.assert_state(G, GroupState::Stable);
    assert_eq!(ctx.rebalances_started(), started);
}
