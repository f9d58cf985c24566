//! What a simulation shows: each member's new assignment, how balanced it is, which
//! partitions nobody got, and how many partitions move compared with the current assignment
//! (`previous_assignment` in the request). Plain data, serialized as the admin API's answer and
//! the CLI's `--json`, and read back by the CLI to print tables.

use std::collections::{BTreeMap, HashMap};

use assignor_sdk::{AssignRequest, AssignResponse};
use serde::{Deserialize, Serialize};

use crate::sandbox::CallStats;

/// The outcome of running a module on a group, applied nowhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulationReport {
    /// The module name (or the file name, for a local run).
    pub module: String,
    /// The registry version that ran; `None` for a local file.
    pub version: Option<u32>,
    pub group_id: String,
    pub generation_id: i32,
    /// Whether the KIP-429 safety check was applied to the output.
    pub cooperative: bool,
    /// One entry per member, sorted by member id.
    pub members: Vec<MemberReport>,
    pub balance: Balance,
    /// Partitions of subscribed topics that no member got, topic -> partitions.
    pub unassigned: BTreeMap<String, Vec<i32>>,
    pub movement: Movement,
    /// The module asked for a follow-up rebalance after this many milliseconds.
    pub rebalance_after_ms: Option<u64>,
    pub usage: Usage,
    /// What the module logged, `LEVEL message`.
    pub logs: Vec<String>,
}

/// One member's share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberReport {
    pub member_id: String,
    /// topic -> partitions (sorted).
    pub assignment: BTreeMap<String, Vec<i32>>,
    /// Number of partitions assigned.
    pub partitions: u64,
    /// Partitions it gets that it did not hold before.
    pub gained: u64,
    /// Partitions it held before and does not get now.
    pub lost: u64,
}

/// How evenly partitions are spread over the members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Balance {
    /// Partitions of the topics some member subscribes to.
    pub partitions: u64,
    pub assigned: u64,
    pub unassigned: u64,
    pub min_per_member: u64,
    pub max_per_member: u64,
    /// `max_per_member - min_per_member`: 0 or 1 is as even as a count can be (for members
    /// with the same subscription).
    pub spread: u64,
}

/// Partitions whose owner changes, compared with the current assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Movement {
    /// Partitions that had an owner before.
    pub previously_assigned: u64,
    /// Same owner before and after.
    pub kept: u64,
    /// Owned by one member before and by another after: the partitions that stop and restart
    /// consumption.
    pub moved: u64,
    /// Had no owner before and have one now.
    pub newly_assigned: u64,
    /// Had an owner before and have none now.
    pub revoked: u64,
}

/// What the call used (the same figures the host records for a rebalance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Whole call: encoding, instantiation, the guest, decoding and checks.
    pub duration_us: u64,
    pub fuel: u64,
    pub peak_memory_bytes: u64,
    pub input_bytes: u64,
    pub output_bytes: u64,
}

impl From<&CallStats> for Usage {
    fn from(stats: &CallStats) -> Usage {
        Usage {
            duration_us: stats.duration.as_micros() as u64,
            fuel: stats.fuel_used,
            peak_memory_bytes: stats.peak_memory_bytes,
            input_bytes: stats.input_bytes,
            output_bytes: stats.output_bytes,
        }
    }
}

type Owners<'a> = HashMap<(&'a str, i32), &'a str>;

/// Builds the report of a response that passed the sandbox's output checks (so every
/// partition in it exists and has one owner).
pub fn build(
    module: &str,
    version: Option<u32>,
    cooperative: bool,
    request: &AssignRequest,
    response: &AssignResponse,
    usage: Usage,
    logs: Vec<String>,
) -> SimulationReport {
    let mut before: Owners<'_> = HashMap::new();
    for member in &request.members {
        for tp in &member.previous_assignment {
            for &p in &tp.partitions {
                before.insert((tp.topic.as_str(), p), member.member_id.as_str());
            }
        }
    }
    let mut after: Owners<'_> = HashMap::new();
    for assignment in &response.assignments {
        for tp in &assignment.partitions {
            for &p in &tp.partitions {
                after.insert((tp.topic.as_str(), p), assignment.member_id.as_str());
            }
        }
    }
    let members = request
        .members
        .iter()
        .map(|m| member_report(&m.member_id, response, &before, &after))
        .collect::<Vec<_>>();

    let mut unassigned: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let mut total = 0u64;
    for topic in &request.topics {
        for p in 0..topic.partition_count {
            total += 1;
            if !after.contains_key(&(topic.name.as_str(), p)) {
                unassigned.entry(topic.name.clone()).or_default().push(p);
            }
        }
    }
    let counts = members.iter().map(|m| m.partitions);
    let (min, max) = (counts.clone().min().unwrap_or(0), counts.max().unwrap_or(0));
    let unassigned_count = unassigned.values().map(|v| v.len() as u64).sum::<u64>();
    let balance = Balance {
        partitions: total,
        assigned: after.len() as u64,
        unassigned: unassigned_count,
        min_per_member: min,
        max_per_member: max,
        spread: max - min,
    };
    SimulationReport {
        module: module.to_owned(),
        version,
        group_id: request.group_id.clone(),
        generation_id: request.generation_id,
        cooperative,
        members,
        balance,
        unassigned,
        movement: movement(&before, &after),
        rebalance_after_ms: response.rebalance_after_ms,
        usage,
        logs,
    }
}

fn member_report(
    id: &str,
    response: &AssignResponse,
    before: &Owners<'_>,
    after: &Owners<'_>,
) -> MemberReport {
    let mut assignment: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for entry in response.assignments.iter().filter(|a| a.member_id == id) {
        for tp in &entry.partitions {
            assignment
                .entry(tp.topic.clone())
                .or_default()
                .extend(&tp.partitions);
        }
    }
    assignment.values_mut().for_each(|p| p.sort_unstable());
    assignment.retain(|_, p| !p.is_empty());
    let gained = after
        .iter()
        .filter(|(tp, owner)| **owner == id && before.get(*tp) != Some(*owner))
        .count() as u64;
    let lost = before
        .iter()
        .filter(|(tp, owner)| **owner == id && after.get(*tp) != Some(*owner))
        .count() as u64;
    MemberReport {
        member_id: id.to_owned(),
        partitions: assignment.values().map(|p| p.len() as u64).sum(),
        assignment,
        gained,
        lost,
    }
}

fn movement(before: &Owners<'_>, after: &Owners<'_>) -> Movement {
    let mut m = Movement {
        previously_assigned: before.len() as u64,
        kept: 0,
        moved: 0,
        newly_assigned: 0,
        revoked: 0,
    };
    for (tp, owner) in before {
        match after.get(tp) {
            Some(now) if now == owner => m.kept += 1,
            Some(_) => m.moved += 1,
            None => m.revoked += 1,
        }
    }
    m.newly_assigned = after.keys().filter(|tp| !before.contains_key(*tp)).count() as u64;
    m
}
