//! One consumer group (Kafka's `ConsumerGroup`): the group epoch and the target assignment's
//! epoch, the members, who owns which partition, the target computation in flight, and what
//! the admin views show (the assignor chosen, the last run, recent target assignments).
//!
//! Invariants kept by the methods here:
//! - `owners[topic][partition]` names the one member whose current assignment (assigned or
//!   pending revocation) holds the partition, and every such partition is listed: a partition
//!   never has two owners ([`Group::set_current`] checks it in debug builds);
//! - `static_members[instance]` names a member whose instance id is `instance`;
//! - `assignment_epoch <= group_epoch`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use uuid::Uuid;

use super::member::{Current, Member};
use crate::coordinator::api::Millis;
use crate::coordinator::classic::{HISTORY_LEN, RebalanceRecord, RunRecord};
use crate::coordinator::context::Ctx;
use crate::coordinator::event::{Notice, RebalanceReason, TimerKey};
use crate::coordinator::run::Run;
use crate::coordinator::view::Topics;

/// The consumer groups of a shard, by group id.
pub type Groups = HashMap<Arc<str>, Group>;

/// A consumer group's state, derived from its epochs and members (Kafka's `ConsumerGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch moved past the target's: a new target assignment is being computed.
    Assigning,
    /// Some member is not yet Stable at the target's epoch.
    Reconciling,
    /// Every member owns its target.
    Stable,
}

impl ConsumerGroupState {
    /// Kafka's wire string (ConsumerGroupDescribe, ListGroups, DescribeGroups).
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// Which module computes the group's targets, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignorChoice {
    /// The assignor the group names: the one most members prefer (`group.remote.assignor`),
    /// else the configured default.
    pub requested: String,
    /// The module computing its targets (canonical name): the requested one's, the
    /// operator's override, or the fallback.
    pub module: String,
    pub pinned_version: Option<u32>,
    /// The operator's override decided.
    pub overridden: bool,
    /// No module serves `requested`: the fallback assigns until one is uploaded.
    pub missing: bool,
}

/// One consumer group. Its fields are the coordinator's own; other parts see it through the
/// coordinator's views.
#[derive(Debug, Clone)]
pub struct Group {
    pub(in crate::coordinator) id: Arc<str>,
    pub(in crate::coordinator) group_epoch: i32,
    /// The epoch of the target assignment (Kafka's `assignmentEpoch`).
    pub(in crate::coordinator) assignment_epoch: i32,
    /// Sorted by member id: the order of `AssignRequest.members`.
    pub(in crate::coordinator) members: BTreeMap<Arc<str>, Member>,
    pub(in crate::coordinator) static_members: HashMap<Arc<str>, Arc<str>>,
    owners: HashMap<String, HashMap<i32, Arc<str>>>,
    /// Each subscribed topic's id and partition count as the last target run saw them
    /// (Kafka's metadata hash): a change moves the epoch again.
    pub(in crate::coordinator) topic_signature: BTreeMap<String, (Uuid, i32)>,
    pub(in crate::coordinator) pending_run: Option<Run>,
    /// How the last target was computed (or the one in flight).
    pub(in crate::coordinator) assignor: AssignorChoice,
    pub(in crate::coordinator) last_run: Option<RunRecord>,
    pub(in crate::coordinator) history: VecDeque<RebalanceRecord>,
    /// Why the group epoch last moved, and when.
    pub(in crate::coordinator) bump_reason: Option<RebalanceReason>,
    pub(in crate::coordinator) bumped_at: Millis,
    /// The fallback computed the target being formed (for its history record).
    pub(in crate::coordinator) fallback_used: bool,
    /// What the target module's last answer asked to keep (ABI v2 `state`), sent back in
    /// the next request to the same strategy.
    pub(in crate::coordinator) module_state: Option<crate::coordinator::saved::ModuleState>,
    /// Partitions of fenced members that no target has given anyone since (describe).
    pub(in crate::coordinator) held: Vec<crate::coordinator::held::Held>,
    /// When the module's follow-up (`rebalance_after_ms`) is due, if one is armed.
    pub(in crate::coordinator) follow_up_at: Option<Millis>,
    /// Members the next target waits for: maybe a joiner's previous process (`twins.rs`).
    pub(in crate::coordinator) twins: std::collections::BTreeSet<Arc<str>>,
    /// Changed since it was last written (`snapshot.rs`), and whether the write is armed.
    pub(in crate::coordinator) dirty: bool,
    pub(in crate::coordinator) persist_armed: bool,
}

impl Group {
    pub fn new(id: Arc<str>) -> Group {
        Group {
            id,
            group_epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            owners: HashMap::new(),
            topic_signature: BTreeMap::new(),
            pending_run: None,
            assignor: AssignorChoice::default(),
            last_run: None,
            history: VecDeque::new(),
            bump_reason: None,
            bumped_at: 0,
            fallback_used: false,
            module_state: None,
            held: Vec::new(),
            follow_up_at: None,
            twins: std::collections::BTreeSet::new(),
            dirty: false,
            persist_armed: false,
        }
    }

    /// Kafka's derived state (`ConsumerGroup.updateState`).
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.current.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The member that owns `(topic, partition)` now, if any.
    pub fn owner(&self, topic: &str, partition: i32) -> Option<&Arc<str>> {
        self.owners.get(topic)?.get(&partition)
    }

