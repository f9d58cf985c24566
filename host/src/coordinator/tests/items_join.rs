//! Checklist items 4-33: common checks, dynamic JoinGroup, rebalance triggers and generations.
//! Items that assume a client leader are tested in relay mode (`relay_` names, a protocol no
//! module serves) and in host mode (`host_` names) where the host differs on purpose.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::JoinGroupResponse;

use super::context::*;
use crate::coordinator::{GroupState, HOST_LEADER, TimerKey};

/// A protocol no module serves: the group relays a client leader's assignment.
const CLIENT_SIDE: &str = "client-side";

fn relay(group: &str) -> Join {
    Join::new(group).names(&[CLIENT_SIDE])
}

#[test]
fn item_04_empty_group_id_is_invalid_group_id_and_member_id_echoed() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new("").member("m-1"));
    let r = ctx.join_response(reply);
    assert_eq!(r.error_code, ResponseError::InvalidGroupId.code());
    assert_eq!(r.member_id.as_str(), "m-1");
}

#[test]
fn item_05_session_timeout_outside_bounds_is_invalid_session_timeout() {
    let mut ctx = TestContext::new();
    for ms in [5_999, 1_800_001] {
        let reply = ctx.join(&Join::new(G).member("m-1").session(ms));
        let r = ctx.join_response(reply);
        assert_eq!(
            r.error_code,
            ResponseError::InvalidSessionTimeout.code(),
            "session {ms}"
        );
        assert_eq!(r.member_id.as_str(), "m-1");
    }
    for ms in [6_000, 1_800_000] {
        let reply = ctx.join(&Join::new(G).session(ms));
        assert_eq!(
            ctx.join_response(reply).error_code,
            ResponseError::MemberIdRequired.code()
        );
    }
}

#[test]
fn item_07_member_id_required_v4_creates_empty_group_without_rebalance() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new(G).version(4).client("app"));
    let r = ctx.join_response(reply).clone();
    assert_eq!(r.error_code, ResponseError::MemberIdRequired.code());
    let id = r.member_id.as_str();
    let uuid = id
        .strip_prefix("app-")
        .expect("member id starts with the client id");
    assert_eq!(uuid.len(), 36, "uuid-shaped suffix: {uuid}");
    assert_eq!(uuid.matches('-').count(), 4);
    ctx.assert_state(G, GroupState::Empty);
    assert_eq!(ctx.rebalances_started(), 0);
    assert!(!encodes(&r, 3) || r.protocol_name.as_deref() == Some(""));
}

#[test]
fn item_08_second_join_with_the_given_id_is_added_and_parked() {
    let mut ctx = TestContext::new();
    let (id, reply) = ctx.join_dynamic(Join::new(G));
    assert!(
        !ctx.answered(reply),
        "parked until the join phase completes"
    );
    ctx.assert_state(G, GroupState::PreparingRebalance);
    ctx.advance(3_000);
    let r = ctx.join_response(reply);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.member_id.as_str(), id);
    assert_eq!(r.generation_id, 1);
}

#[test]
fn item_09_join_v3_adds_the_member_directly() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new(G).version(3));
    assert!(!ctx.answered(reply));
    ctx.assert_state(G, GroupState::PreparingRebalance);
    ctx.advance(3_000);
    let r = ctx.join_response(reply);
    assert_eq!(r.error_code, 0);
    assert!(r.generation_id >= 1);
    assert!(!r.member_id.is_empty());
}

#[test]
fn item_10_unused_pending_member_id_is_forgotten_after_session_timeout() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new(G).session(10_000));
    let id = ctx.join_response(reply).member_id.to_string();
    ctx.advance(10_000);
    let reply = ctx.join(&Join::new(G).member(&id));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn item_11_known_member_id_for_a_missing_group_is_unknown_member_id() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new("nope").member("m-1"));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::UnknownMemberId.code()
    );
    assert_eq!(ctx.state("nope"), GroupState::Dead, "no group was created");
}

