//! The rack-aware cases of Kafka's `RangeAssignorTest` (KIP-881), driven like Kafka's
//! `AbstractPartitionAssignorTest.verifyRackAssignment`: consumers `consumer0..`, topics laid
//! out over the brokers in the order given (each topic's first replica continues where the
//! previous topic's stopped), the expected assignment of each consumer, and the number of
//! partitions given to a consumer on a rack holding no replica of them (`-1`: not checked).

use assignor_sdk::AssignRequest;

use crate::assign_partitions;
use crate::kafka_tests::{ALL_RACKS, member, of, partition_infos_on, request};

fn racks(n: usize) -> Vec<Option<&'static str>> {
    (0..n)
        .map(|i| Some(ALL_RACKS[i % ALL_RACKS.len()]))
        .collect()
}

fn null_racks(n: usize) -> Vec<Option<&'static str>> {
    vec![None; n]
}

fn named(racks: &[&'static str]) -> Vec<Option<&'static str>> {
    racks.iter().map(|r| Some(*r)).collect()
}

/// "t1-0, t1-3, t2-0" as sorted (topic, partition) pairs.
fn parse(expected: &str) -> Vec<(String, i32)> {
    let mut out: Vec<(String, i32)> = expected
        .split(", ")
        .filter(|s| !s.is_empty())
        .map(|tp| {
            let (topic, p) = tp.rsplit_once('-').expect("topic-partition");
            (topic.to_string(), p.parse().expect("partition number"))
        })
        .collect();
    out.sort();
    out
}

/// One `verifyRackAssignment` call; `prefer` is the assignor's `preferRackAwareLogic` at
/// that point of the Java test.
#[allow(clippy::too_many_arguments)]
fn verify_rack_assignment(
    prefer: bool,
    topics: &[(&str, usize)],
    replication_factor: usize,
    broker_racks: &[Option<&str>],
    consumer_racks: &[Option<&str>],
    consumer_topics: &[&[&str]],
    expected: &[&str],
    num_partitions_with_rack_mismatch: i32,
) {
    let mut next = 0;
    let mut infos = Vec::new();
    for (topic, n) in topics {
        infos.push(partition_infos_on(
            topic,
            *n,
            replication_factor,
            broker_racks,
            next,
        ));
        next += n;
    }
    let consumers = (0..consumer_racks.len())
        .map(|i| {
            member(
                &format!("consumer{i}"),
                None,
                consumer_racks[i],
                consumer_topics[i],
            )
        })
        .collect();
    let req: AssignRequest = request(infos, consumers);
    let a = assign_partitions(&req, prefer);
    let context = format!(
        "rf={replication_factor} brokers={broker_racks:?} consumers={consumer_racks:?} prefer={prefer}"
    );
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(
            of(&a, &format!("consumer{i}")),
            parse(want),
            "consumer{i}: {context}"
        );
    }
    if num_partitions_with_rack_mismatch >= 0 {
        let mut mismatched = Vec::new();
        for (i, rack) in consumer_racks.iter().enumerate() {
            let Some(rack) = rack else { continue };
            for (topic, p) in of(&a, &format!("consumer{i}")) {
                if !req
                    .topic(&topic)
                    .unwrap()
                    .racks_of(p)
                    .iter()
                    .any(|r| r == rack)
                {
                    mismatched.push((topic, p));
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

/// `RangeAssignorTest.verifyNonRackAwareAssignment`: configurations in which racks change
/// nothing (no racks on one side, disjoint racks, every partition on every rack).
fn verify_non_rack_aware_assignment(
    topics: &[(&str, usize)],
    consumer_topics: &[&[&str]],
    expected: &[&str],
) {
    verify_rack_assignment(
        false,
        topics,
        3,
        &null_racks(3),
        &racks(3),
        consumer_topics,
        expected,
        -1,
    );
    verify_rack_assignment(
        false,
        topics,
        3,
        &racks(3),
        &null_racks(3),
        consumer_topics,
        expected,
        -1,
    );
    verify_rack_assignment(
        false,
        topics,
        3,
        &racks(3),
        &racks(3),
        consumer_topics,
        expected,
        0,
    );
    verify_rack_assignment(
        false,
        topics,
        4,
        &racks(4),
        &racks(3),
        consumer_topics,
        expected,
        0,
    );
    verify_rack_assignment(
        false,
        topics,
        3,
        &racks(3),
        &named(&["d", "e", "f"]),
        consumer_topics,
        expected,
        -1,
    );
    let some_null = [None, Some("e"), Some("f")];
    verify_rack_assignment(
        false,
        topics,
        3,
        &racks(3),
        &some_null,
        consumer_topics,
        expected,
        -1,
    );
    verify_rack_assignment(
        true,
        topics,
        3,
        &racks(3),
        &racks(3),
        consumer_topics,
        expected,
        0,
    );
}

const T123: &[&str] = &["t1", "t2", "t3"];
const T13: &[&str] = &["t1", "t3"];

#[test]
fn test_rack_aware_assignment_with_uniform_subscription() {
    let topics = [("t1", 6), ("t2", 7), ("t3", 2)];
    let consumer_topics = [T123, T123, T123];
    verify_non_rack_aware_assignment(
        &topics,
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
            "t1-2, t1-3, t2-3, t2-4, t3-1",
            "t1-4, t1-5, t2-5, t2-6",
        ],
    );
    // Best-effort rack-aware assignment for lower replication factor where racks have a subset of partitions.
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-3, t2-0, t2-3, t2-6",
            "t1-1, t1-4, t2-1, t2-4, t3-0",
            "t1-2, t1-5, t2-2, t2-5, t3-1",
        ],
        0,
    );
    verify_rack_assignment(
        false,
        &topics,
        2,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
            "t1-1, t1-3, t2-1, t2-4, t3-0",
            "t1-4, t1-5, t2-5, t2-6",
        ],
        1,
    );
    // One consumer on a rack with no partitions.
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
            "t1-2, t1-3, t2-3, t2-4, t3-1",
            "t1-4, t1-5, t2-5, t2-6",
        ],
        4,
    );
}

