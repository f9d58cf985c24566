//! Each group's saved state in the cluster, so a shard that moves costs its groups no
//! rebalance: the compacted topic `__assignor_host.<name>.groups`, one partition per shard
//! (partition = the group's shard), keyed by group id, each value a [`SavedGroup`] record
//! (`coordinator::saved`: MessagePack `{version, group}`, shaped after Kafka's
//! `GroupMetadataValue` and `ConsumerGroup*Value` records) and a deleted group a tombstone.
//!
//! - **Written** by the shard's owner through the driver ([`RemoteGroups`]): a classic group
//!   at each generation's SyncGroup completion, before the answers that reveal it; a consumer
//!   group within a second of a change (`consumer::snapshot`), and when its shard is given up
//!   (handover). Never per heartbeat. Each write waits for the cluster's acknowledgement
//!   (`acks=all`).
//! - **Loaded** by a node that gains a shard (`membership.rs`), after the previous holder's
//!   lease is over (so nothing more of its can arrive): the partition read to its end, the last
//!   record of each group kept, and the groups restored in the driver at their generation and
//!   epochs, every member's session started in full, before the shard is served. Until then
//!   its groups' requests are answered as while Kafka loads `__consumer_offsets`.
//! - **Signed** like the module log when `cluster.secret_file` is set: a record that does not
//!   verify is skipped (and logged), so whoever else may write the topic cannot hand a node
//!   the members or assignments of a group.
//!
//! Not yet (issue 31, next): fencing by a transactional id per shard. Until then two writers of
//! one shard are kept apart as the serving is, by the lease: a write is sent only while this
//! node's lease lasts, librdkafka gives it up after half a lease, and a new owner reads the
//! partition only a lease after it gained it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use super::modules::mac::{self, Secret};
use super::ownership::Ownership;
use super::token::{TokenContext, Tokens};
use crate::coordinator::{RestoredGroup, SavedGroup};
use crate::driver::{Borrowed, Driver, RemoteGroups};
use crate::upstream::UpstreamConfig;
use crate::upstream::client::UpstreamClient;

/// The group log of one cluster, as this node writes and reads it.
pub struct GroupLog {
    topic: String,
    ownership: Arc<Ownership>,
    producer: FutureProducer<TokenContext>,
    /// The reader's settings: a reader is made per load and never joins a group.
    reader: ClientConfig,
    tokens: Tokens,
    client: UpstreamClient,
    secret: Option<Secret>,
    /// How long one call waits for the upstream.
    timeout: Duration,
}

impl GroupLog {
    /// Creates the topic if missing (one partition per shard, compacted) and the producer.
    pub async fn open(
        topic: String,
        replication_factor: i16,
        ownership: Arc<Ownership>,
        upstream: &UpstreamConfig,
        client: &UpstreamClient,
        secret: Option<Secret>,
    ) -> Result<GroupLog, String> {
        let partitions = i32::try_from(ownership.count()).unwrap_or(i32::MAX);
        let configs = [("cleanup.policy", "compact".to_owned())];
        match client
            .create_topic_with(&topic, partitions, replication_factor, &configs)
            .await
        {
            Ok(0) => tracing::info!(%topic, partitions, "created the group log"),
            Ok(36) => {} // TOPIC_ALREADY_EXISTS
            Ok(code) => {
                return Err(format!(
                    "cannot create the group log {topic} (Kafka error {code}); create it with \
                     {partitions} partitions (cluster.shards) and cleanup.policy=compact, or \
                     let the host's upstream principal create topics"
                ));
            }
            Err(error) => return Err(format!("cannot create the group log {topic}: {error}")),
        }
        // Half a lease: a write this node sent under its lease is written or given up before
        // a new owner, which waits a whole lease, reads the partition.
        let give_up = (ownership.lease() / 2).max(Duration::from_millis(500));
        let mut common = ClientConfig::new();
        common.set("bootstrap.servers", upstream.bootstrap.join(","));
        for (key, value) in
            crate::upstream::connection::security::librdkafka_config(&upstream.security())?
        {
            common.set(key, value);
        }
        for (key, value) in &upstream.client {
            common.set(key, value);
        }
        let tokens = Tokens::new(&upstream.security());
        let millis = give_up.as_millis().to_string();
        let producer: FutureProducer<TokenContext> = common
            .clone()
            .set("acks", "all")
            .set("max.in.flight.requests.per.connection", "1")
            .set("linger.ms", "0")
            .set("message.timeout.ms", &millis)
            .set("request.timeout.ms", &millis)
            .create_with_context(TokenContext(tokens.clone()))
            .map_err(|e| format!("the group log's producer: {e}"))?;
        let mut reader = common;
        reader
            .set("group.id", format!("{topic}.reader"))
            .set("enable.auto.commit", "false")
            .set("fetch.wait.max.ms", "100");
        Ok(GroupLog {
            topic,
            ownership,
            producer,
            reader,
            tokens,
            client: client.clone(),
            secret,
            timeout: upstream.request_timeout.max(Duration::from_secs(10)),
        })
    }

