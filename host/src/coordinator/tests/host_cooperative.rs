//! Cooperative groups (KIP-429) under the host: no partition reaches a new owner while another
//! member still owns it, whether the module or the fallback computed the assignment; "owns"
//! follows Kafka's generation rule (a claim at an older `owned_generation` is stale).

use assignor_sdk::{
    AssignRequest, AssignResponse, Member, MemberAssignment, Topic, TopicPartitions,
};

use super::context::*;
use super::host::{joined, notices_of_run, sync_all};
use crate::coordinator::native_range::native_range;
use crate::coordinator::{GroupState, RunOutcome};
use assignor_wire::checks::{OutputError, check_named, check_response, resolve, strip_owned};

/// A cooperative group where member A owns t-0..2 and B owns t-3..5 at generation 1, both
/// rejoining for generation 2; `script` computes generation 2.
fn cooperative_group(ctx: &mut TestContext) -> Vec<(String, Vec<i32>)> {
    let rs = joined(
        ctx,
        &[
            Join::new(G).names(&["cooperative-sticky"]),
            Join::new(G).names(&["cooperative-sticky"]),
        ],
    );
    let syncs = sync_all(ctx, &rs);
    let generation = rs[0].generation_id;
    let owned: Vec<(String, Vec<i32>)> = rs
        .iter()
        .zip(&syncs)
        .map(|(r, s)| {
            (
                r.member_id.to_string(),
                assigned(&s.assignment)["t"].clone(),
            )
        })
        .collect();
    // Both rejoin listing what they own (cooperative clients keep their partitions).
    for (id, own) in &owned {
        let meta = subscription(3, &["t"], &[("t", own)], generation);
        ctx.join(
            &Join::new(G)
                .member(id)
                .protocols(&[("cooperative-sticky", meta)]),
        );
    }
    owned
}

