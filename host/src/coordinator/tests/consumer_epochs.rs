//! Consumer protocol (KIP-848), checklist items of `reference/kip848.md` section 3.13 on
//! validation, lookup, fencing and epochs, over the sans-io core with a fake clock. Each test
//! is named after its item.

use kafka_protocol::ResponseError;

use super::consumer_context::*;
use super::context::Runner;
use crate::coordinator::consumer::ConsumerGroupState;
use crate::coordinator::tests::builders::G;
use crate::coordinator::{CoordinatorConfig, Notice};

fn code(e: ResponseError) -> i16 {
    e.code()
}

#[test]
fn item01_v1_with_an_empty_member_id_is_invalid_and_v0_gets_a_generated_one() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let answer = ctx.cgh_now(&Hb::join("", &["t"]));
    assert_eq!(answer.error_code, code(ResponseError::InvalidRequest));
    let v0 = Hb {
        version: 0,
        ..Hb::join("", &["t"])
    };
    let answer = ctx.cgh_now(&v0);
    assert_eq!(answer.error_code, 0);
    let id = answer.member_id.expect("a generated member id");
    assert!(!id.is_empty());
    assert_eq!(answer.member_epoch, 1);
}

#[test]
fn item03_a_join_without_rebalance_timeout_is_invalid() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let hb = Hb {
        rebalance_timeout_ms: -1,
        ..Hb::join("a", &["t"])
    };
    assert_eq!(
        ctx.cgh_now(&hb).error_code,
        code(ResponseError::InvalidRequest)
    );
}

#[test]
fn item04_a_join_with_owned_partitions_is_invalid() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let hb = Hb::join("a", &["t"]).owning(&owned(&[("t", &[0])]));
    assert_eq!(
        ctx.cgh_now(&hb).error_code,
        code(ResponseError::InvalidRequest)
    );
}

#[test]
fn item06_epoch_below_minus_two_is_invalid() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let answer = ctx.cgh_now(&Hb::beat("a", -3));
    assert_eq!(answer.error_code, code(ResponseError::InvalidRequest));
}

#[test]
fn item07_strict_refuses_an_assignor_without_a_module_with_unsupported_assignor() {
    let config = CoordinatorConfig {
        strict: true,
        ..CoordinatorConfig::default()
    };
    let mut ctx = consumer_context(config);
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]).assignor("nosuch"));
    assert_eq!(answer.error_code, code(ResponseError::UnsupportedAssignor));
    let message = answer.error_message.expect("a message").to_string();
    assert!(message.contains("uniform"), "{message}");
}

#[test]
fn item09_a_heartbeat_for_an_unknown_group_is_group_id_not_found() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let answer = ctx.cgh_now(&Hb::beat("a", 3));
    assert_eq!(answer.error_code, code(ResponseError::GroupIdNotFound));
}

#[test]
fn item12_an_unknown_member_id_is_unknown_member_id() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let answer = ctx.cgh_now(&Hb::beat("stranger", 1));
    assert_eq!(answer.error_code, code(ResponseError::UnknownMemberId));
}

#[test]
fn item13_an_epoch_above_the_members_is_fenced() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let joined = ctx.cgh_now(&Hb::join("a", &["t"]));
    let answer = ctx.cgh_now(&Hb::beat("a", joined.member_epoch + 1));
    assert_eq!(answer.error_code, code(ResponseError::FencedMemberEpoch));
}

#[test]
fn item14_an_older_epoch_is_fenced_unless_it_is_the_previous_one_with_owned_partitions_it_still_has()
 {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx); // acknowledges t-0..5 at epoch 1
    let mut b = Client::new("b", &["t"]);
    b.poll(&mut ctx); // group epoch 2
    a.poll(&mut ctx); // a must revoke: stays at 1
    a.poll(&mut ctx); // revoked: epoch 2
    assert_eq!(a.epoch, 2);
    // Epoch 1 (a's previous) with owned partitions inside its assignment: accepted, answered
    // with the current epoch (the answer that moved it was lost).
    let lost = Hb::beat("a", 1).owning(&a.owned);
    let answer = ctx.cgh_now(&lost);
    assert_eq!((answer.error_code, answer.member_epoch), (0, 2));
    // Epoch 1 with a null owned list: fenced.
    let answer = ctx.cgh_now(&Hb::beat("a", 1));
    assert_eq!(answer.error_code, code(ResponseError::FencedMemberEpoch));
}

