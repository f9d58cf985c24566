//! Groups on which Kafka's balancing loop (`performReassignments`) cycles forever, found by the
//! property tests (one of them hung a CI run). Kafka's own `AbstractStickyAssignor`
//! (apache/kafka `1eb7644`, OpenJDK 17), given `NO_RACKS`, was still in `performReassignments`
//! after 30 s. The port stops balancing when a pass ends on an assignment an earlier pass ended
//! on (`assignor_sticky_core::general`'s module docs): the call returns, says so, and its answer
//! is a whole, valid assignment, in both flavours.

use std::collections::BTreeMap;

use assignor_sticky_core::kafka_test::arbitrary::by_member;
use assignor_sticky_core::kafka_test::oracle::{self, Case};
use assignor_sticky_core::{Flavor, Options, Outcome, run};

/// Without racks: the first round cycles, in both flavours.
const NO_RACKS: &str = "
scenario no-racks
flavor sticky
prefer 0
topic orders 6
topic payments 5
topic t1 10
member consumer-2-e8346313 orders,payments,t1 orders:0,orders:1,payments:0,t1:0,t1:1,t1:2,t1:3,t1:4,t1:5,t1:6,t1:7,t1:8,t1:9 13 -
member consumer-3-e0b85542 - - 13 -
member consumer-4-c2736022 orders,payments,t1 - 13 -
member rdkafka-c386 payments - 13 -
member rdkafka-f0d8 orders,payments orders:2,orders:3,orders:4,orders:5,payments:1,payments:2,payments:3,payments:4 13 -
end
";

/// With consumer and replica racks, cooperative: the first round is answered, and the round
/// after it (every member owning what it got) cycles.
const RACKS: &str = "
scenario racks
flavor cooperative
prefer 0
topic payments 2 r0,r1/r1
topic t0 8 r0,r2/r0,r1/r1/r1/r1/r0,r1/r1,r2/r0,r1,r2
topic t1 10 r0,r1/r0/r1,r2/r0,r1/r0,r2/r0,r1,r2/r0,r2/r0,r2/r1,r2/r0
topic T2 8 r2/r1/r2/r0,r2/r0,r1,r2/r1/r1,r2/r0,r1,r2
member c30 payments,t1,T2 payments:1,t1:1,t1:4,t1:5,t1:9,T2:0,T2:2,T2:3,T2:5,t1:3 5 -
member c59 t0 - 5 r2
member c64 T2 T2:1 5 -
member c94 payments,t0 payments:0,t1:8 4 r0
member c97 t0,t1 t0:0,t0:2,t0:3,t0:7,t1:0 5 r2
member consumer-0-00748954 payments,t0 - 5 r0
member consumer-1-7d119823 payments t1:2 5 r1
member consumer-6-9068bfec payments,t0,t1,T2 t0:4,t0:5,t0:6,t1:6,t1:7,T2:4,T2:6 5 r1
end
";

fn case(text: &str, flavor: Flavor) -> Case {
    let mut case = oracle::parse(text).pop().expect("one scenario");
    case.cooperative = flavor == Flavor::CooperativeSticky;
    case
}

/// `case` cycles in its first round and ends with a whole assignment.
fn check_whole(case: &Case) {
    let outcome =
        run(&case.request(), case.flavor(), Options::default()).expect("the port answers");
    assert!(
        outcome.balancing_cycled,
        "{}: Kafka's balancing cycles on this group",
        case.name
    );
    check_outcome(case, &outcome);
}

/// Every partition goes to at most one member, and only to a subscriber; every subscribed
/// partition goes to someone or, cooperative, waits a round.
fn check_outcome(case: &Case, outcome: &Outcome) {
    let mut owner: BTreeMap<(String, i32), String> = BTreeMap::new();
    for (member, partitions) in by_member(&outcome.assignment) {
        let (_, topics, ..) = case.members.iter().find(|m| m.0 == member).unwrap();
        for (topic, p) in partitions {
            assert!(
                topics.contains(&topic),
                "{member} got {topic}, not subscribed"
            );
            let previous = owner.insert((topic.clone(), p), member.clone());
            assert_eq!(previous, None, "{topic}:{p} assigned twice");
        }
    }
    let subscribed: usize = case
        .topics
        .iter()
        .filter(|(t, ..)| case.members.iter().any(|m| m.1.contains(t)))
        .map(|(_, n, _)| *n as usize)
        .sum();
    let handed = owner.len() + outcome.withheld.len();
    assert_eq!(
        handed, subscribed,
        "{}: every subscribed partition accounted for",
        case.name
    );
}

#[test]
fn a_cycling_balance_without_racks_ends_with_a_whole_assignment() {
    for flavor in [Flavor::Sticky, Flavor::CooperativeSticky] {
        check_whole(&case(NO_RACKS, flavor));
    }
}

#[test]
fn a_cycling_balance_with_racks_ends_with_a_whole_assignment() {
    let flavor = Flavor::CooperativeSticky;
    let first_case = case(RACKS, flavor);
    let first = run(&first_case.request(), flavor, Options::default()).expect("the port answers");
    assert!(
        !first.balancing_cycled,
        "the first round balances as Kafka does"
    );
    let got = by_member(&first.assignment);
    let mut next = first_case.clone();
    for (id, _, owned, generation, _) in &mut next.members {
        *owned = got.get(id).cloned().unwrap_or_default();
        // The generation the first round formed: one above the claims' 5.
        *generation = 6;
    }
    let second = run(&next.request(), flavor, Options::default()).expect("the port answers");
    assert!(
        second.balancing_cycled,
        "Kafka's balancing cycles on the second round"
    );
    check_outcome(&next, &second);
}
