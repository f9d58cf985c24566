//! In-place rounds (`classic/in_place.rs`) with `hold-departed`, whose module declares
//! `in_place`: a departure and a return leave the generation and every other member's
//! assignment alone (their heartbeats answer NONE throughout), a returning member is admitted
//! into the current generation with exactly its partitions, the window's end is one
//! rebalance, and anything that does not fit rebalances as before.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::consumer_context::*;
use super::context::*;
use crate::coordinator::view::Topics;
use crate::coordinator::{
    Coordinator, CoordinatorConfig, Effect, Event, GroupConfig, GroupState, Millis, ReplyTo,
    RestoredGroup, SavedGroup, TimerKey,
};

const WINDOW: Millis = 20_000;

/// Partitions by topic.
type Owned = BTreeMap<String, Vec<i32>>;

fn holding(ctx: &mut TestContext) {
    ctx.coordinator
        .set_group_config(
            G,
            GroupConfig {
                strategy: Some("hold-departed".into()),
                params: BTreeMap::from([("window_ms".into(), WINDOW.to_string())]),
                ..Default::default()
            },
        )
        .expect("accepted");
}

/// Three eager (`range`) members with client ids c0, c1, c2 in a group held by
/// `hold-departed`; returns their ids, the generation and what each was given.
fn three(ctx: &mut TestContext, join: Join) -> (Vec<String>, i32, Vec<Owned>) {
    holding(ctx);
    let (ids, generation) = ctx.stable_group(join, 3);
    let given = ids.iter().map(|id| partitions_of(ctx, id)).collect();
    (ids, generation, given)
}

/// What describe says `member` was given.
fn partitions_of(ctx: &TestContext, member: &str) -> BTreeMap<String, Vec<i32>> {
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    let m = detail
        .members
        .iter()
        .find(|m| m.member_id == member)
        .unwrap_or_else(|| panic!("{member} is not a member: {detail:?}"));
    m.assignment.clone()
}

/// Each of `ids` heartbeats at `generation`; every answer is NONE.
#[track_caller]
fn all_heartbeat_none(ctx: &mut TestContext, ids: &[String], generation: i32) {
    for id in ids {
        let code = ctx.heartbeat(G, id, generation);
        assert_eq!(
            code, 0,
            "{id} was answered {code} at generation {generation}"
        );
    }
}

/// Lets `ids[0]`'s session expire while the others heartbeat.
fn expire_first(ctx: &mut TestContext, ids: &[String], generation: i32) {
    for _ in 0..11 {
        ctx.advance(1_000);
        all_heartbeat_none(ctx, &ids[1..], generation);
    }
    assert!(!ctx.has_member(G, &ids[0]), "its session expired");
}

fn synced(
    ctx: &mut TestContext,
    member: &str,
    generation: i32,
    name: Option<&str>,
) -> BTreeMap<String, Vec<i32>> {
    let reply = ctx.sync(&Sync::new(G, member, generation).protocol(Some("consumer"), name));
    let r = ctx.sync_response(reply).clone();
    assert_eq!(r.error_code, 0, "{r:?}");
    assigned(&r.assignment)
}

#[test]
fn an_expired_session_starts_no_rebalance_and_holds_its_partitions() {
    let mut ctx = TestContext::new();
    let (ids, generation, given) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();

    expire_first(&mut ctx, &ids, generation);
    ctx.assert_state(G, GroupState::Stable);
    assert_eq!(ctx.generation(G), generation);
    assert_eq!(ctx.rebalances_started(), started, "no rebalance started");
    for (id, had) in ids.iter().zip(&given).skip(1) {
        assert_eq!(&partitions_of(&ctx, id), had, "{id} keeps what it had");
    }
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert_eq!(detail.held.len(), 1, "{detail:?}");
    let held = &detail.held[0];
    assert_eq!(
        (held.member_id.as_str(), held.client_id.as_str()),
        (ids[0].as_str(), "c0")
    );
    assert_eq!(held.partitions, given[0]);
    // Expired at 10 s, looked at 1 s later.
    assert_eq!(
        (held.held_ms, held.until_in_ms),
        (1_000, Some(WINDOW - 1_000))
    );
    let last = detail.history.last().unwrap();
    assert!(last.in_place, "{last:?}");
    assert_eq!(last.generation, generation);
    assert!(
        last.reason.as_deref().unwrap().contains("session expired"),
        "{last:?}"
    );

    // The window: nobody is told anything until its last millisecond.
    for _ in 0..18 {
        ctx.advance(1_000);
        all_heartbeat_none(&mut ctx, &ids[1..], generation);
    }
    ctx.advance(999);
    all_heartbeat_none(&mut ctx, &ids[1..], generation);
    assert_eq!(ctx.rebalances_started(), started);
}

