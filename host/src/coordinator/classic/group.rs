//! One classic group (`ClassicGroup`): members, static-member map, pending members, protocol
//! support counts, generation, leader, and the host-side assignment bookkeeping.
//!
//! Invariants kept by the methods here (and relied on everywhere else):
//! - `supported[key]` = number of members listing `key` (each member counted once per key);
//! - `awaiting_join` = number of members with a parked JoinGroup;
//! - `static_members[instance]` names a member in `members` whose instance id is `instance`;
//! - `leader_id`, when set, names a member (only meaningful in relay mode).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::member::Member;
use crate::coordinator::api::Millis;
use crate::coordinator::classic_state::GroupState;
use crate::coordinator::context::{Ctx, Parked};
use crate::coordinator::event::{Notice, RebalanceReason, TimerKey};
use crate::coordinator::held::{self, Held};
use crate::coordinator::record::{RebalanceRecord, RunRecord};
use crate::coordinator::run::Run;
use crate::coordinator::saved::ModuleState;
use crate::coordinator::view::StrategiesView;

/// The synthetic leader id the host names in JoinGroup responses when it computes the
/// assignment itself. Member ids are `<client id>-<uuid>`, so this never equals one, and every
/// client takes the follower path.
pub const HOST_LEADER: &str = "assignor-host";

/// The classic groups of a shard, by group id.
pub type Groups = HashMap<Arc<str>, Group>;

/// How many recent rebalances a group keeps for the admin API.
pub const HISTORY_LEN: usize = 16;

/// Who computes this generation's assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The host runs `strategy` (canonical name) and answers every SyncGroup itself.
    Host {
        strategy: String,
        pinned_version: Option<u32>,
        cooperative: bool,
    },
    /// No module serves the common protocol: a real member is leader and its SyncGroup
    /// assignments are relayed, exactly as Kafka does.
    Relay,
}

/// A rebalance deferred by stabilisation (`stabilize.rs` keeps it): when membership first changed, the latest it may start, and what
/// changed (for the history's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stabilizing {
    pub(in crate::coordinator) since: Millis,
    pub(in crate::coordinator) latest: Millis,
    /// When the timer is armed for now: the end of the quiet window, or `latest`.
    pub(in crate::coordinator) due: Millis,
    pub(in crate::coordinator) joined: usize,
    pub(in crate::coordinator) left: usize,
}

/// One classic group. Its fields are the coordinator's own; other parts see a group through
/// the coordinator's views (`GroupDetail`, `GroupSummary`, snapshots).
#[derive(Debug, Clone)]
pub struct Group {
    pub(in crate::coordinator) id: Arc<str>,
    pub(in crate::coordinator) state: GroupState,
    pub(in crate::coordinator) previous_state: GroupState,
    pub(in crate::coordinator) protocol_type: Option<String>,
    /// The selected protocol's vote key (canonical name in host mode, the spelling in relay).
    pub(in crate::coordinator) protocol_key: Option<String>,
    pub(in crate::coordinator) mode: Mode,
    pub(in crate::coordinator) generation_id: i32,
    pub(in crate::coordinator) leader_id: Option<Arc<str>>,
    /// Sorted by member id: `AssignRequest.members` order, and a deterministic leader choice.
    pub(in crate::coordinator) members: BTreeMap<Arc<str>, Member>,
    /// Instance id -> member id, kept by `add` and `remove` (read with `static_member`).
    static_members: HashMap<Arc<str>, Arc<str>>,
    pub(in crate::coordinator) pending_join_members: HashSet<Arc<str>>,
    pub(in crate::coordinator) pending_sync_members: HashSet<Arc<str>>,
    /// How many members are parked in JoinGroup (read with `parked_joins`), kept with each
    /// member's `awaiting_join` by the methods that park and release them.
    awaiting_join: usize,
    /// Protocol vote key -> how many members support it (read with `supported`), kept by the
    /// methods that add, update and remove members.
    supported: HashMap<String, usize>,
    /// Set when a member is added during the initial rebalance; extends the initial delay.
    pub(in crate::coordinator) new_member_added: bool,
    /// `(delay, remaining)` of the initial-rebalance timer while it is armed.
    pub(in crate::coordinator) initial_delay: Option<(Millis, Millis)>,
    pub(in crate::coordinator) pending_run: Option<Run>,
    /// Partition counts of the subscribed topics when the current assignment was computed.
    pub(in crate::coordinator) topic_counts: BTreeMap<String, i32>,
    /// Why the rebalance in progress (or the last one) started.
    pub(in crate::coordinator) rebalance_reason: Option<RebalanceReason>,
    pub(in crate::coordinator) rebalance_started_at: Millis,
    pub(in crate::coordinator) last_run: Option<RunRecord>,
    pub(in crate::coordinator) history: VecDeque<RebalanceRecord>,
    /// Fallback used for the generation being formed (for the history record).
    pub(in crate::coordinator) fallback_used: bool,
    /// What the module's last answer asked to keep (ABI v2 `state`), sent back in the next
    /// request to the same strategy.
    pub(in crate::coordinator) module_state: Option<ModuleState>,
    /// A rebalance deferred by stabilisation (`stabilize`): set only while Stable.
    pub(in crate::coordinator) stabilizing: Option<Stabilizing>,
    /// A membership change being tried without a rebalance (`in_place`): set only while
    /// Stable.
    pub(in crate::coordinator) in_place: Option<InPlace>,
    /// Partitions of departed members that nobody has been given since (shown by describe).
    pub(in crate::coordinator) held: Vec<Held>,
    /// When the module's follow-up (`rebalance_after_ms`) is due, if one is armed.
    pub(in crate::coordinator) follow_up_at: Option<Millis>,
}