#[test]
fn item15_epoch_zero_from_a_known_member_id_is_a_rejoin_not_a_fence() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let first = ctx.cgh_now(&Hb::join("a", &["t"]));
    let again = ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(again.error_code, 0);
    assert_eq!(again.member_id, first.member_id);
    assert!(
        again.assignment.is_some(),
        "a rejoin is answered with the assignment"
    );
}

#[test]
fn item16_a_static_join_while_the_instance_is_live_is_unreleased_instance_id() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]).instance("i"));
    let answer = ctx.cgh_now(&Hb::join("a2", &["t"]).instance("i"));
    assert_eq!(answer.error_code, code(ResponseError::UnreleasedInstanceId));
}

#[test]
fn item17_a_static_join_after_a_minus_two_leave_inherits_the_assignment() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let first = ctx.cgh_now(&Hb::join("a", &["t"]).instance("i"));
    let given = assignment_of(&first).expect("assignment");
    let left = ctx.cgh_now(&Hb::beat("a", -2).instance("i"));
    assert_eq!((left.error_code, left.member_epoch), (0, -2));
    let epoch_before = ctx.coordinator.consumer_group(G).unwrap().1;
    let back = ctx.cgh_now(&Hb::join("a2", &["t"]).instance("i"));
    assert_eq!(back.error_code, 0);
    assert_eq!(assignment_of(&back), Some(given));
    assert_eq!(back.member_id.as_deref(), Some("a2"));
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, epoch_before);
}

#[test]
fn item19_the_first_join_creates_the_group_at_epoch_one_with_the_whole_assignment() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let answer = ctx.cgh_now(&Hb::join("a", &["t", "u"]));
    assert_eq!(answer.error_code, 0);
    assert_eq!(answer.member_epoch, 1);
    assert_eq!(assignment_of(&answer), Some(all_partitions(&["t", "u"])));
    assert_eq!(
        ctx.coordinator.consumer_group(G),
        Some((ConsumerGroupState::Stable, 1)),
        "the only member owns its whole target (Kafka needs no acknowledgement for that)"
    );
}

#[test]
fn item20_a_subscription_change_moves_the_group_epoch_and_an_unchanged_heartbeat_does_not() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    ctx.cgh_now(&Hb::beat("a", 1));
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, 1);
    let change = Hb {
        names: Some(vec!["t".into(), "u".into()]),
        ..Hb::beat("a", 1)
    };
    let answer = ctx.cgh_now(&change);
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, 2);
    assert_eq!(answer.member_epoch, 2);
    assert_eq!(assignment_of(&answer), Some(all_partitions(&["t", "u"])));
}

#[test]
fn item39_every_successful_answer_carries_the_heartbeat_interval() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let join = ctx.cgh_now(&Hb::join("a", &["t"]));
    let beat = ctx.cgh_now(&Hb::beat("a", 1));
    assert_eq!(join.heartbeat_interval_ms, 5_000);
    assert_eq!(beat.heartbeat_interval_ms, 5_000);
}

#[test]
fn host_no_assignor_name_means_the_configured_default_uniform() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(ctx.runs.last().expect("a run").strategy, "uniform");
}

#[test]
fn host_the_assignor_named_in_group_remote_assignor_computes_the_target() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]).assignor("range"));
    assert_eq!(ctx.runs.last().expect("a run").strategy, "range");
}

#[test]
fn host_a_name_without_a_module_is_served_by_the_fallback_and_says_so() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]).assignor("nosuch"));
    assert_eq!(
        answer.error_code, 0,
        "never UNSUPPORTED_ASSIGNOR by default"
    );
    assert_eq!(assignment_of(&answer), Some(all_partitions(&["t"])));
    let run = ctx.runs.last().expect("a run");
    assert_eq!(run.strategy, "range", "the configured fallback");
    assert!(run.fallback);
    assert!(ctx.notices.iter().any(|n| matches!(n,
        Notice::AssignorUnavailable { requested, fallback, .. }
            if requested == "nosuch" && fallback == "range")));
}

