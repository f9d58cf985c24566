//! ConsumerGroupDescribe (API 69) for one consumer group: Kafka's `asDescribedGroup`, with
//! each member's current and target assignment by topic id and name. `AssignorName` is the
//! module computing the group's targets (the assignor the group names when a module serves
//! it, else the fallback's), so an operator sees which module really assigns.

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{GroupId, TopicName};

use super::group::Group;
use super::partitions::Partitions;
use crate::coordinator::context::Ctx;
use crate::coordinator::responses::s;

/// `MemberType` of a consumer-protocol member (KIP-1099).
const CONSUMER_MEMBER: i8 = 1;
/// `MemberType` of a classic member (JoinGroup / SyncGroup) in a consumer group.
const CLASSIC_MEMBER: i8 = 0;

/// The described group.
pub(crate) fn described(ctx: &Ctx<'_>, group: &Group) -> DescribedGroup {
    let assignor = if group.assignor.module.is_empty() {
        ctx.env.config.consumer_default_assignor.clone()
    } else {
        group.assignor.module.clone()
    };
    let members = group
        .members
        .values()
        .map(|m| {
            Member::default()
                .with_member_id(s(&m.id))
                .with_instance_id(m.instance_id.as_deref().map(s))
                .with_rack_id(m.rack_id.as_deref().map(s))
                .with_member_epoch(m.current.epoch)
                .with_client_id(s(&m.client_id))
                .with_client_host(s(&m.client_host))
                .with_subscribed_topic_names(
                    m.topic_names.iter().map(|t| TopicName(s(t))).collect(),
                )
                .with_subscribed_topic_regex(m.regex.as_ref().map(|r| s(&r.pattern)))
                .with_assignment(assignment(ctx, &m.current.assigned))
                .with_target_assignment(assignment(ctx, &m.target))
                .with_member_type(if m.classic.is_some() {
                    CLASSIC_MEMBER
                } else {
                    CONSUMER_MEMBER
                })
        })
        .collect();
    DescribedGroup::default()
        .with_group_id(GroupId(s(&group.id)))
        .with_group_state(s(group.state().as_str()))
        .with_group_epoch(group.group_epoch)
        .with_assignment_epoch(group.assignment_epoch)
        .with_assignor_name(s(&assignor))
        .with_members(members)
        .with_authorized_operations(i32::MIN)
}

fn assignment(ctx: &Ctx<'_>, partitions: &Partitions) -> Assignment {
    let topics = &ctx.env.topics;
    Assignment::default().with_topic_partitions(
        partitions
            .to_wire(topics)
            .into_iter()
            .map(|(id, ps)| {
                TopicPartitions::default()
                    .with_topic_id(id)
                    .with_topic_name(TopicName(s(topics.name_of(&id).unwrap_or_default())))
                    .with_partitions(ps)
            })
            .collect(),
    )
}
