//! Property tests of `cooperative-sticky` on random groups
//! (`assignor_sticky_core::kafka_test::arbitrary`): equal and different subscriptions, members
//! with no subscription, previous owners of several generations, partitions claimed twice,
//! racks. For every one:
//! - each partition goes at most once, only to a subscriber;
//! - no partition goes to a member while another still owns it (the host's cooperative check,
//!   and Kafka's: nothing is both revoked from one member and added to another);
//! - the answer is the `sticky` answer for the same group minus the partitions that wait a
//!   round;
//! - rounds converge: with the members owning what they got, the next round hands out what
//!   waited and withholds nothing (equal subscriptions: in exactly two rounds, nobody losing a
//!   partition in the second; different subscriptions: within Kafka's four), and the final
//!   assignment is complete and balanced;
//! - stickiness: a round with nothing changed moves nothing.
//!
//! Convergence and stickiness are checked without racks. With racks, Kafka's rack-aware
//! builders revoke an owned partition whose replicas are on no rack of its owner, and when
//! balance then hands it to another such member it is revoked again in the next round: Kafka's
//! `CooperativeStickyAssignor` can keep a group rebalancing (compare KAFKA-15106). The port
//! does exactly what Kafka does there (checked against Kafka's own answers).

use std::collections::{BTreeMap, BTreeSet};

use assignor_cooperative_sticky::assign;
use assignor_sticky_core::kafka_test::Tp;
use assignor_sticky_core::kafka_test::arbitrary::{
    GroupSpec, by_member, check_balanced, check_cooperative, check_valid, groups,
    homogeneous_groups,
};
use assignor_sticky_core::{Flavor, Options, run};
use proptest::prelude::*;

fn round(spec: &GroupSpec) -> BTreeMap<String, Vec<Tp>> {
    by_member(&assign(&spec.request(Flavor::CooperativeSticky)).expect("never refuses"))
}

/// What Kafka's cooperative verification calls revoked and added: (revoked, added).
fn revoked_and_added(
    spec: &GroupSpec,
    got: &BTreeMap<String, Vec<Tp>>,
) -> (BTreeSet<Tp>, BTreeSet<Tp>) {
    let mut revoked = BTreeSet::new();
    let mut added = BTreeSet::new();
    for m in &spec.members {
        let assigned = &got[&m.id];
        revoked.extend(m.owned.iter().filter(|tp| !assigned.contains(tp)).cloned());
        added.extend(assigned.iter().filter(|tp| !m.owned.contains(tp)).cloned());
    }
    (revoked, added)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn partitions_go_once_to_subscribers_and_never_directly_between_owners(spec in groups()) {
        let got = round(&spec);
        check_valid(&spec, &got).map_err(TestCaseError::fail)?;
        check_cooperative(&spec, &got).map_err(TestCaseError::fail)?;
        let (revoked, added) = revoked_and_added(&spec, &got);
        let both: Vec<&Tp> = revoked.intersection(&added).collect();
        prop_assert!(both.is_empty(), "revoked and added in one round: {:?}", both);
    }

    #[test]
    fn the_answer_is_sticky_minus_what_waits_a_round(spec in groups()) {
        let cooperative = run(&spec.request(Flavor::CooperativeSticky), Flavor::CooperativeSticky, Options::default()).unwrap();
        let sticky = run(&spec.request(Flavor::Sticky), Flavor::Sticky, Options::default()).unwrap();
        let (c, s) = (by_member(&cooperative.assignment), by_member(&sticky.assignment));
        let mut rebuilt = c.clone();
        for (topic, p, member) in &cooperative.withheld {
            rebuilt.get_mut(member).unwrap().push((topic.clone(), *p));
        }
        for list in rebuilt.values_mut() {
            list.sort();
        }
        prop_assert_eq!(rebuilt, s, "{}{}", spec.to_oracle_scenario("coop", Flavor::CooperativeSticky), spec.to_oracle_scenario("sticky", Flavor::Sticky));
    }

    #[test]
    fn equal_subscriptions_settle_in_two_rounds_and_nobody_loses_in_the_second(spec in homogeneous_groups()) {
        let spec = spec.without_racks();
        let first = round(&spec);
        let next = spec.next_round(&first);
        let second = round(&next);
        check_cooperative(&next, &second).map_err(TestCaseError::fail)?;
        let given = check_valid(&next, &second).map_err(TestCaseError::fail)?;
        prop_assert_eq!(given, next.subscribed_partitions(), "complete after two rounds\n{}{}", spec.to_oracle_scenario("r1", Flavor::CooperativeSticky), next.to_oracle_scenario("r2", Flavor::CooperativeSticky));
        for (member, before) in &first {
            prop_assert!(before.iter().all(|tp| second[member].contains(tp)), "{} lost some of {:?}", member, before);
        }
        let counts: Vec<usize> = second.values().map(Vec::len).collect();
        prop_assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{:?}", second);
    }

    #[test]
    fn rounds_converge_to_a_complete_balanced_assignment(spec in groups()) {
        let mut spec = spec.without_racks();
        let mut got = round(&spec);
        let mut rounds = 1;
        loop {
            check_cooperative(&spec, &got).map_err(TestCaseError::fail)?;
            let (revoked, _) = revoked_and_added(&spec, &got);
            if revoked.is_empty() {
                break;
            }
            prop_assert!(rounds < 4, "still revoking after {} rounds\n{}", rounds, spec.to_oracle_scenario("last", Flavor::CooperativeSticky));
            spec = spec.next_round(&got);
            got = round(&spec);
            rounds += 1;
        }
        let given = check_valid(&spec, &got).map_err(TestCaseError::fail)?;
        prop_assert_eq!(given, spec.subscribed_partitions());
        check_balanced(&spec, &got).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn a_round_with_nothing_changed_moves_nothing(spec in groups()) {
        let mut spec = spec.without_racks();
        // Settle first, then one more round must change nothing.
        let mut got = round(&spec);
        for _ in 0..4 {
            spec = spec.next_round(&got);
            got = round(&spec);
        }
        let again = round(&spec.next_round(&got));
        prop_assert_eq!(again, got);
    }
}
