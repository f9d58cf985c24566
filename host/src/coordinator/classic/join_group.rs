//! JoinGroup (API 11): Kafka's `classicGroupJoin` with the two-step join (MEMBER_ID_REQUIRED
//! from v4), static membership (fencing, replacement, rejoin without a rebalance), the group
//! size gate and the session timeout bounds.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::JoinGroupRequest;

use super::group::{Group, Groups, Mode, vote_key};
use super::member::Member;
use super::protocol;
use super::rebalance::{self, join_response_for};
use super::stabilize;
use crate::coordinator::api::{GroupResponse, Millis, ReplyTo, RequestContext};
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::{Ctx, Parked};
use crate::coordinator::event::{RebalanceReason, RemovalReason};
use crate::coordinator::responses::{self, JoinOk};

/// The request, normalised: v0's missing rebalance timeout is the session timeout.
struct Join<'a> {
    reply_to: ReplyTo,
    client: &'a RequestContext,
    member_id: String,
    group_instance_id: Option<String>,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    protocol_type: String,
    protocols: Vec<(String, Bytes)>,
    keys: Vec<String>,
}

impl Join<'_> {
    fn parked(&self) -> Parked {
        Parked {
            reply_to: self.reply_to,
            api_version: self.client.api_version,
        }
    }
    fn fail(&self, ctx: &mut Ctx<'_>, member_id: &str, error: ResponseError) {
        ctx.join_error(self.parked(), member_id, error);
    }
}

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    request: JoinGroupRequest,
) {
    let protocols: Vec<(String, Bytes)> = request
        .protocols
        .iter()
        .map(|p| (p.name.to_string(), p.metadata.clone()))
        .collect();
    let keys = protocols
        .iter()
        .map(|(name, _)| vote_key(&ctx.env.strategies, name))
        .collect();
    let join = Join {
        reply_to,
        client,
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|i| i.to_string()),
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms: if request.rebalance_timeout_ms < 0 {
            request.session_timeout_ms
        } else {
            request.rebalance_timeout_ms
        },
        protocol_type: request.protocol_type.to_string(),
        protocols,
        keys,
    };

    if group_id.is_empty() {
        return join.fail(ctx, &join.member_id, ResponseError::InvalidGroupId);
    }
    let cfg = &ctx.env.config;
    if join.session_timeout_ms < cfg.min_session_timeout_ms
        || join.session_timeout_ms > cfg.max_session_timeout_ms
    {
        return join.fail(ctx, &join.member_id, ResponseError::InvalidSessionTimeout);
    }
    let unknown = join.member_id.is_empty();
    if !groups.contains_key(group_id) {
        if !unknown {
            return join.fail(ctx, &join.member_id, ResponseError::UnknownMemberId);
        }
        let id: Arc<str> = Arc::from(group_id);
        groups.insert(id.clone(), Group::new(id));
    }
    let group = groups.get_mut(group_id).expect("present or just created");

    if !accept_joining_member(ctx, group, &join.member_id) {
        // Kafka removes the member (if it existed) without a rebalance.
        let id: Arc<str> = Arc::from(join.member_id.as_str());
        rebalance::remove_member(ctx, group, &id, RemovalReason::GroupFull);
        return join.fail(ctx, "", ResponseError::GroupMaxSizeReached);
    }
    if unknown {
        join_new_member(ctx, group, join);
    } else {
        join_existing_member(ctx, group, join);
    }
}

/// Kafka's `acceptJoiningMember`: the `group.max.size` gate.
fn accept_joining_member(ctx: &Ctx<'_>, group: &Group, member_id: &str) -> bool {
    let max = ctx.env.config.max_group_size;
    match group.state {
        GroupState::Empty | GroupState::Dead => true,
        GroupState::PreparingRebalance => {
            group
                .members
                .get(member_id)
                .is_some_and(|m| m.awaiting_join.is_some())
                || group.parked_joins() < max
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            group.members.contains_key(member_id) || group.members.len() < max
        }
    }
}

fn join_new_member(ctx: &mut Ctx<'_>, group: &mut Group, join: Join<'_>) {
    if group.is(GroupState::Dead) {
        return join.fail(ctx, "", ResponseError::CoordinatorNotAvailable);
    }
    if !group.supports_protocols(&join.protocol_type, &join.keys) {
        return join.fail(ctx, "", ResponseError::InconsistentGroupProtocol);
    }
    let prefix = join
        .group_instance_id
        .as_deref()
        .unwrap_or(&join.client.client_id);
    let new_id: Arc<str> = Arc::from(ctx.env.ids.member_id(prefix));
    match &join.group_instance_id {
        Some(instance) => match group.static_member(instance.as_str()).cloned() {
            Some(old_id) => replace_static_member(ctx, group, old_id, new_id, join),
            None => add_member_then_rebalance(ctx, group, new_id, join),
        },
        None if join.client.api_version >= 4 => {
            // Two-step join: hand out the id and wait for the member to come back with it.
            group.pending_join_members.insert(new_id.clone());
            group.reschedule_heartbeat(&new_id, join.session_timeout_ms as Millis, ctx);
            tracing::debug!(group = %group.id, member = %new_id, "member id required");
            ctx.respond(
                join.reply_to,
                GroupResponse::JoinGroup(responses::join_error(
                    join.client.api_version,
                    &new_id,
                    ResponseError::MemberIdRequired,
                )),
            );
        }
        None => add_member_then_rebalance(ctx, group, new_id, join),
    }
}

