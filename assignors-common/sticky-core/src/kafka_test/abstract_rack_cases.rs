//! The KIP-881 cases of Kafka's `AbstractStickyAssignorTest`
//! (`testRackAwareAssignmentWithUniformSubscription`, `...WithNonEqualSubscription`), driven
//! like `AbstractPartitionAssignorTest.verifyRackAssignment`: consumers `consumer0..`, topics
//! laid out over the brokers in the order given, owned partitions (at generation -1, no user
//! data), the expected assignment of each consumer and the number of partitions given to a
//! consumer on a rack holding no replica (`-1`: not checked). `prefer` is the assignor's
//! `preferRackAwareLogic` at that point of the Java test.

use std::collections::BTreeMap;

use super::*;
use crate::{Flavor, Options, run};

/// `racks(n)`.
fn racks(n: usize) -> Vec<Option<&'static str>> {
    (0..n)
        .map(|i| Some(ALL_RACKS[i % ALL_RACKS.len()]))
        .collect()
}

/// `nullRacks(n)`.
fn null_racks(n: usize) -> Vec<Option<&'static str>> {
    vec![None; n]
}

/// "t1-0, t1-3" as `(topic, partition)` pairs in the order written.
fn parse(list: &str) -> Vec<Tp> {
    list.split(", ")
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (topic, p) = s.rsplit_once('-').expect("topic-partition");
            (topic.to_string(), p.parse().expect("partition number"))
        })
        .collect()
}

const TOPICS: [(&str, i32); 3] = [("t1", 6), ("t2", 7), ("t3", 2)];

#[allow(clippy::too_many_arguments)]
fn verify_rack_assignment(
    flavor: Flavor,
    prefer: bool,
    replication_factor: usize,
    broker_racks: &[Option<&str>],
    consumer_racks: &[Option<&str>],
    consumer_topics: &[Vec<String>],
    owned: Option<&[&str]>,
    expected: &[&str],
    num_partitions_with_rack_mismatch: i32,
) {
    let mut ppt = PartitionsPerTopic::new();
    let mut next = 0;
    for (topic, n) in TOPICS {
        ppt.insert(
            topic.to_string(),
            partition_infos_on(topic, n, replication_factor, broker_racks, next),
        );
        next += n as usize;
    }
    let mut subscriptions = BTreeMap::new();
    for (i, rack) in consumer_racks.iter().enumerate() {
        let owned = owned
            .and_then(|o| o.get(i))
            .map(|s| parse(s))
            .unwrap_or_default();
        subscriptions.insert(
            format!("consumer{i}"),
            Subscription {
                topics: consumer_topics[i].clone(),
                user_data: None,
                owned,
                generation: -1,
                rack: rack.map(String::from),
            },
        );
    }
    let req = request(flavor, &ppt, &subscriptions);
    let outcome = run(
        &req,
        flavor,
        Options {
            prefer_rack_aware_logic: prefer,
        },
    )
    .expect("assigns");
    let context = format!(
        "rf={replication_factor} brokers={broker_racks:?} consumers={consumer_racks:?} \
         owned={owned:?} prefer={prefer}"
    );
    for (i, want) in expected.iter().enumerate() {
        let got: Vec<Tp> = outcome
            .assignment
            .of(&format!("consumer{i}"))
            .into_iter()
            .map(|(t, p)| (t.to_string(), p))
            .collect();
        assert_eq!(got, sorted(&parse(want)), "consumer{i}: {context}");
    }
    if num_partitions_with_rack_mismatch >= 0 {
        let mut mismatched = Vec::new();
        for (i, rack) in consumer_racks.iter().enumerate() {
            let Some(rack) = rack else { continue };
            for (topic, p) in outcome.assignment.of(&format!("consumer{i}")) {
                if !ppt[topic].racks_of(p).iter().any(|r| r == rack) {
                    mismatched.push((topic.to_string(), p));
                }
            }
        }
        assert_eq!(
            mismatched.len() as i32,
            num_partitions_with_rack_mismatch,
            "partitions with rack mismatch {mismatched:?}: {context}"
        );
    }
}

