//! Authorization of the group APIs the host answers itself, in proxy mode with clients the
//! cluster authenticated (`kafka.authentication = "upstream"`): the decision is the cluster's
//! own. Before the host acts on a request (and so before it uses its own credentials for it:
//! an offset commit, a group deletion), it asks the cluster, on the client's own authenticated
//! connection, with requests that change nothing ("probes", `security.md` §3.4), whether the
//! client's principal holds each right the request needs, by Kafka's table (KafkaApis):
//!
//! | right | needed by | probe | denied when |
//! |---|---|---|---|
//! | READ GROUP g | JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat, OffsetCommit, TxnOffsetCommit | OffsetCommit v8 of g, generation -1, member "", each topic of the request (or a dummy) at partition `i32::MAX` | a partition answers GROUP_AUTHORIZATION_FAILED |
//! | READ TOPIC t | OffsetCommit, TxnOffsetCommit, OffsetDelete | the same probe | t's partition answers TOPIC_AUTHORIZATION_FAILED |
//! | DESCRIBE GROUP g | FindCoordinator, OffsetFetch, DescribeGroups, ConsumerGroupDescribe | FindCoordinator v3 for g | GROUP_AUTHORIZATION_FAILED |
//! | DELETE GROUP g | DeleteGroups, OffsetDelete | OffsetDelete v0 of g with no topics | GROUP_AUTHORIZATION_FAILED |
//! | DESCRIBE TOPIC t | ConsumerGroupHeartbeat's subscribed names (Kafka 4.0+) | Metadata v9 of the topics, no auto-creation | t answers TOPIC_AUTHORIZATION_FAILED |
//!
//! Kafka checks these before it routes to a coordinator, so any broker answers them, and
//! none of them writes anything: the commit names a partition that does not exist, which
//! Kafka drops before the coordinator; the OffsetDelete names no partition. Decisions are
//! kept per connection for [`TTL`] (a heartbeat every 3 s costs one probe per TTL, not one
//! per heartbeat) and forgotten at a re-authentication. A probe that cannot be read denies
//! (fail closed).
//!
//! Sans-io: [`needs`] lists a request's rights, [`Probe::plan`] the probes for the ones not
//! decided yet, [`Probe::decide`] reads a probe's answer; the connection sends and receives, and
//! each API's file asks [`Rights::allows`] where Kafka's handler authorizes.

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, MetadataRequest,
    MetadataResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, RequestHeader, RequestKind, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

/// How long a decision is kept for a connection.
pub const TTL: Duration = Duration::from_secs(30);

/// Kafka's error codes the probes read.
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// The topic a READ GROUP probe names when the request names none: a legal name no client
/// may use (the host's own prefix), so the probe never touches a real topic's offsets.
const PROBE_TOPIC: &str = "__assignor_host.probe";

const OFFSET_COMMIT: i16 = 8;
const FIND_COORDINATOR: i16 = 3;
const OFFSET_DELETE: i16 = 0;
const METADATA: i16 = 9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Read,
    Describe,
    Delete,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    Group(String),
    Topic(String),
}

/// The prefix of the host's own groups and topics (a cluster's node group, shard topic and
/// module log): no client may use them through the host, whatever its ACLs.
pub const RESERVED_PREFIX: &str = "__assignor_host.";

/// One right: an operation on a resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Right {
    pub operation: Operation,
    pub resource: Resource,
}

impl Right {
    /// Whether the right is on one of the host's own names ([`RESERVED_PREFIX`]).
    pub fn reserved(&self) -> bool {
        match &self.resource {
            Resource::Group(name) | Resource::Topic(name) => name.starts_with(RESERVED_PREFIX),
        }
    }

    pub fn read_group(g: &str) -> Right {
        Right {
            operation: Operation::Read,
            resource: Resource::Group(g.to_owned()),
        }
    }
    pub fn describe_group(g: &str) -> Right {
        Right {
            operation: Operation::Describe,
            resource: Resource::Group(g.to_owned()),
        }
    }
    pub fn delete_group(g: &str) -> Right {
        Right {
            operation: Operation::Delete,
            resource: Resource::Group(g.to_owned()),
        }
    }
    pub fn describe_topic(t: &str) -> Right {
        Right {
            operation: Operation::Describe,
            resource: Resource::Topic(t.to_owned()),
        }
    }
    pub fn read_topic(t: &str) -> Right {
        Right {
            operation: Operation::Read,
            resource: Resource::Topic(t.to_owned()),
        }
    }
}

