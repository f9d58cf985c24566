//! Classic members in a consumer group (Kafka's upgrade path, `GroupMetadataManager`'s
//! `classicGroup*ToConsumerGroup`): JoinGroup, SyncGroup, Heartbeat and LeaveGroup from a
//! member speaking the classic protocol, in a group whose assignment the module computes.
//!
//! Such a member is a consumer-group member like the others (epochs, target, reconciliation);
//! only the conversation differs:
//! - **JoinGroup** carries its subscription and what it owns in the embedded Subscription;
//!   the member is reconciled with that, and answered with its member epoch as the
//!   generation, no leader and no member list (it follows, as to a server-side assignor).
//!   A JoinGroup that moved the group epoch waits for the new target, as a heartbeat does.
//! - **SyncGroup** answers its current assigned partitions as an Assignment.
//! - **Heartbeat** answers REBALANCE_IN_PROGRESS when the member must rejoin to move on: the
//!   group epoch is past its epoch, it must revoke, or the partitions it waits for are free.
//!   An eager client revokes everything before it rejoins (its Subscription lists nothing
//!   owned), a cooperative one lists what it kept; either way a partition changes owner only
//!   once its owner's rejoin shows it gone, so no partition has two owners.
//! - **LeaveGroup** fences the members it names.
//!
//! Not done, on purpose: a consumer group never turns back into a classic one (Kafka's
//! downgrade, when the last consumer-protocol member leaves); the classic protocols a member proposes are
//! not compared with the other classic members' (Kafka checks them only to allow the
//! downgrade). Kafka's JoinGroup-to-SyncGroup deadline is the session timeout here.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};

use super::group::Group;
use super::member::{Classic, Member, MemberState, Waiting};
use super::membership::{fence, replace};
use super::partitions::Partitions;
use super::respond::{answer_waiting, join_answer, reconcile_member};
use super::target;
use crate::coordinator::api::{GroupResponse, Millis, ReplyTo, RequestContext};
use crate::coordinator::context::{Ctx, Parked};
use crate::coordinator::event::{RebalanceReason, RemovalReason};
use crate::coordinator::responses;
use assignor_wire::consumer_protocol::{PROTOCOL_TYPE, decode_subscription, encode_assignment};

/// JoinGroup from a classic member.
pub(crate) fn join(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reply_to: ReplyTo,
    client: &RequestContext,
    request: JoinGroupRequest,
) {
    let parked = Parked {
        reply_to,
        api_version: client.api_version,
    };
    let asked_id = request.member_id.to_string();
    let config = &ctx.env.config;
    if request.session_timeout_ms < config.min_session_timeout_ms
        || request.session_timeout_ms > config.max_session_timeout_ms
    {
        return ctx.join_error(parked, &asked_id, ResponseError::InvalidSessionTimeout);
    }
    if request.protocol_type.as_str() != PROTOCOL_TYPE || request.protocols.is_empty() {
        // Kafka: "Member's protocols are not supported."
        return ctx.join_error(parked, &asked_id, ResponseError::InconsistentGroupProtocol);
    }
    let subscription = match decode_subscription(&request.protocols[0].metadata) {
        Ok(subscription) => subscription,
        Err(error) => {
            tracing::warn!(group = %group.id, member = %asked_id, %error,
                "classic member's subscription refused");
            return ctx.join_error(parked, &asked_id, ResponseError::InconsistentGroupProtocol);
        }
    };
    let instance = request.group_instance_id.as_ref().map(|i| i.to_string());
    let unknown = asked_id.is_empty();
    let member_id = if unknown {
        let prefix = instance.as_deref().unwrap_or(&client.client_id);
        ctx.env.ids.member_id(prefix)
    } else {
        asked_id.clone()
    };
    if group.members.len() >= ctx.env.config.max_group_size
        && !group.members.contains_key(member_id.as_str())
    {
        return ctx.join_error(parked, "", ResponseError::GroupMaxSizeReached);
    }
    if unknown && instance.is_none() && client.api_version >= 4 {
        // Kafka's two-step join: the id is handed out; the member is created when it is back.
        return ctx.join_error(parked, &member_id, ResponseError::MemberIdRequired);
    }
    let (id, joined) = match find(ctx, group, &member_id, instance.as_deref(), unknown, client) {
        Ok(found) => found,
        Err(error) => return ctx.join_error(parked, &asked_id, error),
    };

    let member = group.members.get_mut(&id).expect("found or added");
    let topics: BTreeSet<String> = subscription.topics.iter().cloned().collect();
    let subscription_changed = member.topic_names != topics || member.regex.is_some();
    member.topic_names = topics;
    member.regex = None;
    if let Some(rack) = &subscription.rack_id {
        member.rack_id = Some(rack.clone());
    }
    member.rebalance_timeout_ms = if request.rebalance_timeout_ms < 0 {
        request.session_timeout_ms
    } else {
        request.rebalance_timeout_ms
    };
    member.client_id = client.client_id.clone();
    member.client_host = client.client_host.clone();
    member.classic = Some(Classic {
        session_timeout_ms: request.session_timeout_ms,
        protocols: request
            .protocols
            .iter()
            .map(|p| p.name.to_string())
            .collect(),
        version: subscription.version,
    });
    let owned = Partitions::from_abi(&subscription.owned_partitions);
    let assigned_before = member.current.assigned.clone();
    let had_waiting = member.waiting.is_some();

    // As for a heartbeat: a new member moves the epoch through its subscription; a static
    // member's replacement inherits the subscription, so it moves nothing by itself.
    let bumped = subscription_changed || group.group_epoch == 0;
    if bumped {
        let reason = if joined {
            RebalanceReason::MemberAdded { member: id.clone() }
        } else {
            RebalanceReason::SubscriptionChanged { member: id.clone() }
        };
        group.bump(ctx, reason);
        target::maybe_start(ctx, group);
    }
    schedule_session(ctx, group, &id);
    if had_waiting {
        answer_waiting(ctx, group, &id);
    }
    if group.pending_run.is_some() && (bumped || group.assignment_epoch == 0) {
        let waiting = Waiting {
            reply_to,
            join_version: Some(client.api_version),
            for_epoch: group.group_epoch,
            owned: Some(owned),
            subscription_changed,
            with_assignment: true,
            assigned_before,
        };
        group.members.get_mut(&id).expect("present").waiting = Some(waiting);
        let key = group.wait_key(&id);
        ctx.schedule_in(key, ctx.env.config.consumer_assignment_wait_ms.max(1));
        return;
    }
    reconcile_member(ctx, group, &id, Some(&owned), subscription_changed);
    let response = join_answer(group, &id, client.api_version);
    ctx.respond(reply_to, GroupResponse::JoinGroup(response));
}

