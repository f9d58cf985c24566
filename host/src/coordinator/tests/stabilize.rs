//! Rebalance stabilisation (`stabilize_ms`, `stabilize_max_ms`): a Stable group defers the
//! rebalance of a membership change while the members that stay keep heartbeating NONE; the
//! rebalance starts after the quiet window, at the latest after the longest wait or half a
//! parked member's rebalance timeout, and takes every change of the window in one generation.
//! Any other cause starts it at once with the parked members; it survives a restart; bad
//! settings are refused.

use kafka_protocol::ResponseError;

use super::context::*;
use super::host::sync_all;
use crate::coordinator::{
    AdminError, Coordinator, CoordinatorConfig, Effect, Event, GroupConfig, GroupState, Millis,
    ReplyTo, RestoredGroup, SavedGroup, TimerKey,
};

fn stabilizing(ctx: &mut TestContext, quiet: Millis, max: Option<Millis>) {
    ctx.coordinator
        .set_group_config(
            G,
            GroupConfig {
                stabilize_ms: Some(quiet),
                stabilize_max_ms: max,
                ..Default::default()
            },
        )
        .expect("accepted");
}

fn armed_at(ctx: &TestContext) -> Option<Millis> {
    ctx.timers
        .get(&TimerKey::Stabilize { group: G.into() })
        .copied()
}

/// Each of `ids` heartbeats at `generation`; every answer is NONE (nobody was told to rejoin).
#[track_caller]
fn all_heartbeat_none(ctx: &mut TestContext, ids: &[String], generation: i32) {
    for id in ids {
        assert_eq!(
            ctx.heartbeat(G, id, generation),
            0,
            "{id} was told to rejoin"
        );
    }
}

/// The members that stayed rejoin (they learnt of the rebalance from a heartbeat); with the
/// parked `waiting` replies, every join is answered and everyone syncs. Returns the new
/// generation and every member's assignment size.
fn rejoin_and_sync(ctx: &mut TestContext, stayed: &[String], waiting: &[ReplyTo]) -> (i32, usize) {
    let mut replies: Vec<ReplyTo> = stayed
        .iter()
        .map(|id| ctx.join(&Join::new(G).member(id)))
        .collect();
    replies.extend_from_slice(waiting);
    ctx.settle(&replies);
    let rs: Vec<_> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    assert!(rs.iter().all(|r| r.error_code == 0), "{rs:?}");
    let generation = rs[0].generation_id;
    let syncs = sync_all(ctx, &rs);
    ctx.assert_state(G, GroupState::Stable);
    (generation, syncs.len())
}

fn last_reason(ctx: &TestContext) -> String {
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    detail.history.last().unwrap().reason.clone().unwrap()
}

#[test]
fn a_leave_and_a_join_wait_for_quiet_while_the_others_keep_consuming_then_one_rebalance() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 5_000, None);
    let (ids, generation) = ctx.stable_group(Join::new(G), 3);
    let started = ctx.rebalances_started();

    ctx.leave(G, 3, &[(&ids[0], None)]);
    ctx.assert_state(G, GroupState::Stable);
    all_heartbeat_none(&mut ctx, &ids[1..], generation);

    ctx.advance(2_000);
    let (_, parked) = ctx.join_dynamic(Join::new(G).client("new"));
    assert!(!ctx.answered(parked), "the new member's JoinGroup waits");
    assert_eq!(
        armed_at(&ctx),
        Some(ctx.now + 5_000),
        "quiet again from the join"
    );
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    let deferred = detail.deferred_rebalance.expect("shown while it waits");
    assert_eq!((deferred.joined, deferred.left), (1, 1));
    assert_eq!((deferred.waited_ms, deferred.starts_in_ms), (2_000, 5_000));
    assert_eq!(detail.members.len(), 3, "the parked member is listed");

    ctx.advance(4_999);
    ctx.assert_state(G, GroupState::Stable);
    all_heartbeat_none(&mut ctx, &ids[1..], generation);
    assert_eq!(ctx.rebalances_started(), started, "nothing started yet");

    ctx.advance(1);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
    let (next, members) = rejoin_and_sync(&mut ctx, &ids[1..], &[parked]);
    assert_eq!(
        next,
        generation + 1,
        "one rebalance for the leave and the join"
    );
    assert_eq!(members, 3);
    assert_eq!(ctx.rebalances_started(), started + 1);
    assert_eq!(
        last_reason(&ctx),
        "membership settled after 7000 ms (1 joined, 1 left)"
    );
    assert!(
        ctx.coordinator
            .group_detail(ctx.now, G)
            .unwrap()
            .deferred_rebalance
            .is_none()
    );
}

