//! The topic calls of [`super::UpstreamClient`]: end offsets (ListOffsets to each partition's
//! leader, found with Metadata) and topic creation and growth (CreateTopics and
//! CreatePartitions, which a KRaft broker forwards to the active controller; an older cluster
//! answers NOT_CONTROLLER anywhere but on its controller, which Metadata names). Sent by the
//! host itself on the pool's connections, again while a leader or the controller moves or a
//! connection fails, within `request_timeout`.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    BrokerId, CreatePartitionsRequest, CreateTopicsRequest, ListOffsetsRequest, MetadataRequest,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::pool::{Failure, retry};
use super::{ClientError, EndOffset, UpstreamClient, unexpected};

/// Metadata from v4 (racks, controller, `allow_auto_topic_creation`).
const METADATA: (i16, i16) = (4, 12);
/// ListOffsets from v1 (Kafka 4 refuses v0); v4 adds the leader epoch.
const LIST_OFFSETS: (i16, i16) = (1, 9);
/// CreateTopics from v2 (Kafka 4's oldest).
const CREATE_TOPICS: (i16, i16) = (2, 7);
const CREATE_PARTITIONS: (i16, i16) = (0, 3);

/// ListOffsets' timestamp for "the offset the next record will get".
const LATEST: i64 = -1;

