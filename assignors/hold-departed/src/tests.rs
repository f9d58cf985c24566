//! Native unit tests of `hold-departed`: the story of the issue (three consumers, one leaves
//! and comes back, or does not), rounds chained through the kept state as the host chains
//! them, and the parameters' errors.

use std::collections::BTreeMap;

use assignor_sdk::{AssignRequest, Member, Topic, TopicPartitions};

use super::*;

/// One round's group: `(member id, instance id, owned partitions of topic t)`.
fn group(members: &[(&str, Option<&str>, &[i32])], partitions: i32, now_ms: i64) -> AssignRequest {
    AssignRequest {
        abi_version: 2,
        group_id: "g".into(),
        generation_id: 1,
        now_ms,
        members: members
            .iter()
            .map(|(id, instance, owned)| Member {
                member_id: id.to_string(),
                group_instance_id: instance.map(str::to_string),
                client_id: format!("client-{}", instance.unwrap_or(id)),
                client_host: "/10.0.0.1".into(),
                topics: vec!["t".to_string()].into(),
                owned_partitions: if owned.is_empty() {
                    Vec::new()
                } else {
                    vec![TopicPartitions {
                        topic: "t".into(),
                        partitions: owned.to_vec(),
                    }]
                },
                owned_generation: if owned.is_empty() { -1 } else { 1 },
                ..Member::default()
            })
            .collect(),
        topics: vec![Topic {
            name: "t".into(),
            partition_count: partitions,
            partition_racks: Vec::new(),
        }],
        ..AssignRequest::default()
    }
}

struct Round {
    of: BTreeMap<String, Vec<i32>>,
    after_ms: Option<u64>,
    state: Vec<u8>,
}

fn run(mut request: AssignRequest, state: Option<&[u8]>, params: &[(&str, &str)]) -> Round {
    request.state = state.map(<[u8]>::to_vec);
    request.params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let assignment = assign(&request).expect("assigns");
    let after_ms = assignment.requested_rebalance_after_ms();
    let state = assignment.state().expect("state kept").to_vec();
    let of = request
        .members
        .iter()
        .map(|m| {
            let ps = assignment
                .of(&m.member_id)
                .into_iter()
                .map(|(_, p)| p)
                .collect();
            (m.member_id.clone(), ps)
        })
        .collect();
    Round {
        of,
        after_ms,
        state,
    }
}

fn of(round: &Round, id: &str) -> Vec<i32> {
    round.of[id].clone()
}

const COOPERATIVE: &[(&str, &str)] = &[("inner", "cooperative-sticky")];

#[test]
fn a_static_member_that_restarts_inside_the_window_gets_exactly_its_partitions_back() {
    // Round 1: three static consumers, nothing owned yet.
    let first = run(
        group(
            &[
                ("a-1", Some("a"), &[]),
                ("b-1", Some("b"), &[]),
                ("c-1", Some("c"), &[]),
            ],
            6,
            0,
        ),
        None,
        COOPERATIVE,
    );
    let (a, b, c) = (of(&first, "a-1"), of(&first, "b-1"), of(&first, "c-1"));
    assert_eq!([a.len(), b.len(), c.len()], [2, 2, 2]);
    assert_eq!(first.after_ms, None, "nobody left, nothing to wait for");

    // Round 2 at 10 s: b's session expired; a and c keep exactly theirs, b's wait.
    let second = run(
        group(&[("a-1", Some("a"), &a), ("c-1", Some("c"), &c)], 6, 10_000),
        Some(&first.state),
        COOPERATIVE,
    );
    assert_eq!(of(&second, "a-1"), a);
    assert_eq!(of(&second, "c-1"), c);
    assert_eq!(second.after_ms, Some(30_000));

    // Round 3 at 25 s: still away, the remaining window is asked for.
    let third = run(
        group(&[("a-1", Some("a"), &a), ("c-1", Some("c"), &c)], 6, 25_000),
        Some(&second.state),
        COOPERATIVE,
    );
    assert_eq!(
        (of(&third, "a-1"), of(&third, "c-1")),
        (a.clone(), c.clone())
    );
    assert_eq!(third.after_ms, Some(15_000));

    // Round 4 at 30 s: b is back under a new member id; exactly its partitions, nobody moves.
    let fourth = run(
        group(
            &[
                ("a-1", Some("a"), &a),
                ("b-2", Some("b"), &[]),
                ("c-1", Some("c"), &c),
            ],
            6,
            30_000,
        ),
        Some(&third.state),
        COOPERATIVE,
    );
    assert_eq!(of(&fourth, "b-2"), b);
    assert_eq!((of(&fourth, "a-1"), of(&fourth, "c-1")), (a, c));
    assert_eq!(fourth.after_ms, None, "nothing held any more");
}

