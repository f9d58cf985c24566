//! A consumer group (KIP-848) as the admin API shows it: the same [`GroupDetail`] and
//! [`GroupSummary`] as a classic group (so the list, the describe, its lag and the CLI read
//! both alike), with the group epoch as its generation, the computing module as its strategy,
//! each member's current assignment, and a [`ConsumerDetail`] with the epochs, the assignor
//! choice and each member's reconciliation towards its target.

use std::collections::BTreeMap;

use super::group::{Group, Groups};
use super::partitions::Partitions;
use crate::coordinator::admin::{ConsumerDetail, ConsumerMemberDetail, GroupDetail, GroupSummary};
use crate::coordinator::api::CONSUMER;
use crate::coordinator::api::Millis;
use crate::coordinator::context::Env;
use assignor_wire::consumer_protocol::PROTOCOL_TYPE;

/// The detail of one consumer group.
pub(crate) fn group_detail(env: &Env, group: &Group, now: Millis) -> GroupDetail {
    let module = (!group.assignor.module.is_empty()).then(|| group.assignor.module.clone());
    let requested = if group.assignor.requested.is_empty() {
        env.config.consumer_default_assignor.clone()
    } else {
        group.assignor.requested.clone()
    };
    let members = group
        .members
        .values()
        .map(|m| crate::coordinator::MemberDetail {
            member_id: m.id.to_string(),
            group_instance_id: m.instance_id.as_ref().map(|i| i.to_string()),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            protocol_name: m.server_assignor.clone(),
            subscription: m.topic_names.iter().cloned().collect(),
            // What it owns now: its kept partitions and those it has been asked to give up
            // and has not acknowledged yet (no one else has them until it does).
            assignment: by_topic(&m.current.assigned.union(&m.current.pending_revocation)),
        })
        .collect();
    let reconciliation = group
        .members
        .values()
        .map(|m| ConsumerMemberDetail {
            member_id: m.id.to_string(),
            member_protocol: if m.classic.is_some() {
                "classic"
            } else {
                "consumer"
            },
            member_epoch: m.current.epoch,
            state: m.current.state.as_str(),
            rack_id: m.rack_id.clone(),
            subscribed_topic_regex: m.regex.as_ref().map(|r| r.pattern.clone()),
            target: by_topic(&m.target),
            pending_revocation: by_topic(&m.current.pending_revocation),
        })
        .collect();
    GroupDetail {
        group_id: group.id.to_string(),
        group_type: CONSUMER,
        state: group.state().as_str().to_owned(),
        generation: group.group_epoch,
        protocol_type: Some(PROTOCOL_TYPE.to_owned()),
        protocol: Some(requested.clone()),
        mode: "host",
        strategy: module,
        module_version: group.last_run.as_ref().and_then(|r| r.version),
        config: env.config_of(&group.id),
        members,
        last_run: group.last_run.clone(),
        history: group.history.iter().cloned().collect(),
        consumer: Some(ConsumerDetail {
            group_epoch: group.group_epoch,
            assignment_epoch: group.assignment_epoch,
            requested_assignor: requested,
            assignor_missing: group.assignor.missing,
            members: reconciliation,
        }),
        deferred_rebalance: None,
        held: crate::coordinator::admin::held_details(env, &group.held, group.follow_up_at, now),
    }
}

/// One line per consumer group.
pub(crate) fn group_summaries(groups: &Groups) -> impl Iterator<Item = GroupSummary> + '_ {
    groups.values().map(|g| GroupSummary {
        group_id: g.id.to_string(),
        group_type: CONSUMER,
        state: g.state().as_str().to_owned(),
        protocol_type: Some(PROTOCOL_TYPE.to_owned()),
        members: g.members.len(),
        strategy: (!g.assignor.module.is_empty()).then(|| g.assignor.module.clone()),
    })
}

fn by_topic(partitions: &Partitions) -> BTreeMap<String, Vec<i32>> {
    partitions
        .topics()
        .map(|t| {
            let ps = partitions.of(t).map(|s| s.iter().copied().collect());
            (t.to_owned(), ps.unwrap_or_default())
        })
        .collect()
}