#[test]
fn item_12_unknown_member_id_for_an_existing_group_is_unknown_member_id() {
    let mut ctx = TestContext::new();
    ctx.stable_group(Join::new(G), 1);
    let reply = ctx.join(&Join::new(G).member("client-unknown"));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn item_13_relay_first_member_waits_the_initial_delay_and_leads_generation_1() {
    let mut ctx = TestContext::new();
    let (id, reply) = ctx.join_dynamic(relay(G));
    ctx.advance(2_999);
    assert!(
        !ctx.answered(reply),
        "not before the initial rebalance delay"
    );
    ctx.advance(1);
    let r = ctx.join_response(reply);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.leader.as_str(), id);
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].member_id.as_str(), id);
}

#[test]
fn item_13_host_first_member_waits_the_initial_delay_and_follows_the_host() {
    let mut ctx = TestContext::new();
    let (_, reply) = ctx.join_dynamic(Join::new(G));
    ctx.advance(2_999);
    assert!(!ctx.answered(reply));
    ctx.advance(1);
    let r = ctx.join_response(reply);
    assert_eq!(r.generation_id, 1);
    assert_eq!(r.leader.as_str(), HOST_LEADER);
    assert!(r.members.is_empty());
}

#[test]
fn item_14_a_member_joining_during_the_initial_delay_extends_it_within_the_rebalance_timeout() {
    let mut ctx = TestContext::new();
    let (_, a) = ctx.join_dynamic(Join::new(G).rebalance(20_000));
    ctx.advance(2_000);
    let (_, b) = ctx.join_dynamic(Join::new(G).rebalance(20_000));
    ctx.advance(1_000); // first delay ends at 3 s: extended by another 3 s
    assert!(!ctx.answered(a) && !ctx.answered(b));
    ctx.advance(3_000);
    let (ra, rb) = (ctx.join_response(a).clone(), ctx.join_response(b).clone());
    assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
    assert_eq!(ctx.now, 6_000);
}

#[test]
fn item_14_the_initial_delay_extension_is_bounded_by_the_rebalance_timeout() {
    let mut ctx = TestContext::new();
    // Rebalance timeout 5 s: delay 3 s, remaining 2 s; members keep arriving every second.
    let (_, first) = ctx.join_dynamic(Join::new(G).rebalance(5_000));
    for _ in 0..10 {
        if ctx.answered(first) {
            break;
        }
        ctx.advance(1_000);
        ctx.join_dynamic(Join::new(G).rebalance(5_000));
    }
    assert!(ctx.answered(first));
    assert!(
        ctx.now <= 6_000,
        "completed at {} ms, past the bound",
        ctx.now
    );
}

#[test]
fn item_15_relay_leader_gets_every_member_and_followers_get_none() {
    let mut ctx = TestContext::new();
    let ra = ctx.join(&relay(G).version(5).instance("i-a"));
    let (_, rb) = ctx.join_dynamic(relay(G).version(5));
    ctx.settle(&[ra, rb]);
    let (ra, rb) = (ctx.join_response(ra).clone(), ctx.join_response(rb).clone());
    let (leader, follower) = if ra.leader == ra.member_id {
        (ra, rb)
    } else {
        (rb, ra)
    };
    assert_eq!(leader.members.len(), 2);
    assert!(
        leader
            .members
            .iter()
            .any(|m| m.group_instance_id.as_deref() == Some("i-a"))
    );
    assert!(leader.members.iter().all(|m| !m.metadata.is_empty()));
    assert!(follower.members.is_empty());
    assert_eq!(follower.leader, leader.leader);
}

#[test]
fn item_15_host_every_member_is_a_follower_of_the_synthetic_leader() {
    let mut ctx = TestContext::new();
    let (_, ra) = ctx.join_dynamic(Join::new(G));
    let (_, rb) = ctx.join_dynamic(Join::new(G));
    ctx.settle(&[ra, rb]);
    for r in [ctx.join_response(ra), ctx.join_response(rb)] {
        assert_eq!(r.leader.as_str(), HOST_LEADER);
        assert_ne!(r.leader, r.member_id);
        assert!(r.members.is_empty());
    }
}

