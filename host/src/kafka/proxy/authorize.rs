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
//! | DESCRIBE GROUP g | FindCoordinator, OffsetFetch, DescribeGroups, ConsumerGroupDescribe, ListGroups' filter | FindCoordinator v4 for every such group of the request in one | g's key answers GROUP_AUTHORIZATION_FAILED |
//! | DELETE GROUP g | DeleteGroups, OffsetDelete | OffsetDelete v0 of g with no topics | GROUP_AUTHORIZATION_FAILED |
//! | DESCRIBE TOPIC t | ConsumerGroupHeartbeat's subscribed names (Kafka 4.0+), OffsetFetch's named topics | Metadata v9 of the topics, no auto-creation | t answers TOPIC_AUTHORIZATION_FAILED |
//! | DESCRIBE TOPIC, every topic | OffsetFetch of every committed offset (its silent filter), ConsumerGroupDescribe (a group with a topic the principal may not describe is refused) | Metadata v9 of every topic (Kafka lists only those the principal may describe) | t is not listed |
//! | DESCRIBE CLUSTER | ListGroups (allowed: every group; else only those with DESCRIBE GROUP) | DescribeCluster v0 with the cluster's authorized operations | bit 8 (DESCRIBE) unset |
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
    ApiKey, DescribeClusterRequest, DescribeClusterResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, RequestHeader, RequestKind,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

/// How long a decision is kept for a connection.
pub const TTL: Duration = Duration::from_secs(30);

/// Kafka's error codes the probes read.
const GROUP_AUTHORIZATION_FAILED: i32 = 30;
const TOPIC_AUTHORIZATION_FAILED: i32 = 29;

/// The topic a READ GROUP probe names when the request names none: a legal name no client
/// may use (the host's own prefix), so the probe never touches a real topic's offsets.
const PROBE_TOPIC: &str = "__assignor_host.probe";

const OFFSET_COMMIT: i16 = 8;
const FIND_COORDINATOR: i16 = 4;
const DESCRIBE_CLUSTER: i16 = 0;

/// Kafka's `AclOperation.DESCRIBE` bit in an `authorized_operations` field.
const DESCRIBE_BIT: i32 = 1 << 8;
const OFFSET_DELETE: i16 = 0;
const METADATA: i16 = 9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    AlterConfigs,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Group(String),
    Topic(String),
    Cluster,
}

/// The prefix of the host's own groups and topics (a cluster's node group, shard topic and
/// module log): no client may use them through the host, whatever its ACLs.
pub const RESERVED_PREFIX: &str = "__assignor_host.";

/// One right: an operation on a resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Right {
    pub operation: Operation,
    pub resource: Resource,
}