/// The cluster's decisions for one request: every right [`needs`] listed is in it.
#[derive(Debug, Default, Clone)]
pub struct Rights(HashMap<Right, bool>);

impl Rights {
    pub fn insert(&mut self, right: Right, allowed: bool) {
        self.0.insert(right, allowed);
    }

    /// Whether the cluster's decision on `right` is in.
    pub fn decided(&self, right: &Right) -> bool {
        self.0.contains_key(right)
    }

    /// Whether the principal holds `right`; one not decided is refused (fail closed).
    pub fn allows(&self, right: &Right) -> bool {
        self.0.get(right).copied().unwrap_or(false)
    }
}

/// The rights a request needs, by Kafka's table (module docs). ListGroups needs none here (it
/// is not filtered yet: docs/operating.md).
pub fn needs(request: &RequestKind, version: i16) -> Vec<Right> {
    let mut rights = Vec::new();
    match request {
        RequestKind::JoinGroup(r) => rights.push(Right::read_group(&r.group_id)),
        RequestKind::SyncGroup(r) => rights.push(Right::read_group(&r.group_id)),
        RequestKind::Heartbeat(r) => rights.push(Right::read_group(&r.group_id)),
        RequestKind::LeaveGroup(r) => rights.push(Right::read_group(&r.group_id)),
        RequestKind::ConsumerGroupHeartbeat(r) => {
            rights.push(Right::read_group(&r.group_id));
            let subscribed = r.subscribed_topic_names.iter().flatten();
            rights.extend(subscribed.map(|t| Right::describe_topic(t)));
        }
        RequestKind::OffsetCommit(r) => {
            rights.push(Right::read_group(&r.group_id));
            rights.extend(r.topics.iter().map(|t| Right::read_topic(&t.name)));
        }
        RequestKind::TxnOffsetCommit(r) => {
            rights.push(Right::read_group(&r.group_id));
            rights.extend(r.topics.iter().map(|t| Right::read_topic(&t.name)));
        }
        RequestKind::OffsetDelete(r) => {
            rights.push(Right::delete_group(&r.group_id));
            rights.extend(r.topics.iter().map(|t| Right::read_topic(&t.name)));
        }
        RequestKind::OffsetFetch(r) if version >= 8 => {
            rights.extend(r.groups.iter().map(|g| Right::describe_group(&g.group_id)));
        }
        RequestKind::OffsetFetch(r) => rights.push(Right::describe_group(&r.group_id)),
        RequestKind::DescribeGroups(r) => {
            rights.extend(r.groups.iter().map(|g| Right::describe_group(g)));
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            rights.extend(r.group_ids.iter().map(|g| Right::describe_group(g)));
        }
        RequestKind::DeleteGroups(r) => {
            rights.extend(r.groups_names.iter().map(|g| Right::delete_group(g)));
        }
        RequestKind::FindCoordinator(r) if r.key_type == 0 => {
            if version < 4 {
                rights.push(Right::describe_group(&r.key));
            } else {
                rights.extend(r.coordinator_keys.iter().map(|g| Right::describe_group(g)));
            }
        }
        _ => {}
    }
    rights.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    rights.dedup();
    rights
}

/// One probe: the request that asks the cluster, and what its answer decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// READ GROUP `group`, and READ TOPIC on `topics`.
    Read {
        group: String,
        topics: Vec<String>,
    },
    Describe {
        group: String,
    },
    Delete {
        group: String,
    },
    /// DESCRIBE TOPIC on `topics`.
    DescribeTopics {
        topics: Vec<String>,
    },
}

