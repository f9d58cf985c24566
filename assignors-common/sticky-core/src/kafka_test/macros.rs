//! The macros that turn the ported Java cases into `#[test]`s in a strategy crate.

/// Generates the `#[test]`s of Kafka's `AbstractStickyAssignorTest` for one flavour:
/// `assignor_sticky_core::abstract_sticky_assignor_test!(assignor_sticky_core::Flavor::Sticky);`
/// Parametrized Java tests become a module with one test per parameter.
#[macro_export]
macro_rules! abstract_sticky_assignor_test {
    ($flavor:expr) => {
        #[test]
        fn test_member_data() {
            $crate::kafka_test::abstract_cases::test_member_data($flavor)
        }
        $crate::__by_consumer_rack!($flavor, abstract_cases::test_one_consumer_no_topic);
        $crate::__by_consumer_rack!($flavor, abstract_cases::test_one_consumer_nonexistent_topic);
        $crate::__by_rack_config!($flavor, abstract_cases::test_one_consumer_one_topic);
        $crate::__by_rack_config!($flavor, abstract_cases::test_only_assigns_partitions_from_subscribed_topics);
        $crate::__by_rack_config!($flavor, abstract_cases::test_one_consumer_multiple_topics);
        $crate::__by_rack_config!($flavor, abstract_cases::test_two_consumers_one_topic_one_partition);
        $crate::__by_rack_config!($flavor, abstract_cases::test_two_consumers_one_topic_two_partitions);
        $crate::__by_rack_config!($flavor, abstract_cases::test_multiple_consumers_mixed_topic_subscriptions);
        $crate::__by_rack_config!($flavor, abstract_cases::test_two_consumers_two_topics_six_partitions);
        $crate::__by_rack_config!($flavor, abstract_cases::test_consumer_owning_min_quota_expected_max_quota);
        $crate::__by_rack_config!($flavor, abstract_cases::test_max_quota_consumer_more_than_num_expected_max_capacity_members);
        $crate::__by_rack_config!($flavor, abstract_cases::test_all_consumers_are_under_min_quota);
        $crate::__by_rack_config!($flavor, abstract_cases::test_add_remove_consumer_one_topic);
        $crate::__by_rack_config!($flavor, abstract_cases::test_topic_balance_after_reassignment);
        $crate::__by_rack_config!($flavor, abstract_cases::test_add_remove_two_consumers_two_topics);
        $crate::__by_rack_config!($flavor, abstract_cases::test_poor_round_robin_assignment_scenario);
        $crate::__by_rack_config!($flavor, abstract_cases::test_add_remove_topic_two_consumers);
        $crate::__by_rack_config!($flavor, abstract_cases::test_reassignment_after_one_consumer_leaves);
        $crate::__by_rack_config!($flavor, abstract_cases::test_reassignment_after_one_consumer_added);
        $crate::__by_rack_config!($flavor, abstract_cases::test_same_subscriptions);
        mod test_large_assignment_and_group_with_uniform_subscription {
            use $crate::kafka_test::abstract_large_cases as cases;
            #[test]
            #[ignore = "a million partitions; run with --release -- --ignored"]
            fn without_consumer_rack() {
                cases::test_large_assignment_and_group_with_uniform_subscription($flavor, false)
            }
            #[test]
            #[ignore = "100,000 partitions, rack-aware; run with --release -- --ignored"]
            fn with_consumer_rack() {
                cases::test_large_assignment_and_group_with_uniform_subscription($flavor, true)
            }
        }
        mod test_large_assignment_and_group_with_non_equal_subscription {
            use $crate::kafka_test::abstract_large_cases as cases;
            #[test]
            #[ignore = "a million partitions, general builder; run with --release -- --ignored"]
            fn without_consumer_rack() {
                cases::test_large_assignment_and_group_with_non_equal_subscription($flavor, false)
            }
            #[test]
            #[ignore = "100,000 partitions, general builder, rack-aware; run with --release -- --ignored"]
            fn with_consumer_rack() {
                cases::test_large_assignment_and_group_with_non_equal_subscription($flavor, true)
            }
        }
        $crate::__by_consumer_rack!($flavor, abstract_large_cases::test_assignment_and_group_with_non_equal_subscription_not_timeout);
        #[test]
        fn test_subscription_not_equal_and_assign_same_partition_with3_generation() {
            $crate::kafka_test::abstract_ownership_cases::test_subscription_not_equal_and_assign_same_partition_with3_generation($flavor)
        }
        mod test_large_assignment_with_multiple_consumers_leaving_and_random_subscription {
            use $crate::kafka_test::abstract_large_cases as cases;
            #[test]
            fn without_consumer_rack() {
                for seed in [1, 2, 3] {
                    cases::test_large_assignment_with_multiple_consumers_leaving_and_random_subscription($flavor, false, seed)
                }
            }
            #[test]
            fn with_consumer_rack() {
                for seed in [1, 2, 3] {
                    cases::test_large_assignment_with_multiple_consumers_leaving_and_random_subscription($flavor, true, seed)
                }
            }
        }
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_new_subscription);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_move_existing_assignments);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_stickiness);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_assignment_updated_for_deleted_topic);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_no_exception_thrown_when_only_subscribed_topic_deleted);
        mod test_reassignment_with_random_subscriptions_and_changes {
            use $crate::kafka_test::{RackConfig, abstract_large_cases as cases};
            #[test]
            fn no_broker_rack() {
                cases::test_reassignment_with_random_subscriptions_and_changes($flavor, RackConfig::NoBrokerRack, 11)
            }
            #[test]
            fn no_consumer_rack() {
                cases::test_reassignment_with_random_subscriptions_and_changes($flavor, RackConfig::NoConsumerRack, 12)
            }
            #[test]
            fn broker_and_consumer_rack() {
                cases::test_reassignment_with_random_subscriptions_and_changes($flavor, RackConfig::BrokerAndConsumerRack, 13)
            }
        }
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_all_consumers_reach_expected_quota_and_are_considered_filled);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_owned_partitions_are_invalidated_for_consumer_with_stale_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_owned_partitions_are_invalidated_for_consumer_with_no_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers_in_same_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_ensure_partitions_assigned_to_highest_generation);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_no_reassignment_on_current_members);
        $crate::__by_rack_config!($flavor, abstract_ownership_cases::test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation);
        #[test]
        fn test_rack_aware_assignment_with_uniform_subscription() {
            $crate::kafka_test::abstract_rack_cases::test_rack_aware_assignment_with_uniform_subscription($flavor)
        }
        #[test]
        fn test_rack_aware_assignment_with_non_equal_subscription() {
            $crate::kafka_test::abstract_rack_cases::test_rack_aware_assignment_with_non_equal_subscription($flavor)
        }
    };
}

/// One test per `RackConfig` of a `@EnumSource(RackConfig.class)` Java test.
#[doc(hidden)]
#[macro_export]
macro_rules! __by_rack_config {
    ($flavor:expr, $module:ident :: $name:ident) => {
        mod $name {
            use $crate::kafka_test::RackConfig;
            #[test]
            fn no_broker_rack() {
                $crate::kafka_test::$module::$name($flavor, RackConfig::NoBrokerRack)
            }
            #[test]
            fn no_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, RackConfig::NoConsumerRack)
            }
            #[test]
            fn broker_and_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, RackConfig::BrokerAndConsumerRack)
            }
        }
    };
}

/// One test per value of a `hasConsumerRack` boolean Java test.
#[doc(hidden)]
#[macro_export]
macro_rules! __by_consumer_rack {
    ($flavor:expr, $module:ident :: $name:ident) => {
        mod $name {
            #[test]
            fn without_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, false)
            }
            #[test]
            fn with_consumer_rack() {
                $crate::kafka_test::$module::$name($flavor, true)
            }
        }
    };
}
