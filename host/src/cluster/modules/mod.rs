//! Modules and group settings replicated through the upstream: every upload, activation,
//! rollback and deletion, and every group's operator settings, on any node of a cluster is a
//! record of the compacted topic `__assignor_host.<name>.modules`
//! (one partition, so one order), and every node applies the whole topic to its registry and
//! its driver (`apply.rs`; the records and their keys: `record.rs`).
//!
//! - **An admin call** on any node checks what it can first (an upload runs every check of
//!   `Registry::prepare`: nothing refused ever reaches the log), writes its records, and
//!   returns once this node has applied them, with the registry's answer. The other nodes
//!   apply them when they read them, within a poll of the log.
//! - **Version numbers** come from the log: the uploader proposes the next number it knows,
//!   and the first record of a number wins on every node; a loser writes the tombstone of its
//!   own key and tries the next number.
//! - **A node that starts** reads the whole topic before it joins the node group, so it serves
//!   no group with fewer modules than the others. The local store keeps no modules in a
//!   cluster; compiled code is cached in the data directory as always, so a restart replays
//!   the log without compiling.
//! - **The topic** is created if missing, compacted, with `max.message.bytes` of the upload cap
//!   plus 1 MiB (a module is one record; not chunked: Kafka's own limit is per topic and the
//!   host sets it).

mod apply;
pub mod mac;
mod record;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use tokio::sync::watch;

use self::apply::{Applier, Pending};
use self::record::Record;
use super::token::{TokenContext, Tokens};
use crate::coordinator::GroupConfig;
use crate::driver::Driver;
use crate::registry::{
    BUILTIN_VERSION, Checked, DeleteOutcome, Registry, RegistryError, UploadError, UploadOptions,
    UploadOutcome,
};
use crate::upstream::UpstreamConfig;
use crate::upstream::client::UpstreamClient;

/// Room above the upload cap in a record and a topic's `max.message.bytes`: the key, the
/// value's framing, the record batch.
const RECORD_SLACK: u64 = 1 << 20;

/// How many numbers an upload tries when other nodes take the ones it proposes.
const NUMBER_ATTEMPTS: usize = 8;

/// An admin change could not go through the module log.
#[derive(Debug, thiserror::Error)]
pub enum ModuleLogError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Upload(#[from] UploadError),
    /// The log could not be written or read in time; nothing was changed by this call, or
    /// the change is in the log and every node applies it (the message says which).
    #[error("{0}")]
    Log(String),
}

