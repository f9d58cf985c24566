//! TxnOffsetCommit's checks, each against Kafka's rule for a transactional commit
//! (`OffsetMetadataManager.validateTransactionalOffsetCommit`, `ClassicGroup` and
//! `ConsumerGroup.validateOffsetCommit` with `isTransactional = true`), beside what OffsetCommit
//! answers in the same case where the two differ. A commit that passes becomes the
//! [`Effect::CommitTxnOffsets`] the driver sends upstream; nothing is answered before it.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, TopicName, TxnOffsetCommitRequest};

use super::consumer_context::{Hb, consumer_context};
use super::context::*;
use super::items_static::static_group;
use crate::coordinator::{CoordinatorConfig, Effect, GroupRequest, GroupResponse, GroupState};

fn code(e: ResponseError) -> i16 {
    e.code()
}

/// A TxnOffsetCommit by `member` (`instance`) at `generation`, of `(topic, partition, offset,
/// metadata)`, from transactional id "tx" (producer 7, epoch 0).
fn txn(
    group: &str,
    member: &str,
    instance: Option<&str>,
    generation: i32,
    offsets: &[(&str, i32, i64, Option<&str>)],
) -> TxnOffsetCommitRequest {
    let mut topics: Vec<TxnOffsetCommitRequestTopic> = Vec::new();
    for (t, p, o, m) in offsets {
        let partition = TxnOffsetCommitRequestPartition::default()
            .with_partition_index(*p)
            .with_committed_offset(*o)
            .with_committed_metadata(m.map(s));
        match topics.last_mut() {
            Some(last) if last.name.as_str() == *t => last.partitions.push(partition),
            _ => topics.push(
                TxnOffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    TxnOffsetCommitRequest::default()
        .with_transactional_id(s("tx").into())
        .with_group_id(GroupId(s(group)))
        .with_producer_id(7.into())
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_group_instance_id(instance.map(s))
        .with_topics(topics)
}

/// What the coordinator did with one TxnOffsetCommit.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Answered at once: each partition's code.
    Answered(Vec<i16>),
    /// Sent upstream: the partitions written (topic, partition, offset), the version it goes
    /// up at, and the codes of the answer's template.
    Sent {
        written: Vec<(String, i32, i64)>,
        version: i16,
        codes: Vec<i16>,
    },
}

fn send(ctx: &mut TestContext, version: i16, request: TxnOffsetCommitRequest) -> Outcome {
    let group = request.group_id.to_string();
    let before = ctx.persisted.len();
    let reply = ctx.send(
        &group,
        version,
        "producer",
        GroupRequest::TxnOffsetCommit(request),
    );
    let codes = |r: &kafka_protocol::messages::TxnOffsetCommitResponse| -> Vec<i16> {
        (r.topics.iter())
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    };
    if let Some(answer) = ctx.responses.get(&reply) {
        let GroupResponse::TxnOffsetCommit(r) = answer else {
            panic!("expected a TxnOffsetCommit answer, got {answer:?}")
        };
        assert_eq!(ctx.persisted.len(), before, "answered and sent");
        return Outcome::Answered(codes(r));
    }
    let sent: Vec<&Effect> = ctx.persisted[before..].iter().collect();
    let [
        Effect::CommitTxnOffsets {
            to,
            group_id,
            api_version,
            request,
            response,
        },
    ] = sent.as_slice()
    else {
        panic!("neither answered nor sent upstream: {sent:?}")
    };
    assert_eq!((*to, group_id.as_str()), (reply, group.as_str()));
    let written = (request.topics.iter())
        .flat_map(|t| {
            (t.partitions.iter())
                .map(|p| (t.name.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    Outcome::Sent {
        written,
        version: *api_version,
        codes: codes(response),
    }
}

fn sent(offsets: &[(&str, i32, i64)], version: i16) -> Outcome {
    Outcome::Sent {
        written: offsets
            .iter()
            .map(|(t, p, o)| (t.to_string(), *p, *o))
            .collect(),
        version,
        codes: vec![0; offsets.len()],
    }
}

#[test]
fn txn_an_unknown_group_with_generation_minus_one_becomes_a_simple_group_and_goes_up() {
    let mut ctx = TestContext::new();
    let request = txn(
        "simple",
        "",
        None,
        -1,
        &[("t", 0, 42, None), ("t", 1, 7, None)],
    );
    assert_eq!(
        send(&mut ctx, 5, request),
        sent(&[("t", 0, 42), ("t", 1, 7)], 5)
    );
    ctx.assert_state("simple", GroupState::Empty);
}

#[test]
fn txn_an_unknown_group_with_a_generation_is_illegal_generation_at_every_version_served() {
    let mut ctx = TestContext::new();
    // OffsetCommit v9 says GROUP_ID_NOT_FOUND here; TxnOffsetCommit only from v6, which the
    // host does not serve.
    for version in 2..=5 {
        let request = txn("nope", "m", None, 3, &[("t", 0, 1, None)]);
        assert_eq!(
            send(&mut ctx, version, request),
            Outcome::Answered(vec![code(ResponseError::IllegalGeneration)]),
            "v{version}"
        );
    }
    assert_eq!(ctx.state("nope"), GroupState::Dead, "not created");
}

#[test]
fn txn_a_member_at_the_current_generation_goes_up_at_the_clients_version() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let request = txn(G, &ids[1], None, generation, &[("t", 2, 10, Some("m"))]);
    assert_eq!(send(&mut ctx, 4, request), sent(&[("t", 2, 10)], 4));
}

#[test]
fn txn_unknown_member_and_old_generation_are_refused_as_in_kafka() {
    let mut ctx = TestContext::new();
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    let stranger = txn(G, "stranger", None, generation, &[("t", 0, 1, None)]);
    assert_eq!(
        send(&mut ctx, 5, stranger),
        Outcome::Answered(vec![code(ResponseError::UnknownMemberId)])
    );
    let old = txn(G, &ids[0], None, generation - 1, &[("t", 0, 1, None)]);
    assert_eq!(
        send(&mut ctx, 5, old),
        Outcome::Answered(vec![code(ResponseError::IllegalGeneration)])
    );
}

#[test]
fn txn_a_static_members_old_member_id_is_fenced() {
    let mut ctx = TestContext::new();
    let (ids, generation) = static_group(&mut ctx, Join::new(G), 2);
    // The instance joins again under no member id (a restart): its old id is replaced.
    ctx.join(&Join::new(G).instance("i1"));
    let replaced = txn(G, &ids[1], Some("i1"), generation, &[("t", 0, 1, None)]);
    assert_eq!(
        send(&mut ctx, 5, replaced),
        Outcome::Answered(vec![code(ResponseError::FencedInstanceId)])
    );
}

#[test]
fn txn_without_member_or_generation_is_accepted_by_a_group_with_members() {
    // OffsetCommit answers UNKNOWN_MEMBER_ID here (commits from outside are for an Empty group
    // only); a transactional one is the transaction coordinator's to fence.
    let mut ctx = TestContext::new();
    ctx.stable_group(Join::new(G), 2);
    let plain = ctx.commit(G, 8, "", -1, &[("t", 0, 1, None)]);
    assert_eq!(
        plain.topics[0].partitions[0].error_code,
        code(ResponseError::UnknownMemberId)
    );
    let anonymous = txn(G, "", None, -1, &[("t", 0, 1, None)]);
    assert_eq!(send(&mut ctx, 5, anonymous), sent(&[("t", 0, 1)], 5));
}

#[test]
fn txn_while_the_group_awaits_its_assignment_is_not_rebalance_in_progress() {
    let mut ctx = TestContext::new();
    ctx.runner = Runner::Hold;
    let (_, reply) = ctx.join_dynamic(Join::new(G));
    ctx.advance(3_000);
    let joined = ctx.join_response(reply).clone();
    ctx.assert_state(G, GroupState::CompletingRebalance);
    let plain = ctx.commit(
        G,
        8,
        &joined.member_id,
        joined.generation_id,
        &[("t", 0, 1, None)],
    );
    assert_eq!(
        plain.topics[0].partitions[0].error_code,
        code(ResponseError::RebalanceInProgress)
    );
    let request = txn(
        G,
        &joined.member_id,
        None,
        joined.generation_id,
        &[("t", 0, 1, None)],
    );
    assert_eq!(send(&mut ctx, 5, request), sent(&[("t", 0, 1)], 5));
}

#[test]
fn txn_metadata_over_the_limit_fails_only_that_partition_and_the_rest_goes_up() {
    let mut ctx = TestContext::new();
    let big = "x".repeat(4097);
    let request = txn(
        "simple",
        "",
        None,
        -1,
        &[
            ("t", 0, 5, Some(&big)),
            ("t", 1, 6, Some("ok")),
            ("u", 0, 7, None),
        ],
    );
    let too_large = code(ResponseError::OffsetMetadataTooLarge);
    assert_eq!(
        send(&mut ctx, 5, request),
        Outcome::Sent {
            written: vec![("t".into(), 1, 6), ("u".into(), 0, 7)],
            version: 5,
            codes: vec![too_large, 0, 0],
        }
    );
    // All of them too large: answered here, nothing goes up.
    let request = txn("simple", "", None, -1, &[("t", 0, 5, Some(&big))]);
    assert_eq!(
        send(&mut ctx, 5, request),
        Outcome::Answered(vec![too_large])
    );
}

#[test]
fn txn_an_empty_group_id_is_invalid_group_id() {
    let mut ctx = TestContext::new();
    let request = txn("", "", None, -1, &[("t", 0, 1, None)]);
    assert_eq!(
        send(&mut ctx, 5, request),
        Outcome::Answered(vec![code(ResponseError::InvalidGroupId)])
    );
}

#[test]
fn txn_in_a_consumer_group_a_stale_member_epoch_is_illegal_generation() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let epoch = ctx.cgh_now(&Hb::join("a", &["t"])).member_epoch;
    // OffsetCommit v9 answers STALE_MEMBER_EPOCH; TxnOffsetCommit below v6 has no such error,
    // and Kafka answers ILLEGAL_GENERATION.
    let plain = ctx.commit_with(G, 9, "a", None, epoch + 1, &[("t", 0, 1, None)]);
    assert_eq!(
        plain.topics[0].partitions[0].error_code,
        code(ResponseError::StaleMemberEpoch)
    );
    let stale = txn(G, "a", None, epoch + 1, &[("t", 0, 1, None)]);
    assert_eq!(
        send(&mut ctx, 5, stale),
        Outcome::Answered(vec![code(ResponseError::IllegalGeneration)])
    );
    let stranger = txn(G, "b", None, epoch, &[("t", 0, 1, None)]);
    assert_eq!(
        send(&mut ctx, 5, stranger),
        Outcome::Answered(vec![code(ResponseError::UnknownMemberId)])
    );
    // The member at its epoch, at a version OffsetCommit would refuse it (below v9).
    let current = txn(G, "a", None, epoch, &[("t", 0, 4, None)]);
    assert_eq!(send(&mut ctx, 3, current), sent(&[("t", 0, 4)], 3));
    // Nobody (-1, "", no instance): accepted though the group has a member.
    let anonymous = txn(G, "", None, -1, &[("t", 0, 5, None)]);
    assert_eq!(send(&mut ctx, 5, anonymous), sent(&[("t", 0, 5)], 5));
}
