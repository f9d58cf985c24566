//! What the property tests of every built-in strategy check, written once: who got which
//! partition ([`owners`]) and the invariants any valid assignment keeps
//! ([`check_invariants`]). Each strategy's own tests keep their reference implementation and
//! their group generator (they differ on purpose: racks, identical subscriptions, previous
//! assignments); only the strategy-independent checks live here.

use std::collections::{BTreeMap, BTreeSet};

use assignor_sdk::{AssignRequest, Assignment};
use proptest::prelude::*;

/// Member id -> the (topic, partition) pairs it got.
pub type Owners = BTreeMap<String, BTreeSet<(String, i32)>>;

/// The answer as [`Owners`], every member of the assignment listed (with nothing if it got
/// nothing).
pub fn owners(assignment: &Assignment) -> Owners {
    assignment
        .member_ids()
        .map(|id| {
            let set = assignment
                .of(id)
                .into_iter()
                .map(|(t, p)| (t.to_string(), p))
                .collect();
            (id.to_string(), set)
        })
        .collect()
}

/// Every member of the request is answered and no other; every partition of a topic that is
/// known and subscribed is given exactly once, and only to a member subscribing to its topic.
pub fn check_invariants(request: &AssignRequest, got: &Owners) -> Result<(), TestCaseError> {
    let ids: BTreeSet<&String> = request.members.iter().map(|m| &m.member_id).collect();
    prop_assert_eq!(got.keys().collect::<BTreeSet<_>>(), ids);
    let mut seen = BTreeSet::new();
    for (member, partitions) in got {
        let m = request.member(member).unwrap();
        for (topic, p) in partitions {
            prop_assert!(
                m.topics.contains(topic),
                "{} got {}-{} without subscribing",
                member,
                topic,
                p
            );
            prop_assert!(
                seen.insert((topic.clone(), *p)),
                "{}-{} given twice",
                topic,
                p
            );
        }
    }
    for topic in &request.topics {
        if request
            .members
            .iter()
            .any(|m| m.topics.contains(&topic.name))
        {
            for p in 0..topic.partition_count.max(0) {
                prop_assert!(
                    seen.contains(&(topic.name.clone(), p)),
                    "{}-{} not given",
                    topic.name,
                    p
                );
            }
        }
    }
    Ok(())
}
