//! Checklist items 57-68: offsets, describe/list, and the embedded consumer protocol.

use bytes::{BufMut, BytesMut};
use kafka_protocol::ResponseError;

use super::context::*;
use super::items_join::relay_stable;
use crate::coordinator::{
    GroupRequest, GroupResponse, GroupState, OffsetFetchQuery, error_response,
};
use assignor_wire::consumer_protocol::{SubscriptionError, decode_subscription};

fn fetch(
    ctx: &mut TestContext,
    group: &str,
    version: i16,
    topics: Option<Vec<(String, Vec<i32>)>>,
) -> crate::coordinator::OffsetFetchResult {
    let query = OffsetFetchQuery {
        topics,
        require_stable: false,
        member_id: None,
        member_epoch: -1,
    };
    let reply = ctx.send(group, version, "client", GroupRequest::OffsetFetch(query));
    match ctx.responses.get(&reply) {
        Some(GroupResponse::OffsetFetch(r)) => r.clone(),
        other => panic!("expected an OffsetFetch answer, got {other:?}"),
    }
}

#[test]
fn item_57_commit_with_generation_minus_one_creates_a_simple_empty_group() {
    let mut ctx = TestContext::new();
    let r = ctx.commit(
        "simple",
        8,
        "",
        -1,
        &[("t", 0, 42, None), ("t", 1, 7, Some("m"))],
    );
    assert!(r.topics[0].partitions.iter().all(|p| p.error_code == 0));
    ctx.assert_state("simple", GroupState::Empty);
    let f = fetch(&mut ctx, "simple", 8, None);
    assert_eq!(f.topics.len(), 1);
    let offsets: Vec<i64> = f.topics[0].1.iter().map(|p| p.committed_offset).collect();
    assert_eq!(offsets, vec![42, 7]);
    assert!(ctx.persisted.iter().any(|e| matches!(e, crate::coordinator::Effect::CommitOffsets { offsets, .. } if offsets.len() == 2)));
}

#[test]
fn item_58_commit_with_a_generation_to_a_missing_group() {
    let mut ctx = TestContext::new();
    let r = ctx.commit("nope", 9, "m", 5, &[("t", 0, 1, None), ("t", 1, 1, None)]);
    assert!(
        r.topics[0]
            .partitions
            .iter()
            .all(|p| p.error_code == ResponseError::GroupIdNotFound.code())
    );
    let r = ctx.commit("nope", 8, "m", 5, &[("t", 0, 1, None)]);
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        ResponseError::IllegalGeneration.code()
    );
    assert_eq!(ctx.state("nope"), GroupState::Dead, "not created");
}

#[test]
fn item_59_commit_during_completing_rebalance_is_rebalance_in_progress() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hold;
    let (_, reply) = ctx.join_dynamic(Join::new(G));
    ctx.advance(3_000);
    let r = ctx.join_response(reply).clone();
    let c = ctx.commit(
        G,
        8,
        &r.member_id,
        r.generation_id,
        &[("t", 0, 1, None), ("t", 1, 1, None)],
    );
    assert!(
        c.topics[0]
            .partitions
            .iter()
            .all(|p| p.error_code == ResponseError::RebalanceInProgress.code())
    );
}

#[test]
fn item_60_metadata_over_the_limit_fails_only_that_partition() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 1);
    let big = "x".repeat(4097);
    let ok = "x".repeat(4096);
    let r = ctx.commit(
        G,
        8,
        &ids[0],
        generation,
        &[("t", 0, 1, Some(&big)), ("t", 1, 2, Some(&ok))],
    );
    let codes: Vec<i16> = r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![ResponseError::OffsetMetadataTooLarge.code(), 0]);
    let f = fetch(&mut ctx, G, 8, Some(vec![("t".into(), vec![0, 1])]));
    assert_eq!(f.topics[0].1[0].committed_offset, -1);
    assert_eq!(f.topics[0].1[1].committed_offset, 2);
}

#[test]
fn item_61_fetch_without_committed_offsets_gives_minus_one() {
    let mut ctx = TestContext::new();
    let f = fetch(&mut ctx, "nope", 8, Some(vec![("t".into(), vec![0, 3])]));
    assert_eq!(f.error_code, 0);
    for p in &f.topics[0].1 {
        assert_eq!(
            (p.committed_offset, p.committed_leader_epoch, p.error_code),
            (-1, -1, 0)
        );
        assert_eq!(p.metadata.as_deref(), Some(""));
    }
    let all = fetch(&mut ctx, "nope", 8, None);
    assert!(all.topics.is_empty());
}

#[test]
fn item_62_group_level_fetch_error_is_copied_into_partitions_for_v1_and_alone_after() {
    let query = OffsetFetchQuery {
        topics: Some(vec![("t".into(), vec![0, 1])]),
        require_stable: false,
        member_id: None,
        member_epoch: -1,
    };
    let request = GroupRequest::OffsetFetch(query);
    let code = ResponseError::CoordinatorNotAvailable;
    let GroupResponse::OffsetFetch(v1) = error_response(1, G, &request, code) else {
        panic!()
    };
    assert!(v1.topics[0].1.iter().all(|p| p.error_code == code.code()));
    let GroupResponse::OffsetFetch(v2) = error_response(2, G, &request, code) else {
        panic!()
    };
    assert_eq!(v2.error_code, code.code());
    // Kafka 4.4's `OffsetFetchResponse.groupError`: the error alone from v2, no partitions
    // (compared with Kafka in tests/tests/all/conformance_consumer_groups.rs).
    assert!(v2.topics.is_empty(), "{:?}", v2.topics);
}

