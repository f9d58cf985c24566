//! Scenario files: a small, documented description of a group (topics, members, their
//! subscriptions and current assignment, parameters) that becomes the exact
//! [`AssignRequest`] a live rebalance of such a group would send.
//!
//! JSON (or TOML, by the file's extension). Only `topics` and `members` are required:
//!
//! ```json
//! {
//!   "group_id": "orders-app",
//!   "params": { "weight.c-1": "2" },
//!   "topics": [
//!     { "name": "orders", "partitions": 6, "racks": [["a"], ["b"], ["a"], ["b"], ["a"], ["b"]] },
//!     { "name": "payments", "partitions": 3 }
//!   ],
//!   "members": [
//!     { "id": "c-1", "rack": "a", "subscription": ["orders", "payments"],
//!       "current": { "orders": [0, 1, 2], "payments": [0, 1, 2] } },
//!     { "id": "c-2", "instance_id": "host-2", "rack": "b", "subscription": ["orders"],
//!       "current": { "orders": [3, 4, 5] } },
//!     { "id": "c-3", "subscription": ["orders", "payments"] }
//!   ]
//! }
//! ```
//!
//! `current` is what the member holds now: it becomes `previous_assignment` (what the host
//! gave it last generation) and, unless `owned` says otherwise, `owned_partitions` (what a
//! Java or cooperative client reports), and it is what movement is measured against.
//! Every mistake is refused with the member, topic or partition named, so a scenario that
//! loads is one a live group could have.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assignor_sdk::{ABI_VERSION, AssignRequest, Member, Topic, TopicPartitions};
use serde::{Deserialize, Serialize};

use crate::consumer_protocol::{self, Subscription};

/// A group to simulate. See the module docs for the format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// `AssignRequest.group_id` (default `simulation`).
    #[serde(default = "default_group")]
    pub group_id: String,
    /// `consumer` (default) makes the host encode each member's Subscription as a Java client
    /// would; any other protocol type sends empty metadata.
    #[serde(default = "default_protocol_type")]
    pub protocol_type: String,
    /// The generation being formed (default 1).
    #[serde(default = "default_generation")]
    pub generation_id: i32,
    /// Coordinator time handed to the module (default 0).
    #[serde(default)]
    pub now_ms: i64,
    /// Operator parameters (`AssignRequest.params`).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    pub topics: Vec<ScenarioTopic>,
    pub members: Vec<ScenarioMember>,
}

/// One topic of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioTopic {
    pub name: String,
    pub partitions: i32,
    /// Replica racks per partition: empty (unknown) or exactly one list per partition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub racks: Vec<Vec<String>>,
}

/// One member of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioMember {
    pub id: String,
    /// `group.instance.id` of a static member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Subscribed topics; each must be one of the scenario's topics.
    pub subscription: Vec<String>,
    /// The member's current assignment, topic -> partitions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub current: BTreeMap<String, Vec<i32>>,
    /// What the member reports as owned, when it differs from `current`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned: Option<BTreeMap<String, Vec<i32>>>,
    /// Generation of `owned` (default: the previous generation when something is owned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_generation: Option<i32>,
    /// `user_data` of the member's subscription, hex-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data_hex: Option<String>,
}

fn default_group() -> String {
    "simulation".to_owned()
}

fn default_protocol_type() -> String {
    "consumer".to_owned()
}

fn default_generation() -> i32 {
    1
}

/// Why a scenario cannot be used; every message names the culprit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario file {path}: {message}")]
    Read { path: String, message: String },
    #[error("scenario {path}: {message}")]
    Parse { path: String, message: String },
    #[error("scenario: {0}")]
    Invalid(String),
}

