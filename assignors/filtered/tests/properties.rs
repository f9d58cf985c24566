//! Property tests of `filtered` on random groups: members with random client ids, hosts and
//! instance ids, random subscriptions, random `include` / `exclude` lists and inner strategy.
//! Who is admitted is decided here by a reference glob written separately (recursive, no code
//! shared with the module). Promised: a valid assignment (every partition at most once, only
//! to subscribers); excluded members get nothing; the admitted members get exactly what the
//! inner strategy gives them as a group of their own, so every partition with an admitted
//! subscriber is assigned.

use std::collections::{BTreeMap, BTreeSet};

use assignor_filtered::assign;
use assignor_inner::{Inner, subgroup};
use assignor_sdk::{AssignRequest, Member, Topic};
use assignor_test_support::{Owners, owners};
use proptest::prelude::*;

/// The plainest glob: `*` any run, `?` one character, the rest literal.
fn reference_glob(pattern: &[char], text: &[char]) -> bool {
    match (pattern.first(), text.first()) {
        (None, _) => text.is_empty(),
        (Some('*'), _) => {
            reference_glob(&pattern[1..], text)
                || (!text.is_empty() && reference_glob(pattern, &text[1..]))
        }
        (Some(_), None) => false,
        (Some(&p), Some(&t)) => (p == '?' || p == t) && reference_glob(&pattern[1..], &text[1..]),
    }
}

fn reference_matches(list: &str, member: &Member) -> bool {
    let host = member.client_host.trim_start_matches('/');
    let mut ids = vec![member.client_id.as_str(), member.client_host.as_str(), host];
    ids.extend(member.group_instance_id.as_deref());
    list.split(',').any(|p| {
        let p: Vec<char> = p.trim().chars().collect();
        ids.iter()
            .any(|id| reference_glob(&p, &id.chars().collect::<Vec<_>>()))
    })
}

fn admitted(request: &AssignRequest, member: &Member) -> bool {
    let include = request.params.get("include");
    let exclude = request.params.get("exclude");
    include.is_none_or(|l| reference_matches(l, member))
        && !exclude.is_some_and(|l| reference_matches(l, member))
}

const TOPICS: [&str; 3] = ["a", "b", "c"];

fn member_strategy() -> impl Strategy<Value = (String, String, Option<String>, Vec<bool>)> {
    (
        prop::sample::select(vec!["app", "app-1", "app-2", "canary", "laptop", ""]),
        prop::sample::select(vec!["/10.0.0.1", "/10.0.0.2", "/192.168.0.9", ""]),
        prop::option::of(prop::sample::select(vec!["i-1", "i-2", "i-3", "canary"])),
        prop::collection::vec(any::<bool>(), TOPICS.len()),
    )
        .prop_map(|(c, h, i, s)| (c.to_string(), h.to_string(), i.map(str::to_string), s))
}

fn pattern_list() -> impl Strategy<Value = Option<String>> {
    prop::option::of(
        prop::collection::vec(
            prop::sample::select(vec![
                "app*", "app-?", "canary", "10.0.0.*", "/192.*", "i-?", "*", "lap*p", "x",
            ]),
            1..3,
        )
        .prop_map(|items| items.join(",")),
    )
}

fn group() -> impl Strategy<Value = AssignRequest> {
    (
        prop::collection::vec(member_strategy(), 0..8),
        prop::collection::vec(0..7i32, TOPICS.len()),
        pattern_list(),
        pattern_list(),
        prop::sample::select(Inner::ALL.to_vec()),
    )
        .prop_map(|(members, counts, include, exclude, inner)| {
            let mut members: Vec<Member> = members
                .into_iter()
                .enumerate()
                .map(
                    |(i, (client_id, client_host, instance, subscribed))| Member {
                        member_id: format!("m{i:02}"),
                        client_id,
                        client_host,
                        // Instance ids must be unique in a group.
                        group_instance_id: instance.map(|id| format!("{id}-{i}")),
                        topics: TOPICS
                            .iter()
                            .zip(&subscribed)
                            .filter(|(_, s)| **s)
                            .map(|(t, _)| t.to_string())
                            .collect(),
                        owned_generation: -1,
                        ..Member::default()
                    },
                )
                .collect();
            members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
            let mut params = BTreeMap::new();
            params.extend(include.map(|v| ("include".to_string(), v)));
            params.extend(exclude.map(|v| ("exclude".to_string(), v)));
            params.insert("inner".to_string(), inner.name().to_string());
            AssignRequest {
                members,
                topics: TOPICS
                    .iter()
                    .zip(counts)
                    .map(|(t, n)| Topic {
                        name: t.to_string(),
                        partition_count: n,
                        partition_racks: vec![],
                    })
                    .collect(),
                params,
                ..AssignRequest::default()
            }
        })
}

/// Every partition at most once, and only to a member subscribing to its topic.
fn check_valid(request: &AssignRequest, got: &Owners) -> Result<(), TestCaseError> {
    let mut seen = BTreeSet::new();
    for (id, partitions) in got {
        let m = request.member(id).expect("only members of the request");
        for (topic, p) in partitions {
            prop_assert!(m.topics.contains(topic), "{} got {}-{}", id, topic, p);
            prop_assert!(seen.insert((topic.clone(), *p)), "{}-{} twice", topic, p);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn excluded_members_get_nothing_and_the_admitted_get_the_inner_answer(request in group()) {
        let got = owners(&assign(&request).unwrap());
        check_valid(&request, &got)?;
        prop_assert_eq!(got.len(), request.members.len(), "every member answered");
        let keep: Vec<bool> = request.members.iter().map(|m| admitted(&request, m)).collect();
        for (m, admitted) in request.members.iter().zip(&keep) {
            if !admitted {
                prop_assert!(got[&m.member_id].is_empty(), "{} excluded but got {:?}",
                    m.member_id, got[&m.member_id]);
            }
        }
        let inner = Inner::from_name(&request.params["inner"]).unwrap();
        let alone = subgroup(&request, |i| keep[i]);
        let expected = owners(&inner.assign(&alone).unwrap());
        for m in &alone.members {
            prop_assert_eq!(&got[&m.member_id], &expected[&m.member_id]);
        }
        // So every partition with an admitted subscriber is assigned.
        for topic in &request.topics {
            if alone.members.iter().any(|m| m.topics.contains(&topic.name)) {
                let given = got.values().flatten().filter(|(t, _)| *t == topic.name).count();
                prop_assert_eq!(given as i32, topic.partition_count, "{}", topic.name);
            }
        }
    }
}