    /// Writes `value` (a tombstone when `None`) under `group_id` in the group's shard.
    async fn write(&self, group_id: &str, value: Option<&[u8]>) -> Result<(), String> {
        if !self.ownership.leased() {
            return Err(format!(
                "not written: this node's lease has run out (group {group_id})"
            ));
        }
        let shard = self.ownership.shard_of(group_id);
        let partition = i32::try_from(shard).unwrap_or(i32::MAX);
        let mut record = FutureRecord::<str, [u8]>::to(&self.topic)
            .key(group_id)
            .partition(partition);
        if let Some(value) = value {
            record = record.payload(value);
        }
        let tag = (self.secret.as_ref()).map(|s| s.sign(group_id.as_bytes(), value));
        if let Some(tag) = &tag {
            record = record.headers(OwnedHeaders::new().insert(Header {
                key: mac::HEADER,
                value: Some(tag),
            }));
        }
        self.producer
            .send(record, self.timeout)
            .await
            .map(|_| ())
            .map_err(|(error, _)| {
                format!("the group log refused group {group_id}'s record: {error}")
            })
    }

    /// Reads the partitions of `shards` to their end: the last record of each group, as
    /// groups to restore (tombstoned and undecodable ones left out, the latter logged).
    pub async fn load(&self, shards: &[u32]) -> Result<Vec<RestoredGroup>, String> {
        let asked: Vec<(String, i32)> = shards
            .iter()
            .map(|&s| (self.topic.clone(), i32::try_from(s).unwrap_or(i32::MAX)))
            .collect();
        let ends = self
            .client
            .end_offsets(&asked)
            .await
            .map_err(|e| format!("cannot read the end of the group log: {e}"))?;
        let mut until = BTreeMap::new();
        for end in ends {
            if end.error != 0 {
                return Err(format!(
                    "cannot read the end of the group log's partition {}: Kafka error {}",
                    end.partition, end.error
                ));
            }
            if end.offset > 0 {
                until.insert(end.partition, end.offset);
            }
        }
        if until.is_empty() {
            return Ok(Vec::new());
        }
        let consumer: BaseConsumer<TokenContext> = self
            .reader
            .create_with_context(TokenContext(self.tokens.clone()))
            .map_err(|e| format!("the group log's reader: {e}"))?;
        let (topic, secret, timeout) = (self.topic.clone(), self.secret.clone(), self.timeout);
        tokio::task::spawn_blocking(move || read(&consumer, &topic, until, secret, timeout))
            .await
            .map_err(|e| format!("the group log's reader panicked: {e}"))?
    }
}