#[test]
fn without_stabilize_ms_a_leave_rebalances_at_once() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 3);
    ctx.leave(G, 3, &[(&ids[0], None)]);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn an_expired_session_is_deferred_like_a_leave() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 5_000, None);
    let (ids, generation) = ctx.stable_group(Join::new(G), 3);
    // ids[0] stops heartbeating; the others keep at it through its 10 s session.
    for _ in 0..11 {
        ctx.advance(1_000);
        all_heartbeat_none(&mut ctx, &ids[1..], generation);
    }
    assert!(!ctx.has_member(G, &ids[0]), "its session expired");
    ctx.assert_state(G, GroupState::Stable);
    ctx.advance(5_000);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    let (next, members) = rejoin_and_sync(&mut ctx, &ids[1..], &[]);
    assert_eq!((next, members), (generation + 1, 2));
    assert!(
        last_reason(&ctx).ends_with("(0 joined, 1 left)"),
        "{}",
        last_reason(&ctx)
    );
}

#[test]
fn churn_that_never_stops_rebalances_at_the_longest_wait_after_the_first_change() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 5_000, Some(12_000));
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let first = ctx.now;
    let mut parked = Vec::new();
    // A new member every 3 s: the quiet window never ends.
    for i in 0..5 {
        parked.push(ctx.join_dynamic(Join::new(G).client(&format!("n{i}"))).1);
        assert!(armed_at(&ctx).unwrap() <= first + 12_000);
        ctx.advance(3_000);
        if ctx.state(G) != GroupState::Stable {
            break;
        }
        all_heartbeat_none(&mut ctx, &ids, generation);
    }
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.now,
        first + 12_000,
        "the fifth join came after the wait's end"
    );
    let joined: Vec<ReplyTo> = parked
        .iter()
        .copied()
        .filter(|r| !ctx.answered(*r))
        .collect();
    assert_eq!(joined.len(), 4, "four parked joins in the generation");
    let (next, members) = rejoin_and_sync(&mut ctx, &ids, &joined);
    assert_eq!((next, members), (generation + 1, 6));
}

#[test]
fn a_parked_join_is_answered_within_half_of_its_rebalance_timeout() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 60_000, None);
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let joined_at = ctx.now;
    let (_, parked) = ctx.join_dynamic(Join::new(G).client("new").rebalance(20_000));
    assert_eq!(armed_at(&ctx), Some(joined_at + 10_000));
    // A leave later does not push the start past the parked member's bound.
    ctx.advance(5_000);
    all_heartbeat_none(&mut ctx, &ids, generation);
    ctx.advance(3_000);
    ctx.leave(G, 3, &[(&ids[0], None)]);
    assert_eq!(armed_at(&ctx), Some(joined_at + 10_000));
    ctx.advance(2_000);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    let (next, members) = rejoin_and_sync(&mut ctx, &ids[1..], &[parked]);
    assert_eq!((next, members), (generation + 1, 2));
}

#[test]
fn another_cause_starts_the_rebalance_at_once_with_the_parked_members() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 30_000, None);
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let (_, parked) = ctx.join_dynamic(Join::new(G).client("new"));
    let effects = ctx
        .coordinator
        .trigger_rebalance(ctx.now, G, Some("now".into()))
        .unwrap();
    ctx.apply(effects);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert!(armed_at(&ctx).is_none(), "the deferral is over");
    let (next, members) = rejoin_and_sync(&mut ctx, &ids, &[parked]);
    assert_eq!((next, members), (generation + 1, 3));
    assert_eq!(last_reason(&ctx), "operator request: now");
}