/// `verifyUniformSubscription` / `verifyNonEqualSubscription`: fresh, then owning the expected
/// assignment already.
#[allow(clippy::too_many_arguments)]
fn verify_twice(
    flavor: Flavor,
    prefer: bool,
    rf: usize,
    brokers: &[Option<&str>],
    consumers: &[Option<&str>],
    consumer_topics: &[Vec<String>],
    expected: &[&str],
    mismatches: i32,
) {
    verify_rack_assignment(
        flavor,
        prefer,
        rf,
        brokers,
        consumers,
        consumer_topics,
        None,
        expected,
        mismatches,
    );
    verify_rack_assignment(
        flavor,
        prefer,
        rf,
        brokers,
        consumers,
        consumer_topics,
        Some(expected),
        expected,
        mismatches,
    );
}

pub fn test_rack_aware_assignment_with_uniform_subscription(flavor: Flavor) {
    let all = topics(&["t1", "t2", "t3"]);
    let ct = vec![all.clone(), all.clone(), all];
    let non_rack_aware = [
        "t1-0, t1-3, t2-0, t2-3, t2-6",
        "t1-1, t1-4, t2-1, t2-4, t3-0",
        "t1-2, t1-5, t2-2, t2-5, t3-1",
    ];
    let v = |prefer,
             rf,
             brokers: &[Option<&str>],
             consumers: &[Option<&str>],
             expected: &[&str],
             mismatches| {
        verify_twice(
            flavor, prefer, rf, brokers, consumers, &ct, expected, mismatches,
        )
    };
    v(false, 3, &null_racks(3), &racks(3), &non_rack_aware, -1);
    v(false, 3, &racks(3), &null_racks(3), &non_rack_aware, -1);
    v(true, 3, &racks(3), &racks(3), &non_rack_aware, 0);
    v(true, 4, &racks(4), &racks(3), &non_rack_aware, 0);
    v(false, 3, &racks(3), &racks(3), &non_rack_aware, 0);
    v(
        false,
        3,
        &racks(3),
        &[Some("d"), Some("e"), Some("f")],
        &non_rack_aware,
        -1,
    );
    v(
        false,
        3,
        &racks(3),
        &[None, Some("e"), Some("f")],
        &non_rack_aware,
        -1,
    );

    // Rack-aligned for lower replication factors, where brokers hold a subset of partitions.
    v(false, 1, &racks(3), &racks(3), &non_rack_aware, 0);
    v(false, 2, &racks(3), &racks(3), &non_rack_aware, 0);
    // A consumer on a rack with no partitions gets misaligned ones, to keep the balance.
    v(false, 3, &racks(2), &racks(3), &non_rack_aware, 5);

    let owned = [
        "t1-0, t1-1, t1-2, t1-3, t1-4",
        "t1-5, t2-0, t2-1, t2-2, t2-3",
        "t2-4, t2-5, t2-6, t3-0, t3-1",
    ];
    let r = |prefer, rf, owned: &[&str], expected: &[&str]| {
        verify_rack_assignment(
            flavor,
            prefer,
            rf,
            &racks(3),
            &racks(3),
            &ct,
            Some(owned),
            expected,
            0,
        )
    };
    match flavor {
        Flavor::CooperativeSticky => {
            // Misaligned owned partitions are revoked to improve rack-awareness.
            r(false, 1, &owned, &["t1-0, t1-3", "t2-1", "t2-5, t3-1"]);
            // Stickiness is kept when racks match.
            r(true, 3, &non_rack_aware, &non_rack_aware);
        }
        Flavor::Sticky => {
            // The eager assignor ignores owned partitions without user data.
            r(false, 1, &owned, &non_rack_aware);
            r(true, 3, &non_rack_aware, &non_rack_aware);
        }
    }
}