#[test]
fn host_a_module_uploaded_under_the_missing_name_takes_over_at_once() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]).assignor("roundrobin2"));
    let mut view = (*strategies_with_uniform()).clone();
    view.modules
        .insert("roundrobin2".into(), view.modules["roundrobin"].clone());
    let before = ctx.runs.len();
    ctx.event(crate::coordinator::Event::StrategiesChanged(
        std::sync::Arc::new(view),
    ));
    let runs: Vec<_> = ctx.runs[before..]
        .iter()
        .map(|r| r.strategy.clone())
        .collect();
    assert_eq!(runs, vec!["roundrobin2".to_string()]);
}

#[test]
fn host_a_failing_module_keeps_the_previous_target_and_answers_no_error() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    ctx.runner = super::context::Runner::Fail("trap".into());
    let mut b = Client::new("b", &["t"]);
    assert_eq!(b.poll(&mut ctx), 0, "never UNKNOWN_SERVER_ERROR by default");
    assert_eq!(b.epoch, 2);
    assert!(b.owned.is_empty(), "the previous target gives b nothing");
    assert_eq!(a.poll(&mut ctx), 0);
    assert_eq!(a.owned, all_partitions(&["t"]), "a keeps its partitions");
}

#[test]
fn item10_a_classic_group_that_cannot_be_upgraded_is_not_taken_over_and_an_empty_one_is() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    // Not a consumer group (Kafka's upgrade needs the `consumer` protocol type).
    let connect = crate::coordinator::tests::builders::Join::new(G).protocol_type("connect");
    ctx.stable_group(connect, 1);
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(answer.error_code, code(ResponseError::GroupIdNotFound));
    assert_eq!(ctx.coordinator.consumer_group(G), None);

    // A classic group left Empty (only offsets) gives way.
    let other = "other";
    ctx.commit_with(other, 8, "", None, -1, &[("t", 0, 1, None)]);
    let answer = ctx.cgh_now(&Hb {
        group: other.into(),
        ..Hb::join("a", &["t"])
    });
    assert_eq!(answer.error_code, 0);
    assert!(ctx.coordinator.consumer_group(other).is_some());
}

#[test]
fn host_list_groups_names_consumer_groups_with_their_type_and_describe_groups_does_not() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let listed = ctx.coordinator.list_groups(&[], &["consumer".into()]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].group_type.as_str(), "consumer");
    assert_eq!(listed[0].group_state.as_str(), "Stable");
    assert!(
        ctx.coordinator
            .list_groups(&[], &["classic".into()])
            .is_empty()
    );
    // Kafka 4.4 up to DescribeGroups v5 (the host's highest): "Dead" and no error; from v6
    // GROUP_ID_NOT_FOUND (compared with Kafka in tests/tests/all/conformance_consumer_groups.rs).
    let described = ctx.describe(G);
    assert_eq!(described.error_code, 0);
    assert_eq!(described.group_state.as_str(), "Dead");
    assert!(described.members.is_empty());
}

/// KAFKA-20442: the leave that empties a group moves its assignment epoch to the group epoch
/// at once, also while the target for the members that left is still being computed (its
/// result is dropped when it comes). Found by comparing with Kafka: DescribeGroups right after
/// the last leave said assignment epoch 2 of group epoch 4
/// (tests/tests/all/conformance_consumer_groups.rs).
#[test]
fn host_the_leave_that_empties_a_group_settles_its_epochs_with_a_run_in_flight() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    ctx.runner = Runner::Hold;
    ctx.cgh(&Hb::join("b", &["t"]));
    let held = ctx.held.pop().expect("b's target is being computed");
    ctx.cgh_now(&Hb::beat("b", -1));
    ctx.cgh_now(&Hb::beat("a", -1));
    let epochs = |ctx: &super::context::TestContext| {
        let group = ctx
            .coordinator
            .consumer_group_ref(G)
            .expect("the empty group");
        (group.group_epoch, group.assignment_epoch)
    };
    assert_eq!(epochs(&ctx), (4, 4));
    ctx.release(&held);
    assert_eq!(epochs(&ctx), (4, 4), "the late result changed nothing");
}
