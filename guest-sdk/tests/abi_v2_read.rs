//! The fast v2 readers (`assignor_sdk::abi::v2::read`) decide nothing: wherever they answer,
//! they answer what the rmp-serde path answers, and on the canonical encoding of a valid
//! message they always answer. Checked on random requests and answers, on the bytes the host
//! writes and on those bytes damaged (a byte changed, the message cut short). The host's
//! writer (`v2::write`) is checked here too: its bytes are rmp-serde's encoding of the wire
//! struct they decode to.

use std::collections::BTreeMap;
use std::sync::Arc;

use assignor_sdk::abi::v2::{self, Extras, Inputs, Layout};
use assignor_sdk::{Answer, AssignRequest, Input, Member, Topic, TopicOffsets, TopicPartitions};
use proptest::prelude::*;

/// A random group: up to 4 topics, up to 6 members with random subscriptions (some naming a
/// topic the host does not know), owned and previous partitions, racks, client data, weights.
fn group() -> impl Strategy<Value = AssignRequest> {
    let topics = prop::collection::btree_map("[a-c]{1,3}", (0i32..300, any::<bool>()), 1..4);
    let members = prop::collection::vec(
        (
            "[a-z0-9-]{1,12}",
            prop::option::of("[a-z]{1,4}"),
            prop::collection::vec(0usize..5, 0..4),
            -1i32..5,
            prop::collection::vec((0usize..5, prop::collection::vec(-1i32..300, 0..4)), 0..3),
            prop::option::of("r[0-2]"),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..5)),
            prop::option::of(0u32..10),
        ),
        0..6,
    );
    let params = prop::collection::btree_map("[a-z.]{1,8}", "[a-z0-9:]{0,6}", 0..3);
    let state = prop::option::of(prop::collection::vec(any::<u8>(), 0..6));
    (topics, members, params, any::<i64>(), state).prop_map(
        |(topics, members, params, now_ms, state)| {
            let topics: Vec<Topic> = topics
                .into_iter()
                .map(|(name, (count, racked))| Topic {
                    partition_racks: if racked {
                        (0..count.min(3))
                            .map(|p| vec![format!("r{}", p % 3)])
                            .collect()
                    } else {
                        Vec::new()
                    },
                    name,
                    partition_count: count,
                })
                .collect();
            let name = |i: usize| {
                topics
                    .get(i)
                    .map_or_else(|| "unknown".to_owned(), |t| t.name.clone())
            };
            let mut seen = std::collections::BTreeSet::new();
            let mut members: Vec<Member> = members
                .into_iter()
                .filter(|m| seen.insert(m.0.clone()))
                .map(
                    |(id, instance, subs, generation, owned, rack, user_data, weight)| {
                        let subscription: Arc<[String]> = subs.into_iter().map(name).collect();
                        let owned: Vec<TopicPartitions> = owned
                            .into_iter()
                            .map(|(t, partitions)| TopicPartitions {
                                topic: name(t),
                                partitions,
                            })
                            .collect();
                        Member {
                            client_id: format!("client-{id}"),
                            client_host: "/10.0.0.1".into(),
                            member_id: id,
                            group_instance_id: instance,
                            rack_id: rack,
                            topics: subscription,
                            previous_assignment: owned.clone(),
                            owned_partitions: owned,
                            owned_generation: generation,
                            metadata: user_data.clone().unwrap_or_default(),
                            user_data,
                            weight,
                        }
                    },
                )
                .collect();
            members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            let lag = topics
                .iter()
                .map(|t| TopicOffsets {
                    committed: (0..t.partition_count.min(3) as i64).collect(),
                    end: (0..t.partition_count.min(3) as i64)
                        .map(|o| o * 7)
                        .collect(),
                })
                .collect();
            AssignRequest {
                abi_version: 2,
                group_id: "g".into(),
                generation_id: 3,
                protocol_type: "consumer".into(),
                protocol_name: "range".into(),
                now_ms,
                params,
                members,
                topics,
                lag,
                state,
                ..AssignRequest::default()
            }
        },
    )
}

/// Every optional input, or none.
fn inputs(all: bool) -> Inputs {
    if all {
        Input::ALL.into_iter().collect()
    } else {
        Inputs::NONE
    }
}

fn encode(request: &AssignRequest, all: bool) -> Vec<u8> {
    let layout = Layout::new(request).expect("layout");
    let extras = Extras {
        inputs: inputs(all),
        lag: None,
    };
    v2::encode_request(request, &layout, extras).expect("encode")
}

/// Damage: the byte at `at` (wrapped) replaced by `with`, or the message cut at `at`.
fn damage(bytes: &[u8], at: usize, with: u8, cut: bool) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if out.is_empty() {
        return out;
    }
    let at = at % out.len();
    if cut {
        out.truncate(at);
    } else {
        out[at] = with;
    }
    out
}