#[test]
fn a_parked_member_that_resends_its_join_waits_on_the_new_one() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 5_000, None);
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let (id, first) = ctx.join_dynamic(Join::new(G).client("new"));
    let due = armed_at(&ctx);
    ctx.advance(1_000);
    let again = ctx.join(&Join::new(G).client("new").member(&id));
    assert_eq!(
        ctx.join_response(first).error_code,
        ResponseError::RebalanceInProgress.code(),
        "the abandoned request is answered"
    );
    assert!(!ctx.answered(again));
    assert_eq!(armed_at(&ctx), due, "a resent join is no new change");
    ctx.assert_state(G, GroupState::Stable);
    ctx.advance(4_000);
    let (next, members) = rejoin_and_sync(&mut ctx, &ids, &[again]);
    assert_eq!((next, members), (generation + 1, 3));
}

#[test]
fn a_deferred_rebalance_is_written_without_the_parked_members_and_resumes_after_a_restart() {
    let mut ctx = TestContext::new();
    stabilizing(&mut ctx, 5_000, None);
    // Two static members, a and b, in one generation.
    let a = ctx.join(&Join::new(G).instance("a").client("a"));
    let b = ctx.join(&Join::new(G).instance("b").client("b"));
    ctx.settle(&[a, b]);
    let rs = [ctx.join_response(a).clone(), ctx.join_response(b).clone()];
    sync_all(&mut ctx, &rs);
    ctx.assert_state(G, GroupState::Stable);
    let ids: Vec<String> = rs.iter().map(|r| r.member_id.to_string()).collect();
    ctx.leave(G, 3, &[(&ids[0], Some("a"))]);
    let (parked_id, _) = ctx.join_dynamic(Join::new(G).client("new"));
    // b restarts (same instance id, no LeaveGroup): Kafka's replacement without a rebalance,
    // which writes the group.
    let replaced = ctx.join(&Join::new(G).instance("b").client("b"));
    assert_eq!(ctx.join_response(replaced).error_code, 0);
    let snapshot: SavedGroup = ctx
        .persisted
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::PersistGroup(s) => Some((**s).clone()),
            _ => None,
        })
        .unwrap();
    let record = snapshot.classic().expect("a classic group");
    let written: Vec<&str> = record
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(written.len(), 1, "only b's new id: {written:?}");
    assert!(!written.contains(&parked_id.as_str()));
    let deferred = record.deferred.expect("the deferral is written");
    assert_eq!((deferred.joined, deferred.left), (1, 1));

    // A new host reads it back: Stable, waiting for quiet again, then the rebalance.
    let mut after = TestContext::new();
    after.coordinator = Coordinator::new(
        CoordinatorConfig::default(),
        default_topics(),
        default_strategies(),
    );
    after.now = 100_000;
    after.event(Event::Restore(Box::new(RestoredGroup {
        group_id: G.into(),
        snapshot: Some(snapshot),
        offsets: Vec::new(),
        config: Some(GroupConfig {
            stabilize_ms: Some(5_000),
            ..Default::default()
        }),
    })));
    after.assert_state(G, GroupState::Stable);
    assert_eq!(armed_at(&after), Some(105_000));
    after.advance(5_000);
    after.assert_state(G, GroupState::PreparingRebalance);
}

#[test]
fn bad_stabilisation_settings_are_refused_with_what_to_write() {
    let mut ctx = TestContext::new();
    let set = |ctx: &mut TestContext, ms, max| {
        ctx.coordinator.set_group_config(
            G,
            GroupConfig {
                stabilize_ms: ms,
                stabilize_max_ms: max,
                ..Default::default()
            },
        )
    };
    let refused = |r: Result<Vec<Effect>, AdminError>| match r {
        Err(AdminError::BadStabilize(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(refused(set(&mut ctx, None, Some(10_000))).contains("set stabilize_ms too"));
    assert!(refused(set(&mut ctx, Some(0), None)).contains("at least 1"));
    assert!(refused(set(&mut ctx, Some(600_001), None)).contains("over the limit"));
    assert!(refused(set(&mut ctx, Some(8_000), Some(4_000))).contains("below stabilize_ms"));
    assert!(set(&mut ctx, Some(8_000), Some(8_000)).is_ok());
}
