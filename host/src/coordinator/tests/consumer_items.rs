//! Consumer protocol (KIP-848): more checklist items of `reference/kip848.md` 3.13 (request
//! checks, regular expressions, group size, static fencing, metadata, group states, the
//! protocol switch) and the host's wait for a target computed off the shard.

use std::collections::BTreeMap;
use std::sync::Arc;

use assignor_sdk::Topic;
use kafka_protocol::ResponseError;

use super::consumer_context::*;
use super::context::Runner;
use crate::coordinator::consumer::ConsumerGroupState;
use crate::coordinator::tests::builders::G;
use crate::coordinator::view::Topics;
use crate::coordinator::{CoordinatorConfig, Event};

fn code(e: ResponseError) -> i16 {
    e.code()
}

#[test]
fn item02_an_empty_group_id_instance_id_or_rack_id_is_invalid() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let no_group = Hb {
        group: String::new(),
        ..Hb::join("a", &["t"])
    };
    assert_eq!(
        ctx.cgh_now(&no_group).error_code,
        code(ResponseError::InvalidRequest)
    );
    let empty_instance = Hb::join("a", &["t"]).instance("");
    assert_eq!(
        ctx.cgh_now(&empty_instance).error_code,
        code(ResponseError::InvalidRequest)
    );
}

#[test]
fn item05_a_join_needs_names_or_a_regex_and_empty_ones_are_accepted() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let neither = Hb {
        names: None,
        ..Hb::join("a", &[])
    };
    assert_eq!(
        ctx.cgh_now(&neither).error_code,
        code(ResponseError::InvalidRequest)
    );
    let empty = ctx.cgh_now(&Hb::join("a", &[]));
    assert_eq!(
        empty.error_code, 0,
        "subscribed to nothing, but in the group"
    );
    assert_eq!(assignment_of(&empty), Some(Owned::new()));
    let empty_regex = Hb {
        names: None,
        regex: Some(String::new()),
        ..Hb::join("b", &[])
    };
    assert_eq!(ctx.cgh_now(&empty_regex).error_code, 0);
}

#[test]
fn item08_a_regex_subscribes_to_the_topics_it_fully_matches_and_a_bad_one_is_refused() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let bad = Hb {
        regex: Some("(".into()),
        ..Hb::join("a", &[])
    };
    assert_eq!(
        ctx.cgh_now(&bad).error_code,
        code(ResponseError::InvalidRegularExpression)
    );
    // Full match: `t` matches topic t only, not a prefix of anything else.
    let regex = Hb {
        regex: Some("t|v.*".into()),
        ..Hb::join("a", &[])
    };
    let answer = ctx.cgh_now(&regex);
    assert_eq!(answer.error_code, 0);
    assert_eq!(assignment_of(&answer), Some(all_partitions(&["t"])));
}

#[test]
fn item11_a_new_member_of_a_full_group_is_refused_and_a_known_one_is_not() {
    let config = CoordinatorConfig {
        max_group_size: 1,
        ..CoordinatorConfig::default()
    };
    let mut ctx = consumer_context(config);
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let second = ctx.cgh_now(&Hb::join("b", &["t"]));
    assert_eq!(second.error_code, code(ResponseError::GroupMaxSizeReached));
    assert_eq!(ctx.cgh_now(&Hb::beat("a", 1)).error_code, 0);
}

#[test]
fn item18_a_static_heartbeat_with_an_unknown_instance_or_anothers_instance_is_refused() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]).instance("i"));
    let unknown = ctx.cgh_now(&Hb::beat("a", 1).instance("nope"));
    assert_eq!(unknown.error_code, code(ResponseError::UnknownMemberId));
    ctx.cgh_now(&Hb::join("b", &["t"]));
    let stolen = ctx.cgh_now(&Hb::beat("b", 2).instance("i"));
    assert_eq!(stolen.error_code, code(ResponseError::FencedInstanceId));
}

