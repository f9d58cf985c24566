//! What the coordinator knows of the world outside a group: topics and strategies.
//!
//! Both are immutable snapshots handed in by events (`Event::TopicsChanged`,
//! `Event::StrategiesChanged`), so the coordinator never reads a catalog or a registry itself.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::Arc;

pub use assignor_sdk::{RebalanceProtocol, Topic};
use uuid::Uuid;

/// Topics the host serves. Published by `catalog`, consumed by the coordinator.
pub type TopicsView = Arc<Topics>;

/// The topics the host serves by name, each with its topic id (KIP-516): the key the consumer
/// protocol (KIP-848) and Metadata v10+ name topics by. Reads as the map of topics by name
/// (`Deref`), which is what the ABI and the classic protocol use.
///
/// Ids are the catalog's: stable and persisted in standalone mode (a topic deleted and created
/// again gets a new one), the upstream cluster's in proxy mode, where a cluster that has no
/// ids reports the zero id (then [`Topics::name_of`] resolves nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topics {
    topics: BTreeMap<String, Topic>,
    ids: BTreeMap<String, Uuid>,
    names: HashMap<Uuid, String>,
}

impl Topics {
    /// The topics with their ids; a topic missing from `ids` has the zero id.
    pub fn new(topics: BTreeMap<String, Topic>, ids: BTreeMap<String, Uuid>) -> Topics {
        let ids: BTreeMap<String, Uuid> = topics
            .keys()
            .map(|name| (name.clone(), ids.get(name).copied().unwrap_or(Uuid::nil())))
            .collect();
        let mut names = HashMap::with_capacity(ids.len());
        for (name, id) in &ids {
            if !id.is_nil() && names.insert(*id, name.clone()).is_some() {
                // Two topics under one id is a broken catalog; neither resolves.
                names.insert(*id, String::new());
            }
        }
        names.retain(|_, name| !name.is_empty());
        Topics { topics, ids, names }
    }

    /// The topics with ids derived from their names ([`derived_id`]): for catalogs that have
    /// no ids of their own (tests, benchmarks).
    pub fn with_derived_ids(topics: BTreeMap<String, Topic>) -> Topics {
        let ids = topics.keys().map(|n| (n.clone(), derived_id(n))).collect();
        Topics::new(topics, ids)
    }

    /// The topic id of `name` (the zero id when the catalog has none for it).
    pub fn id(&self, name: &str) -> Option<Uuid> {
        self.ids.get(name).copied()
    }

    /// The name of the topic with id `id`; `None` for an unknown or the zero id.
    pub fn name_of(&self, id: &Uuid) -> Option<&str> {
        self.names.get(id).map(String::as_str)
    }

    /// Every topic id by name.
    pub fn ids(&self) -> &BTreeMap<String, Uuid> {
        &self.ids
    }

    /// The topics by name.
    pub fn by_name(&self) -> &BTreeMap<String, Topic> {
        &self.topics
    }
}

impl Deref for Topics {
    type Target = BTreeMap<String, Topic>;

    fn deref(&self) -> &Self::Target {
        &self.topics
    }
}

/// A version-4-shaped uuid made from a topic name (FNV-1a, 128 bits): stable for a name,
/// never zero. Only for topics that have no id of their own.
pub fn derived_id(name: &str) -> Uuid {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for byte in name.as_bytes() {
        hash ^= u128::from(*byte);
        hash = hash.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    uuid::Builder::from_random_bytes(hash.to_be_bytes()).into_uuid()
}

/// Strategies that have a module, and the client spellings that mean them.
/// Published by `registry`, consumed by the coordinator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StrategiesView {
    /// Canonical protocol name -> the active module's facts.
    pub modules: BTreeMap<String, StrategyEntry>,
    /// Client spelling -> canonical name (kafkajs's `RoundRobinAssigner` -> `roundrobin`).
    pub aliases: BTreeMap<String, String>,
}

/// The facts about a strategy's active module that the coordinator needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyEntry {
    pub active_version: u32,
    pub rebalance_protocol: RebalanceProtocol,
    /// The module declared `in_place` (`AssignorInfo::in_place`): a classic group's departure
    /// or returning member is first tried without a rebalance (`classic/in_place.rs`).
    pub in_place: bool,
}

impl StrategiesView {
    /// The canonical name a client's protocol name stands for, if some module serves it.
    pub fn canonical<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        if self.modules.contains_key(name) {
            return Some(name);
        }
        self.aliases
            .get(name)
            .map(String::as_str)
            .filter(|c| self.modules.contains_key(*c))
    }
}
