//! Checklist items 34-42 (SyncGroup) and 52-56 (LeaveGroup, session expiry).

use kafka_protocol::ResponseError;

use super::context::*;
use super::items_join::relay_stable;
use crate::coordinator::{GroupState, Millis};

const CLIENT_SIDE: &str = "client-side";

fn relay(group: &str) -> Join {
    Join::new(group).names(&[CLIENT_SIDE])
}

/// Two relay members joined (CompletingRebalance): (leader, follower, generation).
fn relay_completing(ctx: &mut TestContext) -> (String, String, i32) {
    let (_, a) = ctx.join_dynamic(relay(G));
    let (_, b) = ctx.join_dynamic(relay(G));
    ctx.settle(&[a, b]);
    let ra = ctx.join_response(a).clone();
    let rb = ctx.join_response(b).clone();
    let leader = ra.leader.to_string();
    let follower = if ra.member_id == ra.leader {
        rb.member_id.to_string()
    } else {
        ra.member_id.to_string()
    };
    (leader, follower, ra.generation_id)
}

fn relay_sync(member: &str, generation: i32) -> Sync {
    Sync::new(G, member, generation).protocol(Some("consumer"), Some(CLIENT_SIDE))
}

#[test]
fn item_34_relay_follower_sync_is_parked_until_the_leader_syncs() {
    let mut ctx = TestContext::new();
    let (leader, follower, generation) = relay_completing(&mut ctx);
    let parked = ctx.sync(&relay_sync(&follower, generation));
    assert!(!ctx.answered(parked));
    let bytes = subscription(0, &["relayed"], &[], -1);
    ctx.sync(
        &relay_sync(&leader, generation)
            .assign(&follower, bytes.clone())
            .assign(&leader, sub(&[])),
    );
    let r = ctx.sync_response(parked);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.assignment, bytes, "exactly the bytes the leader supplied");
}

#[test]
fn item_34_host_follower_sync_is_parked_until_the_assignor_is_done() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hold;
    let (_, a) = ctx.join_dynamic(Join::new(G));
    ctx.advance(3_000);
    let r = ctx.join_response(a).clone();
    let parked = ctx.sync(&Sync::new(G, &r.member_id, r.generation_id));
    assert!(!ctx.answered(parked));
    let run = ctx.held.remove(0);
    ctx.release(&run);
    let s = ctx.sync_response(parked);
    assert_eq!(s.error_code, 0);
    assert_eq!(assigned(&s.assignment)["t"], vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn item_35_relay_member_left_out_by_the_leader_gets_empty_bytes() {
    let mut ctx = TestContext::new();
    let (leader, follower, generation) = relay_completing(&mut ctx);
    let parked = ctx.sync(&relay_sync(&follower, generation));
    ctx.sync(&relay_sync(&leader, generation).assign(&leader, sub(&["t"])));
    let r = ctx.sync_response(parked);
    assert_eq!(r.error_code, 0);
    assert!(r.assignment.is_empty());
}

#[test]
fn item_35_host_member_without_partitions_gets_a_well_formed_empty_assignment() {
    let mut ctx = TestContext::new();
    // Three members on a topic of three partitions... and a fourth that gets nothing.
    let j = Join::new(G).protocols(&[("range", sub(&["u"]))]);
    let (ids, generation) = ctx.stable_group(j, 4);
    let mut empty = 0;
    for id in &ids {
        let reply = ctx.sync(&Sync::new(G, id, generation));
        let bytes = ctx.sync_response(reply).assignment.clone();
        assert!(!bytes.is_empty(), "never zero bytes");
        if assigned(&bytes).is_empty() {
            empty += 1;
        }
    }
    assert_eq!(empty, 1);
}

#[test]
fn item_36_sync_with_a_stale_generation_is_illegal_generation() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 1);
    let reply = ctx.sync(&Sync::new(G, &ids[0], generation - 1));
    assert_eq!(
        ctx.sync_response(reply).error_code,
        ResponseError::IllegalGeneration.code()
    );
}