/// This node's reader and writer of the module log.
pub struct ModuleLog {
    registry: Arc<Registry>,
    producer: FutureProducer<TokenContext>,
    /// The host's own client, for the log's end.
    client: UpstreamClient,
    /// `cluster.secret_file`: each record written carries its MAC, and only records whose MAC
    /// verifies are applied (`mac.rs`). `None`: records are neither signed nor checked.
    secret: Option<mac::Secret>,
    /// Records skipped because their MAC did not verify.
    rejected: Arc<AtomicU64>,
    topic: String,
    /// The next offset the reader will apply.
    applied: watch::Receiver<i64>,
    pending: Pending,
    /// One admin change at a time from this node: its own uploads never race each other.
    writer: tokio::sync::Mutex<()>,
    /// How long a write or the wait for its application may take.
    timeout: Duration,
    stop: Arc<AtomicBool>,
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl ModuleLog {
    /// Creates the topic if missing, then reads all of it into `registry` and `driver` before
    /// returning.
    pub async fn start(
        topic: String,
        replication_factor: i16,
        upstream: &UpstreamConfig,
        client: &UpstreamClient,
        registry: Arc<Registry>,
        driver: Driver,
        secret: Option<mac::Secret>,
    ) -> Result<ModuleLog, String> {
        let max_bytes = registry.max_module_bytes() + RECORD_SLACK;
        let configs = [
            ("cleanup.policy", "compact".to_owned()),
            ("max.message.bytes", max_bytes.to_string()),
        ];
        match client
            .create_topic_with(&topic, 1, replication_factor, &configs)
            .await
        {
            Ok(0) => tracing::info!(%topic, max_bytes, "created the module log"),
            Ok(36) => {} // TOPIC_ALREADY_EXISTS
            Ok(code) => {
                return Err(format!(
                    "cannot create the module log {topic} (Kafka error {code}); create it with \
                     one partition, cleanup.policy=compact and max.message.bytes={max_bytes}, \
                     or let the host's upstream principal create topics"
                ));
            }
            Err(error) => return Err(format!("cannot create the module log {topic}: {error}")),
        }
        let timeout = upstream.request_timeout.max(Duration::from_secs(10));
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
        let producer: FutureProducer<TokenContext> = common
            .clone()
            .set("message.max.bytes", max_bytes.to_string())
            .set("acks", "all")
            .set("max.in.flight.requests.per.connection", "1")
            .set("linger.ms", "0")
            .set("message.timeout.ms", timeout.as_millis().to_string())
            .create_with_context(TokenContext(tokens.clone()))
            .map_err(|e| format!("the module log's producer: {e}"))?;
        let consumer: BaseConsumer<TokenContext> = common
            .clone()
            // librdkafka's assign() wants a group id; the reader never joins or commits.
            .set("group.id", format!("{topic}.reader"))
            .set("enable.auto.commit", "false")
            .set("fetch.message.max.bytes", max_bytes.to_string())
            .set("fetch.wait.max.ms", "100")
            .create_with_context(TokenContext(tokens))
            .map_err(|e| format!("the module log's reader: {e}"))?;
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(&topic, 0, Offset::Beginning)
            .and_then(|()| consumer.assign(&list))
            .map_err(|e| format!("the module log's reader: {e}"))?;

        let (applied_tx, applied) = watch::channel(0_i64);
        let pending = Pending::default();
        let stop = Arc::new(AtomicBool::new(false));
        let applier = Applier::new(
            registry.clone(),
            pending.clone(),
            driver,
            tokio::runtime::Handle::current(),
        );
        let (reader_topic, reader_stop) = (topic.clone(), stop.clone());
        let rejected = Arc::new(AtomicU64::new(0));
        let check = Check {
            secret: secret.clone(),
            rejected: rejected.clone(),
        };
        let reader = std::thread::Builder::new()
            .name("module-log".into())
            .spawn(move || {
                read(
                    consumer,
                    reader_topic,
                    applier,
                    applied_tx,
                    reader_stop,
                    check,
                )
            })
            .map_err(|e| format!("the module log's reader thread: {e}"))?;
        let log = ModuleLog {
            registry,
            producer,
            client: client.clone(),
            secret,
            rejected,
            topic,
            applied,
            pending,
            writer: tokio::sync::Mutex::new(()),
            timeout,
            stop,
            reader: Mutex::new(Some(reader)),
        };
        let started = Instant::now();
        let end = log.end_offset().await?;
        log.applied_past(end - 1).await.map_err(|e| e.to_string())?;
        tracing::info!(
            topic = %log.topic,
            records = end,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "module log applied"
        );
        Ok(log)
    }

    /// Checks and writes an upload; see the module docs for how its number is chosen.
    pub async fn upload(
        &self,
        name: String,
        wasm: Vec<u8>,
        options: UploadOptions,
    ) -> Result<UploadOutcome, ModuleLogError> {
        let started = Instant::now();
        let _writer = self.writer.lock().await;
        let registry = self.registry.clone();
        let wasm = Arc::new(wasm);
        let (check_name, check_wasm) = (name.clone(), wasm.clone());
        let expected = options.expected_sha256.clone();
        let checked = tokio::task::spawn_blocking(move || {
            registry.prepare(&check_name, &check_wasm, expected.as_deref())
        })
        .await
        .map_err(|e| ModuleLogError::Log(format!("the upload's checks panicked: {e}")))??;
        let prepared = match checked {
            Checked::Existing(existing) => {
                if options.activate {
                    self.write(&[Record::Active {
                        name: name.clone(),
                        version: Some(existing.version),
                    }])
                    .await?;
                }
                return Ok(UploadOutcome {
                    active: self.active_version(&name) == Some(existing.version),
                    name,
                    version: existing.version,
                    sha256: existing.meta.sha256.clone(),
                    created: false,
                    info: existing.meta.info.clone(),
                    smoke: None,
                    duration: started.elapsed(),
                });
            }
            Checked::New(prepared) => prepared,
        };
        let (sha256, info, smoke) = (
            prepared.sha256.clone(),
            prepared.info.clone(),
            prepared.smoke,
        );
        self.pending
            .lock()
            .insert((name.clone(), sha256.clone()), *prepared);
        let uploaded_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut won = None;
        for _ in 0..NUMBER_ATTEMPTS {
            let version = self.registry.next_version(&name);
            self.write(&[Record::Version {
                name: name.clone(),
                version,
                sha256: sha256.clone(),
                wasm: wasm.to_vec(),
                uploaded_ms,
            }])
            .await?;
            match self.registry.version_of(&name, version) {
                Some(v) if v.meta.sha256 == sha256 => {
                    won = Some(version);
                    break;
                }
                Some(_) => {
                    // Another node's upload has this number: drop our record's bytes.
                    self.write(&[Record::VersionGone {
                        name: name.clone(),
                        version,
                        sha256: sha256.clone(),
                    }])
                    .await?;
                }
                None => {
                    self.pending.lock().remove(&(name.clone(), sha256.clone()));
                    return Err(ModuleLogError::Log(format!(
                        "version {version} of `{name}` is in the module log but did not load \
                         on this node (see its log)"
                    )));
                }
            }
        }
        let Some(version) = won else {
            return Err(ModuleLogError::Log(format!(
                "other nodes took {NUMBER_ATTEMPTS} version numbers of `{name}` in a row while \
                 this upload was written; try again"
            )));
        };
        if options.activate {
            self.write(&[Record::Active {
                name: name.clone(),
                version: Some(version),
            }])
            .await?;
        }
        Ok(UploadOutcome {
            active: self.active_version(&name) == Some(version),
            name,
            version,
            sha256,
            created: true,
            info,
            smoke: Some(smoke),
            duration: started.elapsed(),
        })
    }

    /// Makes `version` of `name` the active version on every node.
    pub async fn activate(&self, name: &str, version: u32) -> Result<String, ModuleLogError> {
        let _writer = self.writer.lock().await;
        let canonical = self.canonical(name)?;
        if self.registry.version_of(&canonical, version).is_none() {
            return Err(RegistryError::VersionNotFound {
                name: canonical,
                version,
            }
            .into());
        }
        self.write(&[Record::Active {
            name: canonical.clone(),
            version: Some(version),
        }])
        .await?;
        Ok(canonical)
    }

    /// Activates the highest version below the active one on every node; returns it.
    pub async fn rollback(&self, name: &str) -> Result<(String, u32), ModuleLogError> {
        let versions = self.registry.versions(name)?;
        let canonical = versions[0].name.clone();
        let active = versions.iter().find(|v| v.active).map_or(0, |v| v.version);
        let Some(target) = versions
            .iter()
            .map(|v| v.version)
            .filter(|v| *v < active)
            .max()
        else {
            return Err(RegistryError::NoPreviousVersion {
                name: canonical,
                version: active,
            }
            .into());
        };
        self.activate(&canonical, target).await?;
        Ok((canonical, target))
    }

    /// Deletes one version on every node. Refuses the active version and the built-in.
    pub async fn delete_version(&self, name: &str, version: u32) -> Result<String, ModuleLogError> {
        let _writer = self.writer.lock().await;
        let canonical = self.canonical(name)?;
        let Some(found) = self.registry.version_of(&canonical, version) else {
            return Err(RegistryError::VersionNotFound {
                name: canonical,
                version,
            }
            .into());
        };
        if found.meta.builtin {
            return Err(RegistryError::Builtin { name: canonical }.into());
        }
        if self.active_version(&canonical) == Some(version) {
            return Err(RegistryError::ActiveVersion {
                name: canonical,
                version,
            }
            .into());
        }
        self.write(&deletion(&canonical, version, &found.meta.sha256))
            .await?;
        Ok(canonical)
    }

    /// Deletes every uploaded version of `name` on every node (a name with a built-in returns
    /// to it).
    pub async fn delete(&self, name: &str) -> Result<DeleteOutcome, ModuleLogError> {
        let _writer = self.writer.lock().await;
        let versions = self.registry.versions(name)?;
        let canonical = versions[0].name.clone();
        let uploaded: Vec<_> = versions.iter().filter(|v| !v.meta.builtin).collect();
        if uploaded.is_empty() {
            return Err(RegistryError::Builtin { name: canonical }.into());
        }
        let mut records = vec![Record::Active {
            name: canonical.clone(),
            version: None,
        }];
        for v in &uploaded {
            records.extend(deletion(&canonical, v.version, &v.meta.sha256));
        }
        self.write(&records).await?;
        let has_builtin = versions.iter().any(|v| v.meta.builtin);
        Ok(DeleteOutcome {
            name: canonical,
            removed_versions: uploaded.iter().map(|v| v.version).collect(),
            active: has_builtin.then_some(BUILTIN_VERSION),
        })
    }

    /// Sets a group's operator settings on every node (checked by the caller, as for one
    /// host: the module exists, the coordinator accepts them).
    pub async fn set_group_config(
        &self,
        group: &str,
        config: GroupConfig,
    ) -> Result<(), ModuleLogError> {
        let _writer = self.writer.lock().await;
        self.write(&[Record::Group {
            group: group.to_owned(),
            config: Some(config),
        }])
        .await
    }

    /// Records skipped so far because their MAC did not verify (written by something other
    /// than a node with this cluster's secret).
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Tells the reader to stop and hands back its thread, for the caller to wait on as long
    /// as it chooses (closing its librdkafka consumer may wait on an unreachable upstream).
    pub fn stop(&self) -> Option<std::thread::JoinHandle<()>> {
        self.stop.store(true, Ordering::Release);
        self.reader.lock().take()
    }

    fn canonical(&self, name: &str) -> Result<String, RegistryError> {
        Ok(self.registry.versions(name)?[0].name.clone())
    }

    fn active_version(&self, name: &str) -> Option<u32> {
        let versions = self.registry.versions(name).ok()?;
        versions.iter().find(|v| v.active).map(|v| v.version)
    }

    /// Writes `records` in order and waits until this node has applied the last.
    async fn write(&self, records: &[Record]) -> Result<(), ModuleLogError> {
        let mut last = -1;
        for (i, record) in records.iter().enumerate() {
            let (key, value) = record.encode();
            let mut out = FutureRecord::<str, [u8]>::to(&self.topic)
                .key(&key)
                .partition(0);
            if let Some(value) = &value {
                out = out.payload(value);
            }
            let tag = self
                .secret
                .as_ref()
                .map(|s| s.sign(key.as_bytes(), value.as_deref()));
            if let Some(tag) = &tag {
                out = out.headers(OwnedHeaders::new().insert(Header {
                    key: mac::HEADER,
                    value: Some(tag),
                }));
            }
            match self.producer.send(out, self.timeout).await {
                Ok(delivery) => last = delivery.offset,
                Err((error, _)) => {
                    let written = if i == 0 {
                        "nothing was changed".to_owned()
                    } else {
                        format!("{i} of its {} records were written", records.len())
                    };
                    return Err(ModuleLogError::Log(format!(
                        "the module log {} refused a record ({error}); {written}. A record of \
                         a module is its size plus up to {RECORD_SLACK} bytes: the topic's \
                         max.message.bytes must allow that",
                        self.topic
                    )));
                }
            }
        }
        self.applied_past(last).await
    }

    /// Waits until the reader has applied `offset`, for as long as it makes progress: a
    /// timeout passing with no record applied is an error (replaying a long log compiles
    /// every module it holds, which takes as long as it takes).
    async fn applied_past(&self, offset: i64) -> Result<(), ModuleLogError> {
        let mut applied = self.applied.clone();
        let mut seen = *applied.borrow();
        loop {
            let wait = applied.wait_for(|next| *next > offset);
            let done = tokio::time::timeout(self.timeout, wait)
                .await
                .map(|r| r.is_ok());
            match done {
                Ok(true) => return Ok(()),
                Ok(false) => break,
                Err(_) => {
                    let now = *applied.borrow();
                    if now == seen {
                        break;
                    }
                    seen = now;
                }
            }
        }
        Err(ModuleLogError::Log(format!(
            "the change is in the module log {} (offset {offset}) but this node applied              nothing of it for {:?} (at offset {seen}); every node applies it when it reads it",
            self.topic, self.timeout
        )))
    }

    /// The offset after the log's last record, asked of the partition's leader with the
    /// host's own client. A log created a moment ago may not be known to every broker yet
    /// (Kafka publishes a new topic to its metadata before its leader takes the partition):
    /// asked again until `timeout`.
    async fn end_offset(&self) -> Result<i64, String> {
        let deadline = Instant::now() + self.timeout;
        let asked = [(self.topic.clone(), 0)];
        loop {
            let answer = self.client.end_offsets(&asked).await;
            let end = answer
                .map_err(|e| e.to_string())
                .and_then(|mut ends| ends.pop().ok_or_else(|| "no answer".to_owned()));
            let refused = match end {
                Ok(end) if end.error == 0 => return Ok(end.offset),
                Ok(end) => format!("Kafka error {}", end.error),
                Err(error) => error,
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "cannot read the end of the module log {}: {refused}",
                    self.topic
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for ModuleLog {
    /// Tells the reader to stop without waiting for it: a drop must not block.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A version's deletion: the marker that keeps its number taken, then the tombstone that lets
/// compaction drop its bytes.
fn deletion(name: &str, version: u32, sha256: &str) -> [Record; 2] {
    [
        Record::Deleted {
            name: name.to_owned(),
            version,
        },
        Record::VersionGone {
            name: name.to_owned(),
            version,
            sha256: sha256.to_owned(),
        },
    ]
}

/// What the reader checks of each record before it applies it.
struct Check {
    secret: Option<mac::Secret>,
    rejected: Arc<AtomicU64>,
}

impl Check {
    /// Whether `message` is a node's own (its MAC verifies), or nothing is checked.
    fn passes(&self, message: &rdkafka::message::BorrowedMessage<'_>) -> bool {
        let Some(secret) = &self.secret else {
            return true;
        };
        let tag = message.headers().and_then(|headers| {
            headers
                .iter()
                .find(|h| h.key == mac::HEADER)
                .and_then(|h| h.value)
        });
        let key = message.key().unwrap_or_default();
        let verified = tag.is_some_and(|tag| secret.verify(key, message.payload(), tag));
        if !verified {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                topic = message.topic(),
                offset = message.offset(),
                signed = tag.is_some(),
                "a record of the module log does not carry this cluster's MAC \
                 (cluster.secret_file): skipped; it was not written by a node of this cluster"
            );
        }
        verified
    }
}

/// The reader thread: applies every record in order and publishes the next offset to apply.
fn read(
    consumer: BaseConsumer<TokenContext>,
    topic: String,
    mut applier: Applier,
    applied: watch::Sender<i64>,
    stop: Arc<AtomicBool>,
    check: Check,
) {
    let mut failing = false;
    while !stop.load(Ordering::Acquire) {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                failing = false;
                let key = message.key().unwrap_or_default();
                let decoded = if check.passes(&message) {
                    Some(Record::decode(key, message.payload()))
                } else {
                    None
                };
                match decoded {
                    None => {}
                    Some(Ok(record)) => applier.apply(record),
                    Some(Err(error)) => tracing::warn!(
                        %topic,
                        offset = message.offset(),
                        %error,
                        "a record of the module log was skipped"
                    ),
                }
                applied.send_replace(message.offset() + 1);
            }
            Some(Err(error)) => {
                if !failing {
                    tracing::warn!(%topic, %error, "reading the module log failed; retrying");
                }
                failing = true;
            }
            None => {
                // Past a compacted gap or the last record: the position says how far.
                if let Ok(position) = consumer.position()
                    && let Some(Offset::Offset(next)) =
                        position.find_partition(&topic, 0).map(|p| p.offset())
                {
                    applied.send_if_modified(|n| {
                        let moved = next > *n;
                        *n = (*n).max(next);
                        moved
                    });
                }
            }
        }
    }
}