#[test]
fn when_the_window_ends_the_departed_partitions_are_spread_and_nothing_else_moves() {
    let first = run(
        group(
            &[
                ("a-1", Some("a"), &[]),
                ("b-1", Some("b"), &[]),
                ("c-1", Some("c"), &[]),
            ],
            6,
            0,
        ),
        None,
        COOPERATIVE,
    );
    let (a, b, c) = (of(&first, "a-1"), of(&first, "b-1"), of(&first, "c-1"));
    let held = run(
        group(&[("a-1", Some("a"), &a), ("c-1", Some("c"), &c)], 6, 1_000),
        Some(&first.state),
        COOPERATIVE,
    );
    assert_eq!(held.after_ms, Some(30_000));
    // The follow-up, at the end of the window.
    let spread = run(
        group(&[("a-1", Some("a"), &a), ("c-1", Some("c"), &c)], 6, 31_000),
        Some(&held.state),
        COOPERATIVE,
    );
    let (a2, c2) = (of(&spread, "a-1"), of(&spread, "c-1"));
    assert!(
        a.iter().all(|p| a2.contains(p)) && c.iter().all(|p| c2.contains(p)),
        "kept"
    );
    let mut all: Vec<i32> = a2.iter().chain(&c2).copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..6).collect::<Vec<_>>(),
        "every partition owned again"
    );
    assert_eq!([a2.len(), c2.len()], [3, 3]);
    assert!(b.iter().all(|p| all.contains(p)));
    assert_eq!(spread.after_ms, None);
    // b coming back later is a new member, assigned by the inner strategy's rules.
    let late = run(
        group(
            &[
                ("a-1", Some("a"), &a2),
                ("b-2", Some("b"), &[]),
                ("c-1", Some("c"), &c2),
            ],
            6,
            40_000,
        ),
        Some(&spread.state),
        COOPERATIVE,
    );
    assert!(
        of(&late, "b-2").is_empty(),
        "cooperative: owned partitions are revoked first"
    );
}

#[test]
fn a_dynamic_member_is_recognised_by_client_id_and_host() {
    let first = run(
        group(&[("x-1", None, &[]), ("y-1", None, &[])], 4, 0),
        None,
        &[],
    );
    let (x, y) = (of(&first, "x-1"), of(&first, "y-1"));
    let mut away = group(&[("y-1", None, &y)], 4, 1_000);
    away.members[0].client_id = "client-y-1".into();
    let held = run(away, Some(&first.state), &[]);
    assert_eq!(of(&held, "y-1"), y, "eager inner (sticky): y keeps its own");
    // x returns under a new member id with the same client id and host.
    let mut back = group(&[("x-2", None, &[]), ("y-1", None, &[])], 4, 2_000);
    back.members[0].client_id = "client-x-1".into();
    back.members[1].client_id = "client-y-1".into();
    let returned = run(back, Some(&held.state), &[]);
    assert_eq!((of(&returned, "x-2"), of(&returned, "y-1")), (x, y));
}