/// The member a JoinGroup is from: an existing one, a new one, or, for a static member that
/// restarted (no member id), its replacement inheriting its assignment (Kafka lets a classic
/// static member replace its previous incarnation at once). Returns its id and whether it
/// joined now.
fn find(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    member_id: &str,
    instance: Option<&str>,
    unknown: bool,
    client: &RequestContext,
) -> Result<(Arc<str>, bool), ResponseError> {
    let existing = match instance {
        Some(instance) => group.static_members.get(instance).cloned(),
        None => group
            .members
            .get_key_value(member_id)
            .map(|(id, _)| id.clone()),
    };
    match existing {
        Some(owner) if &*owner == member_id => {
            if group.members[&owner].classic.is_none() {
                // A consumer-protocol member has no business on the classic path.
                return Err(ResponseError::UnknownMemberId);
            }
            Ok((owner, false))
        }
        Some(owner) if unknown => {
            let id = replace(ctx, group, &owner, Arc::from(member_id));
            Ok((id, true))
        }
        Some(_) => Err(ResponseError::FencedInstanceId),
        None => {
            let id: Arc<str> = Arc::from(member_id);
            tracing::info!(group = %group.id, member = %id, "classic member joins the consumer group");
            let mut member = Member::new(id.clone(), &client.client_id, &client.client_host);
            member.instance_id = instance.map(Arc::from);
            group.add(member);
            Ok((id, true))
        }
    }
}

/// Kafka's `validateConsumerGroupMember` + `throwIfMemberDoesNotUseClassicProtocol` +
/// `throwIfGenerationIdUnmatched`: the classic member a SyncGroup or Heartbeat is from.
fn classic_member(
    group: &Group,
    member_id: &str,
    instance: Option<&str>,
    generation_id: i32,
) -> Result<Arc<str>, ResponseError> {
    let id = match instance {
        Some(instance) => {
            let owner = group
                .static_members
                .get(instance)
                .ok_or(ResponseError::UnknownMemberId)?;
            if &**owner != member_id {
                return Err(ResponseError::FencedInstanceId);
            }
            owner.clone()
        }
        None => group
            .members
            .get_key_value(member_id)
            .map(|(id, _)| id.clone())
            .ok_or(ResponseError::UnknownMemberId)?,
    };
    let member = &group.members[&id];
    if member.classic.is_none() {
        return Err(ResponseError::UnknownMemberId);
    }
    if member.current.epoch != generation_id {
        return Err(ResponseError::IllegalGeneration);
    }
    Ok(id)
}