/// One rebalance of a stable cooperative group: each `(member, owned, owned_generation)`
/// rejoins with a Subscription claiming `owned` at `owned_generation`, as a KIP-429 client
/// does, then syncs. Returns the new generation and each member's new `t` partitions.
fn rejoin_claiming(ctx: &mut TestContext, claims: &[(&str, &[i32], i32)]) -> (i32, Vec<Vec<i32>>) {
    let replies: Vec<_> = claims
        .iter()
        .map(|(id, owned, generation)| {
            let meta = subscription(3, &["t"], &[("t", owned)], *generation);
            ctx.join(
                &Join::new(G)
                    .member(id)
                    .protocols(&[("cooperative-sticky", meta)]),
            )
        })
        .collect();
    ctx.settle(&replies);
    let rs: Vec<_> = replies
        .iter()
        .map(|r| ctx.join_response(*r).clone())
        .collect();
    assert!(rs.iter().all(|r| r.error_code == 0), "{rs:?}");
    let syncs = sync_all(ctx, &rs);
    ctx.assert_state(G, GroupState::Stable);
    let given = syncs
        .iter()
        .map(|s| {
            assigned(&s.assignment)
                .get("t")
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    (rs[0].generation_id, given)
}

/// A stable cooperative-sticky group of two members at generation 6, computed by `range`'s
/// split every time: the member sorting first owns t-0..2, the other t-3..5. Returns
/// `(owner, other)`, sorted by member id.
fn cooperative_group_at_generation_6(ctx: &mut TestContext) -> (String, String) {
    let (ids, mut generation) = ctx.stable_group(Join::new(G).names(&["cooperative-sticky"]), 2);
    let (owner, other) = (ids[0].clone(), ids[1].clone());
    assert!(
        owner < other,
        "member ids sort by client id: {owner} < {other}"
    );
    while generation < 6 {
        let (next, given) = rejoin_claiming(
            ctx,
            &[
                (&owner, &[0, 1, 2], generation),
                (&other, &[3, 4, 5], generation),
            ],
        );
        assert_eq!(given, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        generation = next;
    }
    assert_eq!(generation, 6);
    (owner, other)
}

#[test]
fn host_cooperative_current_owner_keeps_a_partition_a_stale_member_still_claims() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Script(Box::new(|run| {
        if run.strategy == "cooperative-sticky" {
            assert!(run.cooperative && !run.fallback, "checked cooperatively");
        }
        // A sticky answer: everyone keeps what it owns at the newest generation.
        native("range", &run.request)
    }));
    let (owner, stale) = cooperative_group_at_generation_6(&mut ctx);
    let runs_before = ctx.runs.len();
    // The owner claims t-0 at generation 6; the stale member, which sorts after it, rejoins
    // with its generation-5 view and claims t-0 too (a member that missed generation 6).
    let (generation, given) = rejoin_claiming(
        &mut ctx,
        &[(&owner, &[0, 1, 2], 6), (&stale, &[0, 3, 4, 5], 5)],
    );
    assert_eq!(generation, 7);
    let request = &ctx.runs.last().unwrap().request;
    let claim = |id: &str| {
        let m = request.members.iter().find(|m| m.member_id == id).unwrap();
        (m.owned_generation, m.owned_partitions[0].partitions.clone())
    };
    assert_eq!(claim(&owner), (6, vec![0, 1, 2]));
    assert_eq!(claim(&stale), (5, vec![0, 3, 4, 5]));

    assert_eq!(
        given,
        vec![vec![0, 1, 2], vec![3, 4, 5]],
        "the owner keeps t-0"
    );
    assert_eq!(
        ctx.runs.len(),
        runs_before + 1,
        "one run: no fallback was started"
    );
    assert_eq!(
        notices_of_run(&ctx).last().unwrap(),
        &("cooperative-sticky".to_string(), RunOutcome::Ok, false)
    );
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    assert!(!detail.history.last().unwrap().fallback_used);
}

#[test]
fn host_cooperative_fallback_keeps_the_current_owners_partition_despite_a_stale_claim() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Script(Box::new(|run| {
        if run.strategy == "cooperative-sticky" && run.generation_id == 7 {
            return Err("trap: unreachable".into());
        }
        native("range", &run.request)
    }));
    let (owner, stale) = cooperative_group_at_generation_6(&mut ctx);
    let (_, given) = rejoin_claiming(
        &mut ctx,
        &[(&owner, &[0, 1, 2], 6), (&stale, &[0, 3, 4, 5], 5)],
    );
    let runs = notices_of_run(&ctx);
    assert_eq!(
        runs.last().unwrap(),
        &("range".to_string(), RunOutcome::Ok, true)
    );
    assert!(
        !ctx.runs.last().unwrap().cooperative,
        "the fallback runs unchecked for KIP-429"
    );
    // range gives the owner t-0..2; stripping leaves t-0 with its generation-6 owner.
    assert_eq!(given, vec![vec![0, 1, 2], vec![3, 4, 5]]);
}

#[test]
fn host_cooperative_check_refuses_a_direct_hand_over_and_strips_the_fallback() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Script(Box::new(|run| {
        if run.strategy != "cooperative-sticky" {
            return native(&run.strategy, &run.request);
        }
        assert!(
            run.cooperative,
            "the registry is asked to check cooperative safety"
        );
        // Generation 1: a plain split. Later: swap everything (a direct hand-over).
        let mut response = native("range", &run.request)?;
        if run.generation_id > 1 {
            let first = response.assignments[0].partitions.clone();
            response.assignments[0].partitions = response.assignments[1].partitions.clone();
            response.assignments[1].partitions = first;
        }
        Ok(response)
    }));
    let owned = cooperative_group(&mut ctx);
    ctx.assert_state(G, GroupState::Stable);
    let outcomes = notices_of_run(&ctx);
    assert!(
        matches!(&outcomes[outcomes.len() - 2].1, RunOutcome::Refused(why) if why.contains("cooperative"))
    );
    assert_eq!(outcomes.last().unwrap().0, "range", "the fallback assigned");
    // No partition one member owned was handed to the other in this generation.
    let detail = ctx.coordinator.group_detail(ctx.now, G).unwrap();
    for (id, own) in &owned {
        let now = &detail
            .members
            .iter()
            .find(|m| m.member_id == *id)
            .unwrap()
            .assignment;
        let given = now.get("t").cloned().unwrap_or_default();
        assert!(
            given.iter().all(|p| own.contains(p)),
            "{id} owned {own:?}, given {given:?}"
        );
    }
}

/// A request over topic `t` (3 partitions) where each `(member, owned, owned_generation)`
/// subscribes to `t` and claims `owned`.
fn claims_request(claims: &[(&str, &[i32], i32)]) -> AssignRequest {
    AssignRequest {
        members: claims
            .iter()
            .map(|(id, owned, generation)| Member {
                member_id: (*id).into(),
                topics: vec!["t".into()].into(),
                owned_partitions: vec![TopicPartitions {
                    topic: "t".into(),
                    partitions: owned.to_vec(),
                }],
                owned_generation: *generation,
                ..Default::default()
            })
            .collect(),
        topics: vec![Topic {
            name: "t".into(),
            partition_count: 3,
            partition_racks: vec![],
        }],
        ..Default::default()
    }
}