#[test]
fn item_16_empty_protocol_type_or_list_to_an_empty_group_is_inconsistent() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new(G).protocol_type(""));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    let reply = ctx.join(&Join::new(G).protocols(&[]));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
}

#[test]
fn item_17_other_protocol_type_to_a_consumer_group_is_inconsistent() {
    let mut ctx = TestContext::new();
    ctx.stable_group(Join::new(G), 1);
    let reply = ctx.join(&Join::new(G).protocol_type("connect"));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
}

#[test]
fn item_18_no_shared_protocol_is_inconsistent_and_the_group_is_undisturbed() {
    let mut ctx = TestContext::new();
    let (_, generation) = ctx.stable_group(Join::new(G), 2);
    let reply = ctx.join(&Join::new(G).names(&["something-else"]));
    assert_eq!(
        ctx.join_response(reply).error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    ctx.assert_state(G, GroupState::Stable);
    assert_eq!(ctx.generation(G), generation);
}

fn three_voters(ctx: &mut TestContext, lists: [&[&str]; 3]) -> Vec<JoinGroupResponse> {
    let replies: Vec<_> = lists
        .iter()
        .map(|l| ctx.join_dynamic(Join::new(G).names(l)).1)
        .collect();
    ctx.settle(&replies);
    replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect()
}

#[test]
fn item_19_voting_selects_the_most_voted_common_protocol() {
    let mut ctx = TestContext::new();
    let rs = three_voters(
        &mut ctx,
        [
            &["range", "cooperative-sticky"],
            &["cooperative-sticky", "range"],
            &["cooperative-sticky", "range"],
        ],
    );
    for r in rs {
        assert_eq!(r.protocol_name.as_deref(), Some("cooperative-sticky"));
    }
}

#[test]
fn item_20_a_protocol_only_some_members_support_is_never_selected() {
    let mut ctx = TestContext::new();
    let rs = three_voters(
        &mut ctx,
        [
            &["roundrobin", "range"],
            &["roundrobin", "range"],
            &["range"],
        ],
    );
    for r in rs {
        assert_eq!(r.protocol_name.as_deref(), Some("range"));
    }
}

#[test]
fn item_21_protocol_name_on_errors_is_empty_below_v7_and_null_from_v7() {
    let mut ctx = TestContext::new();
    let v6 = ctx.join(&Join::new("").version(6));
    let r6 = ctx.join_response(v6).clone();
    assert_eq!(r6.protocol_name.as_deref(), Some(""));
    assert!(encodes(&r6, 6));
    let v7 = ctx.join(&Join::new("").version(7));
    let r7 = ctx.join_response(v7).clone();
    assert_eq!(r7.protocol_name, None);
    assert!(encodes(&r7, 7));
}

#[test]
fn item_22_a_third_member_beyond_max_group_size_is_refused() {
    let mut ctx = TestContext::with_config(crate::coordinator::CoordinatorConfig {
        max_group_size: 2,
        ..Default::default()
    });
    ctx.stable_group(Join::new(G), 2);
    let reply = ctx.join(&Join::new(G));
    let r = ctx.join_response(reply);
    assert_eq!(r.error_code, ResponseError::GroupMaxSizeReached.code());
    assert_eq!(r.member_id.as_str(), "");
}

#[test]
fn item_23_identical_rejoin_in_stable_gets_the_current_generation_without_rebalance() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let started = ctx.rebalances_started();
    for id in &ids {
        let reply = ctx.join(&Join::new(G).member(id));
        let r = ctx.join_response(reply);
        assert_eq!(r.error_code, 0);
        assert_eq!(r.generation_id, generation);
        assert!(r.members.is_empty());
    }
    ctx.assert_state(G, GroupState::Stable);
    assert_eq!(ctx.rebalances_started(), started);
}

