//! JoinGroup (API 11): Kafka's `classicGroupJoin` with the two-step join (MEMBER_ID_REQUIRED
//! from v4), static membership (fencing, replacement, rejoin without a rebalance), the group
//! size gate and the session timeout bounds.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::JoinGroupRequest;

use super::event::RemovalReason;
use super::group::{Group, Mode, vote_key};
use super::member::{Member, Parked};
use super::protocol;
use super::rebalance::{self, heartbeat_key, join_response_for, reschedule_heartbeat};
use super::responses::{self, JoinOk};
use super::shard::{Coordinator, Env, Out};
use super::state::GroupState;
use super::{GroupResponse, Millis, ReplyTo, RequestContext};

/// The request, normalised: v0's missing rebalance timeout is the session timeout.
struct Join<'a> {
    reply_to: ReplyTo,
    ctx: &'a RequestContext,
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
            api_version: self.ctx.api_version,
        }
    }
    fn fail(&self, out: &mut Out, member_id: &str, error: ResponseError) {
        out.join_error(self.parked(), member_id, error);
    }
}

pub(crate) fn handle(
    c: &mut Coordinator,
    now: Millis,
    reply_to: ReplyTo,
    group_id: &str,
    ctx: &RequestContext,
    request: JoinGroupRequest,
    out: &mut Out,
) {
    let protocols: Vec<(String, Bytes)> = request
        .protocols
        .iter()
        .map(|p| (p.name.to_string(), p.metadata.clone()))
        .collect();
    let keys = protocols
        .iter()
        .map(|(name, _)| vote_key(&c.env.strategies, name))
        .collect();
    let join = Join {
        reply_to,
        ctx,
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
        return join.fail(out, &join.member_id, ResponseError::InvalidGroupId);
    }
    let cfg = &c.env.config;
    if join.session_timeout_ms < cfg.min_session_timeout_ms
        || join.session_timeout_ms > cfg.max_session_timeout_ms
    {
        return join.fail(out, &join.member_id, ResponseError::InvalidSessionTimeout);
    }
    let unknown = join.member_id.is_empty();
    if !c.groups.contains_key(group_id) {
        if !unknown {
            return join.fail(out, &join.member_id, ResponseError::UnknownMemberId);
        }
        let id: Arc<str> = Arc::from(group_id);
        c.groups.insert(id.clone(), Group::new(id));
    }
    let group = c.groups.get_mut(group_id).expect("present or just created");
    let env = &mut c.env;

    if !accept_joining_member(env, group, &join.member_id) {
        // Kafka removes the member (if it existed) without a rebalance.
        let id: Arc<str> = Arc::from(join.member_id.as_str());
        rebalance::remove_member(group, &id, RemovalReason::GroupFull, out);
        out.cancel(heartbeat_key(group, &id));
        return join.fail(out, "", ResponseError::GroupMaxSizeReached);
    }
    if unknown {
        join_new_member(env, group, now, join, out);
    } else {
        join_existing_member(env, group, now, join, out);
    }
}

/// Kafka's `acceptJoiningMember`: the `group.max.size` gate.
fn accept_joining_member(env: &Env, group: &Group, member_id: &str) -> bool {
    let max = env.config.max_group_size;
    match group.state {
        GroupState::Empty | GroupState::Dead => true,
        GroupState::PreparingRebalance => {
            group
                .members
                .get(member_id)
                .is_some_and(|m| m.awaiting_join.is_some())
                || group.awaiting_join < max
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            group.members.contains_key(member_id) || group.members.len() < max
        }
    }
}

fn join_new_member(env: &mut Env, group: &mut Group, now: Millis, join: Join<'_>, out: &mut Out) {
    if group.is(GroupState::Dead) {
        return join.fail(out, "", ResponseError::CoordinatorNotAvailable);
    }
    if !group.supports_protocols(&join.protocol_type, &join.keys) {
        return join.fail(out, "", ResponseError::InconsistentGroupProtocol);
    }
    let prefix = join
        .group_instance_id
        .as_deref()
        .unwrap_or(&join.ctx.client_id);
    let new_id: Arc<str> = Arc::from(env.ids.member_id(prefix));
    match &join.group_instance_id {
        Some(instance) => match group.static_members.get(instance.as_str()).cloned() {
            Some(old_id) => replace_static_member(env, group, now, old_id, new_id, join, out),
            None => add_member_then_rebalance(env, group, now, new_id, join, out),
        },
        None if join.ctx.api_version >= 4 => {
            // Two-step join: hand out the id and wait for the member to come back with it.
            group.pending_join_members.insert(new_id.clone());
            reschedule_heartbeat(group, &new_id, now, join.session_timeout_ms as Millis, out);
            tracing::debug!(group = %group.id, member = %new_id, "member id required");
            out.respond(
                join.reply_to,
                GroupResponse::JoinGroup(responses::join_error(
                    join.ctx.api_version,
                    &new_id,
                    ResponseError::MemberIdRequired,
                )),
            );
        }
        None => add_member_then_rebalance(env, group, now, new_id, join, out),
    }
}