#[test]
fn at_the_window_end_one_rebalance_spreads_the_held_partitions() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    expire_first(&mut ctx, &ids, generation);
    for _ in 0..20 {
        ctx.advance(1_000);
        let _ = ctx.heartbeat(G, &ids[1], generation);
        let _ = ctx.heartbeat(G, &ids[2], generation);
    }
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.rebalances_started(),
        started + 1,
        "exactly one rebalance"
    );
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
    let replies: Vec<ReplyTo> = ids[1..]
        .iter()
        .map(|id| ctx.join(&Join::new(G).member(id)))
        .collect();
    ctx.settle(&replies);
    let rs: Vec<_> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    assert!(
        rs.iter().all(|r| r.generation_id == generation + 1),
        "{rs:?}"
    );
    let mut all: Vec<i32> = Vec::new();
    for r in &rs {
        all.extend(
            synced(
                &mut ctx,
                &r.member_id,
                r.generation_id,
                r.protocol_name.as_deref(),
            )
            .remove("t")
            .unwrap_or_default(),
        );
    }
    all.sort_unstable();
    assert_eq!(
        all,
        (0..6).collect::<Vec<_>>(),
        "every partition owned again"
    );
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert!(detail.held.is_empty(), "{:?}", detail.held);
    let last = detail.history.last().unwrap();
    assert_eq!(
        last.reason.as_deref(),
        Some("the assignor asked for a rebalance")
    );
    assert!(!last.in_place);
}

#[test]
fn a_static_member_back_inside_the_window_joins_the_current_generation_with_its_partitions() {
    let mut ctx = TestContext::new();
    holding(&mut ctx);
    let replies: Vec<ReplyTo> = ["a", "b", "c"]
        .iter()
        .map(|i| ctx.join(&Join::new(G).instance(i).client(i)))
        .collect();
    ctx.settle(&replies);
    let rs: Vec<_> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    let generation = rs[0].generation_id;
    let ids: Vec<String> = rs.iter().map(|r| r.member_id.to_string()).collect();
    let given: Vec<_> = rs
        .iter()
        .map(|r| {
            synced(
                &mut ctx,
                &r.member_id,
                generation,
                r.protocol_name.as_deref(),
            )
        })
        .collect();
    let started = ctx.rebalances_started();

    // b closes (a static member sends no LeaveGroup) and stays away past its session.
    let (stay, _) = (vec![ids[0].clone(), ids[2].clone()], ());
    for _ in 0..11 {
        ctx.advance(1_000);
        all_heartbeat_none(&mut ctx, &stay, generation);
    }
    assert!(!ctx.has_member(G, &ids[1]));
    ctx.advance(3_000);
    all_heartbeat_none(&mut ctx, &stay, generation);

    let persisted = ctx.persisted.len();
    let reply = ctx.join(&Join::new(G).instance("b").client("b"));
    assert!(ctx.answered(reply), "admitted at once");
    let r = ctx.join_response(reply).clone();
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.generation_id, generation, "the current generation");
    assert_ne!(r.member_id.as_str(), ids[1], "under a new member id");
    assert!(ctx.persisted.len() > persisted, "written before the answer");
    let back = synced(
        &mut ctx,
        &r.member_id,
        generation,
        r.protocol_name.as_deref(),
    );
    assert_eq!(back, given[1], "exactly its partitions");
    assert_eq!(ctx.rebalances_started(), started, "no rebalance at all");
    all_heartbeat_none(&mut ctx, &stay, generation);
    all_heartbeat_none(&mut ctx, &[r.member_id.to_string()], generation);
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert!(detail.held.is_empty(), "{:?}", detail.held);
    assert!(
        !ctx.armed(&TimerKey::FollowUp { group: G.into() }),
        "the window's end is cancelled"
    );
    let everyone = [ids[0].clone(), r.member_id.to_string(), ids[2].clone()];
    for _ in 0..(WINDOW / 1_000) {
        ctx.advance(1_000);
        all_heartbeat_none(&mut ctx, &everyone, generation);
    }
    assert_eq!(ctx.rebalances_started(), started);
}

