//! What the operator sees and changes (the admin API's group views): a group's detail with its
//! members, assignment, strategy, last assignor run and rebalance history; per-group strategy
//! overrides and parameters; operator-triggered rebalances; the request a rebalance would send.

use std::collections::BTreeMap;

use assignor_sdk::AssignRequest;
use serde::Serialize;

use super::api::CLASSIC;
use super::api::Millis;
use super::classic::group::Groups;
use super::classic::rebalance;
use super::classic::{GroupState, Mode, RebalanceRecord, RunRecord, build_request};
use super::config::{GroupConfig, MAX_STABILIZE_MS};
use super::context::{Ctx, Env};
use super::event::{Effect, RebalanceReason};
use super::held::Held;
use assignor_wire::consumer_protocol::{self, decode_assignment, decode_subscription};

/// One group in detail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupDetail {
    pub group_id: String,
    /// Kafka's `GroupType`: `classic` (JoinGroup/SyncGroup) or `consumer` (KIP-848).
    pub group_type: &'static str,
    /// The group's state as Kafka names it: a classic group's [`GroupState`], a consumer
    /// group's `Empty`, `Assigning`, `Reconciling` or `Stable`.
    pub state: String,
    pub generation: i32,
    pub protocol_type: Option<String>,
    /// The selected protocol (canonical name in host mode).
    pub protocol: Option<String>,
    /// `host` (the host assigns) or `relay` (a client leader assigns).
    pub mode: &'static str,
    /// The strategy (module) that computes the assignment, canonical name.
    pub strategy: Option<String>,
    /// Module version used for the current assignment.
    pub module_version: Option<u32>,
    pub config: GroupConfig,
    pub members: Vec<MemberDetail>,
    pub last_run: Option<RunRecord>,
    pub history: Vec<RebalanceRecord>,
    /// A consumer group's epochs, assignor choice and each member's reconciliation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<ConsumerDetail>,
    /// A classic group's rebalance deferred by stabilisation (`stabilize_ms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred_rebalance: Option<DeferredDetail>,
    /// Partitions of departed members that nobody has been given since they left (a module
    /// holding them for their owner, `hold-departed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldDetail>,
}

/// One departed member's partitions that wait without an owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldDetail {
    /// The member id it had; a returning consumer comes back under a new one.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Topic -> partitions.
    pub partitions: BTreeMap<String, Vec<i32>>,
    /// Since it left.
    pub held_ms: Millis,
    /// Until the module's follow-up, when the group rebalances to hand them out unless the
    /// module asks for longer (`None`: no follow-up is armed).
    pub until_in_ms: Option<Millis>,
}

/// A rebalance that waits for membership to settle: what changed, for how long, and when it
/// starts unless membership changes again. Members that joined are in `members` with no
/// assignment; members that left are gone already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeferredDetail {
    pub joined: usize,
    pub left: usize,
    pub waited_ms: Millis,
    pub starts_in_ms: Millis,
}

/// What a consumer group (KIP-848) has beyond a classic one: its epochs, which module
/// computes its targets and why, and where each member is towards its target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerDetail {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    /// The assignor the members name (`group.remote.assignor`), or the configured default.
    pub requested_assignor: String,
    /// No module serves `requested_assignor`: the fallback computes the targets.
    pub assignor_missing: bool,
    pub members: Vec<ConsumerMemberDetail>,
}

/// One consumer-group member's reconciliation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerMemberDetail {
    pub member_id: String,
    /// The protocol it speaks: `consumer` (ConsumerGroupHeartbeat) or `classic` (JoinGroup
    /// and SyncGroup, in a mixed group).
    pub member_protocol: &'static str,
    pub member_epoch: i32,
    /// Kafka's `MemberState`: `stable`, `unrevoked_partitions`, `unreleased_partitions`.
    pub state: &'static str,
    pub rack_id: Option<String>,
    pub subscribed_topic_regex: Option<String>,
    /// topic -> partitions the member is to own once reconciled.
    pub target: BTreeMap<String, Vec<i32>>,
    /// topic -> partitions it was asked to give up and has not yet.
    pub pending_revocation: BTreeMap<String, Vec<i32>>,
}

/// One member in detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberDetail {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub protocol_name: Option<String>,
    pub subscription: Vec<String>,
    /// topic -> partitions.
    pub assignment: BTreeMap<String, Vec<i32>>,
}