/// An answer giving each `(member, partitions)` of `t`.
fn answer(given: &[(&str, &[i32])]) -> AssignResponse {
    AssignResponse {
        assignments: given
            .iter()
            .map(|(id, partitions)| MemberAssignment {
                member_id: (*id).into(),
                partitions: vec![TopicPartitions {
                    topic: "t".into(),
                    partitions: partitions.to_vec(),
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn host_cooperative_fallback_strips_partitions_another_member_still_owns() {
    let request = claims_request(&[("a", &[0, 1, 2], -1), ("b", &[], -1)]);
    let response = answer(&[("a", &[0, 1]), ("b", &[2])]);
    assert_eq!(
        check_response(&request, &response, true),
        Err(OutputError::StillOwned {
            topic: "t".into(),
            partition: 2,
            owner: "a".into(),
            assignee: "b".into(),
        })
    );
    let mut positions = resolve(&request, &response).unwrap();
    assert_eq!(strip_owned(&request, &mut positions), 1);
    assert_eq!(
        positions.to_response(&request),
        answer(&[("a", &[0, 1]), ("b", &[])]),
        "b waits a round for t-2"
    );
    assert!(check_named(&request, &positions, true).is_ok());
}

#[test]
fn host_cooperative_strip_keeps_a_partition_for_its_current_generation_owner() {
    // "a" owns t-0 at generation 6; "b" (sorting after it) still claims t-0 from generation 5.
    let request = claims_request(&[("a", &[0], 6), ("b", &[0, 1], 5)]);
    let mut keep = resolve(&request, &answer(&[("a", &[0]), ("b", &[1, 2])])).unwrap();
    assert_eq!(strip_owned(&request, &mut keep), 0);
    assert_eq!(
        keep.to_response(&request),
        answer(&[("a", &[0]), ("b", &[1, 2])]),
        "a keeps t-0"
    );
    assert!(check_named(&request, &keep, true).is_ok());
    // The stale claim is no ownership: handing t-0 to its stale claimant is the hand-over
    // that must wait a round.
    let mut back = resolve(&request, &answer(&[("a", &[2]), ("b", &[0, 1])])).unwrap();
    assert_eq!(strip_owned(&request, &mut back), 1);
    assert_eq!(
        back.to_response(&request),
        answer(&[("a", &[2]), ("b", &[1])]),
        "b keeps t-1, waits for t-0"
    );
}

#[test]
fn host_cooperative_strip_keeps_nothing_claimed_by_members_tied_at_the_newest_generation() {
    // Two members claim t-0 at generation 6 (Kafka invalidates both claims): neither may take
    // it from the other, and a third member may not take it from either.
    let request = claims_request(&[("a", &[0], 6), ("b", &[0], 6), ("c", &[], -1)]);
    for giver in ["a", "b", "c"] {
        let mut positions = resolve(&request, &answer(&[(giver, &[0])])).unwrap();
        assert_eq!(strip_owned(&request, &mut positions), 1, "{giver} got t-0");
        assert!(check_named(&request, &positions, true).is_ok());
    }
}

#[test]
fn host_native_range_is_a_valid_assignment_and_stripped_a_cooperative_one() {
    let mut request = claims_request(&[("a", &[2], 4), ("b", &[0, 1], 4), ("c", &[], -1)]);
    request.members[2].topics = vec!["u".into()].into();
    let mut topics = request.members[0].topics.to_vec();
    topics.push("u".into());
    request.members[0].topics = topics.into();
    request.topics.push(Topic {
        name: "u".into(),
        partition_count: 4,
        partition_racks: vec![],
    });
    let mut positions = native_range(&request);
    let summary = check_named(&request, &positions, false).unwrap();
    assert_eq!(
        (summary.assigned_partitions, summary.unassigned_partitions),
        (7, 0)
    );
    // range gives a t-0..1 (owned by b) and b t-2 (owned by a): both wait a round.
    assert!(check_named(&request, &positions, true).is_err());
    assert_eq!(strip_owned(&request, &mut positions), 3);
    let summary = check_named(&request, &positions, true).unwrap();
    assert_eq!(
        (summary.assigned_partitions, summary.unassigned_partitions),
        (4, 3)
    );
}
