//! The three targets a scenario runs against, and what each needs before its first request:
//! Apache Kafka's own coordinator (the shared single-node cluster of `tests/kafka`), a host
//! standalone, and a host in proxy mode in front of that same Kafka.
//!
//! Settings that must match for the answers to be comparable: the Kafka harness sets
//! `group.initial.rebalance.delay.ms=0`, so both hosts set `initial_rebalance_delay_ms = 0`;
//! the session timeout bounds (6000 / 1800000), the consumer-protocol session timeout (45000)
//! and heartbeat interval (5000), and `uniform` as the default server assignor are Kafka's
//! defaults on both sides, left alone.

use std::fmt;
use std::net::SocketAddr;
use std::time::Instant;

use anyhow::{bail, ensure};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    CreateTopicsRequest, DescribeGroupsRequest, FindCoordinatorRequest, GroupId,
    IncrementalAlterConfigsRequest, MetadataRequest,
};
use uuid::Uuid;

use crate::{DEADLINE, KafkaClient, TestHost, str, topic_name};

/// Where a scenario's requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// Apache Kafka 4.4's group coordinator: the reference.
    Kafka,
    /// The host on its own (`assignor-host serve`).
    Standalone,
    /// The host in proxy mode in front of the same Kafka (`serve --upstream`).
    Proxy,
}

impl Target {
    /// The two targets compared with Kafka.
    pub const HOSTS: [Target; 2] = [Target::Standalone, Target::Proxy];

    pub fn is_host(self) -> bool {
        self != Target::Kafka
    }

    /// Short name, used in group ids so the three runs never share a group on Kafka (the
    /// proxy's offsets live there too).
    pub fn tag(self) -> &'static str {
        match self {
            Target::Kafka => "kafka",
            Target::Standalone => "standalone",
            Target::Proxy => "proxy",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())
    }
}

