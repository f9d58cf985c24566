//! DescribeGroups (API 15) for one group: state, protocol, and every member with its metadata
//! (only in Stable, as Kafka) and assignment bytes. A group that does not exist is "Dead",
//! with no error up to v5, as Kafka answers.

use kafka_protocol::messages::GroupId;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::protocol::StrBytes;

use super::api::{GroupResponse, ReplyTo};
use super::classic::GroupState;
use super::classic::group::Groups;
use super::context::Ctx;
use super::responses::{self, s};

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &Groups,
    reply_to: ReplyTo,
    group_id: &str,
    api_version: i16,
) {
    let Some(group) = groups.get(group_id) else {
        let described = responses::described_not_found(group_id, api_version);
        return ctx.respond(reply_to, GroupResponse::DescribeGroup(described));
    };
    let stable = group.is(GroupState::Stable);
    let key = group.protocol_key.as_deref().unwrap_or("");
    let members = group
        .members
        .values()
        .map(|m| {
            DescribedGroupMember::default()
                .with_member_id(s(&m.id))
                .with_group_instance_id(m.group_instance_id.as_deref().map(s))
                .with_client_id(s(&m.client_id))
                .with_client_host(s(&m.client_host))
                .with_member_metadata(if stable {
                    m.metadata_for(key).cloned().unwrap_or_default()
                } else {
                    bytes::Bytes::new()
                })
                .with_member_assignment(m.assignment.clone())
        })
        .collect();
    let described = DescribedGroup::default()
        .with_error_code(0)
        .with_group_id(GroupId(s(group_id)))
        .with_group_state(StrBytes::from_static_str(group.state.as_str()))
        .with_protocol_type(s(group.protocol_type.as_deref().unwrap_or("")))
        .with_protocol_data(s(if stable { key } else { "" }))
        .with_members(members);
    ctx.respond(reply_to, GroupResponse::DescribeGroup(described));
}