impl Right {
    /// Whether the right is on one of the host's own names ([`RESERVED_PREFIX`]).
    pub fn reserved(&self) -> bool {
        match &self.resource {
            Resource::Group(name) | Resource::Topic(name) => name.starts_with(RESERVED_PREFIX),
            Resource::Cluster => false,
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
    fn on(operation: Operation, resource: Resource) -> Right {
        Right {
            operation,
            resource,
        }
    }
    pub fn write_topic(t: &str) -> Right {
        Right::on(Operation::Write, Resource::Topic(t.to_owned()))
    }
    pub fn create_topic(t: &str) -> Right {
        Right::on(Operation::Create, Resource::Topic(t.to_owned()))
    }
    pub fn delete_topic(t: &str) -> Right {
        Right::on(Operation::Delete, Resource::Topic(t.to_owned()))
    }
    pub fn alter_topic(t: &str) -> Right {
        Right::on(Operation::Alter, Resource::Topic(t.to_owned()))
    }
    pub fn alter_configs_topic(t: &str) -> Right {
        Right::on(Operation::AlterConfigs, Resource::Topic(t.to_owned()))
    }
    pub fn alter_configs_group(g: &str) -> Right {
        Right::on(Operation::AlterConfigs, Resource::Group(g.to_owned()))
    }
    pub fn describe_cluster() -> Right {
        Right {
            operation: Operation::Describe,
            resource: Resource::Cluster,
        }
    }
}

/// Tells that `right` was refused for a request of `api`: one debug line each, the denials
/// metric, and a warning at most every [`WARN_EVERY`] with how many were refused since the
/// last one (a client retrying a refused commit would otherwise fill the log).
pub fn denied(
    api: i16,
    principal: Option<&str>,
    right: &Right,
    metrics: Option<&crate::metrics::Metrics>,
) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SINCE_WARNING: AtomicU64 = AtomicU64::new(0);
    static LAST_WARNING_MS: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let api_name = ApiKey::try_from(api).map_or_else(|()| api.to_string(), |k| format!("{k:?}"));
    let resource = match right.resource {
        Resource::Group(_) => "group",
        Resource::Topic(_) => "topic",
        Resource::Cluster => "cluster",
    };
    let why = if right.reserved() {
        "a name of the host's own"
    } else {
        "the ACLs"
    };
    tracing::debug!(api = %api_name, principal, ?right, "refused by {why}");
    if let Some(metrics) = metrics {
        metrics.client_denial(api, resource);
    }
    let refused = SINCE_WARNING.fetch_add(1, Ordering::Relaxed) + 1;
    let now = START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64;
    let last = LAST_WARNING_MS.load(Ordering::Relaxed);
    let due = last == 0 || now.saturating_sub(last) >= WARN_EVERY.as_millis() as u64;
    if due
        && LAST_WARNING_MS
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        SINCE_WARNING.store(0, Ordering::Relaxed);
        tracing::warn!(
            refused,
            latest_api = %api_name,
            latest_principal = principal,
            latest = ?right,
            "requests refused by the ACLs or on the host's own names since the last \
             such warning (each one at debug)"
        );
    }
}

/// The least time between two warnings of [`denied`].
pub const WARN_EVERY: Duration = Duration::from_secs(10);

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

/// What a request needs decided before the host acts on it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Needs {
    /// Its rights, by Kafka's table (module docs), sorted, each once.
    pub rights: Vec<Right>,
    /// OffsetFetch of every committed offset: which topics the principal may describe (Kafka
    /// drops the others from the answer without a word).
    pub every_topic: bool,
}

/// What `request` needs. ListGroups needs DESCRIBE CLUSTER here, and DESCRIBE on each group
/// the host has, which only the host's list knows: the connection adds those
/// ([`Needs::groups`]).
pub fn needs(request: &RequestKind, version: i16) -> Needs {
    let mut rights = Vec::new();
    let mut every_topic = false;
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
            for group in &r.groups {
                rights.push(Right::describe_group(&group.group_id));
                match &group.topics {
                    Some(topics) => {
                        rights.extend(topics.iter().map(|t| Right::describe_topic(&t.name)))
                    }
                    None => every_topic = true,
                }
            }
        }
        RequestKind::OffsetFetch(r) => {
            rights.push(Right::describe_group(&r.group_id));
            match &r.topics {
                Some(topics) => {
                    rights.extend(topics.iter().map(|t| Right::describe_topic(&t.name)))
                }
                None => every_topic = true,
            }
        }
        RequestKind::DescribeGroups(r) => {
            rights.extend(r.groups.iter().map(|g| Right::describe_group(g)));
        }
        RequestKind::ConsumerGroupDescribe(r) => {
            rights.extend(r.group_ids.iter().map(|g| Right::describe_group(g)));
            // Its groups' topics (Kafka 4's rule), known only once described.
            every_topic = true;
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
        RequestKind::ListGroups(_) => rights.push(Right::describe_cluster()),
        _ => {}
    }
    rights.sort();
    rights.dedup();
    Needs {
        rights,
        every_topic,
    }
}

impl Needs {
    /// Adds DESCRIBE on each of `groups` (ListGroups: the groups the host lists).
    pub fn groups<'a>(&mut self, groups: impl IntoIterator<Item = &'a str>) {
        self.rights
            .extend(groups.into_iter().map(Right::describe_group));
        self.rights.sort();
        self.rights.dedup();
    }
}