fn join_existing_member(ctx: &mut Ctx<'_>, group: &mut Group, join: Join<'_>) {
    let member_id = join.member_id.clone();
    if group.is(GroupState::Dead) {
        return join.fail(ctx, &member_id, ResponseError::CoordinatorNotAvailable);
    }
    if !group.supports_protocols(&join.protocol_type, &join.keys) {
        return join.fail(ctx, &member_id, ResponseError::InconsistentGroupProtocol);
    }
    if group.pending_join_members.contains(member_id.as_str()) {
        if join.group_instance_id.is_some() {
            // Kafka treats this as impossible (a pending id is never static); refuse it
            // rather than guess which identity the client means.
            group.pending_join_members.remove(member_id.as_str());
            return join.fail(ctx, &member_id, ResponseError::UnknownMemberId);
        }
        let id: Arc<str> = Arc::from(member_id.as_str());
        return add_member_then_rebalance(ctx, group, id, join);
    }
    if let Err(error) = group.validate_member(&member_id, join.group_instance_id.as_deref()) {
        return join.fail(ctx, &member_id, error);
    }
    let (id, member) = group
        .members
        .get_key_value(member_id.as_str())
        .expect("validated");
    let (id, same) = (id.clone(), member.matches(&join.protocols));
    if group.is_parked(&member_id) {
        // A member parked by stabilisation or an in-place round resent its JoinGroup: it
        // waits on the new one.
        let changed = !same;
        repark(ctx, group, join);
        if changed {
            rebalance::parked_member_changed(ctx, group);
        }
        return;
    }
    match group.state {
        GroupState::PreparingRebalance => {
            let reason = RebalanceReason::MemberJoinedDuringRebalance { member: id };
            update_member_then_rebalance(ctx, group, join, reason);
        }
        GroupState::CompletingRebalance | GroupState::Stable
            if same && !leader_forces(group, &member_id) =>
        {
            // Nothing changed (the client probably lost the JoinGroup answer): the current
            // generation again.
            let response = join_response_for(group, &member_id, join.client.api_version, false);
            let response = if group.is(GroupState::Stable) {
                response.with_members(Vec::new())
            } else {
                response
            };
            ctx.respond(join.reply_to, GroupResponse::JoinGroup(response));
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            let reason = if same {
                RebalanceReason::LeaderRejoined { member: id }
            } else {
                RebalanceReason::ProtocolsChanged { member: id }
            };
            update_member_then_rebalance(ctx, group, join, reason);
        }
        GroupState::Empty | GroupState::Dead => {
            join.fail(ctx, &member_id, ResponseError::UnknownMemberId)
        }
    }
}

/// In Stable, a client leader's JoinGroup always rebalances (that is how a Kafka leader asks
/// for one). In host mode nobody is leader, so nothing forces it.
fn leader_forces(group: &Group, member_id: &str) -> bool {
    group.is(GroupState::Stable) && matches!(group.mode, Mode::Relay) && group.is_leader(member_id)
}

fn add_member_then_rebalance(ctx: &mut Ctx<'_>, group: &mut Group, id: Arc<str>, join: Join<'_>) {
    let parked = join.parked();
    if group.is(GroupState::PreparingRebalance) && group.previous_state == GroupState::Empty {
        group.new_member_added = true;
    }
    group.add(Member {
        id: id.clone(),
        group_instance_id: join.group_instance_id.as_deref().map(Arc::from),
        client_id: join.client.client_id.clone(),
        client_host: join.client.client_host.clone(),
        rebalance_timeout_ms: join.rebalance_timeout_ms,
        session_timeout_ms: join.session_timeout_ms,
        protocol_type: join.protocol_type,
        protocols: join.protocols,
        keys: join.keys,
        protocol_name: None,
        assignment: Bytes::new(),
        given: Vec::new(),
        awaiting_join: Some(parked),
        awaiting_sync: None,
        is_new: true,
    });
    // A new member cannot heartbeat before its first answer; drop it if the join never ends.
    group.reschedule_heartbeat(&id, ctx.env.config.new_member_join_timeout_ms, ctx);
    if rebalance::joined_in_place(ctx, group, &id) {
        return;
    }
    if stabilize::defer_join(ctx, group, &id) {
        return;
    }
    let reason = RebalanceReason::MemberAdded { member: id };
    rebalance::maybe_prepare_or_complete(ctx, group, reason);
}