#[test]
fn item_24_changed_metadata_in_stable_starts_a_rebalance_to_the_next_generation() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let changed = Join::new(G).member(&ids[0]).protocols(&[(
        "range",
        subscription(3, &["t"], &[("t", &[0, 1, 2])], generation),
    )]);
    let a = ctx.join(&changed);
    ctx.assert_state(G, GroupState::PreparingRebalance);
    let b = ctx.join(&Join::new(G).member(&ids[1]));
    assert_eq!(ctx.join_response(a).generation_id, generation + 1);
    assert_eq!(ctx.join_response(b).generation_id, generation + 1);
}

#[test]
fn item_25_relay_leader_rejoining_in_stable_forces_a_rebalance() {
    let mut ctx = TestContext::new();
    let (ids, generation) = relay_stable(&mut ctx, 2);
    let leader = ids
        .iter()
        .find(|id| ctx.is_relay_leader(id))
        .unwrap()
        .clone();
    ctx.join(&relay(G).member(&leader));
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(ctx.generation(G), generation);
}

#[test]
fn item_25_host_identical_rejoin_never_forces_a_rebalance_nobody_leads() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    for id in &ids {
        let reply = ctx.join(&Join::new(G).member(id));
        assert_eq!(ctx.join_response(reply).generation_id, generation);
    }
    ctx.assert_state(G, GroupState::Stable);
}

#[test]
fn item_26_heartbeat_during_preparing_rebalance_is_rebalance_in_progress() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    ctx.join(&Join::new(G).member(&ids[0]).names(&["roundrobin", "range"]));
    ctx.assert_state(G, GroupState::PreparingRebalance);
    assert_eq!(
        ctx.heartbeat(G, &ids[1], generation),
        ResponseError::RebalanceInProgress.code()
    );
}

#[test]
fn item_27_heartbeat_during_completing_rebalance_is_none() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hold;
    let (_, a) = ctx.join_dynamic(Join::new(G));
    ctx.advance(3_000);
    ctx.assert_state(G, GroupState::CompletingRebalance);
    let r = ctx.join_response(a).clone();
    assert_eq!(ctx.heartbeat(G, &r.member_id, r.generation_id), 0);
}

#[test]
fn item_28_stale_generation_is_illegal_generation_and_unknown_member_is_unknown() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 1);
    assert_eq!(
        ctx.heartbeat(G, &ids[0], generation - 1),
        ResponseError::IllegalGeneration.code()
    );
    assert_eq!(
        ctx.heartbeat(G, "client-nobody", generation),
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn item_29_heartbeat_to_an_empty_group_is_unknown_member_id() {
    let mut ctx = TestContext::new();
    ctx.join(&Join::new(G)); // MEMBER_ID_REQUIRED: the group exists, Empty
    ctx.assert_state(G, GroupState::Empty);
    assert_eq!(
        ctx.heartbeat(G, "client-x", 0),
        ResponseError::UnknownMemberId.code()
    );
}

#[test]
fn item_30_a_dynamic_member_that_does_not_rejoin_in_time_is_removed() {
    let mut ctx = TestContext::new();
    let (ids, generation) = relay_stable(&mut ctx, 2);
    let leader = ids
        .iter()
        .find(|id| ctx.is_relay_leader(id))
        .unwrap()
        .clone();
    let other = ids.iter().find(|id| **id != leader).unwrap().clone();
    let reply = ctx.join(&relay(G).member(&leader)); // leader forces a rebalance
    for _ in 0..6 {
        // The other member keeps its session alive but never rejoins.
        ctx.advance(3_000);
        ctx.heartbeat(G, &other, generation);
    }
    ctx.advance(1_999);
    assert!(!ctx.answered(reply));
    ctx.advance(1); // the rebalance timeout (20 s)
    let r = ctx.join_response(reply);
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].member_id.as_str(), leader);
    assert!(!ctx.has_member(G, &other));
}