#[test]
fn item_37_sync_during_preparing_rebalance_is_rebalance_in_progress() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    ctx.join(
        &Join::new(G)
            .member(&ids[0])
            .protocols(&[("range", sub(&["t", "u"]))]),
    );
    ctx.assert_state(G, GroupState::PreparingRebalance);
    let reply = ctx.sync(&Sync::new(G, &ids[1], generation));
    assert_eq!(
        ctx.sync_response(reply).error_code,
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn item_38_a_parked_sync_gets_rebalance_in_progress_when_a_new_rebalance_starts() {
    let mut ctx = TestContext::new();
    let (leader, follower, generation) = relay_completing(&mut ctx);
    let _ = leader;
    let parked = ctx.sync(&relay_sync(&follower, generation));
    ctx.join(&relay(G).version(3)); // a new member joins
    assert_eq!(
        ctx.sync_response(parked).error_code,
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn item_39_sync_v5_protocol_checks_and_echo() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 1);
    for (t, n) in [
        (None, Some("range")),
        (Some("consumer"), None),
        (Some("consumer"), Some("roundrobin")),
    ] {
        let reply = ctx.sync(&Sync::new(G, &ids[0], generation).protocol(t, n));
        assert_eq!(
            ctx.sync_response(reply).error_code,
            ResponseError::InconsistentGroupProtocol.code(),
            "type {t:?} name {n:?}"
        );
    }
    let reply = ctx.sync(&Sync::new(G, &ids[0], generation));
    let r = ctx.sync_response(reply).clone();
    assert_eq!(r.error_code, 0);
    assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert!(encodes(&r, 5));
}

#[test]
fn item_40_sync_to_an_unknown_or_empty_group_is_unknown_member_id() {
    let mut ctx = TestContext::new();
    let reply = ctx.sync(&Sync::new("nope", "client-x", 1));
    assert_eq!(
        ctx.sync_response(reply).error_code,
        ResponseError::UnknownMemberId.code()
    );
    ctx.join(&Join::new(G));
    ctx.assert_state(G, GroupState::Empty);
    let reply = ctx.sync(&Sync::new(G, "client-x", 0));
    assert_eq!(
        ctx.sync_response(reply).error_code,
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn item_41_sync_in_stable_returns_the_stored_assignment_at_once() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let first = ctx.sync(&Sync::new(G, &ids[0], generation));
    let late = ctx.sync(&Sync::new(G, &ids[0], generation));
    assert_eq!(
        ctx.sync_response(first).assignment,
        ctx.sync_response(late).assignment
    );
    assert_eq!(assigned(&ctx.sync_response(late).assignment)["t"].len(), 3);
}

#[test]
fn item_42_a_member_that_never_syncs_is_removed_and_the_group_rebalances() {
    let mut ctx = TestContext::new();
    let (_, a) = ctx.join_dynamic(relay(G));
    let (_, b) = ctx.join_dynamic(relay(G));
    ctx.settle(&[a, b]);
    let ra = ctx.join_response(a).clone();
    let rb = ctx.join_response(b).clone();
    ctx.sync(&relay_sync(&ra.member_id, ra.generation_id).assign(&ra.member_id, sub(&["t"])));
    for _ in 0..6 {
        // Both keep their sessions; b never sends SyncGroup.
        ctx.advance(3_000);
        ctx.heartbeat(G, &ra.member_id, ra.generation_id);
        ctx.heartbeat(G, &rb.member_id, rb.generation_id);
    }
    ctx.advance(2_000); // the rebalance timeout
    assert!(!ctx.has_member(G, &rb.member_id));
    assert!(ctx.has_member(G, &ra.member_id));
    ctx.assert_state(G, GroupState::PreparingRebalance);
}

#[test]
fn item_52_leave_v0_for_an_unknown_member_is_a_top_level_error() {
    let mut ctx = TestContext::new();
    ctx.stable_group(Join::new(G), 1);
    let r = ctx.leave(G, 0, &[("client-nobody", None)]);
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
    assert!(r.members.is_empty());
    assert!(encodes(&r, 0));
}

#[test]
fn item_53_batched_leave_answers_each_member_and_rebalances_once() {
    let mut ctx = TestContext::new();
    let (ids, _) = ctx.stable_group(Join::new(G), 3);
    let before = ctx.rebalances_started();
    let r = ctx.leave(
        G,
        3,
        &[(&ids[0], None), (&ids[1], None), ("client-nobody", None)],
    );
    assert_eq!(r.error_code, 0);
    let codes: Vec<i16> = r.members.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![0, 0, ResponseError::UnknownMemberId.code()]);
    assert_eq!(ctx.rebalances_started(), before + 1);
}

#[test]
fn item_54_leave_on_a_missing_group_answers_every_member_unknown() {
    let mut ctx = TestContext::new();
    let r = ctx.leave("nope", 3, &[("a", None), ("b", Some("i"))]);
    assert_eq!(r.error_code, 0);
    assert!(
        r.members
            .iter()
            .all(|m| m.error_code == ResponseError::UnknownMemberId.code())
    );
    assert_eq!(r.members.len(), 2);
}

#[test]
fn item_55_a_member_that_stops_heartbeating_is_removed_and_survivors_see_a_rebalance() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    for _ in 0..2 {
        ctx.advance(4_000);
        assert_eq!(ctx.heartbeat(G, &ids[1], generation), 0);
    }
    assert!(ctx.has_member(G, &ids[0]));
    ctx.advance(2_000);
    assert!(
        !ctx.has_member(G, &ids[0]),
        "expired after 10 s without heartbeat"
    );
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn item_56_offset_commits_keep_a_stable_member_alive() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 1);
    for i in 0..5 {
        ctx.advance(8_000);
        let r = ctx.commit(G, 8, &ids[0], generation, &[("t", 0, i, None)]);
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
    }
    assert!(ctx.has_member(G, &ids[0]));
    ctx.assert_state(G, GroupState::Stable);
    ctx.advance(10_000 as Millis);
    assert!(!ctx.has_member(G, &ids[0]));
}

#[test]
fn relay_stable_group_helper_installs_the_leader_assignment() {
    let mut ctx = TestContext::new();
    let (ids, generation) = relay_stable(&mut ctx, 2);
    assert_eq!(ids.len(), 2);
    assert_eq!(generation, 1);
}