/// Creates `topics` (`(name, partitions)`, replication 1) on Kafka at `addr` and waits until
/// its Metadata lists each with every partition led.
pub async fn create_topics(addr: SocketAddr, topics: &[(String, i32)]) -> anyhow::Result<()> {
    let mut client = KafkaClient::connect(addr).await?;
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(
            topics
                .iter()
                .map(|(name, partitions)| {
                    CreatableTopic::default()
                        .with_name(topic_name(name))
                        .with_num_partitions(*partitions)
                        .with_replication_factor(1)
                })
                .collect(),
        );
    let answer = client.call(&request, 5).await?;
    for topic in &answer.topics {
        // 36: TOPIC_ALREADY_EXISTS (a retried start of the same scenario).
        ensure!(
            topic.error_code == 0 || topic.error_code == 36,
            "CreateTopics {}: error {} {:?}",
            topic.name.as_str(),
            topic.error_code,
            topic.error_message
        );
    }
    let deadline = Instant::now() + DEADLINE;
    loop {
        let ids = topic_ids(&mut client, topics.iter().map(|(n, _)| n.as_str())).await?;
        let led = ids.len() == topics.len()
            && topics.iter().all(|(name, partitions)| {
                ids.iter()
                    .any(|(n, _, led)| n == name && *led == *partitions as usize)
            });
        if led {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("Kafka's Metadata never showed {topics:?} led; last: {ids:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `(name, topic id, partitions with a leader)` of each of `names` that `client`'s Metadata
/// (v12) knows.
pub async fn topic_ids(
    client: &mut KafkaClient,
    names: impl Iterator<Item = &str>,
) -> anyhow::Result<Vec<(String, Uuid, usize)>> {
    let request = MetadataRequest::default().with_topics(Some(
        names
            .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
            .collect(),
    ));
    let answer = client.call(&request, 12).await?;
    Ok(answer
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            let led = t.partitions.iter().filter(|p| p.leader_id.0 >= 0).count();
            (name, t.topic_id, led)
        })
        .collect())
}

/// Waits until Kafka at `addr` serves every group: FindCoordinator answers as soon as the
/// `__consumer_offsets` partition of a group has a leader (creating the topic on a fresh
/// cluster), but the coordinator answers NOT_COORDINATOR until it has loaded that partition,
/// which on a loaded machine takes seconds. So for each partition a group id that lands on it
/// is described until the answer has no error. Done once per process (the shared cluster
/// lives as long as the process).
pub async fn await_coordinators(addr: SocketAddr) -> anyhow::Result<()> {
    static READY: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    READY
        .get_or_try_init(|| async move {
            let mut client = KafkaClient::connect(addr).await?;
            let deadline = Instant::now() + 3 * DEADLINE;
            let find = FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![str("warm-up")]);
            let partitions = loop {
                let found = client.call(&find, 4).await?;
                let error = found.coordinators.first().map_or(-1, |c| c.error_code);
                let partitions = consumer_offsets_partitions(&mut client).await?;
                if error == 0 && partitions > 0 {
                    break partitions;
                }
                ensure!(
                    Instant::now() < deadline,
                    "no group coordinator at {addr}: {found:?}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            };
            for partition in 0..partitions {
                let group = (0..)
                    .map(|i| format!("warm-up-{i}"))
                    .find(|g| (java_hash(g) & 0x7fff_ffff) % partitions == partition)
                    .expect("some name lands on every partition");
                let describe =
                    DescribeGroupsRequest::default().with_groups(vec![GroupId(str(&group))]);
                loop {
                    let described = client.call(&describe, 5).await?;
                    let error = described.groups.first().map_or(-1, |g| g.error_code);
                    if error == 0 {
                        break;
                    }
                    ensure!(
                        Instant::now() < deadline,
                        "Kafka's coordinator never loaded __consumer_offsets-{partition}: {error}"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
            anyhow::Ok(())
        })
        .await?;
    Ok(())
}

/// How many partitions Kafka's `__consumer_offsets` has (0 before it exists).
async fn consumer_offsets_partitions(client: &mut KafkaClient) -> anyhow::Result<i32> {
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(topic_name("__consumer_offsets"))),
    ]));
    let answer = client.call(&request, 12).await?;
    Ok(answer
        .topics
        .first()
        .filter(|t| t.error_code == 0)
        .map_or(0, |t| t.partitions.len() as i32))
}

/// Java's `String.hashCode` (UTF-16 code units), with which Kafka puts a group on a
/// `__consumer_offsets` partition: `abs(hash) % partitions`.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Makes Kafka compute a consumer group's target assignment in the heartbeat that moved its
/// epoch, as the host does (its heartbeat waits for the module): Kafka 4.3+ recomputes it at
/// most once per `consumer.assignment.interval.ms` (1000 ms) on a background thread
/// (`consumer.assignor.offload.enable`), so its answers would depend on timing. Set on the
/// group only (IncrementalAlterConfigs, resource type GROUP), within Kafka's bounds
/// (`group.consumer.min.assignment.interval.ms` is 0).
pub async fn assign_at_once(addr: SocketAddr, group: &str) -> anyhow::Result<()> {
    let mut client = KafkaClient::connect(addr).await?;
    let set = |name: &str, value: &str| {
        AlterableConfig::default()
            .with_name(str(name))
            .with_config_operation(0)
            .with_value(Some(str(value)))
    };
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(32)
            .with_resource_name(str(group))
            .with_configs(vec![
                set("consumer.assignment.interval.ms", "0"),
                set("consumer.assignor.offload.enable", "false"),
            ]),
    ]);
    let answer = client.call(&request, 1).await?;
    for resource in &answer.responses {
        ensure!(
            resource.error_code == 0,
            "setting {group}'s assignment interval: {} {:?}",
            resource.error_code,
            resource.error_message
        );
    }
    Ok(())
}

/// A host standalone with `topics` in its catalog, its first rebalance at once as Kafka's.
pub async fn standalone(topics: &[(String, i32)]) -> TestHost {
    let owned: Vec<(String, i32)> = topics.to_vec();
    TestHost::with_config(move |config| {
        config.catalog.topics = owned
            .into_iter()
            .map(|(name, partitions)| assignor_host::catalog::TopicSeed {
                name,
                partitions,
                partition_racks: Vec::new(),
            })
            .collect();
        config.coordinator.initial_rebalance_delay_ms = 0;
    })
    .await
}

/// A host in proxy mode in front of Kafka's `bootstrap`, once it mirrors `topics`.
pub async fn proxy(bootstrap: &str, topics: &[(String, i32)]) -> TestHost {
    let host = TestHost::proxy_with(bootstrap, |_| {}).await;
    for (name, partitions) in topics {
        host.wait_for_topic(name, *partitions).await;
    }
    host
}