#[test]
fn item22_a_partition_count_change_of_a_subscribed_topic_moves_the_epoch() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    let topics: BTreeMap<String, Topic> = [("t", 8), ("u", 3)]
        .into_iter()
        .map(|(n, c)| {
            let topic = Topic {
                name: n.to_string(),
                partition_count: c,
                partition_racks: Vec::new(),
            };
            (n.to_string(), topic)
        })
        .collect();
    ctx.event(Event::TopicsChanged(Arc::new(Topics::with_derived_ids(
        topics,
    ))));
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, 2);
    a.poll(&mut ctx);
    assert_eq!(a.epoch, 2);
    assert_eq!(a.owned["t"].len(), 8);
}

#[test]
fn item40_the_group_state_follows_the_epochs_and_the_members() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let state = |ctx: &super::context::TestContext| ctx.coordinator.consumer_group(G).map(|g| g.0);
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    assert_eq!(state(&ctx), Some(ConsumerGroupState::Stable));
    ctx.runner = Runner::Hold;
    let b = ctx.cgh(&Hb::join("b", &["t"]));
    assert_eq!(state(&ctx), Some(ConsumerGroupState::Assigning));
    let run = ctx.held.pop().expect("a held run");
    ctx.release(&run);
    assert!(ctx.answered(b));
    assert_eq!(state(&ctx), Some(ConsumerGroupState::Reconciling));
    ctx.cgh_now(&Hb::beat("b", 1).owning(&Owned::new()));
    ctx.cgh_now(&Hb::beat("a", 1).owning(&a.owned));
    ctx.cgh_now(&Hb::beat("a", 1).owning(&owned(&[("t", &[0, 1, 2])])));
    let b_now = ctx.cgh_now(&Hb::beat("b", 2).owning(&Owned::new()));
    let mut b_client = Client::new("b", &["t"]);
    b_client.apply(&b_now);
    ctx.cgh_now(&b_client.next());
    assert_eq!(state(&ctx), Some(ConsumerGroupState::Stable));
    ctx.cgh_now(&Hb::beat("a", -1));
    ctx.cgh_now(&Hb::beat("b", -1));
    assert_eq!(state(&ctx), Some(ConsumerGroupState::Empty));
}

#[test]
fn item44_with_the_consumer_protocol_off_the_heartbeat_is_unsupported_version() {
    let config = CoordinatorConfig {
        consumer_protocol: false,
        ..CoordinatorConfig::default()
    };
    let mut ctx = consumer_context(config);
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(answer.error_code, code(ResponseError::UnsupportedVersion));
}

#[test]
fn host_a_join_waits_for_the_target_and_is_answered_with_it() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.runner = Runner::Hold;
    let reply = ctx.cgh(&Hb::join("a", &["t"]));
    assert!(!ctx.answered(reply), "parked until the module answers");
    let run = ctx.held.pop().expect("a held run");
    ctx.release(&run);
    let answer = ctx.cgh_response(reply);
    assert_eq!(answer.member_epoch, 1);
    assert_eq!(assignment_of(answer), Some(all_partitions(&["t"])));
}

#[test]
fn host_a_heartbeat_that_waited_too_long_is_answered_with_what_the_member_may_own() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    ctx.runner = Runner::Hold;
    let reply = ctx.cgh(&Hb::join("b", &["t"]));
    assert!(!ctx.answered(reply));
    ctx.advance(2_000); // consumer_assignment_wait_ms
    let answer = ctx.cgh_response(reply);
    assert_eq!(answer.error_code, 0);
    assert_eq!(answer.member_epoch, 1, "the epoch of the target in place");
    assert_eq!(assignment_of(answer), Some(Owned::new()));
}

#[test]
fn host_a_new_group_whose_module_fails_takes_the_fallbacks_target() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.runner = Runner::Script(Box::new(|run| {
        if run.strategy == "uniform" {
            Err("trap".into())
        } else {
            super::context::native(&run.strategy, &run.request)
        }
    }));
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(answer.error_code, 0);
    assert_eq!(assignment_of(&answer), Some(all_partitions(&["t"])));
    let strategies: Vec<_> = ctx.runs.iter().map(|r| r.strategy.as_str()).collect();
    assert_eq!(strategies, ["uniform", "range"]);
}

