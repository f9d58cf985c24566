//! OffsetDelete (API 47): Kafka's `validateDeleteOffsets` and `deleteOffsets`. The group must
//! exist (GROUP_ID_NOT_FOUND); a non-empty group of a protocol type other than `consumer` is
//! refused whole (NON_EMPTY_GROUP), because the host cannot tell which topics it reads; a
//! non-empty consumer group keeps the offsets of topics it subscribes to
//! (GROUP_SUBSCRIBED_TO_TOPIC per partition). The rest are deleted by an effect
//! ([`Effect::DeleteOffsets`]) where the offsets live, and answered after.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::api::{GroupResponse, ReplyTo};
use super::classic::GroupState;
use super::classic::group::Groups;
use super::context::Ctx;
use super::event::Effect;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &Groups,
    reply_to: ReplyTo,
    group_id: &str,
    request: OffsetDeleteRequest,
) {
    let refuse = |ctx: &mut Ctx<'_>, error: ResponseError| {
        ctx.respond(
            reply_to,
            GroupResponse::OffsetDelete(
                OffsetDeleteResponse::default().with_error_code(error.code()),
            ),
        );
    };
    let Some(group) = groups.get(group_id).filter(|g| !g.is(GroupState::Dead)) else {
        return refuse(ctx, ResponseError::GroupIdNotFound);
    };
    let empty = group.is(GroupState::Empty);
    let consumer =
        group.protocol_type.as_deref() == Some(assignor_wire::consumer_protocol::PROTOCOL_TYPE);
    if !empty && !consumer {
        return refuse(ctx, ResponseError::NonEmptyGroup);
    }
    let subscribed = if empty {
        Default::default()
    } else {
        group.subscribed_topics_of_members()
    };
    let mut partitions = Vec::new();
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let kept = subscribed.contains(topic.name.as_str());
            let answers = topic
                .partitions
                .iter()
                .map(|p| {
                    let error = if kept {
                        ResponseError::GroupSubscribedToTopic.code()
                    } else {
                        partitions.push((topic.name.to_string(), p.partition_index));
                        0
                    };
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error)
                })
                .collect();
            OffsetDeleteResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(answers)
        })
        .collect();
    let response = OffsetDeleteResponse::default().with_topics(topics);
    if partitions.is_empty() {
        return ctx.respond(reply_to, GroupResponse::OffsetDelete(response));
    }
    ctx.effect(Effect::DeleteOffsets {
        to: reply_to,
        group_id: group_id.to_string(),
        partitions,
        response,
    });
}
