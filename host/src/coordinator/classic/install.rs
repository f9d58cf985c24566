//! Installing a generation's assignment, the one way a classic group becomes Stable: every
//! member's Assignment bytes set, the group persisted, the parked SyncGroups answered, the
//! generation recorded in the history. Two sources: the host's checked assignor output
//! ([`install_assigned`]) and a client leader's SyncGroup in relay mode ([`install_relayed`]).

use std::collections::HashMap;
use std::sync::Arc;

use assignor_sdk::{Answer, AssignRequest, TopicPartitions};
use bytes::Bytes;
use kafka_protocol::messages::SyncGroupRequest;

use super::group::{Group, HISTORY_LEN, Mode};
use crate::coordinator::api::{GroupResponse, Millis};
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::Ctx;
use crate::coordinator::event::Notice;
use crate::coordinator::record::{RebalanceRecord, RunRecord};
use crate::coordinator::responses;
use crate::coordinator::run::Run;
use crate::coordinator::saved::ModuleState;
use assignor_wire::consumer_protocol::{self, encode_assignment};

/// Installs a checked assignment of the host's: encodes every member's Assignment (with the
/// member's Subscription version; raw bytes for other protocol types), counts the partitions
/// that changed owner since the previous generation (the request's previous assignments), and
/// goes Stable. A module's `rebalance_after_ms` arms the follow-up. `answer` is by positions in
/// `run.request`, which the checks guaranteed.
pub(crate) fn install_assigned(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    run: &Run,
    mut answer: Answer,
    record: RunRecord,
) {
    let request = &run.request;
    let entry_of = answer.entry_of(request.members.len());
    let consumer = group.protocol_type.as_deref() == Some(consumer_protocol::PROTOCOL_TYPE);
    let before = PreviousOwners::new(request);
    let mut moved = 0u64;
    for (m, (abi, version)) in request.members.iter().zip(run.versions.iter()).enumerate() {
        let Some(member) = group.members.get_mut(abi.member_id.as_str()) else {
            continue;
        };
        let given = Given::of(&answer, entry_of[m]);
        for (t, list) in &given.positions {
            moved += list.iter().filter(|&&p| before.moved(*t, p, m)).count() as u64;
        }
        (member.assignment, member.given) = given.encode(request, *version, consumer);
    }
    let strategy = record.module.clone();
    let version = record.version;
    if !run.fallback && strategy == run.strategy {
        // The selected module answered: what it keeps replaces what it kept. A fallback's
        // round leaves the module's state as it was, for the module's next round.
        group.module_state = ModuleState::from_answer(&strategy, answer.state.take());
    }
    group.last_run = Some(record);
    group.refresh_held(&ctx.env.topics);
    group.follow_up_at = answer
        .rebalance_after_ms
        .map(|ms| ctx.now.saturating_add(ms));
    // Before the snapshot `stabilize` writes, so the kept state is persisted with it.
    stabilize(ctx, group, Some(strategy), version, moved);
    ctx.follow_up(&group.id, answer.rebalance_after_ms);
    tracing::info!(group = %group.id, generation = group.generation_id, module = %run.strategy,
        partitions_moved = moved, "assignment installed");
}

/// What an answer gives one member: its partitions by topic position (in name order, each list
/// sorted), its user data and its raw assignment bytes.
pub(crate) struct Given<'a> {
    pub(crate) positions: Vec<(u32, Vec<i32>)>,
    user_data: Option<&'a [u8]>,
    metadata: Option<&'a [u8]>,
}

impl<'a> Given<'a> {
    /// The member whose answer entry is `entry` (`None`: the answer left it out, so nothing).
    pub(crate) fn of(answer: &'a Answer, entry: Option<u32>) -> Given<'a> {
        let mut positions: Vec<(u32, Vec<i32>)> = Vec::new();
        let (mut user_data, mut metadata) = (None, None);
        if let Some(i) = entry {
            let entry = &answer.entries()[i as usize];
            (user_data, metadata) = (entry.user_data.as_deref(), entry.metadata.as_deref());
            for (t, list) in answer.topics(i as usize) {
                match positions.iter_mut().find(|(seen, _)| *seen == t) {
                    Some((_, kept)) => kept.extend_from_slice(list),
                    None if !list.is_empty() => positions.push((t, list.to_vec())),
                    None => {}
                }
            }
        }
        // Topic positions are in name order (the host sorts the request's topics).
        positions.sort_unstable_by_key(|(t, _)| *t);
        for (_, list) in &mut positions {
            list.sort_unstable();
        }
        Given {
            positions,
            user_data,
            metadata,
        }
    }

    /// The member's Assignment bytes (at its Subscription `version` for the `consumer` protocol
    /// type, the raw bytes for others) and its partitions by topic name.
    pub(crate) fn encode(
        self,
        request: &AssignRequest,
        version: Option<i16>,
        consumer: bool,
    ) -> (Bytes, Vec<TopicPartitions>) {
        let partitions: Vec<TopicPartitions> = self
            .positions
            .into_iter()
            .map(|(t, list)| TopicPartitions {
                topic: request.topics[t as usize].name.clone(),
                partitions: list,
            })
            .collect();
        let bytes = if consumer {
            encode_assignment(version.unwrap_or(0), &partitions, self.user_data)
        } else {
            self.metadata
                .map(Bytes::copy_from_slice)
                .unwrap_or_default()
        };
        (bytes, partitions)
    }
}

/// Who held each partition in the previous generation, by topic and member position in a
/// request (its members' `previous_assignment`): flat arrays, no name looked up per partition.
pub(crate) struct PreviousOwners {
    /// Per topic position, per partition, the member position + 1; 0 for nobody.
    owners: Vec<Vec<u32>>,
}

impl PreviousOwners {
    pub(crate) fn new(request: &AssignRequest) -> PreviousOwners {
        let mut owners: Vec<Vec<u32>> = vec![Vec::new(); request.topics.len()];
        for (m, member) in request.members.iter().enumerate() {
            for tp in &member.previous_assignment {
                let Some(t) = request.topic_index(&tp.topic) else {
                    continue;
                };
                let slots = &mut owners[t];
                if slots.is_empty() {
                    let count = usize::try_from(request.topics[t].partition_count).unwrap_or(0);
                    slots.resize(count, 0);
                }
                for &p in &tp.partitions {
                    if let Some(slot) = usize::try_from(p).ok().and_then(|p| slots.get_mut(p)) {
                        *slot = m as u32 + 1;
                    }
                }
            }
        }
        PreviousOwners { owners }
    }