#[test]
fn host_strict_answers_a_failed_module_with_unknown_server_error_and_installs_no_target() {
    let config = CoordinatorConfig {
        strict: true,
        ..CoordinatorConfig::default()
    };
    let mut ctx = consumer_context(config);
    ctx.runner = Runner::Fail("trap".into());
    let answer = ctx.cgh_now(&Hb::join("a", &["t"]));
    assert_eq!(answer.error_code, code(ResponseError::UnknownServerError));
    let group = ctx.coordinator.consumer_group_ref(G).expect("group");
    assert_eq!(group.assignment_epoch, 0);
}

#[test]
fn host_delete_groups_deletes_an_empty_consumer_group_and_refuses_one_with_members() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let delete = |ctx: &mut super::context::TestContext| {
        let reply = ctx.send(
            G,
            2,
            "admin",
            crate::coordinator::GroupRequest::DeleteGroup(crate::coordinator::DeleteGroup),
        );
        match ctx.responses.get(&reply) {
            Some(crate::coordinator::GroupResponse::DeleteGroup(code)) => *code,
            other => panic!("no DeleteGroups answer: {other:?}"),
        }
    };
    assert_eq!(delete(&mut ctx), code(ResponseError::NonEmptyGroup));
    ctx.cgh_now(&Hb::beat("a", -1));
    assert_eq!(delete(&mut ctx), 0);
    assert_eq!(ctx.coordinator.consumer_group(G), None);
}

#[test]
fn item43_offset_fetch_v9_checks_the_member_and_its_epoch_and_lets_admins_read() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let epoch = ctx.cgh_now(&Hb::join("a", &["t"])).member_epoch;
    ctx.commit_with(G, 9, "a", None, epoch, &[("t", 0, 5, None)]);
    let mut fetch = |member: Option<&str>, member_epoch: i32| {
        let query = crate::coordinator::OffsetFetchQuery {
            topics: Some(vec![("t".to_string(), vec![0])]),
            require_stable: false,
            member_id: member.map(str::to_string),
            member_epoch,
        };
        let reply = ctx.send(
            G,
            9,
            "rdkafka",
            crate::coordinator::GroupRequest::OffsetFetch(query),
        );
        match ctx.responses.get(&reply) {
            Some(crate::coordinator::GroupResponse::OffsetFetch(r)) => r.clone(),
            other => panic!("no OffsetFetch answer: {other:?}"),
        }
    };
    let own = fetch(Some("a"), epoch);
    assert_eq!(own.error_code, 0);
    assert_eq!(own.topics[0].1[0].committed_offset, 5);
    assert_eq!(
        fetch(None, -1).error_code,
        0,
        "an admin reads without a member"
    );
    assert_eq!(
        fetch(Some("a"), epoch + 1).error_code,
        code(ResponseError::StaleMemberEpoch)
    );
    assert_eq!(
        fetch(Some("b"), epoch).error_code,
        code(ResponseError::UnknownMemberId)
    );
}

#[test]
fn host_an_operator_rebalance_moves_the_epoch_and_computes_a_new_target() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let runs = ctx.runs.len();
    let effects = ctx
        .coordinator
        .trigger_rebalance(ctx.now, G, Some("new version".into()))
        .expect("a group with members");
    ctx.apply(effects);
    assert_eq!(ctx.runs.len(), runs + 1);
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, 2);
    assert_eq!(ctx.cgh_now(&Hb::beat("a", 1)).member_epoch, 2);
}

#[test]
fn host_shutdown_answers_a_waiting_heartbeat_coordinator_not_available() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    ctx.runner = Runner::Hold;
    let reply = ctx.cgh(&Hb::join("a", &["t"]));
    assert!(!ctx.answered(reply));
    let effects = ctx.coordinator.shutdown();
    ctx.apply(effects);
    assert_eq!(
        ctx.cgh_response(reply).error_code,
        code(ResponseError::CoordinatorNotAvailable)
    );
}