impl Scenario {
    /// Reads a scenario file: TOML when the name ends in `.toml`, else JSON.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let toml = path.extension().is_some_and(|e| e == "toml");
        Scenario::from_text(&text, toml, &path.display().to_string())
    }

    /// A scenario from its text, TOML or JSON, validated; `origin` names it in errors (the
    /// file's path).
    pub fn from_text(text: &str, toml: bool, origin: &str) -> Result<Scenario, ScenarioError> {
        let parsed = if toml {
            toml::from_str(text).map_err(|e| e.to_string())
        } else {
            serde_json::from_str(text).map_err(|e| e.to_string())
        };
        let scenario: Scenario = parsed.map_err(|message| ScenarioError::Parse {
            path: origin.to_owned(),
            message,
        })?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Checks everything [`Scenario::to_request`] relies on.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let invalid = |m: String| Err(ScenarioError::Invalid(m));
        let mut counts = BTreeMap::new();
        for topic in &self.topics {
            if topic.name.is_empty() {
                return invalid("a topic has an empty name".into());
            }
            if topic.partitions <= 0 {
                return invalid(format!(
                    "topic {} has {} partitions; it needs at least 1",
                    topic.name, topic.partitions
                ));
            }
            if !topic.racks.is_empty() && topic.racks.len() != topic.partitions as usize {
                return invalid(format!(
                    "topic {} lists racks for {} partitions but has {}; give one list per \
                     partition or none",
                    topic.name,
                    topic.racks.len(),
                    topic.partitions
                ));
            }
            if counts
                .insert(topic.name.as_str(), topic.partitions)
                .is_some()
            {
                return invalid(format!("topic {} is defined twice", topic.name));
            }
        }
        if self.members.is_empty() {
            return invalid("there are no members".into());
        }
        let mut ids = BTreeSet::new();
        let mut instances = BTreeSet::new();
        let mut holders: BTreeMap<(&str, i32), &str> = BTreeMap::new();
        for member in &self.members {
            let id = member.id.as_str();
            if id.is_empty() {
                return invalid("a member has an empty id".into());
            }
            if !ids.insert(id) {
                return invalid(format!("member {id} is listed twice"));
            }
            if let Some(instance) = &member.instance_id
                && !instances.insert(instance.as_str())
            {
                return invalid(format!("instance id {instance} is used by two members"));
            }
            for topic in &member.subscription {
                if !counts.contains_key(topic.as_str()) {
                    return invalid(format!(
                        "member {id} subscribes to topic {topic}, which the scenario does not \
                         define"
                    ));
                }
            }
            let owned = member.owned.iter().flatten();
            for (what, (topic, partitions)) in member
                .current
                .iter()
                .map(|tp| ("current", tp))
                .chain(owned.map(|tp| ("owned", tp)))
            {
                let Some(&count) = counts.get(topic.as_str()) else {
                    return invalid(format!(
                        "member {id}'s {what} assignment names topic {topic}, which the \
                         scenario does not define"
                    ));
                };
                for &p in partitions {
                    if !(0..count).contains(&p) {
                        return invalid(format!(
                            "member {id}'s {what} assignment names {topic}-{p}, but {topic} \
                             has partitions 0..{}",
                            count - 1
                        ));
                    }
                    if what == "current"
                        && let Some(other) = holders.insert((topic.as_str(), p), id)
                    {
                        return invalid(format!(
                            "{topic}-{p} is in the current assignment of both {other} and {id}"
                        ));
                    }
                }
            }
            if let Some(hex_text) = &member.user_data_hex
                && hex::decode(hex_text).is_err()
            {
                return invalid(format!("member {id}'s user_data_hex is not hex"));
            }
        }
        Ok(())
    }

    /// The request a rebalance of this group with strategy `protocol_name` would send:
    /// members sorted by id, topics sorted by name and limited to subscribed ones.
    pub fn to_request(&self, protocol_name: &str) -> Result<AssignRequest, ScenarioError> {
        self.validate()?;
        let subscribed: BTreeSet<&str> = self
            .members
            .iter()
            .flat_map(|m| m.subscription.iter().map(String::as_str))
            .collect();
        let mut topics: Vec<Topic> = self
            .topics
            .iter()
            .filter(|t| subscribed.contains(t.name.as_str()))
            .map(|t| Topic {
                name: t.name.clone(),
                partition_count: t.partitions,
                partition_racks: t.racks.clone(),
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let mut members: Vec<Member> = self.members.iter().map(|m| self.member(m)).collect();
        members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
        Ok(AssignRequest {
            abi_version: ABI_VERSION,
            group_id: self.group_id.clone(),
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: protocol_name.to_owned(),
            now_ms: self.now_ms,
            params: self.params.clone(),
            members,
            topics,
            ..AssignRequest::default()
        })
    }

    fn member(&self, m: &ScenarioMember) -> Member {
        let owned = partitions(m.owned.as_ref().unwrap_or(&m.current));
        let owned_generation = m.owned_generation.unwrap_or(if owned.is_empty() {
            -1
        } else {
            self.generation_id - 1
        });
        let user_data = m.user_data_hex.as_ref().and_then(|h| hex::decode(h).ok());
        let mut subscription = m.subscription.clone();
        subscription.sort();
        subscription.dedup();
        let metadata = if self.protocol_type == consumer_protocol::PROTOCOL_TYPE {
            subscription_v3(&subscription, &user_data, &owned, owned_generation, &m.rack)
        } else {
            Vec::new()
        };
        Member {
            member_id: m.id.clone(),
            group_instance_id: m.instance_id.clone(),
            client_id: m
                .client_id
                .clone()
                .unwrap_or_else(|| "simulation".to_owned()),
            client_host: "/127.0.0.1".to_owned(),
            rack_id: m.rack.clone(),
            topics: subscription.into(),
            owned_partitions: owned,
            owned_generation,
            previous_assignment: partitions(&m.current),
            user_data,
            metadata,
            weight: None,
        }
    }
}

/// topic -> partitions as the ABI's sorted `TopicPartitions` list.
fn partitions(map: &BTreeMap<String, Vec<i32>>) -> Vec<TopicPartitions> {
    map.iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(topic, p)| {
            let mut partitions = p.clone();
            partitions.sort_unstable();
            partitions.dedup();
            TopicPartitions {
                topic: topic.clone(),
                partitions,
            }
        })
        .collect()
}

/// A version-3 Subscription (version prefix included), as a Java 3.x client sends it, so a
/// module that reads `metadata` sees what a live group would give it.
fn subscription_v3(
    topics: &[String],
    user_data: &Option<Vec<u8>>,
    owned: &[TopicPartitions],
    generation_id: i32,
    rack: &Option<String>,
) -> Vec<u8> {
    consumer_protocol::encode_subscription(&Subscription {
        version: 3,
        topics: topics.to_vec(),
        user_data: user_data.clone(),
        owned_partitions: owned.to_vec(),
        owned_generation: generation_id,
        rack_id: rack.clone(),
    })
    .to_vec()
}