/// A partition's code that means its leader moved or is being elected: ask again.
fn leader_moved(code: i16) -> bool {
    [
        ResponseError::NotLeaderOrFollower,
        ResponseError::LeaderNotAvailable,
        ResponseError::FencedLeaderEpoch,
        ResponseError::UnknownLeaderEpoch,
        ResponseError::OffsetNotAvailable,
    ]
    .iter()
    .any(|e| e.code() == code)
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

impl UpstreamClient {
    /// The end (high watermark) of each partition, in one ListOffsets per partition leader.
    /// A partition of a topic the cluster does not know has UNKNOWN_TOPIC_OR_PARTITION (3) in
    /// its `error`.
    pub async fn end_offsets(
        &self,
        partitions: &[(String, i32)],
    ) -> Result<Vec<EndOffset>, ClientError> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let inner = &self.inner;
        let found = std::sync::Mutex::new(BTreeMap::<(String, i32), EndOffset>::new());
        retry("end_offsets", inner.settings.request_timeout, || async {
            let pending: Vec<&(String, i32)> = {
                let found = found.lock().unwrap();
                partitions
                    .iter()
                    .filter(|p| !found.contains_key(p))
                    .collect()
            };
            let mut topics: Vec<&str> = pending.iter().map(|(t, _)| t.as_str()).collect();
            topics.sort_unstable();
            topics.dedup();
            let metadata = self.metadata("end_offsets", Some(&topics)).await?;
            let brokers: HashMap<i32, String> = metadata
                .brokers
                .iter()
                .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
                .collect();
            // Each pending partition to its leader, or answered here when its topic is unknown.
            let mut by_leader: BTreeMap<i32, Vec<&(String, i32)>> = BTreeMap::new();
            let mut moved = false;
            for asked in &pending {
                let (topic, partition) = asked;
                let listed = metadata
                    .topics
                    .iter()
                    .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == topic));
                let unknown = ResponseError::UnknownTopicOrPartition.code();
                let leader = match listed {
                    Some(t) if t.error_code == unknown => None,
                    None => None,
                    Some(t) if t.error_code != 0 => {
                        moved = true;
                        continue;
                    }
                    Some(t) => match t
                        .partitions
                        .iter()
                        .find(|p| p.partition_index == *partition)
                    {
                        None => None,
                        Some(p) if p.leader_id.0 < 0 => {
                            moved = true;
                            continue;
                        }
                        Some(p) => Some(p.leader_id.0),
                    },
                };
                match leader {
                    Some(leader) => by_leader.entry(leader).or_default().push(asked),
                    None => {
                        let end = EndOffset {
                            topic: topic.clone(),
                            partition: *partition,
                            offset: -1,
                            leader_epoch: -1,
                            error: unknown,
                        };
                        found.lock().unwrap().insert((*asked).clone(), end);
                    }
                }
            }
            for (leader, asked) in by_leader {
                let Some(addr) = brokers.get(&leader) else {
                    moved = true;
                    continue;
                };
                let connection = inner.pool.get(addr).await?;
                let build = |_version: i16| {
                    let mut topics: Vec<ListOffsetsTopic> = Vec::new();
                    for (topic, partition) in &asked {
                        let p = ListOffsetsPartition::default()
                            .with_partition_index(*partition)
                            .with_current_leader_epoch(-1)
                            .with_timestamp(LATEST);
                        match topics.last_mut() {
                            Some(t) if t.name.as_str() == topic => t.partitions.push(p),
                            _ => topics.push(
                                ListOffsetsTopic::default()
                                    .with_name(name(topic))
                                    .with_partitions(vec![p]),
                            ),
                        }
                    }
                    ListOffsetsRequest::default()
                        .with_replica_id(BrokerId(-1))
                        .with_isolation_level(0)
                        .with_topics(topics)
                };
                let answer = inner
                    .pool
                    .call(&connection, "end_offsets", LIST_OFFSETS, build)
                    .await?;
                let mut found = found.lock().unwrap();
                for t in answer.topics {
                    for p in t.partitions {
                        if leader_moved(p.error_code) {
                            moved = true;
                            continue;
                        }
                        let end = EndOffset {
                            topic: t.name.to_string(),
                            partition: p.partition_index,
                            offset: p.offset,
                            leader_epoch: p.leader_epoch,
                            error: p.error_code,
                        };
                        found.insert((end.topic.clone(), end.partition), end);
                    }
                }
            }
            if moved {
                return Err(Failure::Moved);
            }
            Ok(())
        })
        .await?;
        let mut found = found.into_inner().unwrap();
        partitions
            .iter()
            .map(|asked| found.remove(asked).ok_or_else(|| unexpected("end_offsets")))
            .collect()
    }

    /// Creates a topic (-1 for either count: the cluster's default). Kafka's code: 0 created,
    /// TOPIC_ALREADY_EXISTS (36), INVALID_REPLICATION_FACTOR (38), INVALID_TOPIC_EXCEPTION (17).
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
    ) -> Result<i16, ClientError> {
        self.create_topic_with(name, partitions, replication_factor, &[])
            .await
    }

    /// [`UpstreamClient::create_topic`] with topic configs (`cleanup.policy`, ...).
    pub async fn create_topic_with(
        &self,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(&str, String)],
    ) -> Result<i16, ClientError> {
        if partitions == 0 || partitions < -1 || replication_factor == 0 || replication_factor < -1
        {
            return Err(ClientError::InvalidArgument {
                call: "create_topic",
                message: format!(
                    "{partitions} partitions and replication factor {replication_factor}: each \
                     is at least 1, or -1 for the cluster's default"
                ),
            });
        }
        let timeout_ms = self.timeout_ms();
        let build = |_version: i16| {
            let configs = configs
                .iter()
                .map(|(key, value)| {
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_string((*key).to_owned()))
                        .with_value(Some(StrBytes::from_string(value.clone())))
                })
                .collect();
            CreateTopicsRequest::default()
                .with_topics(vec![
                    CreatableTopic::default()
                        .with_name(name(topic))
                        .with_num_partitions(partitions)
                        .with_replication_factor(replication_factor)
                        .with_configs(configs),
                ])
                .with_timeout_ms(timeout_ms)
        };
        let call = "create_topic";
        self.to_controller(call, CREATE_TOPICS, build, |answer| {
            answer.topics.first().map(|t| t.error_code)
        })
        .await
    }

    /// Grows a topic to `total` partitions. Kafka's code: 0 done, INVALID_PARTITIONS (37) for
    /// no increase, UNKNOWN_TOPIC_OR_PARTITION (3).
    pub async fn create_partitions(&self, topic: &str, total: i32) -> Result<i16, ClientError> {
        if total < 1 {
            return Err(ClientError::InvalidArgument {
                call: "create_partitions",
                message: format!("{total} partitions: a topic has at least 1"),
            });
        }
        let timeout_ms = self.timeout_ms();
        let build = |_version: i16| {
            CreatePartitionsRequest::default()
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(name(topic))
                        .with_count(total)
                        // None: the cluster places the new partitions (an empty list is an
                        // assignment of nothing, INVALID_REPLICA_ASSIGNMENT).
                        .with_assignments(None),
                ])
                .with_timeout_ms(timeout_ms)
        };
        self.to_controller("create_partitions", CREATE_PARTITIONS, build, |answer| {
            answer.results.first().map(|t| t.error_code)
        })
        .await
    }

    fn timeout_ms(&self) -> i32 {
        i32::try_from(self.inner.settings.request_timeout.as_millis()).unwrap_or(i32::MAX)
    }

    /// Sends an admin request to a bootstrap broker (a KRaft broker forwards it to the
    /// controller), or to the controller Metadata names once one answered NOT_CONTROLLER;
    /// returns the one topic's code `code` reads from the answer.
    async fn to_controller<R: kafka_protocol::protocol::Request>(
        &self,
        call: &'static str,
        versions: (i16, i16),
        build: impl Fn(i16) -> R,
        code: impl Fn(&R::Response) -> Option<i16>,
    ) -> Result<i16, ClientError> {
        let inner = &self.inner;
        let not_controller = ResponseError::NotController.code();
        let to_controller = std::sync::atomic::AtomicBool::new(false);
        retry(call, inner.settings.request_timeout, || async {
            let connection = if to_controller.load(std::sync::atomic::Ordering::Relaxed) {
                let metadata = self.metadata(call, Some(&[])).await?;
                let controller = metadata
                    .brokers
                    .iter()
                    .find(|b| b.node_id == metadata.controller_id)
                    .ok_or(Failure::Moved)?;
                let addr = format!("{}:{}", controller.host.as_str(), controller.port);
                inner.pool.get(&addr).await?
            } else {
                inner.pool.any(&inner.settings.bootstrap).await?
            };
            let answer = inner.pool.call(&connection, call, versions, &build).await?;
            match code(&answer) {
                Some(code) if code == not_controller => {
                    to_controller.store(true, std::sync::atomic::Ordering::Relaxed);
                    Err(Failure::Moved)
                }
                Some(code) => Ok(code),
                None => Err(Failure::Final(unexpected(call))),
            }
        })
        .await
    }

    /// Metadata of `topics` (`None`: every topic) from a bootstrap broker, never creating one.
    async fn metadata(
        &self,
        call: &'static str,
        topics: Option<&[&str]>,
    ) -> Result<MetadataResponse, Failure> {
        let inner = &self.inner;
        let connection = inner.pool.any(&inner.settings.bootstrap).await?;
        let build = |_version: i16| {
            MetadataRequest::default()
                .with_topics(topics.map(|names| {
                    names
                        .iter()
                        .map(|n| MetadataRequestTopic::default().with_name(Some(name(n))))
                        .collect()
                }))
                .with_allow_auto_topic_creation(false)
        };
        inner.pool.call(&connection, call, METADATA, build).await
    }
}
