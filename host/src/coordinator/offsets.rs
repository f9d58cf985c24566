//! OffsetCommit (API 8) and OffsetFetch (API 9) for classic groups: Kafka's generation and
//! member checks (`ClassicGroup.validateOffsetCommit`), the metadata size limit, simple groups
//! created by a commit with generation -1, and reads of what was committed.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::OffsetCommitRequest;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};

use super::event::Effect;
use super::group::{Committed, Group};
use super::rebalance::reschedule_heartbeat;
use super::responses::{self, no_offset};
use super::shard::{Coordinator, Out};
use super::snapshot::OffsetRecord;
use super::state::GroupState;
use super::{
    GroupResponse, Millis, OffsetFetchQuery, OffsetFetchResult, PartitionOffset, ReplyTo,
    RequestContext,
};

pub(crate) fn commit(
    c: &mut Coordinator,
    now: Millis,
    reply_to: ReplyTo,
    group_id: &str,
    ctx: &RequestContext,
    request: OffsetCommitRequest,
    out: &mut Out,
) {
    let all = |out: &mut Out, error: ResponseError| {
        out.respond(
            reply_to,
            GroupResponse::OffsetCommit(responses::offset_commit_all(&request, error.code())),
        );
    };
    let generation = request.generation_id_or_member_epoch;
    if !c.groups.contains_key(group_id) {
        if generation >= 0 {
            let error = if ctx.api_version >= 9 {
                ResponseError::GroupIdNotFound
            } else {
                ResponseError::IllegalGeneration
            };
            return all(out, error);
        }
        // A commit without group management creates a "simple" group (no protocol, Empty).
        let id: Arc<str> = Arc::from(group_id);
        c.groups.insert(id.clone(), Group::new(id));
    }
    let group = c.groups.get_mut(group_id).expect("present or just created");
    let member_id = request.member_id.as_str();
    let instance = request.group_instance_id.as_ref().map(|i| i.as_str());
    if let Err(error) = validate(group, member_id, instance, generation) {
        return all(out, error);
    }
    if let Some((id, m)) = group.members.get_key_value(member_id)
        && (group.is(GroupState::Stable) || group.is(GroupState::PreparingRebalance))
    {
        let (id, session) = (id.clone(), m.session_timeout_ms.max(0) as Millis);
        reschedule_heartbeat(group, &id, now, session, out);
    }

    let max = c.env.config.offset_metadata_max_bytes;
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
    if !records.is_empty() {
        for r in &records {
            group
                .offsets
                .insert((r.topic.clone(), r.partition), r.committed());
        }
        out.effects.push(Effect::PersistOffsets {
            group_id: group_id.to_string(),
            offsets: records,
        });
    }
    out.respond(
        reply_to,
        GroupResponse::OffsetCommit(
            kafka_protocol::messages::OffsetCommitResponse::default().with_topics(topics),
        ),
    );
}

/// Kafka's `ClassicGroup.validateOffsetCommit` for non-transactional commits.
fn validate(
    group: &Group,
    member_id: &str,
    instance: Option<&str>,
    generation: i32,
) -> Result<(), ResponseError> {
    if group.is(GroupState::Dead) {
        return Err(ResponseError::CoordinatorNotAvailable);
    }
    if generation < 0 && group.is(GroupState::Empty) {
        // Admin tools and consumers without group management may commit to an empty group.
        return Ok(());
    }
    if generation >= 0 || !member_id.is_empty() || instance.is_some() {
        group.validate_member(member_id, instance)?;
        if generation != group.generation_id {
            return Err(ResponseError::IllegalGeneration);
        }
    } else if !group.is(GroupState::Empty) {
        return Err(ResponseError::UnknownMemberId);
    }
    if group.is(GroupState::CompletingRebalance) {
        return Err(ResponseError::RebalanceInProgress);
    }
    Ok(())
}

pub(crate) fn fetch(
    c: &mut Coordinator,
    reply_to: ReplyTo,
    group_id: &str,
    _ctx: &RequestContext,
    query: OffsetFetchQuery,
    out: &mut Out,
) {
    let empty = BTreeMap::new();
    let offsets = c.groups.get(group_id).map_or(&empty, |g| &g.offsets);
    let topics = match &query.topics {
        Some(requested) => requested
            .iter()
            .map(|(topic, partitions)| {
                let found = partitions
                    .iter()
                    .map(|p| match offsets.get(&(topic.clone(), *p)) {
                        Some(c) => committed(*p, c),
                        None => no_offset(*p, 0),
                    })
                    .collect();
                (topic.clone(), found)
            })
            .collect(),
        None => {
            let mut by_topic: BTreeMap<&str, Vec<PartitionOffset>> = BTreeMap::new();
            for ((topic, partition), c) in offsets {
                by_topic
                    .entry(topic.as_str())
                    .or_default()
                    .push(committed(*partition, c));
            }
            by_topic
                .into_iter()
                .map(|(t, ps)| (t.to_string(), ps))
                .collect()
        }
    };
    out.respond(
        reply_to,
        GroupResponse::OffsetFetch(OffsetFetchResult {
            error_code: 0,
            topics,
        }),
    );
}

fn committed(partition_index: i32, c: &Committed) -> PartitionOffset {
    PartitionOffset {
        partition_index,
        committed_offset: c.offset,
        committed_leader_epoch: c.leader_epoch,
        metadata: c.metadata.clone(),
        error_code: 0,
    }
}