/// Loads the groups of the shards `gained` here once the previous holder's lease is over (so
/// nothing more of its can arrive), restores them in the driver, and lets the shards be served.
/// A failed read is retried every second while the shards are still held at that gain.
pub(super) async fn load_gained(
    log: Arc<GroupLog>,
    ownership: Arc<Ownership>,
    driver: Driver,
    gained: Vec<(u32, u64)>,
) {
    let wait = (gained.iter())
        .map(|&(shard, _)| ownership.servable_in(shard))
        .max()
        .unwrap_or_default();
    tokio::time::sleep(wait).await;
    loop {
        let wanted: Vec<(u32, u64)> = (gained.iter().copied())
            .filter(|&g| ownership.still_gained(g))
            .collect();
        if wanted.is_empty() {
            return;
        }
        let shards: Vec<u32> = wanted.iter().map(|&(shard, _)| shard).collect();
        let started = Instant::now();
        match log.load(&shards).await {
            Ok(groups) => {
                let count = groups.len();
                driver.restore(groups).await;
                let served = ownership.loaded(&wanted);
                tracing::info!(
                    shards = ?served,
                    groups = count,
                    elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
                    "read the gained shards' groups from the group log: serving them"
                );
                return;
            }
            Err(error) => {
                tracing::warn!(?shards, %error, "cannot read the gained shards' groups; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Reads each partition of `until` from its beginning up to its end offset.
fn read(
    consumer: &BaseConsumer<TokenContext>,
    topic: &str,
    mut until: BTreeMap<i32, i64>,
    secret: Option<Secret>,
    timeout: Duration,
) -> Result<Vec<RestoredGroup>, String> {
    let mut list = TopicPartitionList::new();
    for &partition in until.keys() {
        list.add_partition_offset(topic, partition, Offset::Beginning)
            .map_err(|e| format!("the group log's reader: {e}"))?;
    }
    consumer
        .assign(&list)
        .map_err(|e| format!("the group log's reader: {e}"))?;
    let mut groups: BTreeMap<String, Option<SavedGroup>> = BTreeMap::new();
    let mut progress = Instant::now();
    while !until.is_empty() {
        if progress.elapsed() > timeout {
            return Err(format!(
                "the group log's partitions {:?} gave nothing for {timeout:?}",
                until.keys().collect::<Vec<_>>()
            ));
        }
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                progress = Instant::now();
                let key = String::from_utf8_lossy(message.key().unwrap_or_default()).into_owned();
                let value = message.payload();
                if let Some(secret) = &secret {
                    let tag = message.headers().and_then(|headers| {
                        headers
                            .iter()
                            .find(|h| h.key == mac::HEADER)
                            .and_then(|h| h.value)
                    });
                    if !tag.is_some_and(|tag| secret.verify(key.as_bytes(), value, tag)) {
                        tracing::warn!(
                            %topic, partition = message.partition(), offset = message.offset(),
                            group = %key,
                            "a record of the group log does not carry this cluster's MAC \
                             (cluster.secret_file): skipped"
                        );
                        passed(&mut until, message.partition(), message.offset() + 1);
                        continue;
                    }
                }
                let saved = match value.map(SavedGroup::decode) {
                    None => None,
                    Some(Ok(saved)) if saved.group_id() == key => Some(saved),
                    Some(Ok(saved)) => {
                        tracing::warn!(%topic, group = %key, names = saved.group_id(),
                            "a record of the group log names another group: skipped");
                        None
                    }
                    Some(Err(error)) => {
                        tracing::warn!(%topic, group = %key, %error,
                            "a record of the group log cannot be read: the group starts anew");
                        None
                    }
                };
                groups.insert(key, saved);
                passed(&mut until, message.partition(), message.offset() + 1);
            }
            Some(Err(error)) => tracing::debug!(%topic, %error, "reading the group log"),
            None => {
                // Past a compacted gap or the last record: the position says how far.
                if let Ok(position) = consumer.position() {
                    for element in position.elements_for_topic(topic) {
                        if let Offset::Offset(next) = element.offset() {
                            passed(&mut until, element.partition(), next);
                        }
                    }
                }
            }
        }
    }
    Ok(groups
        .into_iter()
        .filter_map(|(group_id, saved)| {
            saved.map(|snapshot| RestoredGroup {
                group_id,
                snapshot: Some(snapshot),
                offsets: Vec::new(),
                config: None,
            })
        })
        .collect())
}

/// The reader is at `next` in `partition`: done with it once past its end.
fn passed(until: &mut BTreeMap<i32, i64>, partition: i32, next: i64) {
    if until.get(&partition).is_some_and(|&end| next >= end) {
        until.remove(&partition);
    }
}

impl RemoteGroups for GroupLog {
    fn save(&self, group: Arc<SavedGroup>) -> Borrowed<'_, Result<(), String>> {
        Box::pin(async move {
            let value = group
                .encode()
                .map_err(|e| format!("group {} not encoded: {e}", group.group_id()))?;
            self.write(group.group_id(), Some(&value)).await
        })
    }

    fn delete(&self, group_id: String) -> Borrowed<'_, Result<(), String>> {
        Box::pin(async move { self.write(&group_id, None).await })
    }
}
