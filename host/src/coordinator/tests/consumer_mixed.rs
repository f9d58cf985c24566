//! Mixed groups (`reference/kip848.md` 3.12, issue 11 item 5): classic members (JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup, as kafka-python sends them) in a consumer group beside
//! consumer-protocol members, all assigned by the group's module, never a partition owned by
//! two members as the clients themselves see it; and Kafka's online upgrade of a classic group
//! with members into a consumer group.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;

use super::builders::{G, Join, Sync, subscription};
use super::consumer_context::*;
use super::context::{TestContext, assigned};
use crate::coordinator::CoordinatorConfig;
use crate::coordinator::consumer::MemberState;

const REBALANCE_IN_PROGRESS: i16 = 27;

/// A classic client as kafka-python is one: eager (everything is revoked before it rejoins, so
/// its Subscription lists nothing owned), following whatever leader the JoinGroup names.
struct Classic {
    member_id: String,
    generation: i32,
    owned: Owned,
    topics: Vec<String>,
    session_ms: i32,
}

impl Classic {
    fn new(topics: &[&str]) -> Classic {
        Classic {
            member_id: String::new(),
            generation: -1,
            owned: Owned::new(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            session_ms: 10_000,
        }
    }

    fn join_request(&self) -> Join {
        let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
        Join::new(G)
            .member(&self.member_id)
            .session(self.session_ms)
            .protocols(&[("range", subscription(0, &topics, &[], -1))])
    }

    /// JoinGroup (with the MEMBER_ID_REQUIRED round trip of a first join) then SyncGroup:
    /// what kafka-python does from `ensure_active_group`. Returns the JoinGroup answer's code.
    fn rejoin(&mut self, ctx: &mut TestContext) -> i16 {
        self.owned.clear(); // eager: revoked before the JoinGroup
        let mut reply = ctx.join(&self.join_request());
        let mut answer = ctx.join_response(reply).clone();
        if answer.error_code == ResponseError::MemberIdRequired.code() {
            self.member_id = answer.member_id.to_string();
            reply = ctx.join(&self.join_request());
            answer = ctx.join_response(reply).clone();
        }
        if answer.error_code != 0 {
            return answer.error_code;
        }
        assert_eq!(answer.leader.as_str(), "", "no leader: the client follows");
        assert!(answer.members.is_empty());
        assert_eq!(answer.protocol_type.as_deref(), Some("consumer"));
        assert_eq!(answer.protocol_name.as_deref(), Some("range"));
        self.generation = answer.generation_id;
        let sync = ctx.sync(&Sync::new(G, &self.member_id, self.generation));
        let synced = ctx.sync_response(sync).clone();
        if synced.error_code != 0 {
            return synced.error_code;
        }
        self.owned = assigned(&synced.assignment)
            .into_iter()
            .map(|(t, ps)| (t, ps.into_iter().collect::<BTreeSet<i32>>()))
            .filter(|(_, ps)| !ps.is_empty())
            .collect();
        0
    }

    /// A Heartbeat; REBALANCE_IN_PROGRESS makes it rejoin at once.
    fn poll(&mut self, ctx: &mut TestContext) -> i16 {
        let code = ctx.heartbeat(G, &self.member_id, self.generation);
        if code == REBALANCE_IN_PROGRESS {
            self.rejoin(ctx);
        }
        code
    }
}

/// No partition is consumed by two clients, of either protocol.
fn assert_clients_disjoint(consumers: &[Client], classics: &[Classic]) {
    let mut seen: BTreeSet<(String, i32)> = BTreeSet::new();
    let all = consumers
        .iter()
        .map(|c| (&c.member_id, &c.owned))
        .chain(classics.iter().map(|c| (&c.member_id, &c.owned)));
    for (member, owned) in all {
        for (t, ps) in owned {
            for p in ps {
                assert!(
                    seen.insert((t.clone(), *p)),
                    "{t}-{p} consumed twice ({member})"
                );
            }
        }
    }
}

/// Polls everyone until a round changes nothing; checks disjointness after every request.
fn settle(ctx: &mut TestContext, consumers: &mut [Client], classics: &mut [Classic]) {
    for _ in 0..10 {
        let before: Vec<Owned> = consumers
            .iter()
            .map(|c| c.owned.clone())
            .chain(classics.iter().map(|c| c.owned.clone()))
            .collect();
        let mut codes = Vec::new();
        for i in 0..consumers.len() {
            codes.push(consumers[i].poll(ctx));
            assert_clients_disjoint(consumers, classics);
        }
        for i in 0..classics.len() {
            codes.push(classics[i].poll(ctx));
            assert_clients_disjoint(consumers, classics);
        }
        let after: Vec<Owned> = consumers
            .iter()
            .map(|c| c.owned.clone())
            .chain(classics.iter().map(|c| c.owned.clone()))
            .collect();
        if before == after && codes.iter().all(|c| *c == 0) {
            ctx.assert_single_owners(G);
            return;
        }
    }
    panic!("the mixed group did not settle");
}

fn union_all(consumers: &[Client], classics: &[Classic]) -> Owned {
    let mut all = union(consumers);
    for c in classics {
        for (t, ps) in &c.owned {
            all.entry(t.clone()).or_default().extend(ps.iter().copied());
        }
    }
    all
}

#[test]
fn mixed_a_classic_member_joins_a_consumer_group_and_gets_its_share_through_sync_group() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut consumers = vec![Client::new("a", &["t"])];
    consumers[0].poll(&mut ctx);
    consumers[0].poll(&mut ctx);
    assert_eq!(consumers[0].owned, all_partitions(&["t"]));

