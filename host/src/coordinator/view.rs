//! What the coordinator knows of the world outside a group: topics and strategies.
//!
//! Both are immutable snapshots handed in by events (`Event::TopicsChanged`,
//! `Event::StrategiesChanged`), so the coordinator never reads a catalog or a registry itself.

use std::collections::BTreeMap;
use std::sync::Arc;

pub use assignor_sdk::{RebalanceProtocol, Topic};

/// Topics the host serves, by name. Published by `catalog`, consumed by the coordinator.
pub type TopicsView = Arc<BTreeMap<String, Topic>>;

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
