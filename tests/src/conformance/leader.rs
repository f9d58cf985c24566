//! What a client does when it leads a classic group: Kafka makes the first member leader and
//! gives it the member list; the host does too when it relays a strategy it has no module
//! for. The leader computes Kafka's RangeAssignor over the members' subscriptions and sends
//! every member's share in its SyncGroup. Also: reading the Subscription in member metadata,
//! and noting what SyncGroup answers assigned.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, JoinGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::observe::Names;
use super::session::Session;
use crate::{str, topic_name};

impl Session {
    /// `member`'s SyncGroup after the JoinGroup answer `join`: with a range assignment of the
    /// member list when the answer names it leader and lists the members.
    pub(super) fn sync_after(&self, member: &str, join: &JoinGroupResponse) -> SyncGroupRequest {
        let mut request = self.sync_request(member);
        if join.leader == join.member_id && !join.members.is_empty() {
            request.assignments = self.range(join);
        }
        request
    }

    /// Kafka's RangeAssignor over the members of a leader's JoinGroup answer: per topic, the
    /// subscribers in member id order, the first `count % members` one partition more.
    fn range(&self, join: &JoinGroupResponse) -> Vec<SyncGroupRequestAssignment> {
        let mut members: Vec<(String, Vec<String>)> = join
            .members
            .iter()
            .map(|m| (m.member_id.to_string(), topics_of(&m.metadata)))
            .collect();
        members.sort();
        let mut given: Vec<Vec<(String, Vec<i32>)>> = vec![Vec::new(); members.len()];
        for (short, &count) in &self.topics {
            let topic = self.topic(short);
            let subscribers: Vec<usize> = (0..members.len())
                .filter(|&i| members[i].1.contains(&topic))
                .collect();
            let n = subscribers.len() as i32;
            if n == 0 {
                continue;
            }
            let mut next = 0;
            for (k, &i) in subscribers.iter().enumerate() {
                let take = count / n + i32::from((k as i32) < count % n);
                given[i].push((topic.clone(), (next..next + take).collect()));
                next += take;
            }
        }
        members
            .iter()
            .zip(given)
            .map(|((id, _), topics)| {
                let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
                    topics
                        .into_iter()
                        .map(|(t, ps)| {
                            TopicPartition::default()
                                .with_topic(topic_name(&t))
                                .with_partitions(ps)
                        })
                        .collect(),
                );
                let mut bytes = BytesMut::new();
                bytes.put_i16(3);
                assignment
                    .encode(&mut bytes, 3)
                    .expect("assignment encodes");
                SyncGroupRequestAssignment::default()
                    .with_member_id(str(id))
                    .with_assignment(bytes.freeze())
            })
            .collect()
    }
}

impl Session {
    /// Notes, as `step`, whether the SyncGroup answers `synced` together assign every
    /// partition of the scenario's topics exactly once, and the shapes of the shares, sorted
    /// (which member gets which partitions follows random member ids).
    pub fn note_assignments(&mut self, step: &str, synced: &[SyncGroupResponse]) {
        let mut seen: Vec<(String, i32)> = Vec::new();
        let mut shares: Vec<String> = Vec::new();
        for answer in synced {
            for (topic, partitions) in
                crate::decode_assignment(answer.assignment.clone()).unwrap_or_default()
            {
                seen.extend(partitions.into_iter().map(|p| (topic.clone(), p)));
            }
            shares.push(self.names.assignment_shape(&answer.assignment));
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

/// The topics a ConsumerProtocolSubscription subscribes to (empty if it is none).
fn topics_of(metadata: &Bytes) -> Vec<String> {
    decode_subscription(metadata)
        .map(|s| s.topics.iter().map(|t| t.to_string()).collect())
        .unwrap_or_default()
}

fn decode_subscription(metadata: &Bytes) -> Option<ConsumerProtocolSubscription> {
    let mut bytes = metadata.clone();
    if bytes.len() < 2 {
        return None;
    }
    let version = bytes.get_i16();
    ConsumerProtocolSubscription::decode(&mut bytes, version.clamp(0, 3)).ok()
}

/// `[t u]`: the scenario's names of the topics member metadata subscribes to, for
/// DescribeGroups; `<n bytes>` when it is no Subscription (or empty: not Stable).
pub fn subscribed_topics(metadata: &Bytes, names: &Names) -> String {
    match decode_subscription(metadata) {
        Some(s) => {
            let mut topics: Vec<String> = s.topics.iter().map(|t| names.topic(t)).collect();
            topics.sort();
            format!("[{}]", topics.join(" "))
        }
        None => format!("<{} bytes>", metadata.len()),
    }
}
