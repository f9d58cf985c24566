//! The topics the host serves: name, partition count and (optionally) replica racks per
//! partition. The host is the only broker and the leader of every partition, so a topic is
//! nothing more than this; it stores no messages.
//!
//! The catalog is changed by the Kafka admin APIs (CreateTopics, CreatePartitions,
//! DeleteTopics), by auto-creation from Metadata when enabled, by the admin HTTP API, and seeded
//! from the config file at start. Every change is persisted first (`store::topics`) and then
//! published as a new immutable [`TopicsView`] on a `watch` channel, which the coordinator
//! follows to notice partition-count changes (the host, not a client, is the group leader).
//!
//! Every topic has a topic id (KIP-516), a random non-zero uuid given when the topic is created
//! and persisted with it: Metadata v10+ reports it, v12+ looks topics up by it, and the
//! consumer protocol (KIP-848) names topics only by it. A topic deleted and created again gets
//! a new id, as in Kafka. Topics of a store written before ids existed get one when it opens.
//!
//! Writers are serialized by one mutex; readers take the current snapshot without locking
//! anything but the `watch` slot. A write is a synchronous redb commit (about a millisecond),
//! done inline even from async handlers: topic changes are rare admin operations, and keeping
//! the catalog synchronous lets the admin API, the Kafka handlers and the seeding share it.

mod config;
pub mod names;

use std::collections::BTreeMap;
use std::sync::Arc;

use assignor_sdk::Topic;
use kafka_protocol::error::ResponseError;
use parking_lot::Mutex;
use tokio::sync::watch;
use uuid::Uuid;

use crate::coordinator::view::{Topics, TopicsView, derived_id};
use crate::store::{Store, StoreError};

pub use config::{CatalogConfig, TopicSeed};

/// The topic catalog. Cheap to clone; clones share one state.
#[derive(Clone)]
pub struct Catalog {
    inner: Arc<Inner>,
}

struct Inner {
    /// Serializes writers: read-modify-persist-publish happens under it.
    write: Mutex<()>,
    /// The current view; the sender is the source of truth.
    view: watch::Sender<TopicsView>,
    store: Option<Store>,
    settings: CatalogConfig,
}

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    pub name: String,
    /// `None` takes `catalog.default_partitions` (Kafka's `num_partitions = -1`).
    pub partitions: Option<i32>,
    /// Empty (unknown) or one list per partition.
    pub partition_racks: Vec<Vec<String>>,
}