/// A membership change of a Stable group tried without a rebalance (`in_place.rs` keeps it).
#[derive(Debug, Clone)]
pub struct InPlace {
    /// The first change: the rebalance's reason when the round cannot be done in place.
    pub(in crate::coordinator) reason: RebalanceReason,
    pub(in crate::coordinator) since: Millis,
    pub(in crate::coordinator) joined: usize,
    pub(in crate::coordinator) left: usize,
    /// Dynamic members with a joiner's client id and host, not heard from since it joined:
    /// maybe its own previous process, whose session has not expired yet. The round waits
    /// for them (at most until `TimerKey::InPlace`).
    pub(in crate::coordinator) twins: BTreeSet<Arc<str>>,
    /// Membership changed while the module was called: its answer is for another group.
    pub(in crate::coordinator) stale: bool,
    /// Module calls made for this round (a round changing all the time gives up).
    pub(in crate::coordinator) calls: u8,
}

impl Group {
    pub fn new(id: Arc<str>) -> Group {
        Group {
            id,
            state: GroupState::Empty,
            previous_state: GroupState::Empty,
            protocol_type: None,
            protocol_key: None,
            mode: Mode::Relay,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_join_members: HashSet::new(),
            pending_sync_members: HashSet::new(),
            awaiting_join: 0,
            supported: HashMap::new(),
            new_member_added: false,
            initial_delay: None,
            pending_run: None,
            topic_counts: BTreeMap::new(),
            rebalance_reason: None,
            rebalance_started_at: 0,
            last_run: None,
            history: VecDeque::new(),
            fallback_used: false,
            module_state: None,
            stabilizing: None,
            in_place: None,
            held: Vec::new(),
            follow_up_at: None,
        }
    }

    /// Moves to `to` and reports it. Kafka's illegal transitions are bugs in the coordinator,
    /// not input errors; they are checked in debug builds.
    pub(in crate::coordinator) fn transition(&mut self, to: GroupState, ctx: &mut Ctx<'_>) {
        debug_assert!(
            self.state.can_transition_to(to),
            "illegal transition {} -> {} in group {}",
            self.state,
            to,
            self.id
        );
        self.previous_state = self.state;
        self.state = to;
        ctx.notice(Notice::StateChanged {
            group: self.id.clone(),
            from: self.previous_state,
            to,
        });
    }

    pub fn is(&self, state: GroupState) -> bool {
        self.state == state
    }

    /// Kafka's `supportsProtocols`: an Empty group takes any non-empty type and list; otherwise
    /// the type must match and one of `keys` must be supported by every member.
    pub fn supports_protocols(&self, protocol_type: &str, keys: &[String]) -> bool {
        if self.is(GroupState::Empty) {
            !protocol_type.is_empty() && !keys.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && keys
                    .iter()
                    .any(|k| self.supported.get(k).copied().unwrap_or(0) == self.members.len())
        }
    }