    let mut classics = vec![Classic::new(&["t"])];
    assert_eq!(classics[0].rejoin(&mut ctx), 0);
    let group = ctx
        .coordinator
        .consumer_group_ref(G)
        .expect("still a consumer group");
    let x = &group.members[classics[0].member_id.as_str()];
    assert!(
        x.classic.is_some(),
        "a classic member of the consumer group"
    );
    assert_eq!(
        classics[0].generation, x.current.epoch,
        "generation = member epoch"
    );
    assert!(classics[0].owned.is_empty(), "its partitions are still a's");

    settle(&mut ctx, &mut consumers, &mut classics);
    assert_eq!(union_all(&consumers, &classics), all_partitions(&["t"]));
    let shares: Vec<usize> = [&consumers[0].owned, &classics[0].owned]
        .iter()
        .map(|o| o.values().map(BTreeSet::len).sum())
        .collect();
    assert_eq!(shares, [3, 3], "uniform splits t's six partitions");
}

#[test]
fn mixed_members_of_both_protocols_come_and_go_and_no_partition_has_two_owners() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut consumers = vec![Client::new("a", &["t", "u"])];
    let mut classics = vec![Classic::new(&["t", "u"]), Classic::new(&["t"])];
    consumers[0].poll(&mut ctx);
    for c in classics.iter_mut() {
        c.rejoin(&mut ctx);
    }
    settle(&mut ctx, &mut consumers, &mut classics);
    assert_eq!(
        union_all(&consumers, &classics),
        all_partitions(&["t", "u"])
    );

    // A consumer-protocol member joins: the classic members learn it from their heartbeat.
    consumers.push(Client::new("b", &["t", "u"]));
    consumers[1].poll(&mut ctx);
    let epoch = ctx.coordinator.consumer_group(G).expect("group").1;
    let x = &classics[0];
    assert!(x.generation < epoch);
    assert_eq!(
        ctx.heartbeat(G, &x.member_id, x.generation),
        REBALANCE_IN_PROGRESS
    );
    settle(&mut ctx, &mut consumers, &mut classics);
    assert_eq!(
        union_all(&consumers, &classics),
        all_partitions(&["t", "u"])
    );

    // A classic member leaves with LeaveGroup; its partitions move.
    let gone = classics.remove(1);
    let left = ctx.leave(G, 4, &[(gone.member_id.as_str(), None)]);
    assert_eq!(left.error_code, 0);
    assert_eq!(left.members[0].error_code, 0);
    assert!(!ctx.has_consumer_member(&gone.member_id));
    settle(&mut ctx, &mut consumers, &mut classics);
    assert_eq!(
        union_all(&consumers, &classics),
        all_partitions(&["t", "u"])
    );

    // The consumer-protocol members leave: the classic member ends up with everything.
    for c in consumers.drain(..) {
        ctx.cgh_now(&Hb::beat(&c.member_id, -1));
    }
    settle(&mut ctx, &mut consumers, &mut classics);
    assert_eq!(classics[0].owned, all_partitions(&["t", "u"]));
}

#[test]
fn mixed_a_partition_moves_to_a_classic_member_only_after_its_owner_released_it() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    let mut x = Classic::new(&["t"]);
    x.rejoin(&mut ctx);
    let member = |ctx: &TestContext, id: &str| {
        let group = ctx.coordinator.consumer_group_ref(G).expect("group");
        group.members[id].current.clone()
    };
    assert_eq!(
        member(&ctx, &x.member_id).state,
        MemberState::UnreleasedPartitions
    );
    // a has not heartbeaten: x waits, and its heartbeat says nothing.
    assert_eq!(ctx.heartbeat(G, &x.member_id, x.generation), 0);
    assert!(x.owned.is_empty());
    // a learns what to give up, then acknowledges: x's partitions are free, x rejoins.
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    assert_eq!(x.poll(&mut ctx), REBALANCE_IN_PROGRESS);
    assert_eq!(x.owned.values().map(BTreeSet::len).sum::<usize>(), 3);
    assert_clients_disjoint(std::slice::from_ref(&a), std::slice::from_ref(&x));
}

