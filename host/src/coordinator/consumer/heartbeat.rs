//! ConsumerGroupHeartbeat (API 68, v0-1): Kafka's `consumerGroupHeartbeat` and
//! `consumerGroupLeave` (`GroupMetadataManager`), with the request checks of
//! `GroupCoordinatorService`. The group is found or created by the caller (`dispatch`, where
//! an empty classic group of the id gives way and one with members refuses); here the member
//! is found, created or replaced, its epoch checked, its subscription updated, the group epoch
//! moved when the subscription changed, the target's computation started, and the member
//! reconciled and answered.
//!
//! **How the asynchronous target meets the heartbeat.** Kafka computes the new target inside
//! the heartbeat that moved the group epoch. Here a module computes it off the shard, so that
//! heartbeat waits: it is parked ([`Waiting`]) and answered as soon as the target is
//! installed, with the member reconciled towards it, so a joining member's first answer
//! carries its assignment. The wait is bounded by `consumer_assignment_wait_ms` (then the
//! member is answered with what it may own until the target is there, and picks the rest up
//! at a later heartbeat), except before a new group's first target (there is no epoch to
//! answer with; the target chain is bounded by the assignor deadlines). Every other heartbeat
//! is answered at once.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
use regex::Regex;

use super::group::Group;
use super::member::{Member, Subscription, Waiting};
use super::membership::{fence, replace, static_leave};
use super::partitions::Partitions;
use super::respond::{answer_waiting, heartbeat_answer, reconcile_member};
use super::target;
use super::twins;
use crate::coordinator::api::{GroupResponse, Millis, ReplyTo, RequestContext};
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{RebalanceReason, RemovalReason};
use crate::coordinator::responses;

/// Epoch of a leave (`LEAVE_GROUP_MEMBER_EPOCH`).
pub const LEAVE_EPOCH: i32 = -1;
/// Epoch of a static member's temporary leave (`LEAVE_GROUP_STATIC_MEMBER_EPOCH`).
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// A refusal: the error and Kafka's message.
pub type Refusal = (ResponseError, String);

fn refuse(error: ResponseError, message: impl Into<String>) -> Refusal {
    (error, message.into())
}

