//! A 2,000-member group on 100 topics of 2,000 partitions (200,000 partitions), every member
//! subscribed to every topic: Kafka's constrained builder, which must stay linear in the
//! partitions. Two rounds: from scratch, then with one member gone, one new and the rest owning
//! what they got. Ignored by default (run it optimised):
//!
//! ```sh
//! cargo test --release -p assignor-cooperative-sticky --test all large_group -- --ignored --nocapture
//! ```
//!
//! It prints how long each round took; it asserts what the rounds must produce, never a time.

use assignor_cooperative_sticky::assign;
use assignor_sticky_core::Flavor;
use assignor_sticky_core::kafka_test::large::{homogeneous, next_round, spread, timed};

#[test]
#[ignore = "200,000 partitions; run with --release -- --ignored --nocapture"]
fn two_thousand_members_two_hundred_thousand_partitions() {
    let first = homogeneous(2_000, 100, 2_000);
    let (assignment, took) = timed(assign, &first);
    let (min, max, total) = spread(&first, &assignment);
    println!("round 1 (no previous owners): {took:?}; {min}..{max} partitions per member");
    assert_eq!((min, max, total), (100, 100, 200_000));

    let second = next_round(&first, assignment, Flavor::CooperativeSticky);
    let (assignment, took) = timed(assign, &second);
    let (min, max, total) = spread(&second, &assignment);
    println!(
        "round 2 (one left, one joined, the rest owning theirs): {took:?}; {min}..{max} per member, {total} assigned"
    );
    assert!(max - min <= 100, "{min}..{max}");
    // Cooperative: the leaver's partitions had no other owner, so they go straight to the
    // newcomer and nothing waits a round.
    assert_eq!((min, max, total), (100, 100, 200_000));
}