#[test]
fn a_dynamic_member_back_after_leaving_is_recognised_by_client_id_and_host() {
    let mut ctx = TestContext::new();
    let (ids, generation, given) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    ctx.leave(G, 3, &[(&ids[1], None)]);
    ctx.assert_state(G, GroupState::Stable);
    all_heartbeat_none(&mut ctx, &[ids[0].clone(), ids[2].clone()], generation);

    ctx.advance(3_000);
    let (id, reply) = ctx.join_dynamic(Join::new(G).client("c1"));
    let r = ctx.join_response(reply).clone();
    assert_eq!((r.error_code, r.generation_id), (0, generation), "{r:?}");
    let back = synced(&mut ctx, &id, generation, r.protocol_name.as_deref());
    assert_eq!(back, given[1]);
    assert_eq!(ctx.rebalances_started(), started);
}

#[test]
fn a_restarted_dynamic_member_waits_for_its_previous_process_to_expire() {
    let mut ctx = TestContext::new();
    let (ids, generation, given) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    // c1 is killed; its new process joins 1 s later, before the old session (10 s) expired.
    ctx.advance(1_000);
    all_heartbeat_none(&mut ctx, &[ids[0].clone(), ids[2].clone()], generation);
    let (id, reply) = ctx.join_dynamic(Join::new(G).client("c1"));
    assert!(!ctx.answered(reply), "it waits for its twin");
    for _ in 0..9 {
        ctx.advance(1_000);
        all_heartbeat_none(&mut ctx, &[ids[0].clone(), ids[2].clone()], generation);
    }
    assert!(!ctx.has_member(G, &ids[1]), "the dead process expired");
    let r = ctx.join_response(reply).clone();
    assert_eq!((r.error_code, r.generation_id), (0, generation), "{r:?}");
    assert_eq!(
        synced(&mut ctx, &id, generation, r.protocol_name.as_deref()),
        given[1]
    );
    assert_eq!(ctx.rebalances_started(), started);
}

#[test]
fn a_joiner_whose_twin_is_alive_is_a_new_member_and_rebalances() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    let (_, reply) = ctx.join_dynamic(Join::new(G).client("c1"));
    assert!(!ctx.answered(reply));
    // Its twin heartbeats: it is alive, so the joiner is a fourth consumer.
    assert_eq!(ctx.heartbeat(G, &ids[1], generation), 0);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(ctx.rebalances_started(), started + 1);
}

#[test]
fn a_new_member_that_is_not_the_departed_one_rebalances() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    let (_, reply) = ctx.join_dynamic(Join::new(G).client("newcomer"));
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(ctx.rebalances_started(), started + 1);
    assert_eq!(
        ctx.heartbeat(G, &ids[0], generation),
        ResponseError::RebalanceInProgress.code()
    );
    let mut replies: Vec<ReplyTo> = ids
        .iter()
        .map(|id| ctx.join(&Join::new(G).member(id)))
        .collect();
    replies.push(reply);
    ctx.settle(&replies);
    assert_eq!(ctx.join_response(reply).generation_id, generation + 1);
}

#[test]
fn a_strategy_without_in_place_rebalances_at_a_departure() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 3);
    ctx.leave(G, 3, &[(&ids[0], None)]);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
    assert!(
        ctx.coordinator
            .group_detail(ctx.now, G)
            .unwrap()
            .held
            .is_empty()
    );
}

#[test]
fn a_failed_in_place_call_rebalances_as_before() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    ctx.runner = Runner::Fail("boom".into());
    ctx.leave(G, 3, &[(&ids[0], None)]);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(ctx.rebalances_started(), started + 1);
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn a_slow_in_place_call_rebalances_at_its_deadline_and_its_late_answer_is_dropped() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    let started = ctx.rebalances_started();
    ctx.runner = Runner::Hold;
    ctx.leave(G, 3, &[(&ids[0], None)]);
    ctx.assert_state(G, GroupState::Stable);
    all_heartbeat_none(&mut ctx, &ids[1..], generation);
    let late = ctx.held.pop().expect("the in-place call is in flight");
    for _ in 0..9 {
        ctx.advance(1_000);
        all_heartbeat_none(&mut ctx, &ids[1..], generation);
    }
    ctx.advance(1_000);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(ctx.rebalances_started(), started + 1);
    ctx.runner = Runner::Native;
    ctx.release(&late);
    ctx.assert_state(G, GroupState::PreparingRebalance);
}

