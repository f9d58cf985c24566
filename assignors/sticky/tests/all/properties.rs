//! Property tests of `sticky` on random groups (`assignor_sticky_core::kafka_test::arbitrary`):
//! equal and different subscriptions, members with no subscription, previous owners of several
//! generations, partitions claimed twice, racks. Kafka's guarantees must hold for every one:
//! each partition assigned once, only to a subscriber; balance (counts within one, or nothing
//! could move to a member two or more behind); stickiness (a rebalance with nothing changed
//! moves nothing, and a member leaving takes nothing from the others). Stickiness is checked
//! without racks: rack-aware assignment moves owned partitions to a member on a replica's rack
//! when it can (Kafka does the same; the ported Kafka tests and the recorded Kafka answers
//! cover racks).

use std::collections::BTreeMap;

use assignor_sticky::assign;
use assignor_sticky_core::Flavor;
use assignor_sticky_core::kafka_test::Tp;
use assignor_sticky_core::kafka_test::arbitrary::{
    GroupSpec, by_member, check_balanced, check_valid, groups, homogeneous_groups,
};
use proptest::prelude::*;

fn run(spec: &GroupSpec) -> BTreeMap<String, Vec<Tp>> {
    by_member(&assign(&spec.request(Flavor::Sticky)).expect("sticky never refuses"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_subscribed_partition_goes_once_to_a_subscriber(spec in groups()) {
        let got = run(&spec);
        let given = check_valid(&spec, &got).map_err(TestCaseError::fail)?;
        prop_assert_eq!(given, spec.subscribed_partitions());
    }

    #[test]
    fn no_partition_could_move_to_a_member_two_behind(spec in groups()) {
        check_balanced(&spec, &run(&spec)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn equal_subscriptions_get_counts_within_one(spec in homogeneous_groups()) {
        let got = run(&spec);
        let counts: Vec<usize> = got.values().map(Vec::len).collect();
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        prop_assert!(max - min <= 1, "{:?}", got);
    }

    #[test]
    fn a_rebalance_with_nothing_changed_moves_nothing(spec in groups()) {
        let spec = spec.without_racks();
        let first = run(&spec);
        let next = spec.next_round(&first);
        let second = run(&next);
        prop_assert_eq!(&second, &first, "{}", next.to_oracle_scenario("rerun", Flavor::Sticky));
    }

    #[test]
    fn a_member_leaving_takes_nothing_from_the_others(spec in homogeneous_groups(), which in any::<prop::sample::Index>()) {
        prop_assume!(spec.members.len() >= 2);
        let spec = spec.without_racks();
        let first = run(&spec);
        let mut next = spec.next_round(&first);
        let left = next.members.remove(which.index(next.members.len())).id;
        let second = run(&next);
        for (member, before) in &first {
            if *member == left {
                continue;
            }
            let after = &second[member];
            prop_assert!(before.iter().all(|tp| after.contains(tp)), "{} lost some of {:?}: {:?}", member, before, after);
        }
    }

    #[test]
    fn the_module_glue_answers_what_the_function_answers(spec in groups()) {
        let request = spec.request(Flavor::Sticky);
        // The ABI v2 bytes the host sends sticky (it reads racks and user data), and back.
        let inputs = [assignor_sdk::Input::Racks, assignor_sdk::Input::UserData];
        let response = assignor_sdk::glue::call(&request, &inputs, assign).unwrap();
        prop_assert_eq!(response, assign(&request).unwrap().into_response());
    }
}