impl Probe {
    /// The probes that decide what of `needed` is not `decided` yet. Topic rights are read
    /// by a probe on the request's group, so an undecided topic asks the group again too.
    pub fn plan(needed: &[Right], decided: impl Fn(&Right) -> bool) -> Vec<Probe> {
        let topics: Vec<String> = needed
            .iter()
            .filter(|r| !decided(r))
            .filter_map(|r| match (&r.operation, &r.resource) {
                (Operation::Read, Resource::Topic(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        let mut probes: Vec<Probe> = Vec::new();
        for right in needed {
            let Resource::Group(group) = &right.resource else {
                continue;
            };
            let group = group.clone();
            let probe = match right.operation {
                Operation::Read if !decided(right) || !topics.is_empty() => Probe::Read {
                    group,
                    topics: topics.clone(),
                },
                Operation::Describe if !decided(right) => Probe::Describe { group },
                Operation::Delete if !decided(right) => Probe::Delete { group },
                _ => continue,
            };
            probes.push(probe);
        }
        let described: Vec<String> = needed
            .iter()
            .filter(|r| !decided(r))
            .filter_map(|r| match (&r.operation, &r.resource) {
                (Operation::Describe, Resource::Topic(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        if !described.is_empty() {
            probes.push(Probe::DescribeTopics { topics: described });
        }
        // Topic rights of a request that needs no READ on its group (OffsetDelete): a probe
        // on its group of their own (its answer decides the topics only where the group is
        // readable).
        if !topics.is_empty() && !probes.iter().any(|p| matches!(p, Probe::Read { .. })) {
            let group = needed.iter().find_map(|r| match &r.resource {
                Resource::Group(g) => Some(g.clone()),
                Resource::Topic(_) => None,
            });
            probes.push(Probe::Read {
                group: group.unwrap_or_default(),
                topics,
            });
        }
        probes
    }

    /// The probe as a request frame (header and body, no size prefix).
    pub fn frame(&self, correlation_id: i32) -> Result<Bytes, String> {
        let mut out = BytesMut::new();
        let (key, version) = self.api();
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(
                "assignor-host-authorization",
            )));
        let encoded = header
            .encode(&mut out, key.request_header_version(version))
            .and_then(|()| match self {
                Probe::Read { group, topics } => {
                    let names: Vec<&str> = if topics.is_empty() {
                        vec![PROBE_TOPIC]
                    } else {
                        topics.iter().map(String::as_str).collect()
                    };
                    let topics = names
                        .into_iter()
                        .map(|t| {
                            OffsetCommitRequestTopic::default()
                                .with_name(TopicName(StrBytes::from_string(t.to_owned())))
                                .with_partitions(vec![
                                    OffsetCommitRequestPartition::default()
                                        .with_partition_index(i32::MAX)
                                        .with_committed_offset(0),
                                ])
                        })
                        .collect();
                    OffsetCommitRequest::default()
                        .with_group_id(GroupId(StrBytes::from_string(group.clone())))
                        .with_generation_id_or_member_epoch(-1)
                        .with_topics(topics)
                        .encode(&mut out, version)
                }
                Probe::Describe { group } => FindCoordinatorRequest::default()
                    .with_key(StrBytes::from_string(group.clone()))
                    .with_key_type(0)
                    .encode(&mut out, version),
                Probe::Delete { group } => OffsetDeleteRequest::default()
                    .with_group_id(GroupId(StrBytes::from_string(group.clone())))
                    .encode(&mut out, version),
                Probe::DescribeTopics { topics } => MetadataRequest::default()
                    .with_topics(Some(
                        topics
                            .iter()
                            .map(|t| {
                                MetadataRequestTopic::default()
                                    .with_name(Some(TopicName(StrBytes::from_string(t.clone()))))
                            })
                            .collect(),
                    ))
                    .with_allow_auto_topic_creation(false)
                    .encode(&mut out, version),
            });
        encoded.map_err(|e| format!("cannot encode an authorization probe: {e}"))?;
        Ok(out.freeze())
    }

    /// The decisions the cluster's answer `frame` (after the size prefix) makes; an answer
    /// that cannot be read denies every right of the probe.
    pub fn decide(&self, frame: Result<Bytes, String>) -> Vec<(Right, bool)> {
        let read = frame.and_then(|frame| self.codes(frame));
        match (self, read) {
            (Probe::Read { group, topics }, Ok(codes)) => {
                let group_denied = codes.iter().any(|(_, c)| *c == GROUP_AUTHORIZATION_FAILED);
                let mut decided = vec![(Right::read_group(group), !group_denied)];
                if !group_denied {
                    for topic in topics {
                        let denied = codes
                            .iter()
                            .any(|(t, c)| t == topic && *c == TOPIC_AUTHORIZATION_FAILED);
                        decided.push((Right::read_topic(topic), !denied));
                    }
                }
                decided
            }
            (Probe::Describe { group }, Ok(codes)) => {
                let denied = codes.iter().any(|(_, c)| *c == GROUP_AUTHORIZATION_FAILED);
                vec![(Right::describe_group(group), !denied)]
            }
            (Probe::Delete { group }, Ok(codes)) => {
                let denied = codes.iter().any(|(_, c)| *c == GROUP_AUTHORIZATION_FAILED);
                vec![(Right::delete_group(group), !denied)]
            }
            (Probe::DescribeTopics { topics }, Ok(codes)) => topics
                .iter()
                .map(|t| {
                    let denied = codes
                        .iter()
                        .any(|(name, c)| name == t && *c == TOPIC_AUTHORIZATION_FAILED);
                    (Right::describe_topic(t), !denied)
                })
                .collect(),
            (probe, Err(error)) => {
                tracing::warn!(%error, ?probe, "an authorization probe's answer could not be read: denied");
                match probe {
                    Probe::Read { group, .. } => vec![(Right::read_group(group), false)],
                    Probe::Describe { group } => vec![(Right::describe_group(group), false)],
                    Probe::Delete { group } => vec![(Right::delete_group(group), false)],
                    Probe::DescribeTopics { topics } => topics
                        .iter()
                        .map(|t| (Right::describe_topic(t), false))
                        .collect(),
                }
            }
        }
    }

    /// The error codes of an answer, by topic where it has topics.
    fn codes(&self, mut frame: Bytes) -> Result<Vec<(String, i16)>, String> {
        use assignor_wire::guard;
        let (key, version) = self.api();
        guard::decode_from::<ResponseHeader>(&mut frame, key.response_header_version(version))
            .map_err(|e| e.to_string())?;
        Ok(match self {
            Probe::Read { .. } => {
                let r: OffsetCommitResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                r.topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions
                            .iter()
                            .map(|p| (t.name.to_string(), p.error_code))
                    })
                    .collect()
            }
            Probe::Describe { .. } => {
                let r: FindCoordinatorResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                vec![(String::new(), r.error_code)]
            }
            Probe::Delete { .. } => {
                let r: OffsetDeleteResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                vec![(String::new(), r.error_code)]
            }
            Probe::DescribeTopics { .. } => {
                let r: MetadataResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                r.topics
                    .iter()
                    .map(|t| {
                        let name = t.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
                        (name, t.error_code)
                    })
                    .collect()
            }
        })
    }

    /// The API and version the probe is sent at.
    fn api(&self) -> (ApiKey, i16) {
        match self {
            Probe::Read { .. } => (ApiKey::OffsetCommit, OFFSET_COMMIT),
            Probe::Describe { .. } => (ApiKey::FindCoordinator, FIND_COORDINATOR),
            Probe::Delete { .. } => (ApiKey::OffsetDelete, OFFSET_DELETE),
            Probe::DescribeTopics { .. } => (ApiKey::Metadata, METADATA),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{
        JoinGroupRequest, OffsetCommitRequest, offset_commit_response::*,
    };
    use kafka_protocol::protocol::HeaderVersion;

    fn answer<T: Encodable + HeaderVersion>(body: &T, key: ApiKey, version: i16) -> Bytes {
        let _ = key;
        let mut out = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(1)
            .encode(&mut out, T::header_version(version))
            .unwrap();
        body.encode(&mut out, version).unwrap();
        out.freeze()
    }

    #[test]
    fn a_commit_needs_read_on_its_group_and_each_topic_and_one_probe_decides_them() {
        let request = RequestKind::OffsetCommit(
            OffsetCommitRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_topics(vec![
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_static_str("a"))),
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_static_str("b"))),
                ]),
        );
        let rights = needs(&request, 8);
        assert_eq!(rights.len(), 3);
        let probes = Probe::plan(&rights, |_| false);
        // The group decided already (a heartbeat's probe): the topics ask it again.
        let group_known = Probe::plan(&rights, |r| *r == Right::read_group("g"));
        assert_eq!(group_known, probes);
        assert!(Probe::plan(&rights, |_| true).is_empty());
        assert_eq!(
            probes,
            vec![Probe::Read {
                group: "g".into(),
                topics: vec!["a".into(), "b".into()]
            }]
        );
        let topic = |name: &'static str, code| {
            OffsetCommitResponseTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(name)))
                .with_partitions(vec![
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(i32::MAX)
                        .with_error_code(code),
                ])
        };
        // `a` readable (unknown partition), `b` not.
        let r = OffsetCommitResponse::default().with_topics(vec![topic("a", 3), topic("b", 29)]);
        let decided = probes[0].decide(Ok(answer(&r, ApiKey::OffsetCommit, 8)));
        let mut rights = Rights::default();
        for (right, allowed) in decided {
            rights.insert(right, allowed);
        }
        assert!(rights.allows(&Right::read_group("g")));
        assert!(rights.allows(&Right::read_topic("a")));
        assert!(!rights.allows(&Right::read_topic("b")));
        // The group refused: every partition says so, and the topics stay undecided.
        let r = OffsetCommitResponse::default().with_topics(vec![topic("a", 30), topic("b", 30)]);
        let decided = probes[0].decide(Ok(answer(&r, ApiKey::OffsetCommit, 8)));
        assert_eq!(decided, vec![(Right::read_group("g"), false)]);
    }

    #[test]
    fn a_join_probes_with_the_hosts_own_topic_and_an_unreadable_answer_denies() {
        let request = RequestKind::JoinGroup(
            JoinGroupRequest::default().with_group_id(GroupId(StrBytes::from_static_str("g"))),
        );
        let probes = Probe::plan(&needs(&request, 9), |_| false);
        assert_eq!(
            probes,
            vec![Probe::Read {
                group: "g".into(),
                topics: vec![]
            }]
        );
        let frame = probes[0].frame(-7).unwrap();
        let mut body = frame.clone();
        let header: RequestHeader =
            assignor_wire::guard::decode_from(&mut body, 2).expect("a v2 header");
        assert_eq!(
            (header.request_api_key, header.correlation_id),
            (ApiKey::OffsetCommit as i16, -7)
        );
        let request: OffsetCommitRequest = assignor_wire::guard::decode(&body, 8).unwrap();
        assert_eq!(request.topics[0].name.as_str(), PROBE_TOPIC);
        assert_eq!(request.topics[0].partitions[0].partition_index, i32::MAX);
        assert_eq!(request.generation_id_or_member_epoch, -1);
        assert_eq!(
            probes[0].decide(Err("broken".into())),
            vec![(Right::read_group("g"), false)]
        );
    }

    #[test]
    fn a_consumer_heartbeat_describes_its_subscribed_topics_in_one_metadata_probe() {
        use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
        use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
        let request = RequestKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_subscribed_topic_names(Some(vec![
                    TopicName(StrBytes::from_static_str("a")),
                    TopicName(StrBytes::from_static_str("b")),
                ])),
        );
        let needed = needs(&request, 0);
        let probes = Probe::plan(&needed, |r| *r == Right::read_group("g"));
        assert_eq!(
            probes,
            vec![Probe::DescribeTopics {
                topics: vec!["a".into(), "b".into()]
            }]
        );
        let topic = |name: &'static str, code| {
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str(name))))
                .with_error_code(code)
        };
        let r = MetadataResponse::default().with_topics(vec![topic("a", 3), topic("b", 29)]);
        let decided = probes[0].decide(Ok(answer(&r, ApiKey::Metadata, 9)));
        assert_eq!(
            decided,
            vec![
                (Right::describe_topic("a"), true),
                (Right::describe_topic("b"), false)
            ]
        );
    }

    #[test]
    fn an_undecided_right_is_refused() {
        assert!(!Rights::default().allows(&Right::read_group("g")));
    }
}