/// One line of the group list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupSummary {
    pub group_id: String,
    /// `classic` or `consumer`.
    pub group_type: &'static str,
    /// As in [`GroupDetail::state`].
    pub state: String,
    pub protocol_type: Option<String>,
    pub members: usize,
    pub strategy: Option<String>,
}

/// Why an admin operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("group {0} does not exist")]
    GroupNotFound(String),
    #[error("group {0} has no members to rebalance")]
    GroupEmpty(String),
    #[error("no module serves strategy {0}")]
    UnknownStrategy(String),
    #[error("a pinned version needs a strategy override")]
    PinWithoutStrategy,
    /// `stabilize_ms` / `stabilize_max_ms` out of their bounds; says what to write instead.
    #[error("{0}")]
    BadStabilize(String),
    /// Set by the driver when the change could not be stored.
    #[error("the change was applied but could not be stored: {0}")]
    Storage(String),
}

/// The detail of one group.
pub(crate) fn group_detail(
    env: &Env,
    groups: &Groups,
    group_id: &str,
    now: Millis,
) -> Option<GroupDetail> {
    let group = groups.get(group_id)?;
    let key = group.protocol_key.as_deref().unwrap_or("");
    let consumer = group.protocol_type.as_deref() == Some(consumer_protocol::PROTOCOL_TYPE);
    let (mode, strategy) = match &group.mode {
        Mode::Host { strategy, .. } => ("host", Some(strategy.clone())),
        Mode::Relay => ("relay", None),
    };
    let members = group
        .members
        .values()
        .map(|m| {
            let subscription = consumer
                .then(|| m.metadata_for(key))
                .flatten()
                .and_then(|b| decode_subscription(b).ok())
                .map(|s| s.topics)
                .unwrap_or_default();
            let partitions = match &group.mode {
                Mode::Host { .. } => m.given.clone(),
                Mode::Relay if consumer => decode_assignment(&m.assignment)
                    .map(|(p, _)| p)
                    .unwrap_or_default(),
                Mode::Relay => Vec::new(),
            };
            MemberDetail {
                member_id: m.id.to_string(),
                group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                protocol_name: m.protocol_name.clone(),
                subscription,
                assignment: partitions
                    .into_iter()
                    .map(|tp| (tp.topic, tp.partitions))
                    .collect(),
            }
        })
        .collect();
    Some(GroupDetail {
        group_id: group_id.to_string(),
        group_type: CLASSIC,
        state: group.state.as_str().to_owned(),
        generation: group.generation_id,
        protocol_type: group.protocol_type.clone(),
        protocol: group.protocol_key.clone(),
        mode,
        strategy,
        module_version: group.last_run.as_ref().and_then(|r| r.version),
        config: env.config_of(group_id),
        members,
        last_run: group.last_run.clone(),
        history: group.history.iter().cloned().collect(),
        consumer: None,
        deferred_rebalance: group.stabilizing.as_ref().map(|w| DeferredDetail {
            joined: w.joined,
            left: w.left,
            waited_ms: now.saturating_sub(w.since),
            starts_in_ms: w.due.saturating_sub(now),
        }),
        held: held_details(env, &group.held, group.follow_up_at, now),
    })
}

/// Describe's held records of either group type: for how long they have waited, and until the
/// module's follow-up (`follow_up_at`, coordinator time).
pub(crate) fn held_details(
    env: &Env,
    held: &[Held],
    follow_up_at: Option<Millis>,
    now: Millis,
) -> Vec<HeldDetail> {
    held.iter()
        .map(|h| HeldDetail {
            member_id: h.member_id.clone(),
            group_instance_id: h.group_instance_id.clone(),
            client_id: h.client_id.clone(),
            client_host: h.client_host.clone(),
            partitions: h
                .partitions
                .iter()
                .map(|tp| (tp.topic.clone(), tp.partitions.clone()))
                .collect(),
            held_ms: env.clock_ms(now).saturating_sub(h.since_ms),
            until_in_ms: follow_up_at.map(|at| at.saturating_sub(now)),
        })
        .collect()
}

