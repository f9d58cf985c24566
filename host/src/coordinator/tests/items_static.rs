//! Checklist items 43-51: static membership (KIP-345).

use kafka_protocol::ResponseError;

use super::context::*;
use crate::coordinator::{GroupState, HOST_LEADER};

const CLIENT_SIDE: &str = "client-side";

fn relay(group: &str) -> Join {
    Join::new(group).names(&[CLIENT_SIDE])
}

/// Static members `i0..in` joined and synced; returns their member ids and the generation.
pub(super) fn static_group(ctx: &mut TestContext, base: Join, n: usize) -> (Vec<String>, i32) {
    let replies: Vec<_> = (0..n)
        .map(|i| ctx.join(&base.clone().instance(&format!("i{i}"))))
        .collect();
    ctx.settle(&replies);
    let rs: Vec<_> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    let generation = rs[0].generation_id;
    let ids: Vec<String> = rs.iter().map(|r| r.member_id.to_string()).collect();
    let name = rs[0].protocol_name.as_deref().map(|n| n.to_string());
    let leader = rs[0].leader.to_string();
    for (i, id) in ids.iter().enumerate() {
        let mut sync = Sync::new(G, id, generation)
            .instance(&format!("i{i}"))
            .protocol(Some("consumer"), name.as_deref());
        if *id == leader {
            for other in &ids {
                sync = sync.assign(other, subscription(0, &["t"], &[], -1));
            }
        }
        ctx.sync(&sync);
    }
    ctx.assert_state(G, GroupState::Stable);
    (ids, generation)
}

#[test]
fn item_43_new_static_member_skips_member_id_required_and_gets_an_instance_prefixed_id() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new(G).version(5).instance("i1"));
    assert!(
        !ctx.answered(reply),
        "added at once, parked for the join phase"
    );
    ctx.advance(3_000);
    let r = ctx.join_response(reply);
    assert_eq!(r.error_code, 0);
    assert!(r.member_id.starts_with("i1-"));
}

#[test]
fn item_44_restarted_static_member_rejoins_stable_without_rebalance_and_keeps_its_assignment() {
    let mut ctx = TestContext::new();
    let (ids, generation) = static_group(&mut ctx, Join::new(G), 2);
    let before = ctx.sync(&Sync::new(G, &ids[1], generation).instance("i1"));
    let old_assignment = ctx.sync_response(before).assignment.clone();
    let rebalances = ctx.rebalances_started();
    // Restart: empty member id, same instance, metadata bytes differ (owned partitions).
    let meta = subscription(3, &["t"], &[("t", &[3, 4, 5])], generation);
    let reply = ctx.join(&Join::new(G).instance("i1").protocols(&[("range", meta)]));
    let r = ctx.join_response(reply).clone();
    assert_eq!(r.error_code, 0);
    assert_eq!(r.generation_id, generation);
    assert_ne!(r.member_id.as_str(), ids[1]);
    assert_eq!(ctx.rebalances_started(), rebalances);
    ctx.assert_state(G, GroupState::Stable);
    assert!(
        ctx.persisted
            .iter()
            .any(|e| matches!(e, crate::coordinator::Effect::PersistGroup(s)
            if s.classic().is_some_and(|c| c.members.iter().any(|m| m.member_id == r.member_id.as_str())))),
        "the new member id is persisted"
    );
    let after = ctx.sync(&Sync::new(G, &r.member_id, generation).instance("i1"));
    assert_eq!(ctx.sync_response(after).assignment, old_assignment);
}

#[test]
fn item_45_relay_v9_returning_leader_gets_members_and_skip_assignment() {
    let mut ctx = TestContext::new();
    let (ids, generation) = static_group(&mut ctx, relay(G).version(9), 2);
    let leader_instance = if ctx.is_relay_leader(&ids[0]) {
        "i0"
    } else {
        "i1"
    };
    let reply = ctx.join(&relay(G).version(9).instance(leader_instance));
    let r = ctx.join_response(reply);
    assert_eq!(r.generation_id, generation);
    assert!(r.skip_assignment);
    assert_eq!(r.members.len(), 2);
    assert_eq!(r.leader, r.member_id);
}

#[test]
fn item_45_relay_v8_returning_leader_is_told_the_old_leader_id() {
    let mut ctx = TestContext::new();
    let (ids, _) = static_group(&mut ctx, relay(G).version(8), 2);
    let (old_leader, instance) = if ctx.is_relay_leader(&ids[0]) {
        (&ids[0], "i0")
    } else {
        (&ids[1], "i1")
    };
    let reply = ctx.join(&relay(G).version(8).instance(instance));
    let r = ctx.join_response(reply);
    assert_eq!(r.leader.as_str(), old_leader.as_str());
    assert_ne!(r.leader, r.member_id);
    assert!(!r.skip_assignment);
    assert!(r.members.is_empty());
}

#[test]
fn item_45_host_returning_static_member_is_a_follower_with_no_skip_assignment() {
    let mut ctx = TestContext::new();
    let (_, generation) = static_group(&mut ctx, Join::new(G), 2);
    let reply = ctx.join(&Join::new(G).version(9).instance("i0"));
    let r = ctx.join_response(reply);
    assert_eq!(r.generation_id, generation);
    assert_eq!(r.leader.as_str(), HOST_LEADER);
    assert!(!r.skip_assignment);
    assert!(r.members.is_empty());
}