    /// Kafka's `validateMember`: the instance id (if any) must map to `member_id`, and the
    /// member must exist.
    pub fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ResponseError> {
        if let Some(instance) = group_instance_id {
            match self.static_members.get(instance) {
                None => return Err(ResponseError::UnknownMemberId),
                Some(existing) if &**existing != member_id => {
                    return Err(ResponseError::FencedInstanceId);
                }
                Some(_) => {}
            }
        }
        if !self.members.contains_key(member_id) {
            return Err(ResponseError::UnknownMemberId);
        }
        Ok(())
    }

    /// Kafka's `ClassicGroup.validateOffsetCommit`: an Empty group takes commits with
    /// generation -1 (admin tools, consumers without group management); otherwise member and
    /// generation must be current, and not while the group waits for its assignment.
    ///
    /// `transactional` (TxnOffsetCommit) relaxes two rules, as in Kafka: a commit without
    /// member id, generation and instance id is accepted whatever the state (TxnOffsetCommit
    /// below v3 carries none, and a producer outside group management sends none), and the
    /// group's state is not checked (no REBALANCE_IN_PROGRESS: the offsets become visible when
    /// the transaction commits, not now).
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        transactional: bool,
    ) -> Result<(), ResponseError> {
        if self.is(GroupState::Dead) {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        if generation < 0 && self.is(GroupState::Empty) {
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            self.validate_member(member_id, instance)?;
            if generation != self.generation_id {
                return Err(ResponseError::IllegalGeneration);
            }
        } else if !transactional && !self.is(GroupState::Empty) {
            return Err(ResponseError::UnknownMemberId);
        }
        if !transactional && self.is(GroupState::CompletingRebalance) {
            return Err(ResponseError::RebalanceInProgress);
        }
        Ok(())
    }

    /// Group rebalance timeout: the largest of the members' rebalance timeouts (0 if none).
    pub fn rebalance_timeout_ms(&self) -> Millis {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms.max(0) as Millis)
            .max()
            .unwrap_or(0)
    }

    /// Every member has a parked JoinGroup and no MEMBER_ID_REQUIRED id is outstanding.
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.awaiting_join && self.pending_join_members.is_empty()
    }

    /// The member id of the static member `instance`, if it is in the group.
    pub fn static_member(&self, instance: &str) -> Option<&Arc<str>> {
        self.static_members.get(instance)
    }

    /// How many members have a parked JoinGroup.
    pub fn parked_joins(&self) -> usize {
        self.awaiting_join
    }

    /// Protocol vote keys with how many members support each.
    pub fn supported(&self) -> impl Iterator<Item = (&String, usize)> {
        self.supported.iter().map(|(key, count)| (key, *count))
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// Adds a member (Kafka's `ClassicGroup.add`): the first member of an empty group sets the
    /// protocol type and becomes leader.
    pub fn add(&mut self, member: Member) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        for key in unique(&member.keys) {
            *self.supported.entry(key.clone()).or_default() += 1;
        }
        if member.awaiting_join.is_some() {
            self.awaiting_join += 1;
        }
        self.pending_join_members.remove(&member.id);
        if self.leader_id.is_none() {
            self.leader_id = Some(member.id.clone());
        }
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.id.clone());
        }
        self.members.insert(member.id.clone(), member);
    }

    /// Removes a member or a pending member id (Kafka's `ClassicGroup.remove`). Parked replies
    /// of the removed member are returned for the caller to answer.
    pub fn remove(&mut self, member_id: &str) -> Option<Member> {
        let removed = self.members.remove(member_id);
        if let Some(m) = &removed {
            for key in unique(&m.keys) {
                if let Some(n) = self.supported.get_mut(key) {
                    *n -= 1;
                    if *n == 0 {
                        self.supported.remove(key);
                    }
                }
            }
            if m.awaiting_join.is_some() {
                self.awaiting_join -= 1;
            }
            if let Some(instance) = &m.group_instance_id
                && self.static_members.get(instance).map(|id| &**id) == Some(member_id)
            {
                self.static_members.remove(instance);
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// Replaces a member's proposed protocols and timeouts (Kafka's `updateMember`), keeping
    /// the support counts right, and parks `join` if given.
    pub fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<(String, bytes::Bytes)>,
        keys: Vec<String>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        join: Option<Parked>,
    ) {
        let Some(m) = self.members.get_mut(member_id) else {
            return;
        };
        for key in unique(&m.keys) {
            if let Some(n) = self.supported.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    self.supported.remove(key);
                }
            }
        }
        for key in unique(&keys) {
            *self.supported.entry(key.clone()).or_default() += 1;
        }
        m.protocols = protocols;
        m.keys = keys;
        m.rebalance_timeout_ms = rebalance_timeout_ms;
        m.session_timeout_ms = session_timeout_ms;
        let was_awaiting = m.awaiting_join.is_some();
        if join.is_some() {
            m.awaiting_join = join;
        }
        if !was_awaiting && m.awaiting_join.is_some() {
            self.awaiting_join += 1;
        }
    }

    /// Takes a member's parked JoinGroup, keeping `awaiting_join` right.
    pub fn take_join(&mut self, member_id: &str) -> Option<Parked> {
        let parked = self.members.get_mut(member_id)?.awaiting_join.take();
        if parked.is_some() {
            self.awaiting_join -= 1;
        }
        parked
    }

    /// The session timer of `member` (or of a pending member id).
    pub fn heartbeat_key(&self, member: &Arc<str>) -> TimerKey {
        TimerKey::Heartbeat {
            group: self.id.clone(),
            member: member.clone(),
        }
    }

    /// Re-arms a member's session timer for `timeout_ms` from now.
    pub(in crate::coordinator) fn reschedule_heartbeat(
        &self,
        member: &Arc<str>,
        timeout_ms: Millis,
        ctx: &mut Ctx<'_>,
    ) {
        ctx.schedule_in(self.heartbeat_key(member), timeout_ms);
    }

    /// Recomputes every member's vote keys after the strategies changed.
    pub fn rekey(&mut self, strategies: &StrategiesView) {
        self.supported.clear();
        for m in self.members.values_mut() {
            m.keys = m
                .protocols
                .iter()
                .map(|(name, _)| vote_key(strategies, name))
                .collect();
            for key in unique(&m.keys) {
                *self.supported.entry(key.clone()).or_default() += 1;
            }
        }
    }

    /// Every topic some member's metadata for the selected protocol subscribes to (Kafka's
    /// `ClassicGroup.subscribedTopics`, read from the members' Subscriptions: in relay mode the
    /// host never computed an assignment). Metadata that is not a Subscription adds nothing.
    pub fn subscribed_topics_of_members(&self) -> BTreeSet<String> {
        let key = self.protocol_key.as_deref().unwrap_or("");
        self.members
            .values()
            .filter_map(|m| m.metadata_for(key))
            .filter_map(|bytes| assignor_wire::consumer_protocol::decode_subscription(bytes).ok())
            .flat_map(|s| s.topics)
            .collect()
    }

    /// Keeps of each held record only the partitions that still exist and that no member was
    /// given; empty records go.
    pub(in crate::coordinator) fn refresh_held(
        &mut self,
        topics: &crate::coordinator::view::TopicsView,
    ) {
        let owned = self
            .members
            .values()
            .flat_map(|m| &m.given)
            .flat_map(|tp| tp.partitions.iter().map(|&p| (tp.topic.as_str(), p)));
        held::refresh(&mut self.held, owned, topics);
    }

    /// A member with a JoinGroup parked while the group is Stable: by stabilisation or by an
    /// in-place round; it is not part of the current generation yet (and is not written).
    pub(in crate::coordinator) fn is_parked(&self, member: &str) -> bool {
        self.is(GroupState::Stable)
            && self
                .members
                .get(member)
                .is_some_and(|m| m.awaiting_join.is_some())
    }

    /// Topics subscribed by some member, with the partition counts the last assignment used.
    pub fn subscribed_topics(&self) -> BTreeSet<&str> {
        self.topic_counts.keys().map(String::as_str).collect()
    }
}

/// The key a client spelling counts under in the vote: the canonical name when a module serves
/// it (so kafkajs's `RoundRobinAssigner` and librdkafka's `roundrobin` are one candidate),
/// else the spelling itself.
pub fn vote_key(strategies: &StrategiesView, name: &str) -> String {
    strategies.canonical(name).unwrap_or(name).to_string()
}

/// The distinct entries of `keys`, in order (a member listing one key twice counts once).
fn unique(keys: &[String]) -> impl Iterator<Item = &String> {
    keys.iter()
        .enumerate()
        .filter(move |(i, k)| !keys[..*i].contains(k))
        .map(|(_, k)| k)
}