/// A member's JoinGroup is parked with its protocols and timeouts; a JoinGroup it parked
/// earlier is answered REBALANCE_IN_PROGRESS (a client that resent JoinGroup abandoned it).
/// On its own, for a member parked by stabilisation: the deferral goes on.
fn repark(ctx: &mut Ctx<'_>, group: &mut Group, join: Join<'_>) {
    let parked = join.parked();
    if let Some(previous) = group.take_join(&join.member_id) {
        ctx.join_error(
            previous,
            &join.member_id,
            ResponseError::RebalanceInProgress,
        );
    }
    group.update_member(
        &join.member_id,
        join.protocols,
        join.keys,
        join.rebalance_timeout_ms,
        join.session_timeout_ms,
        Some(parked),
    );
}

fn update_member_then_rebalance(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    join: Join<'_>,
    reason: RebalanceReason,
) {
    repark(ctx, group, join);
    rebalance::maybe_prepare_or_complete(ctx, group, reason);
}

/// KIP-345 replacement: a known `group.instance.id` joins with an empty member id. The old id is
/// fenced; the new one inherits the old member's assignment. In Stable with an unchanged
/// selected protocol there is no rebalance.
fn replace_static_member(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    old_id: Arc<str>,
    new_id: Arc<str>,
    join: Join<'_>,
) {
    let previous_leader = group.leader_id.clone();
    let was_leader = group.is_leader(&old_id);
    let was_pending_sync = group.pending_sync_members.contains(&old_id);
    if let Some(parked) = group.take_join(&old_id) {
        ctx.join_error(parked, &old_id, ResponseError::FencedInstanceId);
    }
    let Some(mut member) = group.remove(&old_id) else {
        return join.fail(ctx, "", ResponseError::UnknownMemberId);
    };
    if let Some(parked) = member.awaiting_sync.take() {
        ctx.sync_error(parked, ResponseError::FencedInstanceId);
    }
    ctx.cancel(group.heartbeat_key(&old_id));
    rebalance::member_removed(ctx, group, &old_id, RemovalReason::Fenced);
    member.id = new_id.clone();
    member.is_new = false;
    let session = member.session_timeout_ms.max(0) as Millis;
    group.add(member);
    if was_leader {
        group.leader_id = Some(new_id.clone());
    }
    if was_pending_sync {
        group.pending_sync_members.insert(new_id.clone());
    }
    group.reschedule_heartbeat(&new_id, session, ctx);
    let api_version = join.client.api_version;
    let reply_to = join.reply_to;
    group.update_member(
        &new_id,
        join.protocols,
        join.keys,
        join.rebalance_timeout_ms,
        join.session_timeout_ms,
        Some(Parked {
            reply_to,
            api_version,
        }),
    );
    tracing::info!(group = %group.id, member = %new_id, replaced = %old_id, "static member replaced");

    match group.state {
        GroupState::Stable => {
            let config = ctx.env.config_of(&group.id);
            let next = protocol::select(group, &config, &ctx.env.strategies).map(|s| s.key);
            if let Some(key) = next.filter(|k| group.protocol_key.as_ref() == Some(k)) {
                let spelling = group.members[&new_id]
                    .spelling_for(&key)
                    .map(str::to_string);
                group.members.get_mut(&new_id).expect("added").protocol_name = spelling;
                group.take_join(&new_id);
                // Persist the new member id before answering (Kafka answers after the write).
                ctx.persist(group.snapshot());
                let response = match group.mode {
                    Mode::Host { .. } => join_response_for(group, &new_id, api_version, false),
                    Mode::Relay if api_version >= 9 => {
                        let leader = group.is_leader(&new_id);
                        join_response_for(group, &new_id, api_version, leader)
                    }
                    Mode::Relay => {
                        // v5-v8: name the previous leader, so a returning leader does not
                        // compute an assignment a Stable group would never broadcast.
                        let leader = previous_leader.as_deref().unwrap_or("").to_string();
                        responses::join_ok(
                            api_version,
                            JoinOk {
                                member_id: &new_id,
                                generation_id: group.generation_id,
                                protocol_type: group.protocol_type.as_deref(),
                                protocol_name: group.protocol_key.as_deref(),
                                leader: &leader,
                                skip_assignment: false,
                                members: Vec::new(),
                            },
                        )
                    }
                };
                ctx.respond(reply_to, GroupResponse::JoinGroup(response));
            } else {
                let reason = RebalanceReason::StaticMemberChangedProtocols { member: new_id };
                rebalance::maybe_prepare_or_complete(ctx, group, reason);
            }
        }
        GroupState::CompletingRebalance => {
            let reason = RebalanceReason::StaticMemberReplaced { member: new_id };
            rebalance::prepare(ctx, group, reason);
        }
        _ => rebalance::maybe_complete_join_phase(ctx, group),
    }
}