#[test]
fn item_46_the_old_member_id_of_a_replaced_instance_is_fenced() {
    let mut ctx = TestContext::new();
    let (ids, generation) = static_group(&mut ctx, Join::new(G), 2);
    let reply = ctx.join(&Join::new(G).instance("i1"));
    let new_id = ctx.join_response(reply).member_id.to_string();
    assert_eq!(
        ctx.heartbeat_static(G, &ids[1], Some("i1"), generation),
        ResponseError::FencedInstanceId.code()
    );
    let s = ctx.sync(&Sync::new(G, &ids[1], generation).instance("i1"));
    assert_eq!(
        ctx.sync_response(s).error_code,
        ResponseError::FencedInstanceId.code()
    );
    let commit = ctx.commit_with(G, 7, &ids[1], Some("i1"), generation, &[("t", 0, 1, None)]);
    assert_eq!(
        commit.topics[0].partitions[0].error_code,
        ResponseError::FencedInstanceId.code()
    );
    assert_eq!(ctx.heartbeat_static(G, &new_id, Some("i1"), generation), 0);
}

#[test]
fn item_46_a_join_parked_under_the_old_member_id_is_fenced() {
    let mut ctx = TestContext::new();
    let (ids, _) = static_group(&mut ctx, Join::new(G), 2);
    // The old incarnation rejoins with changed metadata: parked in PreparingRebalance.
    let old = ctx.join(
        &Join::new(G)
            .member(&ids[1])
            .instance("i1")
            .protocols(&[("range", sub(&["t", "u"]))]),
    );
    assert!(!ctx.answered(old));
    ctx.join(&Join::new(G).instance("i1")); // the new incarnation replaces it
    let r = ctx.join_response(old);
    assert_eq!(r.error_code, ResponseError::FencedInstanceId.code());
}

#[test]
fn item_47_static_rejoin_that_changes_the_selected_protocol_rebalances() {
    let mut ctx = TestContext::new();
    let (_, generation) = static_group(&mut ctx, Join::new(G).names(&["range", "roundrobin"]), 1);
    let reply = ctx.join(&Join::new(G).instance("i0").names(&["roundrobin"]));
    ctx.advance(20_000);
    let r = ctx.join_response(reply);
    assert_eq!(r.generation_id, generation + 1);
    assert_eq!(r.protocol_name.as_deref(), Some("roundrobin"));
}

#[test]
fn item_48_static_rejoin_during_completing_rebalance_rebalances() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hold;
    let a = ctx.join(&Join::new(G).instance("i0"));
    ctx.advance(3_000);
    let generation = ctx.join_response(a).generation_id;
    ctx.assert_state(G, GroupState::CompletingRebalance);
    let reply = ctx.join(&Join::new(G).instance("i0"));
    ctx.assert_state(G, GroupState::CompletingRebalance);
    assert_eq!(ctx.join_response(reply).generation_id, generation + 1);
}

#[test]
fn item_49_a_static_member_missing_a_rebalance_stays_until_its_session_expires() {
    let mut ctx = TestContext::new();
    let (ids, _) = static_group(&mut ctx, relay(G), 2);
    let leader = if ctx.is_relay_leader(&ids[0]) { 0 } else { 1 };
    let other = 1 - leader;
    let generation = ctx.generation(G);
    let reply = ctx.join(
        &relay(G)
            .member(&ids[leader])
            .instance(&format!("i{leader}")),
    );
    for _ in 0..6 {
        // The other static member heartbeats but never rejoins.
        ctx.advance(3_000);
        ctx.heartbeat_static(G, &ids[other], Some(&format!("i{other}")), generation);
    }
    ctx.advance(2_000); // the rebalance timeout
    let r = ctx.join_response(reply).clone();
    assert_eq!(r.members.len(), 2, "still listed to the leader");
    assert!(ctx.has_member(G, &ids[other]));
    let before = ctx.rebalances_started();
    ctx.advance(10_000); // then silent: its session expires
    assert!(!ctx.has_member(G, &ids[other]));
    assert_eq!(ctx.rebalances_started(), before + 1);
}

#[test]
fn item_50_leave_by_instance_id_removes_the_static_member() {
    let mut ctx = TestContext::new();
    let (ids, _) = static_group(&mut ctx, Join::new(G), 2);
    let before = ctx.rebalances_started();
    let r = ctx.leave(G, 3, &[("", Some("i0"))]);
    assert_eq!(r.members[0].error_code, 0);
    assert!(!ctx.has_member(G, &ids[0]));
    assert_eq!(ctx.rebalances_started(), before + 1);
    let r = ctx.leave(G, 3, &[("", Some("nobody"))]);
    assert_eq!(
        r.members[0].error_code,
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn item_51_leave_with_an_instance_id_of_another_member_is_fenced() {
    let mut ctx = TestContext::new();
    static_group(&mut ctx, Join::new(G), 2);
    let r = ctx.leave(G, 3, &[("m-x", Some("i1"))]);
    assert_eq!(r.error_code, 0);
    assert_eq!(
        r.members[0].error_code,
        ResponseError::FencedInstanceId.code()
    );
}