pub fn test_rack_aware_assignment_with_non_equal_subscription(flavor: Flavor) {
    let all = topics(&["t1", "t2", "t3"]);
    let ct = vec![all.clone(), all, topics(&["t1", "t3"])];
    let non_rack_aware = [
        "t1-5, t2-0, t2-2, t2-4, t2-6",
        "t1-3, t2-1, t2-3, t2-5, t3-0",
        "t1-0, t1-1, t1-2, t1-4, t3-1",
    ];
    let v = |prefer,
             rf,
             brokers: &[Option<&str>],
             consumers: &[Option<&str>],
             expected: &[&str],
             mismatches| {
        verify_twice(
            flavor, prefer, rf, brokers, consumers, &ct, expected, mismatches,
        )
    };
    v(false, 3, &null_racks(3), &racks(3), &non_rack_aware, -1);
    v(false, 3, &racks(3), &null_racks(3), &non_rack_aware, -1);
    v(true, 3, &racks(3), &racks(3), &non_rack_aware, 0);
    v(true, 4, &racks(4), &racks(3), &non_rack_aware, 0);
    v(false, 3, &racks(3), &racks(3), &non_rack_aware, 0);
    v(
        false,
        3,
        &racks(3),
        &[Some("d"), Some("e"), Some("f")],
        &non_rack_aware,
        -1,
    );
    v(
        false,
        3,
        &racks(3),
        &[None, Some("e"), Some("f")],
        &non_rack_aware,
        -1,
    );

    // Rack-aligned for lower replication factors; best-effort, so some misalignment remains
    // when there are few rack choices.
    let rf1 = [
        "t1-3, t2-0, t2-2, t2-3, t2-6",
        "t1-4, t2-1, t2-4, t2-5, t3-0",
        "t1-0, t1-1, t1-2, t1-5, t3-1",
    ];
    v(false, 1, &racks(3), &racks(3), &rf1, 4);
    let rf2 = [
        "t1-3, t2-0, t2-2, t2-5, t2-6",
        "t1-0, t2-1, t2-3, t2-4, t3-0",
        "t1-1, t1-2, t1-4, t1-5, t3-1",
    ];
    v(false, 2, &racks(3), &racks(3), &rf2, 0);
    // A consumer on a rack with no partitions gets misaligned ones, to keep the balance.
    v(false, 3, &racks(2), &racks(3), &non_rack_aware, 5);

    let owned = [
        "t1-0, t1-1, t1-2, t1-3, t1-4",
        "t1-5, t2-0, t2-1, t2-2, t2-3",
        "t2-4, t2-5, t2-6, t3-0, t3-1",
    ];
    let r = |prefer, rf, owned: &[&str], expected: &[&str], mismatches| {
        verify_rack_assignment(
            flavor,
            prefer,
            rf,
            &racks(3),
            &racks(3),
            &ct,
            Some(owned),
            expected,
            mismatches,
        )
    };
    match flavor {
        Flavor::Sticky => {
            // Misaligned owned partitions (ignored: no user data) and full rack match.
            r(false, 1, &owned, &rf1, 4);
            r(false, 3, &owned, &non_rack_aware, 0);
            r(true, 3, &owned, &non_rack_aware, 0);
        }
        Flavor::CooperativeSticky => {
            let intermediate = ["t1-3", "t2-1", "t3-1"];
            r(false, 1, &owned, &intermediate, 0);
            r(false, 1, &intermediate, &rf1, 4);
            let assignment = [
                "t1-2, t1-3, t1-4, t2-4, t2-5",
                "t2-0, t2-1, t2-2, t2-3, t2-6",
                "t1-0, t1-1, t1-5, t3-0, t3-1",
            ];
            let intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"];
            r(false, 3, &owned, &intermediate, 0);
            r(false, 3, &intermediate, &assignment, 0);
            r(true, 3, &owned, &intermediate, 0);
            r(true, 3, &intermediate, &assignment, 0);
        }
    }
}