#[test]
fn item_63_describe_an_unknown_group_is_dead_without_error() {
    let mut ctx = TestContext::new();
    let d = ctx.describe("nope");
    assert_eq!(d.error_code, 0);
    assert_eq!(d.group_state.as_str(), "Dead");
    assert!(d.members.is_empty());
}

#[test]
fn item_64_describe_stable_shows_protocol_and_metadata_completing_shows_none() {
    let mut ctx = TestContext::new();
    let (ids, _) = ctx.stable_group(Join::new(G), 2);
    let d = ctx.describe(G);
    assert_eq!(d.group_state.as_str(), "Stable");
    assert_eq!(d.protocol_data.as_str(), "range");
    assert_eq!(d.members.len(), 2);
    assert!(d.members.iter().all(|m| m.member_metadata == sub(&["t"])));
    assert!(d.members.iter().all(|m| !m.member_assignment.is_empty()));

    ctx.runner = Runner::Hold;
    ctx.join(
        &Join::new(G)
            .member(&ids[0])
            .protocols(&[("range", sub(&["t", "u"]))]),
    );
    ctx.join(&Join::new(G).member(&ids[1]));
    ctx.assert_state(G, GroupState::CompletingRebalance);
    let d = ctx.describe(G);
    assert_eq!(d.protocol_data.as_str(), "");
    assert!(d.members.iter().all(|m| m.member_metadata.is_empty()));
}

#[test]
fn item_65_list_groups_filters_states_case_insensitively_and_types() {
    let mut ctx = TestContext::new();
    ctx.stable_group(Join::new(G), 1);
    ctx.commit("simple", 8, "", -1, &[("t", 0, 1, None)]);
    let stable = ctx.coordinator.list_groups(&["stable".into()], &[]);
    assert_eq!(stable.len(), 1);
    assert_eq!(stable[0].group_id.0.as_str(), G);
    assert_eq!(stable[0].group_type.as_str(), "classic");
    assert_eq!(
        ctx.coordinator.list_groups(&[], &["classic".into()]).len(),
        2
    );
    assert!(
        ctx.coordinator
            .list_groups(&[], &["consumer".into()])
            .is_empty()
    );
    assert_eq!(ctx.coordinator.list_groups(&[], &[]).len(), 2);
}

#[test]
fn item_66_a_higher_subscription_version_with_trailing_bytes_reads_as_v3() {
    let mut bytes = BytesMut::from(&subscription(3, &["b", "a"], &[("a", &[1])], 4)[..]);
    bytes[0..2].copy_from_slice(&7i16.to_be_bytes());
    bytes.put_slice(b"future fields");
    let s = decode_subscription(&bytes).expect("forward compatible");
    assert_eq!(s.version, 3);
    assert_eq!(s.topics, vec!["a", "b"]);
    assert_eq!(s.owned_generation, 4);
    assert_eq!(s.owned_partitions[0].partitions, vec![1]);
}

#[test]
fn item_67_subscription_v1_has_owned_partitions_and_defaults() {
    let s = decode_subscription(&subscription(1, &["t"], &[("t", &[0, 2])], 9)).unwrap();
    assert_eq!(s.version, 1);
    assert_eq!(s.owned_partitions[0].partitions, vec![0, 2]);
    assert_eq!(s.owned_generation, -1, "GenerationId is v2+");
    assert_eq!(s.rack_id, None);
}

#[test]
fn item_68_host_a_consumer_member_with_invalid_metadata_subscribes_to_nothing() {
    let mut ctx = TestContext::new();
    let garbage = bytes::Bytes::from_static(&[0, 0, 0x7f, 0xff, 0xff, 0xff]); // v0, 2^31 topics
    assert!(matches!(
        decode_subscription(&garbage),
        Err(SubscriptionError::Malformed { .. })
    ));
    let (_, a) = ctx.join_dynamic(Join::new(G));
    let (_, b) = ctx.join_dynamic(Join::new(G).protocols(&[("range", garbage)]));
    ctx.settle(&[a, b]);
    let (ra, rb) = (ctx.join_response(a).clone(), ctx.join_response(b).clone());
    let sa = ctx.sync(&Sync::new(G, &ra.member_id, ra.generation_id));
    let sb = ctx.sync(&Sync::new(G, &rb.member_id, rb.generation_id));
    ctx.assert_state(G, GroupState::Stable);
    assert_eq!(assigned(&ctx.sync_response(sa).assignment)["t"].len(), 6);
    let bad = ctx.sync_response(sb).assignment.clone();
    assert!(!bad.is_empty());
    assert!(assigned(&bad).is_empty());
}

#[test]
fn item_68_relay_invalid_metadata_is_relayed_untouched() {
    let mut ctx = TestContext::new();
    let (ids, _) = relay_stable(&mut ctx, 1);
    let garbage = bytes::Bytes::from_static(b"\xff\xffnot a subscription");
    let reply = ctx.join(
        &Join::new(G)
            .member(&ids[0])
            .protocols(&[("client-side", garbage.clone())]),
    );
    ctx.advance(20_000);
    let r = ctx.join_response(reply);
    assert_eq!(r.members[0].metadata, garbage);
}