#[test]
fn a_departure_during_the_call_calls_again_and_drops_the_first_answer() {
    let mut ctx = TestContext::new();
    holding(&mut ctx);
    let (ids, generation) = ctx.stable_group(Join::new(G), 4);
    let started = ctx.rebalances_started();
    ctx.runner = Runner::Hold;
    ctx.leave(G, 3, &[(&ids[0], None)]);
    let first = ctx.held.pop().expect("first call");
    ctx.leave(G, 3, &[(&ids[1], None)]);
    assert!(ctx.held.is_empty(), "one call at a time");
    ctx.runner = Runner::Native;
    ctx.release(&first);
    ctx.assert_state(G, GroupState::Stable);
    all_heartbeat_none(&mut ctx, &ids[2..], generation);
    assert_eq!(ctx.rebalances_started(), started);
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    let mut held: Vec<&str> = detail.held.iter().map(|h| h.member_id.as_str()).collect();
    held.sort_unstable();
    let mut expected = vec![ids[0].as_str(), ids[1].as_str()];
    expected.sort_unstable();
    assert_eq!(held, expected, "both held after the second call");
    assert_eq!(detail.history.last().unwrap().generation, generation);
}

#[test]
fn a_partition_count_change_during_a_hold_rebalances() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    ctx.leave(G, 3, &[(&ids[0], None)]);
    ctx.assert_state(G, GroupState::Stable);
    let mut topics = default_topics().by_name().clone();
    topics.get_mut("t").unwrap().partition_count = 8;
    ctx.event(Event::TopicsChanged(Arc::new(Topics::with_derived_ids(
        topics,
    ))));
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn a_restored_group_is_asked_in_place_whether_it_still_holds_and_keeps_its_generation() {
    let mut ctx = TestContext::new();
    let (ids, generation, _) = three(&mut ctx, Join::new(G));
    ctx.leave(G, 3, &[(&ids[0], None)]);
    let snapshot: SavedGroup = ctx
        .persisted
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::PersistGroup(s) => Some((**s).clone()),
            _ => None,
        })
        .expect("the departure was written");
    assert!(
        snapshot.assignor().module_state.is_some(),
        "the module's seats are written"
    );

    // A new host reads the group back 5 s into the window (module time is wall-clock).
    let mut after = TestContext::new();
    after.now = ctx.now + 5_000;
    after.event(Event::Restore(Box::new(RestoredGroup {
        group_id: G.into(),
        snapshot: Some(snapshot),
        offsets: Vec::new(),
        config: ctx.coordinator.group_detail(ctx.now, G).map(|d| d.config),
    })));
    let held = &after.coordinator.group_detail(after.now, G).unwrap().held;
    assert_eq!(held.len(), 1, "the held record is written with the group");
    assert_eq!(
        (held[0].member_id.as_str(), held[0].held_ms),
        (ids[0].as_str(), 5_000)
    );
    after.advance(1);
    after.assert_state(G, GroupState::Stable);
    assert_eq!(after.generation(G), generation);
    assert_eq!(after.rebalances_started(), 0, "still holding: no rebalance");
    assert_eq!(
        after
            .timers
            .get(&TimerKey::FollowUp { group: G.into() })
            .copied(),
        Some(after.now - 1 + WINDOW - 5_000),
        "the window's end, as it was before the restart"
    );
    all_heartbeat_none(&mut after, &ids[1..], generation);
}

#[test]
fn a_modules_now_ms_is_wall_clock_time() {
    let mut ctx = TestContext::new();
    let config: CoordinatorConfig = ctx.coordinator.config().clone();
    ctx.coordinator = Coordinator::new(config, default_topics(), default_strategies())
        .with_clock_base(1_796_000_000_000);
    ctx.runner = Runner::Hold;
    ctx.now = 42_000;
    let reply = ctx.join(&Join::new(G).version(3));
    let delay = ctx.coordinator.config().initial_rebalance_delay_ms.max(0) as Millis;
    ctx.advance(delay);
    assert!(ctx.answered(reply), "the join phase completed");
    let run = ctx.held.first().expect("a run").clone();
    assert_eq!(run.request.now_ms, 1_796_000_000_000 + ctx.now as i64);
}

