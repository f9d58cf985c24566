//! Property tests of `hold-departed` over random histories: a pool of static consumers
//! (fixed subscriptions over two topics) that leave and come back round after round, the
//! clock moving by random steps, the kept state carried from each answer to the next request
//! as the host carries it, and the inner strategy chosen at random. A reference written here
//! tracks each consumer's last partitions and when it left. Promised, every round:
//! - a valid assignment: every partition at most once, only to a subscriber;
//! - the window holds exactly the departed members' partitions: while a consumer is away and
//!   its window open, nobody has any of its last partitions, and the answer asks for a
//!   follow-up no later than the window's end;
//! - a consumer back inside its window gets exactly its last partitions, and more only when
//!   it is the only subscriber of a partition nobody holds;
//! - in a round where only departures and returns happen, after a round that left nothing
//!   out, everyone else keeps exactly what they had (whatever the inner strategy);
//! - with nothing held and an eager inner strategy, every partition with a subscriber is
//!   assigned.

use std::collections::{BTreeMap, BTreeSet};

use assignor_hold_departed::assign;
use assignor_sdk::{AssignRequest, Member, Topic, TopicPartitions};
use proptest::prelude::*;

const TOPICS: [&str; 2] = ["a", "b"];
const WINDOW_MS: i64 = 10_000;

type Partitions = BTreeSet<(String, i32)>;

fn listed(set: &Partitions) -> Vec<TopicPartitions> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in set {
        by_topic.entry(t).or_default().push(*p);
    }
    by_topic
        .into_iter()
        .map(|(topic, partitions)| TopicPartitions {
            topic: topic.to_owned(),
            partitions,
        })
        .collect()
}

/// One consumer of the pool as the reference sees it.
#[derive(Debug, Clone, Default)]
struct Consumer {
    topics: Vec<String>,
    /// Its member id now (a new one each time it comes back).
    member_id: Option<String>,
    incarnation: u32,
    /// What it got in the last round it was in.
    last: Partitions,
    /// When it was found gone, while it is away.
    left_at: Option<i64>,
}

fn subscriptions() -> impl Strategy<Value = Vec<Vec<String>>> {
    prop::collection::vec(
        prop::sample::subsequence(TOPICS.to_vec(), 1..=2)
            .prop_map(|ts| ts.into_iter().map(str::to_owned).collect()),
        2..6,
    )
}