/// Why a catalog change was refused. Each maps to the Kafka error code a broker would send.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{0}")]
    InvalidTopic(String),
    #[error("Topic '{0}' already exists.")]
    TopicAlreadyExists(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidRacks(String),
    #[error("This server does not host this topic: '{0}'.")]
    UnknownTopic(String),
    #[error("config topic {topic:?}: {reason}")]
    Seed { topic: String, reason: String },
    #[error("storage: {0}")]
    Storage(#[from] StoreError),
}

impl CatalogError {
    /// The Kafka error code for this refusal.
    pub fn error_code(&self) -> i16 {
        match self {
            CatalogError::InvalidTopic(_) => ResponseError::InvalidTopicException.code(),
            CatalogError::TopicAlreadyExists(_) => ResponseError::TopicAlreadyExists.code(),
            CatalogError::InvalidPartitions(_) => ResponseError::InvalidPartitions.code(),
            CatalogError::InvalidRacks(_) => ResponseError::InvalidReplicaAssignment.code(),
            CatalogError::UnknownTopic(_) => ResponseError::UnknownTopicOrPartition.code(),
            CatalogError::Seed { .. } => ResponseError::InvalidConfig.code(),
            CatalogError::Storage(_) => ResponseError::KafkaStorageError.code(),
        }
    }
}

impl Catalog {
    /// Loads the stored topics, then applies the config seeds (create if missing, grow if the
    /// seed has more partitions). A bad seed refuses the start with the topic's name.
    pub fn open(settings: &CatalogConfig, store: Option<Store>) -> Result<Catalog, CatalogError> {
        let (stored, mut ids) = match &store {
            Some(store) => (store.load_topics()?, store.load_topic_ids()?),
            None => (Vec::new(), BTreeMap::new()),
        };
        let map: BTreeMap<String, Topic> =
            stored.into_iter().map(|t| (t.name.clone(), t)).collect();
        for topic in map.values() {
            if ids.get(&topic.name).is_none_or(Uuid::is_nil) {
                let id = new_topic_id();
                if let Some(store) = &store {
                    store.put_topic(topic, id)?;
                }
                tracing::info!(topic = %topic.name, %id, "topic id given to a stored topic");
                ids.insert(topic.name.clone(), id);
            }
        }
        let (view, _) = watch::channel(Arc::new(Topics::new(map, ids)));
        let catalog = Catalog {
            inner: Arc::new(Inner {
                write: Mutex::new(()),
                view,
                store,
                settings: settings.clone(),
            }),
        };
        for seed in &settings.topics {
            catalog.seed(seed).map_err(|e| match e {
                CatalogError::Storage(e) => CatalogError::Storage(e),
                other => CatalogError::Seed {
                    topic: seed.name.clone(),
                    reason: other.to_string(),
                },
            })?;
        }
        Ok(catalog)
    }

    /// The catalog of proxy mode: the upstream cluster's topics as its Metadata reads, kept
    /// in memory only ([`Catalog::mirror_topics`] replaces them), no seeds.
    pub fn mirror() -> Catalog {
        let (view, _) = watch::channel(Arc::new(Topics::default()));
        Catalog {
            inner: Arc::new(Inner {
                write: Mutex::new(()),
                view,
                store: None,
                settings: CatalogConfig::default(),
            }),
        }
    }

    /// Replaces every topic with `topics` (a complete read of the upstream's Metadata), each
    /// with the topic id derived from its name ([`derived_id`]), and publishes only when
    /// something changed, so groups rebalance only for a real change. Returns whether it
    /// changed.
    ///
    /// The ids are the host's own, not the upstream's (noida-db's are zero): consumer-protocol
    /// assignments name topics by id, the proxy's Metadata answers carry these
    /// (`kafka::proxy::rewrite::topic_ids`), and a name always derives the same id, so they
    /// survive a restart without being stored.
    pub fn mirror_topics(&self, topics: Vec<Topic>) -> bool {
        let with_ids = topics.into_iter().map(|t| {
            let id = derived_id(&t.name);
            (t, id)
        });
        self.mirror_topics_with_ids(with_ids.collect())
    }

    /// [`Catalog::mirror_topics`] with the upstream's topic ids (Metadata v10+).
    pub fn mirror_topics_with_ids(&self, topics: Vec<(Topic, Uuid)>) -> bool {
        let _guard = self.inner.write.lock();
        let ids: BTreeMap<String, Uuid> =
            topics.iter().map(|(t, id)| (t.name.clone(), *id)).collect();
        let map: BTreeMap<String, Topic> = topics
            .into_iter()
            .map(|(t, _)| (t.name.clone(), t))
            .collect();
        let next = Topics::new(map, ids);
        if **self.inner.view.borrow() == next {
            return false;
        }
        self.inner.view.send_replace(Arc::new(next));
        true
    }

    /// The current topics, by name.
    pub fn topics(&self) -> TopicsView {
        self.inner.view.borrow().clone()
    }

    /// One topic, if the host serves it.
    pub fn topic(&self, name: &str) -> Option<Topic> {
        self.inner.view.borrow().get(name).cloned()
    }

    /// Follows every change; the coordinator's input.
    pub fn subscribe(&self) -> watch::Receiver<TopicsView> {
        self.inner.view.subscribe()
    }

    /// The settings the catalog was opened with (auto-creation, default partitions).
    pub fn settings(&self) -> &CatalogConfig {
        &self.inner.settings
    }

    /// Creates a topic. With `validate_only` every check runs and nothing changes (Kafka's
    /// CreateTopics `validate_only`); the returned topic is what would have been created.
    pub fn create(&self, new: NewTopic, validate_only: bool) -> Result<Topic, CatalogError> {
        let _write = self.inner.write.lock();
        let current = self.topics();
        names::validate(&new.name).map_err(CatalogError::InvalidTopic)?;
        if current.contains_key(&new.name) {
            return Err(CatalogError::TopicAlreadyExists(new.name));
        }
        let unified = names::unify_collision_chars(&new.name);
        if let Some(other) = current
            .keys()
            .find(|other| names::unify_collision_chars(other) == unified)
        {
            return Err(CatalogError::InvalidTopic(format!(
                "Topic '{}' collides with existing topic: {other}",
                new.name
            )));
        }
        let partitions = new
            .partitions
            .unwrap_or(self.inner.settings.default_partitions);
        self.check_partition_count(partitions)?;
        check_racks(&new.partition_racks, partitions)?;
        let topic = Topic {
            name: new.name,
            partition_count: partitions,
            partition_racks: new.partition_racks,
        };
        if !validate_only {
            self.commit(current, topic.clone())?;
            tracing::info!(topic = %topic.name, partitions, "topic created");
        }
        Ok(topic)
    }

    /// Raises a topic's partition count to `count` (partitions are never removed, as in
    /// Kafka). Known racks are extended by cycling the existing per-partition lists.
    pub fn create_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<Topic, CatalogError> {
        let _write = self.inner.write.lock();
        let current = self.topics();
        let Some(existing) = current.get(name) else {
            return Err(CatalogError::UnknownTopic(name.to_owned()));
        };
        let have = existing.partition_count;
        if count == have {
            return Err(CatalogError::InvalidPartitions(format!(
                "Topic already has {have} partition(s)."
            )));
        }
        if count < have {
            return Err(CatalogError::InvalidPartitions(format!(
                "The topic {name} currently has {have} partition(s); {count} would not be an \
                 increase."
            )));
        }
        self.check_partition_count(count)?;
        let mut topic = existing.clone();
        topic.partition_count = count;
        grow_racks(&mut topic.partition_racks, count);
        if !validate_only {
            self.commit(current, topic.clone())?;
            tracing::info!(topic = %name, from = have, to = count, "partitions added");
        }
        Ok(topic)
    }

    /// Removes a topic. Committed offsets for it are left alone (as Kafka leaves them until
    /// they expire); groups subscribed to it rebalance when the coordinator sees it go.
    pub fn delete(&self, name: &str) -> Result<Topic, CatalogError> {
        let _write = self.inner.write.lock();
        let current = self.topics();
        let Some(topic) = current.get(name).cloned() else {
            return Err(CatalogError::UnknownTopic(name.to_owned()));
        };
        if let Some(store) = &self.inner.store {
            store.delete_topic(name)?;
        }
        let mut topics = current.by_name().clone();
        let mut ids = current.ids().clone();
        topics.remove(name);
        ids.remove(name);
        self.inner
            .view
            .send_replace(Arc::new(Topics::new(topics, ids)));
        tracing::info!(topic = %name, "topic deleted");
        Ok(topic)
    }

    fn seed(&self, seed: &TopicSeed) -> Result<(), CatalogError> {
        match self.topic(&seed.name) {
            None => self
                .create(
                    NewTopic {
                        name: seed.name.clone(),
                        partitions: Some(seed.partitions),
                        partition_racks: seed.partition_racks.clone(),
                    },
                    false,
                )
                .map(|_| ()),
            Some(existing) => {
                let mut topic = existing.clone();
                if seed.partitions > existing.partition_count {
                    self.check_partition_count(seed.partitions)?;
                    topic.partition_count = seed.partitions;
                    grow_racks(&mut topic.partition_racks, seed.partitions);
                } else if seed.partitions < existing.partition_count {
                    tracing::warn!(
                        topic = %seed.name,
                        configured = seed.partitions,
                        stored = existing.partition_count,
                        "config names fewer partitions than the topic has; keeping the stored count"
                    );
                }
                if !seed.partition_racks.is_empty() {
                    check_racks(&seed.partition_racks, seed.partitions)?;
                    topic.partition_racks = seed.partition_racks.clone();
                    grow_racks(&mut topic.partition_racks, topic.partition_count);
                }
                if topic != existing {
                    let _write = self.inner.write.lock();
                    self.commit(self.topics(), topic)?;
                }
                Ok(())
            }
        }
    }

    fn check_partition_count(&self, partitions: i32) -> Result<(), CatalogError> {
        if partitions <= 0 {
            return Err(CatalogError::InvalidPartitions(
                "Number of partitions was set to an invalid non-positive value.".to_owned(),
            ));
        }
        let max = self.inner.settings.max_partitions_per_topic;
        if partitions > max {
            return Err(CatalogError::InvalidPartitions(format!(
                "Number of partitions {partitions} exceeds this host's limit of {max} \
                 (catalog.max_partitions_per_topic)."
            )));
        }
        Ok(())
    }

    /// Persists, then publishes; a new topic gets a new id, a changed one keeps its own.
    /// Called with the write lock held.
    fn commit(&self, current: TopicsView, topic: Topic) -> Result<(), CatalogError> {
        let id = current
            .id(&topic.name)
            .filter(|id| !id.is_nil())
            .unwrap_or_else(new_topic_id);
        if let Some(store) = &self.inner.store {
            store.put_topic(&topic, id)?;
        }
        let mut topics = current.by_name().clone();
        let mut ids = current.ids().clone();
        ids.insert(topic.name.clone(), id);
        topics.insert(topic.name.clone(), topic);
        self.inner
            .view
            .send_replace(Arc::new(Topics::new(topics, ids)));
        Ok(())
    }
}

/// A fresh topic id: random, never the zero uuid (Kafka's `Uuid.randomUuid` also avoids the
/// reserved ids, of which zero is the one clients test for).
fn new_topic_id() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        if !id.is_nil() {
            return id;
        }
    }
}

fn check_racks(racks: &[Vec<String>], partitions: i32) -> Result<(), CatalogError> {
    if !racks.is_empty() && racks.len() != partitions as usize {
        return Err(CatalogError::InvalidRacks(format!(
            "partition_racks lists {} partitions but the topic has {partitions}; give one list \
             per partition or none",
            racks.len()
        )));
    }
    Ok(())
}

/// Extends known racks to `count` partitions by cycling the existing lists.
fn grow_racks(racks: &mut Vec<Vec<String>>, count: i32) {
    let known = racks.len();
    if known == 0 {
        return;
    }
    while racks.len() < count as usize {
        let next = racks[racks.len() % known].clone();
        racks.push(next);
    }
}

#[cfg(test)]
mod tests;