fn join_existing_member(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    join: Join<'_>,
    out: &mut Out,
) {
    let member_id = join.member_id.clone();
    if group.is(GroupState::Dead) {
        return join.fail(out, &member_id, ResponseError::CoordinatorNotAvailable);
    }
    if !group.supports_protocols(&join.protocol_type, &join.keys) {
        return join.fail(out, &member_id, ResponseError::InconsistentGroupProtocol);
    }
    if group.pending_join_members.contains(member_id.as_str()) {
        if join.group_instance_id.is_some() {
            // Kafka treats this as impossible (a pending id is never static); refuse it
            // rather than guess which identity the client means.
            group.pending_join_members.remove(member_id.as_str());
            return join.fail(out, &member_id, ResponseError::UnknownMemberId);
        }
        let id: Arc<str> = Arc::from(member_id.as_str());
        return add_member_then_rebalance(env, group, now, id, join, out);
    }
    if let Err(error) = group.validate_member(&member_id, join.group_instance_id.as_deref()) {
        return join.fail(out, &member_id, error);
    }
    let member = &group.members[member_id.as_str()];
    let same = member.matches(&join.protocols);
    match group.state {
        GroupState::PreparingRebalance => {
            let reason = format!("member {member_id} joined during PreparingRebalance");
            update_member_then_rebalance(env, group, now, join, &reason, out);
        }
        GroupState::CompletingRebalance | GroupState::Stable
            if same && !leader_forces(group, &member_id) =>
        {
            // Nothing changed (the client probably lost the JoinGroup answer): the current
            // generation again.
            let response = join_response_for(group, &member_id, join.ctx.api_version, false);
            let response = if group.is(GroupState::Stable) {
                response.with_members(Vec::new())
            } else {
                response
            };
            out.respond(join.reply_to, GroupResponse::JoinGroup(response));
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            let reason = if same {
                format!("leader {member_id} rejoined")
            } else {
                format!("member {member_id} changed its protocols")
            };
            update_member_then_rebalance(env, group, now, join, &reason, out);
        }
        GroupState::Empty | GroupState::Dead => {
            join.fail(out, &member_id, ResponseError::UnknownMemberId)
        }
    }
}

/// In Stable, a client leader's JoinGroup always rebalances (that is how a Kafka leader asks
/// for one). In host mode nobody is leader, so nothing forces it.
fn leader_forces(group: &Group, member_id: &str) -> bool {
    group.is(GroupState::Stable) && matches!(group.mode, Mode::Relay) && group.is_leader(member_id)
}

fn add_member_then_rebalance(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    id: Arc<str>,
    join: Join<'_>,
    out: &mut Out,
) {
    let parked = join.parked();
    if group.is(GroupState::PreparingRebalance) && group.previous_state == GroupState::Empty {
        group.new_member_added = true;
    }
    group.add(Member {
        id: id.clone(),
        group_instance_id: join.group_instance_id.as_deref().map(Arc::from),
        client_id: join.ctx.client_id.clone(),
        client_host: join.ctx.client_host.clone(),
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
    reschedule_heartbeat(group, &id, now, env.config.new_member_join_timeout_ms, out);
    let reason = format!("adding new member {id}");
    rebalance::maybe_prepare_or_complete(env, group, now, &reason, out);
}

fn update_member_then_rebalance(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    join: Join<'_>,
    reason: &str,
    out: &mut Out,
) {
    let parked = join.parked();
    if let Some(previous) = group
        .members
        .get(join.member_id.as_str())
        .and_then(|m| m.awaiting_join)
    {
        // A client that resent JoinGroup abandoned the earlier one.
        out.join_error(
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
    rebalance::maybe_prepare_or_complete(env, group, now, reason, out);
}

/// KIP-345 replacement: a known `group.instance.id` joins with an empty member id. The old id is
/// fenced; the new one inherits the old member's assignment. In Stable with an unchanged
/// selected protocol there is no rebalance.
fn replace_static_member(
    env: &mut Env,
    group: &mut Group,
    now: Millis,
    old_id: Arc<str>,
    new_id: Arc<str>,
    join: Join<'_>,
    out: &mut Out,
) {
    let previous_leader = group.leader_id.clone();
    let was_leader = group.is_leader(&old_id);
    let was_pending_sync = group.pending_sync_members.contains(&old_id);
    if let Some(parked) = group.take_join(&old_id) {
        out.join_error(parked, &old_id, ResponseError::FencedInstanceId);
    }
    let Some(mut member) = group.remove(&old_id) else {
        return join.fail(out, "", ResponseError::UnknownMemberId);
    };
    if let Some(parked) = member.awaiting_sync.take() {
        out.sync_error(parked, ResponseError::FencedInstanceId);
    }
    out.cancel(heartbeat_key(group, &old_id));
    out.notice(super::event::Notice::MemberRemoved {
        group: group.id.clone(),
        member: old_id.clone(),
        reason: RemovalReason::Fenced,
    });
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
    reschedule_heartbeat(group, &new_id, now, session, out);
    let api_version = join.ctx.api_version;
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
            let config = env.config_of(&group.id).cloned().unwrap_or_default();
            let next = protocol::select(group, &config, &env.strategies).map(|s| s.key);
            if let Some(key) = next.filter(|k| group.protocol_key.as_ref() == Some(k)) {
                let spelling = group.members[&new_id]
                    .spelling_for(&key)
                    .map(str::to_string);
                group.members.get_mut(&new_id).expect("added").protocol_name = spelling;
                group.take_join(&new_id);
                // Persist the new member id before answering (Kafka answers after the write).
                out.persist(group);
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
                out.respond(reply_to, GroupResponse::JoinGroup(response));
            } else {
                let reason = format!("static member {new_id} rejoined with a change of protocol");
                rebalance::maybe_prepare_or_complete(env, group, now, &reason, out);
            }
        }
        GroupState::CompletingRebalance => {
            let reason = format!("static member {new_id} replaced during CompletingRebalance");
            rebalance::prepare(env, group, now, &reason, out);
        }
        _ => rebalance::maybe_complete_join_phase(env, group, now, out),
    }
}