/// One random history, checked round by round (see the module documentation).
fn check_history(
    subscriptions: Vec<Vec<String>>,
    counts: (i32, i32),
    rounds: Vec<(Vec<bool>, i64)>,
    inner: &str,
) -> Result<(), TestCaseError> {
    let cooperative = inner == "cooperative-sticky";
    let topics = vec![
        Topic {
            name: "a".into(),
            partition_count: counts.0,
            partition_racks: vec![],
        },
        Topic {
            name: "b".into(),
            partition_count: counts.1,
            partition_racks: vec![],
        },
    ];
    let mut pool: Vec<Consumer> = subscriptions
        .into_iter()
        .map(|topics| Consumer {
            topics,
            ..Consumer::default()
        })
        .collect();
    let mut state: Option<Vec<u8>> = None;
    let mut now = 0i64;
    // Round 0: everyone in.
    let mut plan = vec![(vec![true; 6], 0i64)];
    plan.extend(rounds);
    // Whether the last answer left nothing to decide: every partition assigned or held (a
    // cooperative hand-over leaves one out for the next round, which then decides).
    let mut settled = false;
    for (round, (present, step)) in plan.into_iter().enumerate() {
        now += step;
        // Who was in the last round under the same member id (and reports what it had).
        let stayed: BTreeSet<usize> = (0..pool.len())
            .filter(|&c| present[c] && pool[c].member_id.is_some())
            .collect();
        let mut returning = BTreeSet::new();
        let mut newcomer = false;
        let mut expired = false;
        for (c, consumer) in pool.iter_mut().enumerate() {
            let here = present[c];
            match (here, consumer.member_id.is_some()) {
                (true, false) => {
                    consumer.incarnation += 1;
                    consumer.member_id = Some(format!("c{c}-{}", consumer.incarnation));
                    match consumer.left_at {
                        Some(at) if now < at + WINDOW_MS && !consumer.last.is_empty() => {
                            returning.insert(c);
                        }
                        _ => newcomer = true,
                    }
                    consumer.left_at = None;
                }
                (false, true) => {
                    consumer.member_id = None;
                    consumer.left_at = Some(now);
                }
                (false, false) => {
                    if consumer.left_at.is_some_and(|at| now >= at + WINDOW_MS)
                        && !consumer.last.is_empty()
                    {
                        expired = true;
                    }
                }
                (true, true) => {}
            }
        }
        let held: Partitions = pool
            .iter()
            .filter(|c| c.member_id.is_none())
            .filter(|c| c.left_at.is_some_and(|at| now < at + WINDOW_MS))
            .flat_map(|c| c.last.iter().cloned())
            .collect();
        let mut members: Vec<(usize, Member)> = pool
            .iter()
            .enumerate()
            .filter_map(|(c, consumer)| {
                let id = consumer.member_id.clone()?;
                let stayed = stayed.contains(&c);
                let previous = if stayed {
                    listed(&consumer.last)
                } else {
                    Vec::new()
                };
                Some((
                    c,
                    Member {
                        member_id: id,
                        group_instance_id: Some(format!("i{c}")),
                        client_id: format!("app-{c}"),
                        client_host: "/10.0.0.1".into(),
                        topics: consumer.topics.clone().into(),
                        owned_partitions: if cooperative {
                            previous.clone()
                        } else {
                            Vec::new()
                        },
                        owned_generation: if cooperative && stayed {
                            round as i32
                        } else {
                            -1
                        },
                        previous_assignment: previous,
                        ..Member::default()
                    },
                ))
            })
            .collect();
        members.sort_by(|a, b| a.1.member_id.cmp(&b.1.member_id));
        let request = AssignRequest {
            abi_version: 2,
            group_id: "g".into(),
            generation_id: round as i32 + 1,
            now_ms: now,
            params: BTreeMap::from([
                ("inner".to_owned(), inner.to_owned()),
                ("window_ms".to_owned(), WINDOW_MS.to_string()),
            ]),
            members: members.iter().map(|(_, m)| m.clone()).collect(),
            topics: topics.clone(),
            state: state.clone(),
            ..AssignRequest::default()
        };
        let assignment = assign(&request).expect("assigns");
        let mut seen = Partitions::new();
        for (c, member) in &members {
            let got: Partitions = assignment
                .of(&member.member_id)
                .into_iter()
                .map(|(t, p)| (t.to_owned(), p))
                .collect();
            for (t, p) in &got {
                prop_assert!(member.topics.contains(t), "{t}-{p} to a non-subscriber");
                prop_assert!(seen.insert((t.clone(), *p)), "{t}-{p} given twice");
                prop_assert!(!held.contains(&(t.clone(), *p)), "held {t}-{p} given away");
            }
            if returning.contains(c) {
                // Its own back; more only where no member that did not return subscribes.
                let last = &pool[*c].last;
                prop_assert!(
                    got.is_superset(last),
                    "a returning member gets its own back"
                );
                for (t, p) in got.difference(last) {
                    prop_assert!(
                        !members
                            .iter()
                            .any(|(o, m)| !returning.contains(o) && m.topics.contains(t)),
                        "a returning member got {}-{} another member could take",
                        t,
                        p
                    );
                }
            } else if !newcomer && !expired && settled && stayed.contains(c) {
                prop_assert_eq!(&got, &pool[*c].last, "a member that stayed keeps its own");
            }
            pool[*c].last = got;
        }
        if held.is_empty() {
            if !cooperative {
                for t in &topics {
                    let subscribed = members.iter().any(|(_, m)| m.topics.contains(&t.name));
                    for p in 0..t.partition_count {
                        prop_assert!(
                            !subscribed || seen.contains(&(t.name.clone(), p)),
                            "{}-{p} left unassigned with nothing held",
                            t.name
                        );
                    }
                }
            }
        } else {
            let after = assignment.requested_rebalance_after_ms();
            prop_assert!(after.is_some_and(|ms| ms as i64 <= WINDOW_MS), "{after:?}");
        }
        state = assignment.state().map(<[u8]>::to_vec);
        let complete = topics.iter().all(|t| {
            let subscribed = members.iter().any(|(_, m)| m.topics.contains(&t.name));
            (0..t.partition_count).all(|p| {
                let tp = (t.name.clone(), p);
                !subscribed || seen.contains(&tp) || held.contains(&tp)
            })
        });
        settled = complete;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_window_holds_exactly_the_departed_partitions(
        subscriptions in subscriptions(),
        counts in (1i32..9, 1i32..9),
        rounds in prop::collection::vec(
            (prop::collection::vec(any::<bool>(), 6), 1i64..8_000), 1..10),
        inner in prop::sample::select(vec!["sticky", "cooperative-sticky", "range"]),
    ) {
        check_history(subscriptions, counts, rounds, inner)?;
    }
}

/// A history proptest found: four consumers leaving and returning around window ends.
#[test]
fn four_consumers_around_the_window_ends() {
    let all = vec!["a".to_owned(), "b".to_owned()];
    let present = |p: [bool; 4]| -> Vec<bool> { p.iter().copied().chain([false, false]).collect() };
    let rounds = vec![
        (present([false, false, false, false]), 1),
        (present([true, false, false, true]), 5678),
        (present([true, true, false, true]), 4322),
        (present([false, false, false, true]), 1),
        (present([true, true, true, true]), 1),
        (present([true, true, true, false]), 1),
        (present([true, false, false, false]), 1),
    ];
    check_history(vec![all; 4], (7, 4), rounds, "cooperative-sticky").unwrap();
}