    /// Whether a member other than `member` owns `(topic, partition)`.
    pub fn owned_elsewhere(&self, member: &str, topic: &str, partition: i32) -> bool {
        self.owner(topic, partition).is_some_and(|o| &**o != member)
    }

    /// Adds a member with whatever it owns already (a restored or converted member).
    pub fn add(&mut self, member: Member) {
        if let Some(instance) = &member.instance_id {
            self.static_members
                .insert(instance.clone(), member.id.clone());
        }
        let id = member.id.clone();
        let owned = member.current.owned();
        self.dirty = true;
        self.members.insert(id.clone(), member);
        self.claim(&id, &owned);
    }

    /// Removes a member; what it owned is free again.
    pub fn remove(&mut self, member_id: &str) -> Option<Member> {
        let member = self.members.remove(member_id)?;
        self.dirty = true;
        self.release(member_id, &member.current.owned());
        if let Some(instance) = &member.instance_id
            && self.static_members.get(instance).map(|m| &**m) == Some(member_id)
        {
            self.static_members.remove(instance);
        }
        Some(member)
    }

    /// Replaces a member's current assignment, moving ownership with it.
    pub fn set_current(&mut self, member_id: &Arc<str>, next: Current) {
        let Some(member) = self.members.get_mut(member_id) else {
            return;
        };
        self.dirty = true;
        let same_ownership = member.current.assigned == next.assigned
            && member.current.pending_revocation == next.pending_revocation;
        if same_ownership {
            member.current = next;
            return;
        }
        let before = member.current.owned();
        let after = next.owned();
        member.current = next;
        self.release(member_id, &before);
        self.claim(member_id, &after);
    }

    fn claim(&mut self, member_id: &Arc<str>, partitions: &super::partitions::Partitions) {
        for (topic, p) in partitions.iter() {
            let previous = self
                .owners
                .entry(topic.to_owned())
                .or_default()
                .insert(p, member_id.clone());
            debug_assert!(
                previous.as_ref().is_none_or(|o| o == member_id),
                "{topic}-{p} of group {} owned by {previous:?} and {member_id}",
                self.id
            );
        }
    }

    fn release(&mut self, member_id: &str, partitions: &super::partitions::Partitions) {
        for (topic, p) in partitions.iter() {
            if let Some(owners) = self.owners.get_mut(topic) {
                if owners.get(&p).is_some_and(|o| &**o == member_id) {
                    owners.remove(&p);
                }
                if owners.is_empty() {
                    self.owners.remove(topic);
                }
            }
        }
    }

    /// The assignor most members prefer (`ServerAssignor`), ties to the smallest name (Kafka
    /// leaves ties to hash-map order).
    pub fn preferred_assignor(&self) -> Option<String> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = &m.server_assignor {
                *counts.entry(a.as_str()).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .rev()
            .max_by_key(|(_, n)| *n)
            .map(|(a, _)| a.to_owned())
    }

    /// Every topic some member subscribes to (names and regex matches), sorted.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        let mut all = BTreeSet::new();
        for m in self.members.values() {
            all.extend(m.subscribed_topics().into_iter().map(str::to_owned));
        }
        all
    }

    /// The subscribed topics the catalog knows, with their ids and partition counts.
    pub fn signature(&self, topics: &Topics) -> BTreeMap<String, (Uuid, i32)> {
        self.subscribed_topics()
            .into_iter()
            .filter_map(|t| {
                let topic = topics.get(&t)?;
                let id = topics.id(&t).unwrap_or_default();
                Some((t, (id, topic.partition_count)))
            })
            .collect()
    }

    /// Moves the group epoch (a new target is then due) and notes why. O(1) in the group's
    /// size: a group of thousands of members joining at once bumps once per join, and the
    /// topic signature is taken once per target run instead (`target::maybe_start`).
    pub(in crate::coordinator) fn bump(&mut self, ctx: &mut Ctx<'_>, reason: RebalanceReason) {
        self.group_epoch += 1;
        self.dirty = true;
        tracing::info!(group = %self.id, epoch = self.group_epoch, %reason, "group epoch bumped");
        ctx.notice(Notice::RebalanceStarted {
            group: self.id.clone(),
            generation: self.group_epoch,
            reason: reason.clone(),
        });
        if self.bump_reason.is_none() || self.assignment_epoch == self.group_epoch - 1 {
            // The first reason since the last target, for the history record.
            self.bump_reason = Some(reason);
            self.bumped_at = ctx.now;
        }
        self.fallback_used = false;
    }

    /// Notes a computed target in the history.
    pub(in crate::coordinator) fn record(&mut self, record: RebalanceRecord) {
        self.history.push_back(record);
        while self.history.len() > HISTORY_LEN {
            self.history.pop_front();
        }
    }

    pub fn session_key(&self, member: &Arc<str>) -> TimerKey {
        TimerKey::Heartbeat {
            group: self.id.clone(),
            member: member.clone(),
        }
    }

    pub fn revocation_key(&self, member: &Arc<str>) -> TimerKey {
        TimerKey::Revocation {
            group: self.id.clone(),
            member: member.clone(),
        }
    }

    pub fn wait_key(&self, member: &Arc<str>) -> TimerKey {
        TimerKey::TargetWait {
            group: self.id.clone(),
            member: member.clone(),
        }
    }
}
