//! ListGroups (API 16) for one shard (the driver merges the shards): classic groups and
//! consumer groups (KIP-848), each with its type. Empty filters match everything; states and
//! types match case-insensitively (unknown types match nothing).

use kafka_protocol::messages::GroupId;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::protocol::StrBytes;

use super::api::{CLASSIC, CONSUMER};
use super::classic::group::Groups;
use super::consumer::group::Groups as ConsumerGroups;
use super::responses::s;

/// The groups of `groups` and `consumers` that pass the filters, sorted by id.
pub(crate) fn list(
    groups: &Groups,
    consumers: &ConsumerGroups,
    states_filter: &[String],
    types_filter: &[String],
) -> Vec<ListedGroup> {
    let state_ok = |state: &str| {
        states_filter.is_empty() || states_filter.iter().any(|s| s.eq_ignore_ascii_case(state))
    };
    let type_ok = |kind: &str| {
        types_filter.is_empty() || types_filter.iter().any(|t| t.eq_ignore_ascii_case(kind))
    };
    let mut listed: Vec<ListedGroup> = groups
        .values()
        .filter(|g| {
            states_filter.is_empty()
                || states_filter
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(g.state.as_str()))
        })
        .filter(|_| {
            types_filter.is_empty() || types_filter.iter().any(|t| t.eq_ignore_ascii_case(CLASSIC))
        })
        .map(|g| {
            ListedGroup::default()
                .with_group_id(GroupId(s(&g.id)))
                .with_protocol_type(s(g.protocol_type.as_deref().unwrap_or("")))
                .with_group_state(StrBytes::from_static_str(g.state.as_str()))
                .with_group_type(StrBytes::from_static_str(CLASSIC))
        })
        .chain(
            consumers
                .values()
                .filter(|g| state_ok(g.state().as_str()) && type_ok(CONSUMER))
                .map(|g| {
                    ListedGroup::default()
                        .with_group_id(GroupId(s(&g.id)))
                        .with_protocol_type(StrBytes::from_static_str(CONSUMER))
                        .with_group_state(StrBytes::from_static_str(g.state().as_str()))
                        .with_group_type(StrBytes::from_static_str(CONSUMER))
                }),
        )
        .collect();
    listed.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
    listed
}