/// SyncGroup from a classic member: its assigned partitions, unless it must rejoin first.
pub(crate) fn sync(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reply_to: ReplyTo,
    client: &RequestContext,
    request: SyncGroupRequest,
) {
    let parked = Parked {
        reply_to,
        api_version: client.api_version,
    };
    let instance = request.group_instance_id.as_deref();
    let id = match classic_member(group, &request.member_id, instance, request.generation_id) {
        Ok(id) => id,
        Err(error) => return ctx.sync_error(parked, error),
    };
    let member = &group.members[&id];
    let classic = member.classic.as_ref().expect("a classic member");
    let protocol = classic.protocols.first().map(String::as_str);
    let type_differs = request
        .protocol_type
        .as_ref()
        .is_some_and(|t| t.as_str() != PROTOCOL_TYPE);
    let name_differs = request
        .protocol_name
        .as_ref()
        .is_some_and(|n| Some(n.as_str()) != protocol);
    if type_differs || name_differs {
        return ctx.sync_error(parked, ResponseError::InconsistentGroupProtocol);
    }
    // Kafka's `throwIfRebalanceInProgress`: a member that must revoke has rejoined already.
    if group.group_epoch > member.current.epoch
        && member.current.state != MemberState::UnrevokedPartitions
    {
        return ctx.sync_error(parked, ResponseError::RebalanceInProgress);
    }
    let assignment = encode_assignment(classic.version, &member.current.assigned.to_abi(), None);
    let response = responses::sync(
        client.api_version,
        0,
        Some(PROTOCOL_TYPE),
        protocol,
        assignment,
    );
    schedule_session(ctx, group, &id);
    ctx.respond(reply_to, GroupResponse::SyncGroup(response));
}

/// Heartbeat from a classic member: its session goes on; REBALANCE_IN_PROGRESS when it must
/// rejoin (Kafka's three conditions).
pub(crate) fn heartbeat(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reply_to: ReplyTo,
    request: HeartbeatRequest,
) {
    let instance = request.group_instance_id.as_deref();
    let code = match classic_member(group, &request.member_id, instance, request.generation_id) {
        Err(error) => error.code(),
        Ok(id) => {
            schedule_session(ctx, group, &id);
            let member = &group.members[&id];
            let rejoin = member.current.epoch < group.group_epoch
                || member.current.state == MemberState::UnrevokedPartitions
                || (member.current.state == MemberState::UnreleasedPartitions
                    && !waits_on_unreleased(group, member));
            if rejoin {
                ResponseError::RebalanceInProgress.code()
            } else {
                0
            }
        }
    };
    ctx.respond(
        reply_to,
        GroupResponse::Heartbeat(responses::heartbeat(code)),
    );
}

/// Kafka's `waitingOnUnreleasedPartition`: a partition of the member's target it does not
/// have yet is still owned by another member.
fn waits_on_unreleased(group: &Group, member: &Member) -> bool {
    member
        .target
        .iter()
        .filter(|(t, p)| !member.current.assigned.contains(t, *p))
        .any(|(t, p)| group.owned_elsewhere(&member.id, t, p))
}

/// LeaveGroup for a consumer group: every identity found is fenced (once, one epoch bump);
/// each is answered on its own.
pub(crate) fn leave(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reply_to: ReplyTo,
    client: &RequestContext,
    request: LeaveGroupRequest,
) {
    let v = client.api_version;
    let identities: Vec<(String, Option<String>)> = if v < 3 {
        vec![(request.member_id.to_string(), None)]
    } else {
        request
            .members
            .iter()
            .map(|m| {
                let instance = m.group_instance_id.as_ref().map(|i| i.to_string());
                (m.member_id.to_string(), instance)
            })
            .collect()
    };
    let mut results = Vec::with_capacity(identities.len());
    let mut left: Vec<Arc<str>> = Vec::new();
    for (member_id, instance) in &identities {
        let found = match instance.as_deref() {
            Some(instance) => match group.static_members.get(instance) {
                None => Err(ResponseError::UnknownMemberId),
                // An empty member id removes a static member by instance (the admin client).
                Some(owner) if member_id.is_empty() || **owner == **member_id => Ok(owner.clone()),
                Some(_) => Err(ResponseError::FencedInstanceId),
            },
            None => group
                .members
                .get_key_value(member_id.as_str())
                .map(|(id, _)| id.clone())
                .ok_or(ResponseError::UnknownMemberId),
        };
        let code = match found {
            Ok(id) => {
                left.push(id);
                0
            }
            Err(error) => error.code(),
        };
        results.push(
            MemberResponse::default()
                .with_member_id(responses::s(member_id))
                .with_group_instance_id(instance.as_deref().map(responses::s))
                .with_error_code(code),
        );
    }
    if !left.is_empty() {
        let reason = RebalanceReason::MembersLeft {
            members: left.iter().map(|id| (id.clone(), None)).collect(),
        };
        fence(ctx, group, &left, RemovalReason::Left, reason);
    }
    let response = responses::leave(v, 0, results);
    ctx.respond(reply_to, GroupResponse::LeaveGroup(response));
}

/// Re-arms a classic member's session with its own timeout.
fn schedule_session(ctx: &mut Ctx<'_>, group: &Group, id: &Arc<str>) {
    let timeout = group.members[id].session_timeout_ms(ctx.env.config.consumer_session_timeout_ms);
    ctx.schedule_in(group.session_key(id), timeout.max(0) as Millis);
}
