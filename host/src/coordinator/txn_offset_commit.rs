//! TxnOffsetCommit (API 28, proxy mode only): a transaction's offsets, checked against the group
//! as Kafka's coordinator checks a transactional commit (`OffsetMetadataManager`
//! `.validateTransactionalOffsetCommit`, `ClassicGroup.validateOffsetCommit` and
//! `ConsumerGroup.validateOffsetCommit` with `isTransactional = true`), then written where the
//! transaction lives: the upstream cluster, inside the client's transaction
//! ([`Effect::CommitTxnOffsets`]). The host keeps no pending transactional offsets of its own;
//! the cluster's coordinator does (OffsetFetch with `require_stable` reads them there).
//!
//! What differs from OffsetCommit, as in Kafka:
//! - an unknown group with generation >= 0 is ILLEGAL_GENERATION at every version served (v2-5;
//!   GROUP_ID_NOT_FOUND comes with v6), one with generation < 0 becomes a "simple" group;
//! - a commit without member id, generation (-1) and instance id is accepted whatever the
//!   group's state or members (a producer outside group management, or TxnOffsetCommit below
//!   v3, which carries none): the transaction coordinator, not the group, fences such a
//!   producer;
//! - no REBALANCE_IN_PROGRESS, and the member's session is not extended;
//! - in a consumer group (KIP-848) a stale member epoch is ILLEGAL_GENERATION (v5 and below
//!   have no STALE_MEMBER_EPOCH), and no OffsetCommit-version rule applies.
//!
//! One difference from Kafka 4.4: its consumer groups take a commit at an epoch older than the
//! member's for partitions assigned since that epoch (per-partition assignment epochs); the
//! host, as for OffsetCommit, wants the member's current epoch.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestPartition;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use super::api::{GroupResponse, ReplyTo, RequestContext};
use super::classic::group::{Group, Groups};
use super::consumer;
use super::context::Ctx;
use super::event::Effect;
use super::responses;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    consumers: &consumer::group::Groups,
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: TxnOffsetCommitRequest,
) {
    let checked = if group_id.is_empty() {
        Err(ResponseError::InvalidGroupId)
    } else if let Some(group) = consumers.get(group_id) {
        validate_consumer(group, &request)
    } else {
        if !groups.contains_key(group_id) && request.generation_id < 0 {
            // A commit without group management creates a "simple" group (no protocol, Empty).
            let id: std::sync::Arc<str> = std::sync::Arc::from(group_id);
            groups.insert(id.clone(), Group::new(id));
        }
        match groups.get(group_id) {
            Some(group) => validate_classic(group, &request),
            None => Err(ResponseError::IllegalGeneration),
        }
    };
    if let Err(error) = checked {
        let answer = responses::txn_offset_commit_all(&request, error.code());
        return ctx.respond(reply_to, GroupResponse::TxnOffsetCommit(answer));
    }
    commit(ctx, reply_to, group_id, client.api_version, request);
}

/// Kafka's `ClassicGroup.validateOffsetCommit(..., isTransactional = true)`.
fn validate_classic(group: &Group, request: &TxnOffsetCommitRequest) -> Result<(), ResponseError> {
    let instance = request.group_instance_id.as_ref().map(|i| i.as_str());
    group.validate_offset_commit(
        request.member_id.as_str(),
        instance,
        request.generation_id,
        true,
    )
}

/// Kafka's `ConsumerGroup.validateOffsetCommit(..., isTransactional = true)`, with
/// `validateTransactionalOffsetCommit`'s STALE_MEMBER_EPOCH -> ILLEGAL_GENERATION.
fn validate_consumer(
    group: &consumer::group::Group,
    request: &TxnOffsetCommitRequest,
) -> Result<(), ResponseError> {
    let epoch = request.generation_id;
    if epoch < 0 && group.members.is_empty() {
        return Ok(());
    }
    let anonymous =
        epoch == -1 && request.member_id.is_empty() && request.group_instance_id.is_none();
    if anonymous {
        return Ok(());
    }
    let member = group
        .members
        .get(request.member_id.as_str())
        .ok_or(ResponseError::UnknownMemberId)?;
    if epoch != member.epoch() {
        return Err(ResponseError::IllegalGeneration);
    }
    Ok(())
}

/// Emits the write of the partitions within the metadata size limit; the others are refused
/// here with OFFSET_METADATA_TOO_LARGE, as Kafka's `commitTransactionalOffset` does.
fn commit(
    ctx: &mut Ctx<'_>,
    reply_to: ReplyTo,
    group_id: &str,
    api_version: i16,
    request: TxnOffsetCommitRequest,
) {
    let max = ctx.env.config.offset_metadata_max_bytes;
    let mut write = request.clone();
    let mut topics = Vec::with_capacity(request.topics.len());
    let too_large = |p: &TxnOffsetCommitRequestPartition| {
        p.committed_metadata.as_ref().is_some_and(|m| m.len() > max)
    };
    for (topic, written) in request.topics.iter().zip(&mut write.topics) {
        written.partitions.retain(|p| !too_large(p));
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let error = if too_large(p) {
                    ResponseError::OffsetMetadataTooLarge.code()
                } else {
                    0
                };
                TxnOffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error)
            })
            .collect();
        topics.push(
            TxnOffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    write.topics.retain(|t| !t.partitions.is_empty());
    let response = TxnOffsetCommitResponse::default().with_topics(topics);
    if write.topics.is_empty() {
        return ctx.respond(reply_to, GroupResponse::TxnOffsetCommit(response));
    }
    ctx.effect(Effect::CommitTxnOffsets {
        to: reply_to,
        group_id: group_id.to_string(),
        api_version,
        request: write,
        response,
    });
}