#[test]
fn mixed_classic_requests_are_checked_like_kafkas() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    let mut x = Classic::new(&["t"]);
    x.rejoin(&mut ctx);

    let code = |e: ResponseError| e.code();
    // Another protocol type than "consumer" cannot join.
    let other = ctx.join(&Join::new(G).protocol_type("connect"));
    assert_eq!(
        ctx.join_response(other).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
    // A stale generation, a stranger, a consumer-protocol member on the classic path.
    assert_eq!(
        ctx.heartbeat(G, &x.member_id, x.generation - 1),
        code(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        ctx.heartbeat(G, "nobody", x.generation),
        code(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        ctx.heartbeat(G, "a", a.epoch),
        code(ResponseError::UnknownMemberId)
    );
    let stale = ctx.sync(&Sync::new(G, &x.member_id, x.generation + 1));
    assert_eq!(
        ctx.sync_response(stale).error_code,
        code(ResponseError::IllegalGeneration)
    );
    let wrong = ctx.sync(&Sync::new(G, &x.member_id, x.generation).protocol(None, Some("other")));
    assert_eq!(
        ctx.sync_response(wrong).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
    // The group epoch moved: SyncGroup asks for a rejoin first.
    let mut b = Client::new("b", &["t"]);
    b.poll(&mut ctx);
    let late = ctx.sync(&Sync::new(G, &x.member_id, x.generation));
    assert_eq!(
        ctx.sync_response(late).error_code,
        code(ResponseError::RebalanceInProgress)
    );
    // A leave of an unknown member is answered per member.
    let left = ctx.leave(G, 4, &[("nobody", None)]);
    assert_eq!(
        left.members[0].error_code,
        code(ResponseError::UnknownMemberId)
    );
}

#[test]
fn mixed_a_classic_member_expires_after_its_own_session_timeout() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    let mut x = Classic::new(&["t"]);
    x.session_ms = 8_000;
    x.rejoin(&mut ctx);
    ctx.advance(7_000);
    a.poll(&mut ctx);
    assert!(ctx.has_consumer_member(&x.member_id), "within its 8 s");
    ctx.advance(1_500);
    assert!(
        !ctx.has_consumer_member(&x.member_id),
        "expired after its 8 s, not the consumer protocol's 45 s"
    );
    assert!(ctx.has_consumer_member("a"));
}

#[test]
fn upgrade_a_stable_classic_group_becomes_a_consumer_group_when_a_consumer_member_joins() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let (ids, generation) = ctx.stable_group(Join::new(G).session(30_000), 2);
    let mut classics: Vec<Classic> = ids
        .iter()
        .map(|id| {
            let sync = ctx.sync(&Sync::new(G, id, generation));
            let owned = assigned(&ctx.sync_response(sync).assignment)
                .into_iter()
                .map(|(t, ps)| (t, ps.into_iter().collect::<BTreeSet<i32>>()))
                .collect();
            Classic {
                member_id: id.clone(),
                generation,
                owned,
                topics: vec!["t".into()],
                session_ms: 30_000,
            }
        })
        .collect();
    assert_eq!(union_all(&[], &classics), all_partitions(&["t"]));

    let mut consumers = vec![Client::new("a", &["t"])];
    assert_eq!(consumers[0].poll(&mut ctx), 0, "the join is accepted");
    assert_eq!(
        ctx.coordinator.group_state(G),
        None,
        "no classic group any more"
    );
    let group = ctx
        .coordinator
        .consumer_group_ref(G)
        .expect("a consumer group");
    assert_eq!(group.members.len(), 3);
    for c in &classics {
        let m = &group.members[c.member_id.as_str()];
        assert!(m.classic.is_some());
        assert_eq!(
            m.current.epoch, generation,
            "Stable at the classic generation"
        );
    }
    assert!(
        consumers[0].owned.is_empty(),
        "everything is still the classic members'"
    );
    // The classic members stored as an Empty group: after a restart nothing claims them.
    let stored = ctx.persisted.iter().rev().find_map(|e| match e {
        crate::coordinator::Effect::PersistGroup(s) if s.group_id() == G => Some(s.clone()),
        _ => None,
    });
    let stored = stored.expect("persisted");
    assert!(
        stored
            .classic()
            .expect("a classic group")
            .members
            .is_empty()
    );

    settle(&mut ctx, &mut consumers, &mut classics);
    assert_eq!(union_all(&consumers, &classics), all_partitions(&["t"]));
    assert_eq!(
        consumers[0]
            .owned
            .values()
            .map(BTreeSet::len)
            .sum::<usize>(),
        2
    );
}

#[test]
fn upgrade_a_classic_group_in_a_rebalance_is_refused_with_group_id_not_found() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.stable_group(Join::new(G), 1);
    // A second member's join starts a rebalance.
    let (_, parked) = ctx.join_dynamic(Join::new(G).client("late"));
    assert!(!ctx.answered(parked));
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(answer.error_code, ResponseError::GroupIdNotFound.code());
    assert!(
        answer
            .error_message
            .as_deref()
            .is_some_and(|m| m.contains("rebalance")),
        "{answer:?}"
    );
    assert!(ctx.coordinator.group_state(G).is_some(), "still classic");
}

impl TestContext {
    fn has_consumer_member(&self, member: &str) -> bool {
        self.coordinator
            .consumer_group_ref(G)
            .is_some_and(|g| g.members.contains_key(member))
    }
}
