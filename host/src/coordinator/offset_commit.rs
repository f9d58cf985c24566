//! OffsetCommit (API 8): the group's own checks (generation and member, Kafka's
//! `validateOffsetCommit`), the metadata size limit, and "simple" groups created by a commit
//! with generation -1; for a consumer group (KIP-848), the member and its member epoch
//! (Kafka's `ConsumerGroup.validateOffsetCommit`). The coordinator decides; storing is an effect
//! ([`Effect::CommitOffsets`]): the driver writes the offsets where they live (this host's
//! store, or the upstream cluster in proxy mode) and answers only once they are written.

use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};

use super::api::{GroupResponse, Millis, ReplyTo, RequestContext};
use super::classic::GroupState;
use super::classic::group::{Group, Groups};
use super::consumer;
use super::context::Ctx;
use super::event::Effect;
use super::responses;
use super::saved::OffsetRecord;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    consumers: &consumer::group::Groups,
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: OffsetCommitRequest,
) {
    let all = |ctx: &mut Ctx<'_>, error: ResponseError| {
        ctx.respond(
            reply_to,
            GroupResponse::OffsetCommit(responses::offset_commit_all(&request, error.code())),
        );
    };
    let generation = request.generation_id_or_member_epoch;
    if let Some(group) = consumers.get(group_id) {
        if let Err(error) = validate_consumer(group, client.api_version, &request) {
            return all(ctx, error);
        }
        return commit(ctx, reply_to, group_id, &request);
    }
    if !groups.contains_key(group_id) {
        if generation >= 0 {
            let error = if client.api_version >= 9 {
                ResponseError::GroupIdNotFound
            } else {
                ResponseError::IllegalGeneration
            };
            return all(ctx, error);
        }
        // A commit without group management creates a "simple" group (no protocol, Empty).
        let id: Arc<str> = Arc::from(group_id);
        groups.insert(id.clone(), Group::new(id));
    }
    let group = groups.get(group_id).expect("present or just created");
    let member_id = request.member_id.as_str();
    let instance = request.group_instance_id.as_ref().map(|i| i.as_str());
    if let Err(error) = group.validate_offset_commit(member_id, instance, generation, false) {
        return all(ctx, error);
    }
    if let Some((member, m)) = group.members.get_key_value(member_id)
        && (group.is(GroupState::Stable) || group.is(GroupState::PreparingRebalance))
    {
        let (member, session) = (member.clone(), m.session_timeout_ms.max(0) as Millis);
        group.reschedule_heartbeat(&member, session, ctx);
    }
    commit(ctx, reply_to, group_id, &request);
}

/// Kafka's checks of a commit to a consumer group: a commit outside the group (epoch < 0) is
/// allowed while the group is empty; otherwise the member must be in the group, speak
/// OffsetCommit v9 or later, and commit at its current member epoch (STALE_MEMBER_EPOCH
/// makes librdkafka heartbeat at once and commit again).
fn validate_consumer(
    group: &consumer::group::Group,
    api_version: i16,
    request: &OffsetCommitRequest,
) -> Result<(), ResponseError> {
    let epoch = request.generation_id_or_member_epoch;
    if epoch < 0 && group.members.is_empty() {
        return Ok(());
    }
    let Some(member) = group.members.get(request.member_id.as_str()) else {
        return Err(ResponseError::UnknownMemberId);
    };
    if api_version < 9 {
        return Err(ResponseError::UnsupportedVersion);
    }
    if epoch != member.epoch() {
        return Err(ResponseError::StaleMemberEpoch);
    }
    Ok(())
}

/// Writes the commit's offsets (those within the metadata size limit) and answers once they
/// are written.
fn commit(ctx: &mut Ctx<'_>, reply_to: ReplyTo, group_id: &str, request: &OffsetCommitRequest) {
    let max = ctx.env.config.offset_metadata_max_bytes;
    let mut records = Vec::new();
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let too_large = p.committed_metadata.as_ref().is_some_and(|m| m.len() > max);
            let error = if too_large {
                ResponseError::OffsetMetadataTooLarge.code()
            } else {
                records.push(OffsetRecord {
                    topic: topic.name.to_string(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                });
                0
            };
            partitions.push(
                OffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error),
            );
        }
        topics.push(
            OffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_topic_id(topic.topic_id)
                .with_partitions(partitions),
        );
    }
    let response = OffsetCommitResponse::default().with_topics(topics);
    if records.is_empty() {
        return ctx.respond(reply_to, GroupResponse::OffsetCommit(response));
    }
    ctx.effect(Effect::CommitOffsets {
        to: reply_to,
        group_id: group_id.to_string(),
        offsets: records,
        response,
    });
}