#[test]
fn a_consumer_group_holds_a_leavers_partitions_and_gives_them_back_without_touching_the_others() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    holding(&mut ctx);
    let mut clients: Vec<Client> = ["a", "b", "c"]
        .iter()
        .map(|m| Client::new(m, &["t"]))
        .collect();
    settle(&mut ctx, &mut clients, 20);
    let before: Vec<_> = clients.iter().map(|c| c.owned.clone()).collect();
    assert!(before.iter().all(|o| o["t"].len() == 2), "{before:?}");

    // b closes (epoch -1): a and c keep exactly theirs, b's partitions wait.
    let b = clients.remove(1);
    let left = ctx.cgh_now(&Hb::beat(&b.member_id, -1));
    assert_eq!(left.error_code, 0);
    settle(&mut ctx, &mut clients, 20);
    assert_eq!(clients[0].owned, before[0]);
    assert_eq!(clients[1].owned, before[2]);
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert_eq!(detail.held.len(), 1, "{detail:?}");
    let held = &detail.held[0];
    assert_eq!(held.member_id, "b");
    assert_eq!(
        held.partitions,
        BTreeMap::from([(
            "t".to_string(),
            before[1]["t"].iter().copied().collect::<Vec<_>>()
        )])
    );
    assert_eq!(held.until_in_ms, Some(WINDOW));

    // The same consumer (client id and host) back as a new member: exactly b's partitions.
    clients.push(Client::new("b-again", &["t"]));
    settle(&mut ctx, &mut clients, 20);
    assert_eq!(clients[0].owned, before[0]);
    assert_eq!(clients[1].owned, before[2]);
    assert_eq!(clients[2].owned, before[1]);
    assert!(
        ctx.coordinator
            .group_detail(ctx.now, G)
            .unwrap()
            .held
            .is_empty()
    );
}

#[test]
fn a_consumer_restarted_before_its_old_session_expired_waits_for_it_and_gets_its_partitions() {
    let config = CoordinatorConfig::default();
    let session = config.consumer_session_timeout_ms as Millis;
    let mut ctx = consumer_context(config);
    holding(&mut ctx);
    let mut clients: Vec<Client> = ["a", "b", "c"]
        .iter()
        .map(|m| Client::new(m, &["t"]))
        .collect();
    settle(&mut ctx, &mut clients, 20);
    let before: Vec<_> = clients.iter().map(|c| c.owned.clone()).collect();

    // b's process is killed (it says nothing); a new one joins at once as b2, with the same
    // client id and host: the next target waits for b's session to expire.
    clients.remove(1);
    let mut b2 = Client::new("b2", &["t"]);
    b2.poll(&mut ctx);
    assert!(b2.owned.is_empty());
    let mut waited = 0;
    loop {
        assert!(waited <= session, "b never expired");
        ctx.advance(1_000);
        waited += 1_000;
        settle(&mut ctx, &mut clients, 20);
        let b_there = ctx
            .coordinator
            .group_detail(ctx.now, G)
            .unwrap()
            .members
            .len()
            == 4;
        b2.poll(&mut ctx);
        assert_eq!(clients[0].owned, before[0], "a was touched ({waited} ms)");
        assert_eq!(clients[1].owned, before[2], "c was touched ({waited} ms)");
        if !b_there {
            break;
        }
        assert!(
            b2.owned.is_empty(),
            "b2 was given partitions while b's session ran: {b2:?}"
        );
    }
    assert!(
        waited >= session - 1_000,
        "b expired after its session, not before: {waited}"
    );
    clients.push(b2);
    settle(&mut ctx, &mut clients, 20);
    assert_eq!(clients[2].owned, before[1], "b2 has exactly b's partitions");
    assert_eq!(clients[0].owned, before[0]);
    assert_eq!(clients[1].owned, before[2]);
}

#[test]
fn a_consumer_joining_beside_a_live_one_with_its_client_id_is_served_once_that_one_heartbeats() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    holding(&mut ctx);
    let mut clients: Vec<Client> = ["a", "b"].iter().map(|m| Client::new(m, &["t"])).collect();
    settle(&mut ctx, &mut clients, 20);
    let mut c = Client::new("c", &["t"]);
    c.poll(&mut ctx);
    assert!(
        ctx.armed(&TimerKey::InPlace { group: G.into() }),
        "it waits for a and b"
    );
    clients.push(c);
    settle(&mut ctx, &mut clients, 20);
    assert!(!ctx.armed(&TimerKey::InPlace { group: G.into() }));
    assert!(
        clients.iter().all(|c| c.owned["t"].len() == 2),
        "{clients:?}"
    );
}