#[test]
fn a_new_member_that_is_not_a_returning_one_shares_what_is_not_held() {
    let first = run(
        group(&[("a-1", Some("a"), &[]), ("b-1", Some("b"), &[])], 4, 0),
        None,
        &[("inner", "sticky")],
    );
    let b = of(&first, "b-1");
    // b leaves and d, someone else, joins: b's partitions stay held, d gets a share of a's.
    let round = run(
        group(
            &[("a-1", Some("a"), &[]), ("d-1", Some("d"), &[])],
            4,
            1_000,
        ),
        Some(&first.state),
        &[("inner", "sticky")],
    );
    let (a2, d2) = (of(&round, "a-1"), of(&round, "d-1"));
    assert!(
        b.iter().all(|p| !a2.contains(p) && !d2.contains(p)),
        "{a2:?} {d2:?}"
    );
    assert_eq!(a2.len() + d2.len(), 2);
    assert_eq!(round.after_ms, Some(30_000));
}

#[test]
fn window_zero_holds_nothing() {
    let first = run(
        group(&[("a-1", Some("a"), &[]), ("b-1", Some("b"), &[])], 4, 0),
        None,
        &[],
    );
    let round = run(
        group(&[("a-1", Some("a"), &[])], 4, 1),
        Some(&first.state),
        &[("window_ms", "0")],
    );
    assert_eq!(of(&round, "a-1"), vec![0, 1, 2, 3]);
    assert_eq!(round.after_ms, None);
}

#[test]
fn state_of_another_layout_or_garbage_reads_as_none() {
    assert_eq!(State::read(Some(b"not messagepack")), State::default());
    let other = State {
        layout: LAYOUT + 1,
        ..State::default()
    };
    assert_eq!(State::read(Some(&other.to_bytes())), State::default());
    let round = run(group(&[("a-1", None, &[])], 2, 0), Some(b"\xff\xff"), &[]);
    assert_eq!(of(&round, "a-1"), vec![0, 1]);
}

#[test]
fn bad_parameters_are_refused_with_what_to_write() {
    let request = |params: &[(&str, &str)]| {
        let mut r = group(&[("a", None, &[])], 1, 0);
        r.params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        r
    };
    let message = |params| assign(&request(params)).unwrap_err().message().to_owned();
    assert_eq!(
        message(&[("window", "5")]),
        "unknown parameter `window`: hold-departed reads `inner`, `window_ms`"
    );
    assert_eq!(
        message(&[("window_ms", "5s")]),
        "parameter `window_ms` is `5s`; set it to a whole number of milliseconds from 0 to \
         604800000 (a week)"
    );
    assert!(message(&[("inner", "fastest")]).starts_with("parameter `inner` is `fastest`"));
}

#[test]
fn a_consumer_group_hands_partitions_on_at_once_a_classic_cooperative_one_in_two_rounds() {
    // a owns all six; b and c join. A consumer group (KIP-848: members carry no metadata) is
    // reconciled by the coordinator, which revokes from a before it hands on: everything is in
    // the answer. A classic cooperative group gets a's partitions back only once a revoked them.
    let members: &[(&str, Option<&str>, &[i32])] = &[
        ("a-1", None, &[0, 1, 2, 3, 4, 5]),
        ("b-1", None, &[]),
        ("c-1", None, &[]),
    ];
    let mut consumer = group(members, 6, 0);
    consumer.protocol_type = "consumer".into();
    assert!(reconciled_by_host(&consumer) && !looks_cooperative(&consumer));
    let round = run(consumer.clone(), None, &[]);
    let mut all: Vec<i32> = ["a-1", "b-1", "c-1"]
        .iter()
        .flat_map(|m| of(&round, m))
        .collect();
    all.sort_unstable();
    assert_eq!(all, [0, 1, 2, 3, 4, 5], "nothing left out: {:?}", round.of);
    assert_eq!(of(&round, "b-1").len(), 2);

    let mut classic = consumer;
    for m in &mut classic.members {
        m.metadata = vec![0, 1]; // a Subscription's bytes
    }
    assert!(!reconciled_by_host(&classic) && looks_cooperative(&classic));
    let round = run(classic, None, &[]);
    assert!(
        of(&round, "b-1").is_empty(),
        "a still owns them: {:?}",
        round.of
    );
    assert_eq!(
        of(&round, "a-1").len(),
        2,
        "a keeps its share and revokes the rest"
    );
}
