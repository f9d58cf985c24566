//! The classic protocol as a consumer speaks it: requests with a client's defaults for a
//! named member, the two-step join, SyncGroup as a client library does it (a member told it
//! leads sends an assignment: [`super::leader`]), heartbeats until a rebalance, and the
//! rounds of a consumer that rejoins when told to.

use std::time::Instant;

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    OffsetCommitRequest, SyncGroupRequest, SyncGroupResponse,
};

use super::session::Session;
use crate::{DEADLINE, str, subscription, topic_name};

/// The session and rebalance timeouts of every member unless a scenario says otherwise
/// (within Kafka's default bounds, 6000-1800000, which the host shares).
pub const SESSION_TIMEOUT_MS: i32 = 30_000;
/// The protocol every member proposes unless a scenario says otherwise: a built-in module of
/// the host (so the host assigns) and a strategy Kafka's clients know.
pub const RANGE: &str = "range";

impl Session {
    /// JoinGroup as `member` with its current id, for the scenario's group `g`, proposing
    /// `range` over every topic of the scenario (ConsumerProtocolSubscription v3, as Java
    /// 4.x clients send it).
    pub fn join_request(&self, member: &str) -> JoinGroupRequest {
        let topics: Vec<String> = self.topics.keys().map(|t| self.topic(t)).collect();
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        JoinGroupRequest::default()
            .with_group_id(self.group_of(member))
            .with_group_instance_id(self.instance(member))
            .with_session_timeout_ms(SESSION_TIMEOUT_MS)
            .with_rebalance_timeout_ms(SESSION_TIMEOUT_MS)
            .with_member_id(str(&self.id(member)))
            .with_protocol_type(str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(str(RANGE))
                    .with_metadata(subscription(&topics, 3)),
            ])
    }

    /// Sends `request` as `member` and records it as `step`; on success the member takes
    /// the generation.
    pub async fn join(
        &mut self,
        member: &str,
        step: &str,
        request: &JoinGroupRequest,
        version: i16,
    ) -> anyhow::Result<JoinGroupResponse> {
        let answer = self.call(member, step, request, version).await?;
        self.joined(member, &answer);
        Ok(answer)
    }

    /// The whole join of a new member at `version`: from v4 the first JoinGroup of a dynamic
    /// member is answered MEMBER_ID_REQUIRED with an id and the second carries it. Both answers are recorded
    /// (`<step> (id)` and `<step>`). For a member that joins alone or rejoins: the answer is
    /// not parked behind another member.
    pub async fn join_group(
        &mut self,
        member: &str,
        step: &str,
        version: i16,
    ) -> anyhow::Result<JoinGroupResponse> {
        let pending = self.send_join_group(member, step, version).await?;
        self.receive_join(member, step, pending).await
    }

    /// As [`Session::join_group`], leaving the final JoinGroup unanswered (it waits for the
    /// other members): collect it with [`Session::receive_join`].
    pub async fn send_join_group(
        &mut self,
        member: &str,
        step: &str,
        version: i16,
    ) -> anyhow::Result<super::session::Pending<JoinGroupRequest>> {
        let mut request = self.join_request(member);
        if version == 0 {
            request.rebalance_timeout_ms = -1;
        }
        if version >= 4 && self.id(member).is_empty() && request.group_instance_id.is_none() {
            let first = self
                .join(member, &format!("{step} (id)"), &request, version)
                .await?;
            anyhow::ensure!(first.error_code == 79, "{}: {step}: {first:?}", self.target);
            request.member_id = first.member_id;
        }
        self.send(member, &request, version).await
    }

    pub async fn receive_join(
        &mut self,
        member: &str,
        step: &str,
        pending: super::session::Pending<JoinGroupRequest>,
    ) -> anyhow::Result<JoinGroupResponse> {
        let answer = self.receive(step, pending).await?;
        self.joined(member, &answer);
        Ok(answer)
    }

    /// Takes the generation and protocol of a successful JoinGroup answer to `member`.
    fn joined(&mut self, member: &str, answer: &JoinGroupResponse) {
        if answer.error_code == 0 {
            let state = self.member(member);
            state.generation = answer.generation_id;
            state.protocol = answer.protocol_name.as_ref().map(|p| p.to_string());
        }
    }

    /// SyncGroup as `member` at its generation, naming the protocol it joined with, with no
    /// assignments (a follower's).
    pub fn sync_request(&self, member: &str) -> SyncGroupRequest {
        let joined = self
            .member_state(member)
            .and_then(|m| m.protocol.as_deref());
        let protocol = joined.unwrap_or(RANGE);
        SyncGroupRequest::default()
            .with_group_id(self.group_of(member))
            .with_group_instance_id(self.instance(member))
            .with_generation_id(self.generation(member))
            .with_member_id(str(&self.id(member)))
            .with_protocol_type(Some(str("consumer")))
            .with_protocol_name(Some(str(protocol)))
    }

    /// Every member's SyncGroup after the join answers `joined`, as clients send them: all
    /// sent, then all answers read (on Kafka a follower's waits for the leader's). A member
    /// that `joined` names leader, with the member list, sends a range assignment of it.
    pub async fn sync_group(
        &mut self,
        step: &str,
        joined: &[(&str, &JoinGroupResponse)],
        version: i16,
    ) -> anyhow::Result<Vec<SyncGroupResponse>> {
        let mut pending = Vec::new();
        for (member, join) in joined {
            let request = self.sync_after(member, join);
            pending.push((*member, self.send(member, &request, version).await?));
        }
        let mut answers = Vec::new();
        for (member, p) in pending {
            let answer = self.receive(&format!("{step} {member}"), p).await?;
            self.member(member).assignment = answer.assignment.clone();
            answers.push(answer);
        }
        Ok(answers)
    }

    /// Heartbeat as `member` at its generation.
    pub fn heartbeat_request(&self, member: &str) -> HeartbeatRequest {
        HeartbeatRequest::default()
            .with_group_id(self.group_of(member))
            .with_group_instance_id(self.instance(member))
            .with_generation_id(self.generation(member))
            .with_member_id(str(&self.id(member)))
    }

    /// Heartbeats (v4) as `member` at its generation until the answer is `error` (what a
    /// member sees once another member's JoinGroup has landed: REBALANCE_IN_PROGRESS), then
    /// records that answer as `step`. Fails after [`DEADLINE`] with the last answer.
    pub async fn heartbeat_until(
        &mut self,
        member: &str,
        step: &str,
        error: i16,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let request = self.heartbeat_request(member);
            let answer = self.call_quietly(member, &request, 4).await?;
            if answer.error_code == error {
                self.record(step, 4, &answer);
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline && answer.error_code == 0,
                "{}: {step}: heartbeat answered {} waiting for {error}",
                self.target,
                answer.error_code
            );
        }
    }

    /// One round of a classic consumer alone in its connection: a heartbeat (v4), and when
    /// it is told to rejoin (REBALANCE_IN_PROGRESS), a JoinGroup (v9) and SyncGroup (v5), with
    /// an assignment if it was made leader. Nothing is recorded; returns the heartbeat's error.
    pub async fn classic_round(&mut self, member: &str) -> anyhow::Result<i16> {
        let beat = self.heartbeat_request(member);
        let answer = self.call_quietly(member, &beat, 4).await?;
        if answer.error_code == 27 {
            let request = self.join_request(member);
            let joined = self.call_quietly(member, &request, 9).await?;
            self.joined(member, &joined);
            let sync = self.sync_after(member, &joined);
            let synced = self.call_quietly(member, &sync, 5).await?;
            self.member(member).assignment = synced.assignment;
        }
        Ok(answer.error_code)
    }

    /// Describes the scenario's group `group` until it is Stable (quietly), failing after
    /// [`DEADLINE`] with the last state seen.
    pub async fn describe_until_stable(&mut self, group: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + DEADLINE;
        let request = DescribeGroupsRequest::default().with_groups(vec![self.group(group)]);
        loop {
            let answer = self.call_quietly("admin", &request, 5).await?;
            let state = answer.groups.first().map(|g| g.group_state.to_string());
            if state.as_deref() == Some("Stable") {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{}: {group} still {state:?} after {DEADLINE:?}",
                self.target
            );
        }
    }

    /// OffsetCommit as `member` at its generation of `(topic, partition, offset)`.
    pub fn commit_request(
        &self,
        member: &str,
        offsets: &[(&str, i32, i64)],
    ) -> OffsetCommitRequest {
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for &(topic, partition, offset) in offsets {
            let name = topic_name(&self.topic(topic));
            let p = OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_metadata(Some(str("m")));
            match topics.iter_mut().find(|t| t.name == name) {
                Some(t) => t.partitions.push(p),
                None => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(name)
                        .with_partitions(vec![p]),
                ),
            }
        }
        OffsetCommitRequest::default()
            .with_group_id(self.group_of(member))
            .with_group_instance_id(self.instance(member))
            .with_group_instance_id(self.instance(member))
            .with_generation_id_or_member_epoch(self.generation(member))
            .with_member_id(str(&self.id(member)))
            .with_topics(topics)
    }
}
