//! A consumer group to and from its record ([`ConsumerGroupRecord`]), and when it is written.
//!
//! **When.** A change that matters after a restart (a member added, removed or reconciled,
//! the group epoch moved, a target installed) marks the group dirty; the first such change
//! arms a timer of [`PERSIST_DELAY_MS`], and when it fires the whole group is written once.
//! So a thousand members joining in a second cost one write, not a thousand, and a steady
//! heartbeat writes nothing. A crash loses at most the last second: a member whose epoch
//! moved in it is fenced after the restart (FENCED_MEMBER_EPOCH) and rejoins, as it would
//! have without any persistence; a clean shutdown writes every dirty group first.
//!
//! **Restore.** Members resume where they were, each with a full session from the restart;
//! a member that was revoking gets its rebalance timeout again; an epoch with no target yet
//! starts its computation.

use std::sync::Arc;

use regex::Regex;

use super::group::Group;
use super::heartbeat::resolve;
use super::member::{Classic, Current, Member, MemberState, Subscription};
use super::partitions::Partitions;
use super::{refresh, target};
use crate::coordinator::context::Ctx;
use crate::coordinator::event::TimerKey;
use crate::coordinator::saved::{
    AssignorRecord, ConsumerGroupRecord, ConsumerMemberRecord, SavedGroup,
};
use crate::coordinator::view::Topics;

/// How long after its first unwritten change a consumer group is written.
pub const PERSIST_DELAY_MS: u64 = 1_000;

fn pairs(partitions: &Partitions) -> Vec<(String, Vec<i32>)> {
    partitions
        .to_abi()
        .into_iter()
        .map(|tp| (tp.topic, tp.partitions))
        .collect()
}

fn from_pairs(pairs: &[(String, Vec<i32>)]) -> Partitions {
    Partitions::from_pairs(pairs.iter().map(|(t, ps)| (t.as_str(), ps.as_slice())))
}

fn state_of(name: &str) -> MemberState {
    match name {
        "unrevoked_partitions" => MemberState::UnrevokedPartitions,
        "unreleased_partitions" => MemberState::UnreleasedPartitions,
        _ => MemberState::Stable,
    }
}

impl Group {
    /// The group's record as it is now.
    pub fn snapshot(&self) -> SavedGroup {
        let members = self
            .members
            .values()
            .map(|m| ConsumerMemberRecord {
                member_id: m.id.to_string(),
                instance_id: m.instance_id.as_ref().map(|i| i.to_string()),
                rack_id: m.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                topic_names: m.topic_names.iter().cloned().collect(),
                topic_regex: m.regex.as_ref().map(|r| r.pattern.clone()),
                server_assignor: m.server_assignor.clone(),
                member_epoch: m.current.epoch,
                previous_member_epoch: m.current.previous_epoch,
                state: m.current.state.as_str().to_owned(),
                assigned: pairs(&m.current.assigned),
                pending_revocation: pairs(&m.current.pending_revocation),
                target: pairs(&m.target),
                classic: m
                    .classic
                    .as_ref()
                    .map(|c| (c.session_timeout_ms, c.protocols.clone(), c.version)),
            })
            .collect();
        SavedGroup::Consumer(ConsumerGroupRecord {
            group_id: self.id.to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            members,
            topics: self
                .topic_signature
                .iter()
                .map(|(name, (id, count))| (name.clone(), *id, *count))
                .collect(),
            assignor: AssignorRecord {
                last_run: self.last_run.clone(),
                history: self.history.iter().cloned().collect(),
                module_state: self.module_state.clone(),
                held: self.held.clone(),
            },
        })
    }

    /// Rebuilds a live group from its record; regexes are compiled again and matched against
    /// `topics` (a pattern that no longer compiles subscribes to nothing).
    pub fn restore(state: &ConsumerGroupRecord, topics: &Topics) -> Group {
        let mut group = Group::new(Arc::from(state.group_id.as_str()));
        group.group_epoch = state.group_epoch;
        group.assignment_epoch = state.assignment_epoch;
        group.last_run = state.assignor.last_run.clone();
        group.module_state = state.assignor.module_state.clone();
        group.held = state.assignor.held.clone();
        group.topic_signature = state
            .topics
            .iter()
            .map(|(name, id, count)| (name.clone(), (*id, *count)))
            .collect();
        group.history = state.assignor.history.iter().cloned().collect();
        for m in &state.members {
            let mut member = Member::new(
                Arc::from(m.member_id.as_str()),
                &m.client_id,
                &m.client_host,
            );
            member.instance_id = m.instance_id.as_deref().map(Arc::from);
            member.rack_id = m.rack_id.clone();
            member.rebalance_timeout_ms = m.rebalance_timeout_ms;
            member.topic_names = m.topic_names.iter().cloned().collect();
            member.regex = m.topic_regex.as_ref().and_then(|pattern| {
                let regex = Regex::new(&format!("^(?:{pattern})$")).ok()?;
                let matched = resolve(&regex, topics);
                Some(Subscription {
                    pattern: pattern.clone(),
                    regex: Arc::new(regex),
                    matched,
                })
            });
            member.server_assignor = m.server_assignor.clone();
            member.current = Current {
                epoch: m.member_epoch,
                previous_epoch: m.previous_member_epoch,
                state: state_of(&m.state),
                assigned: from_pairs(&m.assigned),
                pending_revocation: from_pairs(&m.pending_revocation),
            };
            member.target = from_pairs(&m.target);
            member.classic = m
                .classic
                .as_ref()
                .map(|(session, protocols, version)| Classic {
                    session_timeout_ms: *session,
                    protocols: protocols.clone(),
                    version: *version,
                });
            group.add(member);
        }
        group.dirty = false;
        group
    }
}

/// Arms the group's write if it changed and none is armed.
pub(crate) fn arm(ctx: &mut Ctx<'_>, group: &mut Group) {
    if group.dirty && !group.persist_armed {
        group.persist_armed = true;
        let key = TimerKey::Persist {
            group: group.id.clone(),
        };
        ctx.schedule_in(key, PERSIST_DELAY_MS);
    }
}

/// The write is due: the group as it is now, if it changed since the last one.
pub(crate) fn write(ctx: &mut Ctx<'_>, group: &mut Group) {
    group.persist_armed = false;
    if group.dirty {
        group.dirty = false;
        ctx.persist(group.snapshot());
    }
}

/// A group read back from the store: every member gets a full session from now (its own
/// timeout for a classic member), one that was revoking its rebalance timeout again, and the
/// target of an epoch that had none is computed; the catalog may have changed meanwhile.
pub(crate) fn resume(ctx: &mut Ctx<'_>, group: &mut Group) {
    let ids: Vec<Arc<str>> = group.members.keys().cloned().collect();
    for id in &ids {
        let member = group.members.get_mut(id).expect("listed");
        let session = member.session_timeout_ms(ctx.env.config.consumer_session_timeout_ms);
        let revoking = member.current.state == MemberState::UnrevokedPartitions;
        if revoking {
            member.revoking_at = Some(member.current.epoch);
        }
        let rebalance = member.rebalance_timeout_ms.max(0) as crate::coordinator::api::Millis;
        ctx.schedule_in(
            group.session_key(id),
            session.max(0) as crate::coordinator::api::Millis,
        );
        if revoking {
            ctx.schedule_in(group.revocation_key(id), rebalance);
        }
    }
    refresh::check_topics(ctx, group);
    target::maybe_start(ctx, group);
    tracing::info!(group = %group.id, epoch = group.group_epoch, members = ids.len(),
        "consumer group restored");
}
