//! A classic group to and from its record ([`ClassicGroupRecord`]): written at each
//! installed generation and when the group becomes Empty; read back at start, when a group
//! with members resumes Stable at its generation (heartbeat timers re-armed by the caller,
//! a deferred rebalance resumed by `stabilize::resume`).

use std::sync::Arc;

use assignor_sdk::TopicPartitions;
use bytes::Bytes;

use super::group::{Group, HISTORY_LEN, Mode, vote_key};
use super::member::Member;
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::saved::{
    AssignorRecord, ClassicGroupRecord, ClassicMemberRecord, DeferredRebalance, SavedGroup,
};
use crate::coordinator::view::StrategiesView;

impl Group {
    /// The group's record as it is now.
    pub fn snapshot(&self) -> SavedGroup {
        SavedGroup::Classic(self.record())
    }

    /// The group's record as it is now, before it is wrapped as a saved group.
    pub fn record(&self) -> ClassicGroupRecord {
        let group = self;
        let (strategy, pinned_version, cooperative) = match &group.mode {
            Mode::Host {
                strategy,
                pinned_version,
                cooperative,
            } => (Some(strategy.clone()), *pinned_version, *cooperative),
            Mode::Relay => (None, None, false),
        };
        // Members parked by stabilisation or an in-place round are not written: they never
        // had this generation.
        let parked = |m: &&Member| group.is_parked(&m.id);
        ClassicGroupRecord {
            group_id: group.id.to_string(),
            generation_id: group.generation_id,
            protocol_type: group.protocol_type.clone(),
            protocol_key: group.protocol_key.clone(),
            strategy,
            pinned_version,
            cooperative,
            leader_id: group.leader_id.as_ref().map(|l| l.to_string()),
            topic_counts: group
                .topic_counts
                .iter()
                .map(|(t, n)| (t.clone(), *n))
                .collect(),
            members: group
                .members
                .values()
                .filter(|m| !parked(m))
                .map(|m| ClassicMemberRecord {
                    member_id: m.id.to_string(),
                    group_instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    protocol_type: m.protocol_type.clone(),
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(n, b)| (n.clone(), serde_bytes::ByteBuf::from(b.to_vec())))
                        .collect(),
                    protocol_name: m.protocol_name.clone(),
                    assignment: serde_bytes::ByteBuf::from(m.assignment.to_vec()),
                    given: m
                        .given
                        .iter()
                        .map(|tp| (tp.topic.clone(), tp.partitions.clone()))
                        .collect(),
                })
                .collect(),
            deferred: group.stabilizing.as_ref().map(|w| DeferredRebalance {
                joined: w.joined,
                left: w.left,
            }),
            assignor: AssignorRecord {
                last_run: group.last_run.clone(),
                history: group.history.iter().cloned().collect(),
                module_state: group.module_state.clone(),
                held: group.held.clone(),
            },
        }
    }

    /// Rebuilds a live group: Stable when it has members (the generation resumes), else Empty.
    pub fn restore(snapshot: &ClassicGroupRecord, strategies: &StrategiesView) -> Group {
        let this = snapshot;
        let mut group = Group::new(Arc::from(this.group_id.as_str()));
        group.generation_id = this.generation_id;
        group.protocol_key = this.protocol_key.clone();
        group.mode = match &this.strategy {
            Some(strategy) => Mode::Host {
                strategy: strategy.clone(),
                pinned_version: this.pinned_version,
                cooperative: this.cooperative,
            },
            None => Mode::Relay,
        };
        group.topic_counts = this.topic_counts.iter().cloned().collect();
        let kept = &this.assignor;
        group.last_run = kept.last_run.clone();
        group.module_state = kept.module_state.clone();
        group.held = kept.held.clone();
        let skip = kept.history.len().saturating_sub(HISTORY_LEN);
        group.history = kept.history.iter().skip(skip).cloned().collect();
        for m in &this.members {
            let protocols: Vec<(String, Bytes)> = m
                .protocols
                .iter()
                .map(|(n, b)| (n.clone(), Bytes::from(b.to_vec())))
                .collect();
            let keys = protocols
                .iter()
                .map(|(n, _)| vote_key(strategies, n))
                .collect();
            group.add(Member {
                id: Arc::from(m.member_id.as_str()),
                group_instance_id: m.group_instance_id.as_deref().map(Arc::from),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: m.protocol_type.clone(),
                protocols,
                keys,
                protocol_name: m.protocol_name.clone(),
                assignment: Bytes::from(m.assignment.to_vec()),
                given: m
                    .given
                    .iter()
                    .map(|(topic, partitions)| TopicPartitions {
                        topic: topic.clone(),
                        partitions: partitions.clone(),
                    })
                    .collect(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
            });
        }
        group.protocol_type = this.protocol_type.clone();
        group.leader_id = this
            .leader_id
            .as_deref()
            .filter(|l| group.members.contains_key(*l))
            .map(Arc::from)
            .or_else(|| group.members.keys().next().cloned());
        // A restored group skips the transitions it went through before the restart.
        group.state = if group.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        group.previous_state = group.state;
        group
    }
}