/// One probe: the request that asks the cluster, and what its answer decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// READ GROUP `group`, and READ TOPIC on `topics`.
    Read {
        group: String,
        topics: Vec<String>,
    },
    /// DESCRIBE GROUP on each of `groups`.
    Describe {
        groups: Vec<String>,
    },
    Delete {
        group: String,
    },
    /// DESCRIBE TOPIC on `topics`.
    DescribeTopics {
        topics: Vec<String>,
    },
    /// Which topics the principal may describe: those Kafka lists in a Metadata of every
    /// topic.
    DescribableTopics,
    DescribeCluster,
}

impl Probe {
    /// The probes that decide what of `needed` is not `decided` yet. Topic rights are read
    /// by a probe on the request's group, so an undecided topic asks the group again too.
    pub fn plan(needed: &Needs, decided: impl Fn(&Right) -> bool) -> Vec<Probe> {
        let undecided = || needed.rights.iter().filter(|r| !decided(r));
        let topics: Vec<String> = undecided()
            .filter_map(|r| match (&r.operation, &r.resource) {
                (Operation::Read, Resource::Topic(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        let mut probes: Vec<Probe> = Vec::new();
        for right in &needed.rights {
            let Resource::Group(group) = &right.resource else {
                continue;
            };
            let group = group.clone();
            let probe = match right.operation {
                Operation::Read if !decided(right) || !topics.is_empty() => Probe::Read {
                    group,
                    topics: topics.clone(),
                },
                Operation::Delete if !decided(right) => Probe::Delete { group },
                _ => continue,
            };
            probes.push(probe);
        }
        let described: Vec<String> = undecided()
            .filter_map(|r| match (&r.operation, &r.resource) {
                (Operation::Describe, Resource::Group(g)) => Some(g.clone()),
                _ => None,
            })
            .collect();
        if !described.is_empty() {
            probes.push(Probe::Describe { groups: described });
        }
        let described: Vec<String> = undecided()
            .filter_map(|r| match (&r.operation, &r.resource) {
                (Operation::Describe, Resource::Topic(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        if !described.is_empty() {
            probes.push(Probe::DescribeTopics { topics: described });
        }
        if undecided().any(|r| r.resource == Resource::Cluster) {
            probes.push(Probe::DescribeCluster);
        }
        if needed.every_topic {
            probes.push(Probe::DescribableTopics);
        }
        // Topic rights of a request that needs no READ on its group (OffsetDelete): a probe
        // on its group of their own (its answer decides the topics only where the group is
        // readable).
        if !topics.is_empty() && !probes.iter().any(|p| matches!(p, Probe::Read { .. })) {
            let group = needed.rights.iter().find_map(|r| match &r.resource {
                Resource::Group(g) => Some(g.clone()),
                _ => None,
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
        let name = |t: &String| TopicName(StrBytes::from_string(t.clone()));
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
                Probe::Describe { groups } => FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(
                        groups
                            .iter()
                            .map(|g| StrBytes::from_string(g.clone()))
                            .collect(),
                    )
                    .encode(&mut out, version),
                Probe::Delete { group } => OffsetDeleteRequest::default()
                    .with_group_id(GroupId(StrBytes::from_string(group.clone())))
                    .encode(&mut out, version),
                Probe::DescribeTopics { topics } => MetadataRequest::default()
                    .with_topics(Some(
                        topics
                            .iter()
                            .map(|t| MetadataRequestTopic::default().with_name(Some(name(t))))
                            .collect(),
                    ))
                    .with_allow_auto_topic_creation(false)
                    .encode(&mut out, version),
                Probe::DescribableTopics => MetadataRequest::default()
                    .with_topics(None)
                    .with_allow_auto_topic_creation(false)
                    .encode(&mut out, version),
                Probe::DescribeCluster => DescribeClusterRequest::default()
                    .with_include_cluster_authorized_operations(true)
                    .encode(&mut out, version),
            });
        encoded.map_err(|e| format!("cannot encode an authorization probe: {e}"))?;
        Ok(out.freeze())
    }

    /// The decisions the cluster's answer `frame` (after the size prefix) makes; an answer
    /// that cannot be read denies every right of the probe.
    pub fn decide(&self, frame: Result<Bytes, String>) -> Vec<(Right, bool)> {
        let read = frame.and_then(|frame| self.codes(frame));
        let codes = match read {
            Ok(codes) => codes,
            Err(error) => {
                tracing::warn!(%error, probe = ?self, "an authorization probe's answer could not be read: denied");
                return match self {
                    Probe::Read { group, .. } => vec![(Right::read_group(group), false)],
                    Probe::Describe { groups } => groups
                        .iter()
                        .map(|g| (Right::describe_group(g), false))
                        .collect(),
                    Probe::Delete { group } => vec![(Right::delete_group(group), false)],
                    Probe::DescribeTopics { topics } => topics
                        .iter()
                        .map(|t| (Right::describe_topic(t), false))
                        .collect(),
                    // Nothing listed: every topic stays undecided, so refused.
                    Probe::DescribableTopics => Vec::new(),
                    Probe::DescribeCluster => vec![(Right::describe_cluster(), false)],
                };
            }
        };
        let denied = |name: &str, code: i32| codes.iter().any(|(n, c)| n == name && *c == code);
        match self {
            Probe::Read { group, topics } => {
                let group_denied = codes.iter().any(|(_, c)| *c == GROUP_AUTHORIZATION_FAILED);
                let mut decided = vec![(Right::read_group(group), !group_denied)];
                if !group_denied {
                    for topic in topics {
                        let allowed = !denied(topic, TOPIC_AUTHORIZATION_FAILED);
                        decided.push((Right::read_topic(topic), allowed));
                    }
                }
                decided
            }
            Probe::Describe { groups } => groups
                .iter()
                .map(|g| {
                    // A key the answer leaves out is not allowed (fail closed).
                    let answered = codes.iter().any(|(key, _)| key == g);
                    let allowed = answered && !denied(g, GROUP_AUTHORIZATION_FAILED);
                    (Right::describe_group(g), allowed)
                })
                .collect(),
            Probe::Delete { group } => {
                let denied = codes.iter().any(|(_, c)| *c == GROUP_AUTHORIZATION_FAILED);
                vec![(Right::delete_group(group), !denied)]
            }
            Probe::DescribeTopics { topics } => topics
                .iter()
                .map(|t| {
                    (
                        Right::describe_topic(t),
                        !denied(t, TOPIC_AUTHORIZATION_FAILED),
                    )
                })
                .collect(),
            Probe::DescribableTopics => codes
                .iter()
                .filter(|(_, c)| *c != TOPIC_AUTHORIZATION_FAILED)
                .map(|(t, _)| (Right::describe_topic(t), true))
                .collect(),
            Probe::DescribeCluster => {
                let operations = codes.first().map_or(0, |(_, bits)| *bits);
                vec![(Right::describe_cluster(), operations & DESCRIBE_BIT != 0)]
            }
        }
    }

    /// The error codes of an answer, by topic or group where it has several; for
    /// DescribeCluster, the authorized operations (its error code is never set by the
    /// authorizer: it answers a refusal with the bits unset).
    fn codes(&self, mut frame: Bytes) -> Result<Vec<(String, i32)>, String> {
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
                            .map(|p| (t.name.to_string(), p.error_code.into()))
                    })
                    .collect()
            }
            Probe::Describe { .. } => {
                let r: FindCoordinatorResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                r.coordinators
                    .iter()
                    .map(|c| (c.key.to_string(), c.error_code.into()))
                    .collect()
            }
            Probe::Delete { .. } => {
                let r: OffsetDeleteResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                vec![(String::new(), r.error_code.into())]
            }
            Probe::DescribeTopics { .. } | Probe::DescribableTopics => {
                let r: MetadataResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                r.topics
                    .iter()
                    .map(|t| {
                        let name = t.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
                        (name, t.error_code.into())
                    })
                    .collect()
            }
            Probe::DescribeCluster => {
                let r: DescribeClusterResponse =
                    guard::decode(&frame, version).map_err(|e| e.to_string())?;
                if r.error_code != 0 {
                    return Err(format!("DescribeCluster answered error {}", r.error_code));
                }
                vec![(String::new(), r.cluster_authorized_operations)]
            }
        })
    }

    /// The API and version the probe is sent at.
    fn api(&self) -> (ApiKey, i16) {
        match self {
            Probe::Read { .. } => (ApiKey::OffsetCommit, OFFSET_COMMIT),
            Probe::Describe { .. } => (ApiKey::FindCoordinator, FIND_COORDINATOR),
            Probe::Delete { .. } => (ApiKey::OffsetDelete, OFFSET_DELETE),
            Probe::DescribeTopics { .. } | Probe::DescribableTopics => (ApiKey::Metadata, METADATA),
            Probe::DescribeCluster => (ApiKey::DescribeCluster, DESCRIBE_CLUSTER),
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
        assert_eq!(rights.rights.len(), 3);
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
    fn list_groups_asks_the_cluster_and_every_listed_group_in_one_probe_each() {
        use kafka_protocol::messages::ListGroupsRequest;
        use kafka_protocol::messages::describe_cluster_response::DescribeClusterResponse;
        use kafka_protocol::messages::find_coordinator_response::Coordinator;
        let mut needed = needs(&RequestKind::ListGroups(ListGroupsRequest::default()), 4);
        assert_eq!(needed.rights, vec![Right::describe_cluster()]);
        needed.groups(["b", "a"]);
        let probes = Probe::plan(&needed, |_| false);
        assert_eq!(
            probes,
            vec![
                Probe::Describe {
                    groups: vec!["a".into(), "b".into()]
                },
                Probe::DescribeCluster
            ]
        );
        // FindCoordinator v4: `a` allowed (any code but 30), `b` refused; a key the answer
        // leaves out is refused.
        let key = |k: &'static str, code| {
            Coordinator::default()
                .with_key(StrBytes::from_static_str(k))
                .with_error_code(code)
        };
        let r =
            FindCoordinatorResponse::default().with_coordinators(vec![key("a", 15), key("b", 30)]);
        let frame = answer(&r, ApiKey::FindCoordinator, 4);
        assert_eq!(
            probes[0].decide(Ok(frame)),
            vec![
                (Right::describe_group("a"), true),
                (Right::describe_group("b"), false)
            ]
        );
        let r = FindCoordinatorResponse::default().with_coordinators(vec![key("a", 0)]);
        let decided = probes[0].decide(Ok(answer(&r, ApiKey::FindCoordinator, 4)));
        assert_eq!(decided[1], (Right::describe_group("b"), false));
        // DescribeCluster: the DESCRIBE bit decides.
        for (operations, allowed) in [(DESCRIBE_BIT | (1 << 7), true), (1 << 7, false)] {
            let r =
                DescribeClusterResponse::default().with_cluster_authorized_operations(operations);
            let frame = answer(&r, ApiKey::DescribeCluster, 0);
            assert_eq!(
                Probe::DescribeCluster.decide(Ok(frame)),
                vec![(Right::describe_cluster(), allowed)]
            );
        }
    }

    #[test]
    fn offset_fetch_of_every_offset_learns_the_describable_topics_from_kafkas_list() {
        use kafka_protocol::messages::OffsetFetchRequest;
        use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
        let every = RequestKind::OffsetFetch(
            OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_topics(None),
        );
        let needed = needs(&every, 7);
        assert!(needed.every_topic);
        assert_eq!(
            Probe::plan(&needed, |_| true),
            vec![Probe::DescribableTopics],
            "asked at every such fetch: the list is not kept"
        );
        let listed = |name: &'static str| {
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str(name))))
        };
        let r = MetadataResponse::default().with_topics(vec![listed("a"), listed("b")]);
        let frame = answer(&r, ApiKey::Metadata, 9);
        let mut rights = Rights::default();
        for (right, allowed) in Probe::DescribableTopics.decide(Ok(frame)) {
            rights.insert(right, allowed);
        }
        assert!(rights.allows(&Right::describe_topic("a")));
        assert!(
            !rights.allows(&Right::describe_topic("c")),
            "not listed: left out"
        );
        assert!(
            Probe::DescribableTopics
                .decide(Err("broken".into()))
                .is_empty()
        );
    }

    #[test]
    fn an_undecided_right_is_refused() {
        assert!(!Rights::default().allows(&Right::read_group("g")));
    }
}