/// The rmp-serde path of the host: decode, refuse out-of-range indices, keep positions.
fn slow_answer(request: &AssignRequest, bytes: &[u8]) -> Option<Answer> {
    let response = v2::decode_response(bytes).ok()?;
    if response.error.is_some() {
        return None;
    }
    let in_range = response.assignments.iter().all(|a| {
        (a.member as usize) < request.members.len()
            && a.partitions
                .iter()
                .all(|tp| (tp.topic as usize) < request.topics.len())
    });
    in_range.then(|| v2::response_to_answer(response))
}

/// A random answer to a group of `members` members and `topics` topics, indices sometimes
/// outside it.
fn answer(members: u32, topics: u32) -> impl Strategy<Value = v2::Response> {
    let entry = (
        0..members + 2,
        prop::collection::vec(
            (0..topics + 1, prop::collection::vec(-2i32..400, 0..5)),
            0..3,
        ),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..4)),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..4)),
    )
        .prop_map(
            |(member, partitions, user_data, metadata)| v2::MemberAssignment {
                member,
                partitions: partitions
                    .into_iter()
                    .map(|(topic, partitions)| v2::TopicPartitions { topic, partitions })
                    .collect(),
                user_data,
                metadata,
            },
        );
    (
        prop::option::weighted(0.1, "[a-z ]{0,10}"),
        prop::collection::vec(entry, 0..5),
        prop::option::of(0u64..u64::MAX),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..6)),
    )
        .prop_map(
            |(error, assignments, rebalance_after_ms, state)| v2::Response {
                error,
                assignments,
                rebalance_after_ms,
                state,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_request_reader_answers_what_rmp_serde_answers(
        request in group(),
        all in any::<bool>(),
        at in any::<usize>(),
        with in any::<u8>(),
        cut in any::<bool>(),
    ) {
        let bytes = encode(&request, all);
        // The host's bytes are rmp-serde's encoding of the wire struct they describe.
        let wire: v2::Request = v2::decode(&bytes).expect("the host's bytes decode");
        prop_assert_eq!(v2::encode(&wire).unwrap(), bytes.clone());
        let slow = v2::decode_request_serde(&bytes).expect("the host's bytes decode");
        let fast = v2::read_request(&bytes).expect("the reader answers on the host's bytes");
        prop_assert_eq!(&fast, &slow);
        prop_assert_eq!(fast.subscription_groups(), slow.subscription_groups());
        let damaged = damage(&bytes, at, with, cut);
        if let Some(read) = v2::read_request(&damaged) {
            prop_assert_eq!(Ok(read), v2::decode_request_serde(&damaged));
        }
    }

    #[test]
    fn the_answer_reader_answers_what_rmp_serde_answers(
        (request, response) in group().prop_flat_map(|request| {
            let (members, topics) = (request.members.len() as u32, request.topics.len() as u32);
            (Just(request), answer(members, topics))
        }),
        at in any::<usize>(),
        with in any::<u8>(),
        cut in any::<bool>(),
    ) {
        let bytes = v2::encode(&response).unwrap();
        let slow = slow_answer(&request, &bytes);
        let fast = v2::read_response(&request, &bytes);
        // On the canonical bytes the reader always answers when rmp-serde accepts them.
        prop_assert_eq!(&fast, &slow);
        if let Some(read) = &fast {
            // Positions as the module gave them, and the model they stand for.
            let wire_members: Vec<u32> = response.assignments.iter().map(|a| a.member).collect();
            let read_members: Vec<u32> = read.entries().iter().map(|e| e.member).collect();
            prop_assert_eq!(read_members, wire_members);
            prop_assert_eq!(read.to_response(&request), v2::response_to_model(&request, response.clone()));
        }
        let damaged = damage(&bytes, at, with, cut);
        if let Some(read) = v2::read_response(&request, &damaged) {
            prop_assert_eq!(Some(read), slow_answer(&request, &damaged));
        }
    }
}

/// An answer with trailing items left out (the documented short form) reads the same both ways.
#[test]
fn short_answers_read_the_same() {
    let request = AssignRequest {
        members: vec![Member {
            member_id: "m".into(),
            ..Member::default()
        }],
        topics: vec![Topic {
            name: "t".into(),
            partition_count: 2,
            partition_racks: Vec::new(),
        }],
        params: BTreeMap::new(),
        ..AssignRequest::default()
    };
    // [nil, [[0, [[0, [1]]]]]]: no rebalance_after_ms, no user data or metadata.
    let bytes = [0x92, 0xc0, 0x91, 0x92, 0x00, 0x91, 0x92, 0x00, 0x91, 0x01];
    let read = v2::read_response(&request, &bytes).expect("canonical short form");
    assert_eq!(Some(read.clone()), slow_answer(&request, &bytes));
    let topics: Vec<(u32, Vec<i32>)> = read.topics(0).map(|(t, p)| (t, p.to_vec())).collect();
    assert_eq!(topics, [(0, vec![1])]);
    assert_eq!(read.entries()[0].member, 0);
    assert_eq!(read.rebalance_after_ms, None);
}
