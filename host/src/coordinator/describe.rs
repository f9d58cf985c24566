//! DescribeGroups (API 15), ListGroups (API 16) and DeleteGroups (API 42) for one shard.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::GroupId;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::protocol::StrBytes;

use super::event::Effect;
use super::responses::{self, s};
use super::shard::{Coordinator, Out};
use super::state::GroupState;
use super::{GroupResponse, ReplyTo};

/// The group type ListGroups reports for every group here.
pub const CLASSIC: &str = "classic";

pub(crate) fn describe(c: &mut Coordinator, reply_to: ReplyTo, group_id: &str, out: &mut Out) {
    let Some(group) = c.groups.get(group_id) else {
        return out.respond(
            reply_to,
            GroupResponse::DescribeGroup(responses::described_dead(group_id, 0)),
        );
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
    out.respond(reply_to, GroupResponse::DescribeGroup(described));
}

/// Kafka's `validateDeleteGroup`: only an Empty group can be deleted.
pub(crate) fn delete(c: &mut Coordinator, reply_to: ReplyTo, group_id: &str, out: &mut Out) {
    let code = match c.groups.get(group_id).map(|g| g.state) {
        None | Some(GroupState::Dead) => ResponseError::GroupIdNotFound.code(),
        Some(GroupState::Empty) => {
            let mut group = c.groups.remove(group_id).expect("present");
            group.transition(GroupState::Dead, out);
            out.effects.push(Effect::DeleteGroup {
                group_id: group_id.to_string(),
            });
            tracing::info!(group = %group_id, "group deleted");
            0
        }
        Some(_) => ResponseError::NonEmptyGroup.code(),
    };
    out.respond(reply_to, GroupResponse::DeleteGroup(code));
}

impl Coordinator {
    /// ListGroups for this shard. Empty filters match everything; states match
    /// case-insensitively; types match `classic` case-insensitively (unknown types match
    /// nothing).
    pub fn list_groups(
        &self,
        states_filter: &[String],
        types_filter: &[String],
    ) -> Vec<ListedGroup> {
        let mut listed: Vec<ListedGroup> = self
            .groups
            .values()
            .filter(|g| {
                states_filter.is_empty()
                    || states_filter
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state.as_str()))
            })
            .filter(|_| {
                types_filter.is_empty()
                    || types_filter.iter().any(|t| t.eq_ignore_ascii_case(CLASSIC))
            })
            .map(|g| {
                ListedGroup::default()
                    .with_group_id(GroupId(s(&g.id)))
                    .with_protocol_type(s(g.protocol_type.as_deref().unwrap_or("")))
                    .with_group_state(StrBytes::from_static_str(g.state.as_str()))
                    .with_group_type(StrBytes::from_static_str(CLASSIC))
            })
            .collect();
        listed.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
        listed
    }
}