/// Every group of a shard, sorted by id.
pub(crate) fn group_summaries(groups: &Groups) -> Vec<GroupSummary> {
    let mut all: Vec<GroupSummary> = groups
        .values()
        .map(|g| GroupSummary {
            group_id: g.id.to_string(),
            group_type: CLASSIC,
            state: g.state.as_str().to_owned(),
            protocol_type: g.protocol_type.clone(),
            members: g.members.len(),
            strategy: match &g.mode {
                Mode::Host { strategy, .. } => Some(strategy.clone()),
                Mode::Relay => None,
            },
        })
        .collect();
    all.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    all
}

/// Sets a group's operator configuration (persisted). It applies at the group's next
/// rebalance; none is forced. The group need not exist yet.
pub(crate) fn set_group_config(
    env: &mut Env,
    group_id: &str,
    config: GroupConfig,
) -> Result<Vec<Effect>, AdminError> {
    check_group_config(&config)?;
    let config = match &config.strategy {
        Some(s) => {
            let canonical = env
                .strategies
                .canonical(s)
                .ok_or_else(|| AdminError::UnknownStrategy(s.clone()))?
                .to_string();
            GroupConfig {
                strategy: Some(canonical),
                ..config
            }
        }
        None => config,
    };
    env.configs.insert(group_id.to_string(), config.clone());
    Ok(vec![Effect::PersistGroupConfig {
        group_id: group_id.to_string(),
        config,
    }])
}

/// The checks of a group's settings that need no module: a pin names a strategy, and the
/// stabilisation window is within bounds. (A cluster's node runs them before it writes the
/// settings to the module log, for every node to apply.)
pub fn check_group_config(config: &GroupConfig) -> Result<(), AdminError> {
    if config.pinned_version.is_some() && config.strategy.is_none() {
        return Err(AdminError::PinWithoutStrategy);
    }
    check_stabilize(config)
}

/// `stabilize_ms` within 1 ms..[`MAX_STABILIZE_MS`], and `stabilize_max_ms` only with it and
/// not below it.
fn check_stabilize(config: &GroupConfig) -> Result<(), AdminError> {
    let bad = |m: String| Err(AdminError::BadStabilize(m));
    match (config.stabilize_ms, config.stabilize_max_ms) {
        (None, None) => Ok(()),
        (None, Some(_)) => {
            bad("stabilize_max_ms bounds the wait of stabilize_ms: set stabilize_ms too".into())
        }
        (Some(0), _) => {
            bad("stabilize_ms must be at least 1; leave it out to rebalance at once".into())
        }
        (Some(ms), _) if ms > MAX_STABILIZE_MS => bad(format!(
            "stabilize_ms {ms} is over the limit of {MAX_STABILIZE_MS} (10 minutes): a \
             departed member's partitions have no owner for the whole wait"
        )),
        (Some(ms), Some(max)) if max < ms => bad(format!(
            "stabilize_max_ms {max} is below stabilize_ms {ms}: the longest wait cannot be \
             shorter than the quiet window"
        )),
        _ => Ok(()),
    }
}

/// Starts a rebalance of a group with members (members learn of it from Heartbeat).
pub(crate) fn trigger_rebalance(
    ctx: &mut Ctx<'_>,
    groups: &mut Groups,
    group_id: &str,
    why: Option<String>,
) -> Result<(), AdminError> {
    let group = groups
        .get_mut(group_id)
        .ok_or_else(|| AdminError::GroupNotFound(group_id.to_string()))?;
    match group.state {
        GroupState::Empty | GroupState::Dead => {
            return Err(AdminError::GroupEmpty(group_id.to_string()));
        }
        GroupState::PreparingRebalance => {}
        GroupState::CompletingRebalance | GroupState::Stable => {
            rebalance::prepare(ctx, group, RebalanceReason::Operator { why });
        }
    }
    Ok(())
}

/// The request a rebalance of `group_id` with `strategy` would send now (for simulate).
pub(crate) fn assign_request(
    env: &Env,
    groups: &Groups,
    now: Millis,
    group_id: &str,
    strategy: &str,
) -> Option<AssignRequest> {
    let group = groups.get(group_id)?;
    if group.members.is_empty() {
        return None;
    }
    let params = env.config_of(group_id).params;
    let (request, _, _) = build_request(
        group,
        &env.topics,
        params,
        strategy,
        group.generation_id + 1,
        env.clock_ms(now),
    );
    Some(request)
}