/// Kafka's request checks (`throwIfConsumerGroupHeartbeatRequestIsInvalid`), before any
/// state is read.
pub(crate) fn validate(
    ctx: &Ctx<'_>,
    api_version: i16,
    request: &ConsumerGroupHeartbeatRequest,
) -> Result<(), Refusal> {
    let invalid = |m: &str| Err(refuse(ResponseError::InvalidRequest, m));
    let epoch = request.member_epoch;
    if request.member_id.is_empty() && (api_version >= 1 || epoch > 0 || epoch == LEAVE_EPOCH) {
        return invalid("MemberId can't be empty.");
    }
    if request.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if request.instance_id.as_ref().is_some_and(|i| i.is_empty()) {
        return invalid("InstanceId can't be empty.");
    }
    if request.rack_id.as_ref().is_some_and(|r| r.is_empty()) {
        return invalid("RackId can't be empty.");
    }
    if epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if request
            .topic_partitions
            .as_ref()
            .is_none_or(|t| !t.is_empty())
        {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        let regex = api_version >= 1 && request.subscribed_topic_regex.is_some();
        if request.subscribed_topic_names.is_none() && !regex {
            return invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            );
        }
    } else if epoch == STATIC_LEAVE_EPOCH {
        if request.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if epoch < STATIC_LEAVE_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    if ctx.env.config.strict
        && let Some(name) = &request.server_assignor
        && ctx.env.strategies.canonical(name).is_none()
    {
        let supported: Vec<&str> = ctx
            .env
            .strategies
            .modules
            .keys()
            .map(String::as_str)
            .collect();
        return Err(refuse(
            ResponseError::UnsupportedAssignor,
            format!(
                "ServerAssignor {name} is not supported. Supported assignors: {}.",
                supported.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Answers `reply_to` with a refusal.
pub(crate) fn fail(ctx: &mut Ctx<'_>, reply_to: ReplyTo, (error, message): Refusal) {
    ctx.respond(
        reply_to,
        GroupResponse::ConsumerGroupHeartbeat(responses::consumer_heartbeat_error(
            error,
            Some(message),
        )),
    );
}

/// A leave (epoch -1, or -2 for a static member). The answer echoes the member id and epoch.
pub(crate) fn leave(
    ctx: &mut Ctx<'_>,
    group: Option<&mut Group>,
    group_id: &str,
    reply_to: ReplyTo,
    request: &ConsumerGroupHeartbeatRequest,
) {
    let Some(group) = group else {
        let message = format!("Group {group_id} not found.");
        return fail(
            ctx,
            reply_to,
            refuse(ResponseError::GroupIdNotFound, message),
        );
    };
    let member_id = request.member_id.as_str();
    let epoch = request.member_epoch;
    let id: Arc<str> = match &request.instance_id {
        None => match group.members.get_key_value(member_id) {
            Some((id, _)) => id.clone(),
            None => {
                let message = format!("Member {member_id} is not a member of group {group_id}.");
                return fail(
                    ctx,
                    reply_to,
                    refuse(ResponseError::UnknownMemberId, message),
                );
            }
        },
        Some(instance) => match group.static_members.get(instance.as_str()) {
            None => {
                let message = format!("Instance id {instance} is unknown.");
                return fail(
                    ctx,
                    reply_to,
                    refuse(ResponseError::UnknownMemberId, message),
                );
            }
            Some(owner) if &**owner != member_id => {
                let message = format!(
                    "Static member {member_id} with instance id {instance} was fenced by member {owner}."
                );
                return fail(
                    ctx,
                    reply_to,
                    refuse(ResponseError::FencedInstanceId, message),
                );
            }
            Some(owner) => owner.clone(),
        },
    };
    if epoch == STATIC_LEAVE_EPOCH {
        static_leave(ctx, group, &id);
    } else {
        let reason = RebalanceReason::MembersLeft {
            members: vec![(id.clone(), None)],
        };
        fence(ctx, group, &[id], RemovalReason::Left, reason);
    }
    let response = kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default()
        .with_member_id(Some(responses::s(member_id)))
        .with_member_epoch(epoch);
    ctx.respond(reply_to, GroupResponse::ConsumerGroupHeartbeat(response));
}

/// A heartbeat (epoch 0 to join or rejoin, else the member's epoch) of a group that exists.
pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    reply_to: ReplyTo,
    client: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) {
    let topics = ctx.env.topics.clone();
    let epoch = request.member_epoch;
    let owned: Option<Partitions> = request.topic_partitions.as_ref().map(|list| {
        Partitions::from_wire(
            &topics,
            list.iter()
                .map(|tp| (&tp.topic_id, tp.partitions.as_slice())),
        )
    });
    // A new regex is compiled before anything changes: a bad one refuses the request.
    let regex = match regex_update(&topics, &request) {
        Ok(update) => update,
        Err(refusal) => return fail(ctx, reply_to, refusal),
    };
    let mut member_id = request.member_id.to_string();
    if member_id.is_empty() {
        // v0 only (validated): the coordinator names the member.
        member_id = ctx.env.ids.uuid();
    }
    if group.members.len() >= ctx.env.config.max_group_size
        && !group.members.contains_key(member_id.as_str())
    {
        let message = format!(
            "The consumer group has reached its maximum capacity of {} members.",
            ctx.env.config.max_group_size
        );
        return fail(
            ctx,
            reply_to,
            refuse(ResponseError::GroupMaxSizeReached, message),
        );
    }
    let (id, joined) = match find_member(ctx, group, &member_id, &request, owned.as_ref(), client) {
        Ok(found) => found,
        Err(refusal) => return fail(ctx, reply_to, refusal),
    };

    // Update the member; null fields keep what it had.
    let assignor_changes = request
        .server_assignor
        .as_deref()
        .is_some_and(|a| group.members[&id].server_assignor.as_deref() != Some(a))
        || joined;
    let preferred_before = assignor_changes.then(|| group.preferred_assignor());
    let member = group.members.get_mut(&id).expect("found or added");
    // A classic member that heartbeats with the consumer protocol has upgraded (Kafka clears
    // its classic metadata the same way).
    member.classic = None;
    // Most heartbeats leave the subscription alone (both fields null): no sets to compare.
    let touches_subscription = request.subscribed_topic_names.is_some() || regex.is_some();
    let before: Option<(BTreeSet<String>, BTreeSet<String>, Option<String>)> = touches_subscription
        .then(|| {
            let topics = member.subscribed_topics().into_iter().map(str::to_owned);
            let pattern = member.regex.as_ref().map(|r| r.pattern.clone());
            (topics.collect(), member.topic_names.clone(), pattern)
        });
    if let Some(instance) = &request.instance_id {
        member.instance_id = Some(Arc::from(instance.as_str()));
    }
    if let Some(rack) = &request.rack_id {
        member.rack_id = Some(rack.to_string());
    }
    if request.rebalance_timeout_ms != -1 {
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(assignor) = &request.server_assignor {
        member.server_assignor = Some(assignor.to_string());
    }
    if let Some(names) = &request.subscribed_topic_names {
        member.topic_names = names.iter().map(|n| n.to_string()).collect();
    }
    if let Some(update) = regex {
        member.regex = update;
    }
    if member.client_id != client.client_id {
        member.client_id = client.client_id.clone();
    }
    if member.client_host != client.client_host {
        member.client_host = client.client_host.clone();
    }
    let subscription_changed = before.is_some_and(|(topics, names, pattern)| {
        let after: BTreeSet<&str> = member.subscribed_topics();
        member.topic_names != names
            || member.regex.as_ref().map(|r| &r.pattern) != pattern.as_ref()
            || !after.iter().copied().eq(topics.iter().map(String::as_str))
    });
    let assigned_before = member.current.assigned.clone();
    let had_waiting = member.waiting.is_some();

    let reason = if group.group_epoch == 0 || (joined && subscription_changed) {
        Some(RebalanceReason::MemberAdded { member: id.clone() })
    } else if subscription_changed {
        Some(RebalanceReason::SubscriptionChanged { member: id.clone() })
    } else {
        preferred_before
            .filter(|before| *before != group.preferred_assignor())
            .map(|_| RebalanceReason::AssignorChanged {
                assignor: group.preferred_assignor().unwrap_or_default(),
            })
    };
    let bumped = reason.is_some();
    if joined && epoch == 0 {
        let in_place = target::module_may_hold(ctx, group);
        twins::joined(ctx, group, &id, in_place);
    } else if twins::heard_from(ctx, group, &id) {
        target::maybe_start(ctx, group);
    }
    if let Some(reason) = reason {
        group.bump(ctx, reason);
        target::maybe_start(ctx, group);
    }
    let session = ctx.env.config.consumer_session_timeout_ms;
    let key = group.session_key(&id);
    ctx.schedule_in(key, session.max(0) as Millis);
    if had_waiting {
        // The client gave up on its waiting request and sent this one.
        answer_waiting(ctx, group, &id);
    }

    let full_request = request.rebalance_timeout_ms != -1
        && (request.subscribed_topic_names.is_some() || request.subscribed_topic_regex.is_some())
        && request.topic_partitions.is_some();
    let with_assignment = epoch == 0 || full_request;
    let wait = group.pending_run.is_some() && (bumped || group.assignment_epoch == 0);
    if wait {
        let waiting = Waiting {
            reply_to,
            join_version: None,
            for_epoch: group.group_epoch,
            owned,
            subscription_changed,
            with_assignment,
            assigned_before,
        };
        group.members.get_mut(&id).expect("present").waiting = Some(waiting);
        let key = group.wait_key(&id);
        ctx.schedule_in(key, ctx.env.config.consumer_assignment_wait_ms.max(1));
        return;
    }
    reconcile_member(ctx, group, &id, owned.as_ref(), subscription_changed);
    let response = heartbeat_answer(ctx, group, &id, with_assignment, &assigned_before);
    ctx.respond(reply_to, GroupResponse::ConsumerGroupHeartbeat(response));
}

/// The member the request is from (Kafka's `getOrMaybeSubscribe*ConsumerGroupMember`): an
/// existing one after the epoch check, a new one for epoch 0, or, for a static member whose
/// previous incarnation left with -2, its replacement. Returns its id and whether it joined
/// now.
fn find_member(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    member_id: &str,
    request: &ConsumerGroupHeartbeatRequest,
    owned: Option<&Partitions>,
    client: &RequestContext,
) -> Result<(Arc<str>, bool), Refusal> {
    let epoch = request.member_epoch;
    let create = epoch == 0;
    let group_id = group.id.clone();
    let Some(instance) = request.instance_id.as_deref() else {
        if let Some((id, member)) = group.members.get_key_value(member_id) {
            check_epoch(member, epoch, owned)?;
            return Ok((id.clone(), false));
        }
        if !create {
            return Err(refuse(
                ResponseError::UnknownMemberId,
                format!("Member {member_id} is not a member of group {group_id}."),
            ));
        }
        let id: Arc<str> = Arc::from(member_id);
        tracing::info!(group = %group_id, member = %id, "member joins the consumer group");
        group.add(Member::new(
            id.clone(),
            &client.client_id,
            &client.client_host,
        ));
        return Ok((id, true));
    };
    let existing = group.static_members.get(instance).cloned();
    match existing {
        None if create => {
            if let Some((id, member)) = group.members.get_key_value(member_id) {
                // A dynamic member becoming static keeps its place.
                check_epoch(member, epoch, owned)?;
                return Ok((id.clone(), false));
            }
            let id: Arc<str> = Arc::from(member_id);
            tracing::info!(group = %group_id, member = %id, instance, "static member joins the consumer group");
            let mut member = Member::new(id.clone(), &client.client_id, &client.client_host);
            member.instance_id = Some(Arc::from(instance));
            group.add(member);
            Ok((id, true))
        }
        None => Err(refuse(
            ResponseError::UnknownMemberId,
            format!("Instance id {instance} is unknown."),
        )),
        // The same incarnation rejoining with epoch 0 is a rejoin in place (KAFKA-19233, and
        // apache/kafka#23542 for static members), not a second incarnation.
        Some(owner) if &*owner == member_id => {
            check_epoch(&group.members[&owner], epoch, owned)?;
            Ok((owner, false))
        }
        Some(owner) if create => {
            let current = &group.members[&owner];
            if current.epoch() != STATIC_LEAVE_EPOCH {
                return Err(refuse(
                    ResponseError::UnreleasedInstanceId,
                    format!(
                        "Static member {member_id} with instance id {instance} cannot join the \
                         group because the instance id is owned by {owner} member."
                    ),
                ));
            }
            let id = replace(ctx, group, &owner, Arc::from(member_id));
            Ok((id, true))
        }
        Some(owner) => Err(refuse(
            ResponseError::FencedInstanceId,
            format!(
                "Static member {member_id} with instance id {instance} was fenced by member {owner}."
            ),
        )),
    }
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`, with KAFKA-19233's epoch-0 rejoin: a
/// newer epoch is fenced; an older one too, unless it is the previous epoch and the owned
/// partitions are a subset of the assigned ones (the answer that moved the epoch was lost).
fn check_epoch(member: &Member, epoch: i32, owned: Option<&Partitions>) -> Result<(), Refusal> {
    let stored = member.current.epoch;
    let fenced = |relation: &str| {
        Err(refuse(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a {relation} member epoch ({epoch}) than the one \
                 known by the group coordinator ({stored}). The member must abandon all its \
                 partitions and rejoin."
            ),
        ))
    };
    if epoch == 0 {
        return Ok(());
    }
    if epoch > stored {
        return fenced("greater");
    }
    if epoch < stored {
        let lost_answer = epoch == member.current.previous_epoch
            && owned.is_some_and(|o| o.is_subset(&member.current.assigned));
        if !lost_answer {
            return fenced("smaller");
        }
    }
    Ok(())
}

/// The member's new regex subscription, if the request changes it: `None` leaves it; `""`
/// clears it; a new pattern is compiled with full-match semantics (RE2/J's `matches()`) and
/// resolved against the catalog.
fn regex_update(
    topics: &crate::coordinator::view::Topics,
    request: &ConsumerGroupHeartbeatRequest,
) -> Result<Option<Option<Subscription>>, Refusal> {
    let Some(pattern) = request.subscribed_topic_regex.as_deref() else {
        return Ok(None);
    };
    if pattern.is_empty() {
        return Ok(Some(None));
    }
    let regex = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
        refuse(
            ResponseError::InvalidRegularExpression,
            format!("SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}."),
        )
    })?;
    let matched = resolve(&regex, topics);
    Ok(Some(Some(Subscription {
        pattern: pattern.to_owned(),
        regex: Arc::new(regex),
        matched,
    })))
}

/// The catalog topics a regex matches.
pub(crate) fn resolve(
    regex: &Regex,
    topics: &crate::coordinator::view::Topics,
) -> BTreeSet<String> {
    topics
        .keys()
        .filter(|t| regex.is_match(t))
        .cloned()
        .collect()
}
