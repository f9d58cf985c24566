//! Protocol selection: Kafka's vote, restricted to strategies with a module, and the choice
//! between host-side assignment and the classic leader relay.
//!
//! Rules (docs/coordinator.md, "How the host behaves", strategy choice):
//! 1. Candidates are the vote keys every member proposed (client spellings normalised through
//!    the strategies' aliases, see [`super::group::vote_key`]).
//! 2. If some candidates have a module, each member votes for the first of its own keys among
//!    those; the most votes wins. The host computes the assignment with that module, or with
//!    the operator's override when one is set and served by a module.
//! 3. Else each member votes among all candidates, as Kafka does, and the group relays a client
//!    leader's assignment, unless an operator override names a module (the host then assigns).
//! 4. No candidate: INCONSISTENT_GROUP_PROTOCOL (JoinGroup checks make this unreachable except
//!    after a strategies change; the coordinator still answers it).
//!
//! Ties are broken by the smallest key (Kafka leaves them to hash-map order), so a selection
//! is reproducible.

use std::collections::BTreeMap;

use assignor_sdk::RebalanceProtocol;

use super::group::{Group, Mode};
use crate::coordinator::config::GroupConfig;
use crate::coordinator::view::StrategiesView;

/// The outcome of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The vote key of the selected protocol; each member answers with its own spelling of it.
    pub key: String,
    pub mode: Mode,
}

/// Selects the protocol for the next generation of `group`, or `None` when the members share
/// no protocol.
pub fn select(
    group: &Group,
    config: &GroupConfig,
    strategies: &StrategiesView,
) -> Option<Selection> {
    let n = group.members.len();
    let candidates: Vec<&String> = group
        .supported()
        .filter(|(_, count)| *count == n)
        .map(|(k, _)| k)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let with_module: Vec<&String> = candidates
        .iter()
        .copied()
        .filter(|k| strategies.modules.contains_key(k.as_str()))
        .collect();
    let pool = if with_module.is_empty() {
        &candidates
    } else {
        &with_module
    };
    let key = vote(group, pool)?;
    let mode = mode_for(&key, config, strategies, !with_module.is_empty());
    Some(Selection { key, mode })
}

/// Each member votes for the first of its keys that is in `pool`; the most votes wins.
fn vote(group: &Group, pool: &[&String]) -> Option<String> {
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for member in group.members.values() {
        if let Some(k) = member.keys.iter().find(|k| pool.contains(k)) {
            *votes.entry(k.as_str()).or_default() += 1;
        }
    }
    // BTreeMap iterates in key order and `max_by_key` keeps the last maximum, so iterate in
    // reverse to keep the smallest key among equals.
    votes
        .into_iter()
        .rev()
        .max_by_key(|(_, v)| *v)
        .map(|(k, _)| k.to_string())
}

/// Host mode with the override (if served) or the selected module; relay otherwise.
fn mode_for(
    key: &str,
    config: &GroupConfig,
    strategies: &StrategiesView,
    key_has_module: bool,
) -> Mode {
    let overridden = config
        .strategy
        .as_deref()
        .and_then(|s| strategies.canonical(s));
    let (strategy, pinned_version) = match overridden {
        Some(s) => (s.to_string(), config.pinned_version),
        None if key_has_module => (key.to_string(), None),
        None => return Mode::Relay,
    };
    let cooperative = is_cooperative(strategies, &strategy) || is_cooperative(strategies, key);
    Mode::Host {
        strategy,
        pinned_version,
        cooperative,
    }
}

/// Whether the strategy's active module declares the cooperative rebalance protocol.
pub fn is_cooperative(strategies: &StrategiesView, name: &str) -> bool {
    strategies
        .modules
        .get(name)
        .is_some_and(|e| e.rebalance_protocol == RebalanceProtocol::Cooperative)
}