    /// Whether partition `p` of the topic at `t`, now given to member `m`, was another
    /// member's.
    pub(crate) fn moved(&self, t: u32, p: i32, m: usize) -> bool {
        let owner = usize::try_from(p)
            .ok()
            .and_then(|p| self.owners.get(t as usize)?.get(p).copied())
            .unwrap_or(0);
        owner != 0 && owner as usize != m + 1
    }
}

/// Relay mode: the leader's assignments become every member's bytes (empty for a member the
/// leader left out, as Kafka does).
pub(crate) fn install_relayed(ctx: &mut Ctx<'_>, group: &mut Group, request: &SyncGroupRequest) {
    let by_member: HashMap<&str, &Bytes> = request
        .assignments
        .iter()
        .map(|a| (a.member_id.as_str(), &a.assignment))
        .collect();
    for member in group.members.values_mut() {
        member.assignment = by_member
            .get(&*member.id)
            .map(|b| (*b).clone())
            .unwrap_or_default();
    }
    stabilize(ctx, group, None, None, 0);
}

/// Persists the group (before the answers, as Kafka answers after the write), goes Stable,
/// answers the parked SyncGroups and records the generation.
fn stabilize(
    ctx: &mut Ctx<'_>,
    group: &mut Group,
    strategy: Option<String>,
    module_version: Option<u32>,
    partitions_moved: u64,
) {
    // Recorded first, so the snapshot holds this generation's record too.
    record_generation(
        group,
        ctx.now,
        strategy.clone(),
        module_version,
        partitions_moved,
    );
    ctx.persist(group.snapshot());
    group.transition(GroupState::Stable, ctx);
    propagate_assignment(ctx, group);
    ctx.notice(Notice::GenerationCompleted {
        group: group.id.clone(),
        generation: group.generation_id,
        members: group.members.len(),
        protocol: group.protocol_key.clone(),
        strategy,
    });
}

/// Answers every parked SyncGroup with the member's assignment and re-arms its session (a
/// member that waited in SyncGroup had no heartbeat expectation).
fn propagate_assignment(ctx: &mut Ctx<'_>, group: &mut Group) {
    let ids: Vec<Arc<str>> = group
        .members
        .values()
        .filter(|m| m.awaiting_sync.is_some())
        .map(|m| m.id.clone())
        .collect();
    for id in ids {
        let member = group.members.get_mut(&id).expect("listed");
        let parked = member.awaiting_sync.take().expect("filtered");
        let session = member.session_timeout_ms.max(0) as Millis;
        let response = responses::sync(
            parked.api_version,
            0,
            group.protocol_type.as_deref(),
            protocol_name_for(group, &id),
            group.members[&id].assignment.clone(),
        );
        ctx.respond(parked.reply_to, GroupResponse::SyncGroup(response));
        group.reschedule_heartbeat(&id, session, ctx);
    }
}

/// The protocol name `member_id` was given: its own spelling in host mode, the group's in relay.
pub(crate) fn protocol_name_for<'a>(group: &'a Group, member_id: &str) -> Option<&'a str> {
    match group.mode {
        Mode::Host { .. } => group
            .members
            .get(member_id)
            .and_then(|m| m.protocol_name.as_deref()),
        Mode::Relay => group.protocol_key.as_deref(),
    }
}

/// Notes a completed generation in the history (at most [`HISTORY_LEN`] kept).
fn record_generation(
    group: &mut Group,
    now: Millis,
    strategy: Option<String>,
    module_version: Option<u32>,
    partitions_moved: u64,
) {
    let record = RebalanceRecord {
        generation: group.generation_id,
        reason: group.rebalance_reason.as_ref().map(ToString::to_string),
        strategy,
        module_version,
        members: group.members.len(),
        duration_ms: now.saturating_sub(group.rebalance_started_at),
        partitions_moved,
        fallback_used: group.fallback_used,
        in_place: false,
    };
    group.history.push_back(record);
    while group.history.len() > HISTORY_LEN {
        group.history.pop_front();
    }
}