#[test]
fn item_31_relay_a_rejoined_member_becomes_leader_when_the_leader_does_not_rejoin() {
    let mut ctx = TestContext::new();
    let (ids, generation) = relay_stable(&mut ctx, 2);
    let leader = ids
        .iter()
        .find(|id| ctx.is_relay_leader(id))
        .unwrap()
        .clone();
    let other = ids.iter().find(|id| **id != leader).unwrap().clone();
    let changed = relay(G)
        .member(&other)
        .protocols(&[(CLIENT_SIDE, sub(&["t", "u"]))]);
    let reply = ctx.join(&changed);
    for _ in 0..6 {
        ctx.advance(3_000);
        ctx.heartbeat(G, &leader, generation);
    }
    ctx.advance(2_000);
    let r = ctx.join_response(reply);
    assert_eq!(r.leader.as_str(), other);
    assert_eq!(r.generation_id, generation + 1);
}

#[test]
fn item_31_host_the_leader_is_always_the_host() {
    let mut ctx = TestContext::new();
    let (ids, _) = ctx.stable_group(Join::new(G), 2);
    let reply = ctx.join(
        &Join::new(G)
            .member(&ids[1])
            .protocols(&[("range", sub(&["t", "u"]))]),
    );
    ctx.advance(20_000);
    assert_eq!(ctx.join_response(reply).leader.as_str(), HOST_LEADER);
}

#[test]
fn item_32_last_member_leaving_a_stable_group_makes_it_empty_at_the_next_generation() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 1);
    let r = ctx.leave(G, 3, &[(&ids[0], None)]);
    assert_eq!(r.error_code, 0);
    ctx.assert_state(G, GroupState::Empty);
    assert_eq!(ctx.generation(G), generation + 1);
    let d = ctx.describe(G);
    assert_eq!(d.group_state.as_str(), "Empty");
    assert_eq!(d.protocol_data.as_str(), "");
}

#[test]
fn item_33_join_v0_uses_the_session_timeout_as_rebalance_timeout() {
    let mut ctx = TestContext::new();
    let reply = ctx.join(&Join::new(G).version(0).session(7_000).names(&[CLIENT_SIDE]));
    ctx.advance(3_000);
    let id = ctx.join_response(reply).member_id.to_string();
    ctx.sync(
        &Sync::new(G, &id, 1)
            .version(0)
            .protocol(None, None)
            .assign(&id, sub(&["t"])),
    );
    ctx.assert_state(G, GroupState::Stable);
    // A second member forces a rebalance; the first never rejoins: removed after 7 s, the
    // session timeout standing in for v0's missing rebalance timeout.
    let second = ctx.join(&Join::new(G).version(0).session(7_000).names(&[CLIENT_SIDE]));
    ctx.heartbeat(G, &id, 1);
    ctx.advance(6_999);
    assert!(!ctx.answered(second));
    ctx.advance(1);
    assert!(ctx.answered(second));
    assert!(ctx.armed(&TimerKey::Sync { group: G.into() }));
}

/// A relay-mode group of `n` dynamic members, Stable, leader's assignment installed.
pub(super) fn relay_stable(ctx: &mut TestContext, n: usize) -> (Vec<String>, i32) {
    let replies: Vec<_> = (0..n).map(|_| ctx.join_dynamic(relay(G)).1).collect();
    ctx.settle(&replies);
    let responses: Vec<JoinGroupResponse> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    let generation = responses[0].generation_id;
    let ids: Vec<String> = responses.iter().map(|r| r.member_id.to_string()).collect();
    let leader = responses[0].leader.to_string();
    for id in ids.iter().filter(|id| **id != leader) {
        ctx.sync(&Sync::new(G, id, generation).protocol(Some("consumer"), Some(CLIENT_SIDE)));
    }
    let mut sync = Sync::new(G, &leader, generation).protocol(Some("consumer"), Some(CLIENT_SIDE));
    for id in &ids {
        sync = sync.assign(id, subscription(0, &[], &[], -1));
    }
    ctx.sync(&sync);
    ctx.assert_state(G, GroupState::Stable);
    (ids, generation)
}
