//! The persisted shape of a group and of its offsets, and the conversions from and to the live
//! [`Group`]. A snapshot is written at each installed generation and when a group becomes
//! Empty, so a restart resumes stable groups without a rebalance.

use std::sync::Arc;

use assignor_sdk::TopicPartitions;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::group::{Committed, Group, Mode};
use super::member::Member;
use super::state::GroupState;
use super::view::StrategiesView;

/// A group's metadata at one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSnapshot {
    pub group_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_key: Option<String>,
    /// `None` for relay mode (a client leader assigned).
    pub strategy: Option<String>,
    pub pinned_version: Option<u32>,
    pub cooperative: bool,
    pub leader_id: Option<String>,
    pub topic_counts: Vec<(String, i32)>,
    pub members: Vec<MemberSnapshot>,
}

/// A member's persisted state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSnapshot {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, serde_bytes::ByteBuf)>,
    pub protocol_name: Option<String>,
    pub assignment: serde_bytes::ByteBuf,
    pub given: Vec<(String, Vec<i32>)>,
}

/// One committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

impl GroupSnapshot {
    /// The snapshot of `group` as it is now.
    pub fn of(group: &Group) -> GroupSnapshot {
        let (strategy, pinned_version, cooperative) = match &group.mode {
            Mode::Host {
                strategy,
                pinned_version,
                cooperative,
            } => (Some(strategy.clone()), *pinned_version, *cooperative),
            Mode::Relay => (None, None, false),
        };
        GroupSnapshot {
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
                .map(|m| MemberSnapshot {
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
        }
    }

    /// Rebuilds a live group: Stable when it has members (the generation resumes), else Empty.
    pub fn restore(&self, strategies: &StrategiesView) -> Group {
        let mut group = Group::new(Arc::from(self.group_id.as_str()));
        group.generation_id = self.generation_id;
        group.protocol_key = self.protocol_key.clone();
        group.mode = match &self.strategy {
            Some(strategy) => Mode::Host {
                strategy: strategy.clone(),
                pinned_version: self.pinned_version,
                cooperative: self.cooperative,
            },
            None => Mode::Relay,
        };
        group.topic_counts = self.topic_counts.iter().cloned().collect();
        for m in &self.members {
            let protocols: Vec<(String, Bytes)> = m
                .protocols
                .iter()
                .map(|(n, b)| (n.clone(), Bytes::from(b.to_vec())))
                .collect();
            let keys = protocols
                .iter()
                .map(|(n, _)| super::group::vote_key(strategies, n))
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
        group.protocol_type = self.protocol_type.clone();
        group.leader_id = self
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

impl OffsetRecord {
    pub fn committed(&self) -> Committed {
        Committed {
            offset: self.offset,
            leader_epoch: self.leader_epoch,
            metadata: self.metadata.clone(),
        }
    }
}
