//! The consumer protocol (KIP-848) as a client speaks it: ConsumerGroupHeartbeat at v1 (what
//! librdkafka 2.12+ and the Java client send), a member that takes every assignment at once
//! and reports what it owns in its next heartbeat, and waits that poll heartbeats until the
//! state a scenario needs (never a fixed time: assignments come as the heartbeats go).

use std::collections::BTreeSet;
use std::time::Instant;

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};

use super::observe::shape;
use super::session::Session;
use crate::{DEADLINE, str, topic_name};

/// The version clients send.
pub const CGH_VERSION: i16 = 1;

impl Session {
    /// The first heartbeat of `member` (epoch 0) in group `g`, subscribed to `topics` by name,
    /// as librdkafka sends it: a member id of its own (v1 requires one), nothing owned.
    pub fn cgh_join_request(&self, member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(self.group_of(member))
            .with_member_id(str(&format!("{}-{member}", self.names.group_prefix)))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(
                topics.iter().map(|t| topic_name(&self.topic(t))).collect(),
            ))
            .with_topic_partitions(Some(Vec::new()))
    }

    /// A heartbeat of `member` at its epoch reporting what it owns (every other field null:
    /// unchanged).
    pub fn cgh_request(&self, member: &str) -> ConsumerGroupHeartbeatRequest {
        let owned = self.members_owned(member);
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(self.group_of(member))
            .with_member_id(str(&self.id(member)))
            .with_member_epoch(self.epoch(member))
            .with_rebalance_timeout_ms(-1)
            .with_topic_partitions(Some(owned))
    }

    /// Sends a ConsumerGroupHeartbeat as `member` and records it as `step`; on success the
    /// member takes the epoch and, as a client that reconciles at once, any assignment.
    pub async fn cgh(
        &mut self,
        member: &str,
        step: &str,
        request: &ConsumerGroupHeartbeatRequest,
    ) -> anyhow::Result<ConsumerGroupHeartbeatResponse> {
        let answer = self.call(member, step, request, CGH_VERSION).await?;
        self.adopt(member, &answer);
        Ok(answer)
    }

    /// Takes the epoch and any assignment of a successful answer to `member`, as a client
    /// that reconciles at once.
    pub fn adopt(&mut self, member: &str, answer: &ConsumerGroupHeartbeatResponse) {
        if answer.error_code != 0 {
            return;
        }
        let state = self.member(member);
        state.epoch = answer.member_epoch;
        if let Some(assignment) = &answer.assignment {
            state.owned = assignment
                .topic_partitions
                .iter()
                .map(|tp| (tp.topic_id, tp.partitions.iter().copied().collect()))
                .collect();
        }
    }

    /// Heartbeats as `member` (reporting what it owns) until `done` holds of its answer,
    /// then notes the member's epoch and what it owns as `step`. Each heartbeat is a round
    /// trip; a target that never gets there fails after [`DEADLINE`] with its last answer.
    pub async fn cgh_until(
        &mut self,
        member: &str,
        step: &str,
        done: impl Fn(&Session, &ConsumerGroupHeartbeatResponse) -> bool,
    ) -> anyhow::Result<ConsumerGroupHeartbeatResponse> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let request = self.cgh_request(member);
            let answer = self.call_quietly(member, &request, CGH_VERSION).await?;
            self.adopt(member, &answer);
            if done(self, &answer) {
                let owned = self.owned_shape(member);
                let epoch = self.epoch(member);
                self.note(
                    step,
                    vec![
                        ("error".to_owned(), answer.error_code.to_string()),
                        ("member_epoch".to_owned(), epoch.to_string()),
                        ("owned".to_owned(), owned),
                    ],
                );
                return Ok(answer);
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{}: {step}: still not there after {DEADLINE:?}; last answer {answer:?}",
                self.target
            );
        }
    }

    /// What `member` owns, as ConsumerGroupHeartbeat's TopicPartitions.
    fn members_owned(&self, member: &str) -> Vec<TopicPartitions> {
        self.owned(member)
            .into_iter()
            .map(|(topic, partitions)| {
                TopicPartitions::default()
                    .with_topic_id(topic)
                    .with_partitions(partitions.into_iter().collect())
            })
            .collect()
    }

    /// `(topic id, partitions)` `member` owns.
    pub fn owned(&self, member: &str) -> Vec<(uuid::Uuid, BTreeSet<i32>)> {
        self.member_state(member)
            .map(|m| m.owned.iter().map(|(t, ps)| (*t, ps.clone())).collect())
            .unwrap_or_default()
    }

    /// How many partitions `member` owns.
    pub fn owned_count(&self, member: &str) -> usize {
        self.owned(member).iter().map(|(_, ps)| ps.len()).sum()
    }

    /// `t:2`: what `member` owns, by the scenario's topic names.
    pub fn owned_shape(&self, member: &str) -> String {
        shape(
            self.owned(member)
                .into_iter()
                .map(|(t, ps)| (self.names.topic_id(t), ps.len()))
                .filter(|(_, n)| *n > 0),
        )
    }

    /// Notes, as `step`, whether `members` together own every partition of the scenario's
    /// topics exactly once, and the shapes of their shares, sorted (which member holds which
    /// partitions follows random member ids, and which partitions go together is the
    /// assignor's business, not the coordinator's).
    pub fn note_ownership(&mut self, step: &str, members: &[&str]) {
        let mut seen: Vec<(String, i32)> = Vec::new();
        let mut shares: Vec<String> = Vec::new();
        for member in members {
            for (topic, partitions) in self.owned(member) {
                let name = self.names.topic_id(topic);
                seen.extend(partitions.into_iter().map(|p| (name.clone(), p)));
            }
            shares.push(self.owned_shape(member));
        }
        shares.sort();
        let expected: usize = self.topics.values().map(|&n| n as usize).sum();
        seen.sort();
        let total = seen.len();
        seen.dedup();
        let once = seen.len() == total && total == expected;
        self.note(
            step,
            vec![
                ("every partition once".to_owned(), once.to_string()),
                ("shares".to_owned(), shares.join(" | ")),
            ],
        );
    }
}