#[test]
fn test_rack_aware_assignment_with_non_equal_subscription() {
    let topics = [("t1", 6), ("t2", 7), ("t3", 2)];
    let consumer_topics = [T123, T123, T13];
    verify_non_rack_aware_assignment(
        &topics,
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
            "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
            "t1-4, t1-5",
        ],
    );
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6",
            "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
            "t1-2, t1-5, t3-1",
        ],
        2,
    );
    verify_rack_assignment(
        false,
        &topics,
        2,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1",
            "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
            "t1-4, t1-5",
        ],
        0,
    );
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
            "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
            "t1-4, t1-5",
        ],
        2,
    );
}

#[test]
fn test_rack_aware_assignment_with_uniform_partitions() {
    let topics = [("t1", 5), ("t2", 5), ("t3", 5)];
    let consumer_topics = [T123, T123, T123];
    let non_rack_aware = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
        "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "t1-4, t2-4, t3-4",
    ];
    verify_non_rack_aware_assignment(&topics, &consumer_topics, &non_rack_aware);
    // Co-partitioning is prioritized over rack alignment.
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &non_rack_aware,
        10,
    );
    verify_rack_assignment(
        false,
        &topics,
        2,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &non_rack_aware,
        5,
    );
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &racks(3),
        &consumer_topics,
        &non_rack_aware,
        3,
    );
}

#[test]
fn test_rack_aware_assignment_with_uniform_partitions_non_equal_subscription() {
    let topics = [("t1", 5), ("t2", 5), ("t3", 5)];
    let consumer_topics = [T123, T123, T13];
    verify_non_rack_aware_assignment(
        &topics,
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
            "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
            "t1-4, t3-4",
        ],
    );
    // Co-partitioning is prioritized over rack alignment for topics with equal subscriptions.
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1",
            "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
            "t1-4, t3-4",
        ],
        9,
    );
    verify_rack_assignment(
        false,
        &topics,
        2,
        &racks(3),
        &racks(3),
        &consumer_topics,
        &[
            "t1-2, t2-0, t2-1, t2-3, t3-2",
            "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
            "t1-1, t1-4, t3-1, t3-4",
        ],
        0,
    );
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &racks(3),
        &consumer_topics,
        &[
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
            "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
            "t1-4, t3-4",
        ],
        2,
    );
}

#[test]
fn test_rack_aware_assignment_with_co_partitioning() {
    let topics = [("t1", 6), ("t2", 6), ("t3", 2), ("t4", 2)];
    let (t12, t34): (&[&str], &[&str]) = (&["t1", "t2"], &["t3", "t4"]);
    let consumer_topics = [t12, t12, t34, t34];
    let consumer_racks = named(&[ALL_RACKS[0], ALL_RACKS[1], ALL_RACKS[1], ALL_RACKS[0]]);
    let non_rack_aware = [
        "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
        "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
        "t3-0, t4-0",
        "t3-1, t4-1",
    ];
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        -1,
    );
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        -1,
    );
    verify_rack_assignment(
        false,
        &topics,
        2,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        0,
    );
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &[
            "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
            "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
            "t3-1, t4-1",
            "t3-0, t4-0",
        ],
        0,
    );

    let all: &[&str] = &["t1", "t2", "t3", "t4"];
    let consumer_topics = [all, all, all, all];
    let non_rack_aware = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
        "t1-4, t2-4",
        "t1-5, t2-5",
    ];
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        -1,
    );
    verify_rack_assignment(
        false,
        &topics,
        3,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        -1,
    );
    verify_rack_assignment(
        false,
        &topics,
        2,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        0,
    );
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(2),
        &consumer_racks,
        &consumer_topics,
        &[
            "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0",
            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
            "t1-5, t2-5",
            "t1-4, t2-4",
        ],
        0,
    );
    verify_rack_assignment(
        false,
        &topics,
        1,
        &racks(3),
        &consumer_racks,
        &consumer_topics,
        &[
            "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
            "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
            "t1-2, t2-2",
            "t1-5, t2-5",
        ],
        6,
    );
}

#[test]
fn test_co_partitioned_assignment_with_same_subscription() {
    let topics = [
        ("t1", 6),
        ("t2", 6),
        ("t3", 2),
        ("t4", 2),
        ("t5", 4),
        ("t6", 4),
    ];
    // t7, t8 and t9 do not exist.
    let topic_list: &[&str] = &["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"];
    let consumer_topics = [topic_list, topic_list, topic_list];
    let consumer_racks = named(&[ALL_RACKS[0], ALL_RACKS[1], ALL_RACKS[2]]);
    let non_rack_aware = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    ];
    verify_rack_assignment(
        false,
        &topics,
        3,
        &null_racks(3),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        -1,
    );
    // preferRackAwareLogic = true from here on.
    verify_rack_assignment(
        true,
        &topics,
        3,
        &racks(3),
        &consumer_racks,
        &consumer_topics,
        &non_rack_aware,
        0,
    );
    verify_rack_assignment(
        true,
        &topics,
        2,
        &racks(3),
        &consumer_racks,
        &consumer_topics,
        &[
            "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
            "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3",
        ],
        0,
    );
}
