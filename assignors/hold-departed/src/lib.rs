//! # hold-departed
//!
//! The delay window of Kafka Connect's incremental cooperative protocol, for consumers: when a
//! member leaves or its session expires, its partitions wait for it, unassigned, for a window,
//! instead of moving at once. The members that stayed keep exactly what they had and never
//! stop consuming; a consumer that restarts inside the window (a deploy, a crash and a
//! restart, a rescheduled pod) gets exactly its partitions back and nobody else moves.
//!
//! Parameters (`group set G --strategy hold-departed --param window_ms=60000`):
//!
//! | parameter | default | meaning |
//! |---|---|---|
//! | `window_ms` | 30000 | how long a departed member's partitions wait for it, in milliseconds (0: not at all; at most a week) |
//! | `inner` | `cooperative-sticky` when members of a classic group report owned partitions (KIP-429 clients do), else `sticky` | the strategy spreading the partitions: `range`, `roundrobin`, `sticky`, `cooperative-sticky` or `uniform` |
//!
//! **How a departure plays out.** The module keeps its last answer with the host (ABI v2
//! input `state`): every member, who it is (`group.instance.id`, or client id and host for a
//! dynamic member) and what it got. In the first rebalance that finds a member of that answer
//! gone, its partitions are held: nobody gets them, and the answer asks for a follow-up
//! rebalance at the end of the window (`rebalance_after_ms`); every later round asks for the
//! window's remainder. A member joining inside the window that is the same consumer (same
//! instance id, or same client id and host) gets exactly the held partitions (those that
//! still exist) and nothing else, unless it is the only subscriber left of a partition
//! nobody holds; when the window ends the follow-up spreads them over the
//! others through `inner`, which with the sticky strategies moves nothing else.
//!
//! **When the inner strategy is asked.** A round where every member is one of the last
//! answer's or a returning one, and every partition is in someone's seat or a held one, has
//! nothing to decide: everyone keeps their seat, whatever the inner strategy, and it is not
//! called. It is called when something needs deciding: an arrival, a window ending, new
//! partitions, a changed subscription, a cooperative hand-over left for this round.
//!
//! **How `inner` is kept to it.** A returning member is shown to the inner strategy under
//! its old member id, owning its old partitions. The sticky strategies (`sticky`,
//! `cooperative-sticky`, `uniform`) keep what members own, so they see the members alone:
//! the held partitions, which nobody owns, are what they would hand out, and those are taken
//! out of their answer. `range` and `roundrobin` compute from who is in the group, so they
//! see every held seat as a stand-in member under its old id: they compute what they
//! computed before the departure, and the stand-ins' shares are held. Whatever the inner
//! strategy gave a stand-in or a returning member beyond its own partitions (new partitions,
//! a new member's rebalance) goes to a real member: its owner or last holder if one
//! subscribes, else the least loaded subscriber.
//!
//! **Cooperative groups.** No partition goes to a member while another member still reports
//! owning it (KIP-429), so the host's cooperative check holds by construction: such a
//! partition is left out for the round, its owner revokes it, and the next round hands it on.
//!
//! **No rebalance for a departure or a return** (`in_place`). Eager clients revoke everything
//! at every rebalance, so holding partitions alone would not spare the members that stay a
//! stop. The module therefore declares `in_place`: when a member leaves a settled classic
//! group, or a departed one comes back, the host calls it at the current generation and, when
//! its answer moves nothing from a member that stayed (the answer above always does not, for
//! a departure or a return), applies it without a rebalance: the others are told nothing and
//! keep consuming, the returning member is admitted into the current generation with exactly
//! its partitions. Only the window's end is a rebalance (one, in which eager members revoke
//! once: new partitions reach a classic member only through JoinGroup and SyncGroup).

use std::collections::{BTreeMap, BTreeSet};

use assignor_inner::Inner;
use assignor_sdk::{AssignError, AssignRequest, Assignment, Member, TopicPartitions, assignor};

pub mod state;
#[cfg(test)]
mod tests;

use state::{Held, LAYOUT, Seat, State};

/// The parameters this strategy reads; any other is refused (most likely a misspelling).
const PARAMS: [&str; 2] = ["inner", "window_ms"];

/// `window_ms` when the parameter is not set: Kafka Connect's `scheduled.rebalance.max.delay.ms`
/// is 5 minutes; a consumer restarting in place usually takes seconds.
pub const DEFAULT_WINDOW_MS: u64 = 30_000;

/// The longest window accepted: a week.
pub const MAX_WINDOW_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The `hold-departed` strategy.
#[assignor(
    name = "hold-departed",
    version = "0.1.0",
    description = "a departed member's partitions wait for it, unassigned, for `window_ms` (default 30000); it gets exactly them back if it returns, else they are spread by `inner` (default sticky / cooperative-sticky)",
    protocol = "eager",
    inputs = "client, racks, user_data, metadata, state",
    in_place = true
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let params = Params::from_request(request)?;
    let state = State::read(request.state.as_deref());
    let seats = Seats::new(request, &state, params.window_ms);
    let topics = TopicIndex::new(request);
    let (mut given, user_data, inner_after_ms) = match quiet(request, &state, &seats, &topics) {
        Some(given) => (given, Vec::new(), None),
        None => through_inner(request, &seats, &topics, params.inner)?,
    };
    if looks_cooperative(request) {
        withhold_owned(request, &topics, &mut given);
    }

    let mut assignment = Assignment::new(request);
    for (m, partitions) in given.iter().enumerate() {
        for &(t, p) in partitions {
            assignment.assign_indexed(m, t, p);
        }
    }
    for (m, data) in user_data {
        assignment.set_user_data(&request.members[m].member_id, data);
    }
    let remaining = seats
        .held
        .iter()
        .map(|h| remaining_ms(h, request.now_ms, params.window_ms))
        .min();
    if let Some(ms) = remaining.into_iter().chain(inner_after_ms).min() {
        assignment.rebalance_after_ms(ms);
    }
    let kept = State {
        layout: LAYOUT,
        members: request
            .members
            .iter()
            .zip(&given)
            .map(|(m, partitions)| seat_of(m, partitions, request))
            .collect(),
        held: seats.held,
    };
    assignment.set_state(kept.to_bytes());
    Ok(assignment)
}

/// The answer when nothing needs deciding: every member is one of the last answer's (under
/// the same id) or a returning one, each still subscribes to all its partitions, no two seats
/// overlap, and every partition of the group's topics is in a member's seat or a held one.
/// Then everyone keeps their seat and the inner strategy is not asked: it would only move
/// partitions to fill the holes the held seats leave. `None` when there is something to
/// decide (an arrival, a window ending, new partitions, a changed subscription, a hand-over
/// left for this round).
fn quiet(
    request: &AssignRequest,
    state: &State,
    seats: &Seats,
    topics: &TopicIndex<'_>,
) -> Option<Vec<BTreeSet<(usize, i32)>>> {
    let last: BTreeMap<&str, &Seat> = state
        .members
        .iter()
        .map(|s| (s.member_id.as_str(), s))
        .collect();
    let mut covered: BTreeSet<(usize, i32)> = seats
        .held
        .iter()
        .flat_map(|h| topics.partitions_of(&h.seat))
        .collect();
    let mut given = vec![BTreeSet::new(); request.members.len()];
    for (m, member) in request.members.iter().enumerate() {
        let seat = match &seats.returning[m] {
            Some(seat) => seat,
            None => last.get(member.member_id.as_str())?,
        };
        for (topic, p) in seat.partitions() {
            let t = topics.index(topic)?;
            let exists = (0..request.topics[t].partition_count).contains(&p);
            if !exists || !member.subscribes_to(topic) || !covered.insert((t, p)) {
                return None;
            }
            given[m].insert((t, p));
        }
    }
    let all_covered = request.topics.iter().enumerate().all(|(t, topic)| {
        let subscribed = request.members.iter().any(|m| m.subscribes_to(&topic.name));
        !subscribed || (0..topic.partition_count).all(|p| covered.contains(&(t, p)))
    });
    all_covered.then_some(given)
}

/// Partitions per member, user data per member and the inner strategy's own follow-up, from
/// the inner strategy's answer: held partitions taken out, returning members given exactly
/// their seats, what the inner strategy gave a stand-in or a returning member beyond its own
/// handed out ([`hand_out`]).
#[allow(
    clippy::type_complexity,
    reason = "the three parts of one answer, used once"
)]
fn through_inner(
    request: &AssignRequest,
    seats: &Seats,
    topics: &TopicIndex<'_>,
    inner: Inner,
) -> Result<
    (
        Vec<BTreeSet<(usize, i32)>>,
        Vec<(usize, Vec<u8>)>,
        Option<u64>,
    ),
    AssignError,
> {
    // Range and roundrobin compute from who is in the group, so they see the held seats as
    // members; the sticky strategies keep what members own, so they see the members alone
    // and the held partitions, which nobody owns, are taken out of what they hand out.
    let with_stand_ins = matches!(inner, Inner::Range | Inner::RoundRobin);
    let (inner_request, roles) = stand_ins(request, seats, with_stand_ins);
    let response = inner.assign(&inner_request)?.into_response();
    if let Some(error) = response.error {
        return Err(AssignError::new(format!("{}: {error}", inner.name())));
    }
    let mut given: Vec<BTreeSet<(usize, i32)>> = vec![BTreeSet::new(); request.members.len()];
    // Held partitions, and those pinned to a returning member, go to nobody else.
    let held: BTreeSet<(usize, i32)> = seats
        .held
        .iter()
        .flat_map(|h| topics.partitions_of(&h.seat))
        .collect();
    let mut pinned: BTreeSet<(usize, i32)> = BTreeSet::new();
    for (m, seat) in seats.returning.iter().enumerate() {
        let Some(seat) = seat else { continue };
        let member = &request.members[m];
        for (t, p) in topics.partitions_of(seat) {
            if member.subscribes_to(&request.topics[t].name)
                && !held.contains(&(t, p))
                && pinned.insert((t, p))
            {
                given[m].insert((t, p));
            }
        }
    }
    let mut user_data: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut leftovers: Vec<(usize, i32)> = Vec::new();
    for answer in response.assignments {
        let role = roles.get(answer.member_id.as_str()).copied();
        for tp in &answer.partitions {
            let Some(t) = topics.index(&tp.topic) else {
                continue;
            };
            for &p in &tp.partitions {
                let key = (t, p);
                if held.contains(&key) || pinned.contains(&key) {
                    continue;
                }
                match role {
                    Some(Role::Real(m)) if seats.returning[m].is_none() => {
                        given[m].insert(key);
                    }
                    _ => leftovers.push(key),
                }
            }
        }
        if let (Some(Role::Real(m)), Some(data)) = (role, answer.user_data) {
            user_data.push((m, data));
        }
    }
    hand_out(request, seats, leftovers, &mut given);
    Ok((given, user_data, response.rebalance_after_ms))
}

/// The parameters, read and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub window_ms: u64,
    pub inner: Inner,
}

impl Params {
    /// Reads `window_ms` and `inner`; any mistake is an error saying what to write instead.
    pub fn from_request(request: &AssignRequest) -> Result<Params, AssignError> {
        assignor_inner::check_params(&request.params, "hold-departed", &PARAMS)?;
        let window_ms = match request.params.get("window_ms") {
            None => DEFAULT_WINDOW_MS,
            Some(value) => value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&ms| ms <= MAX_WINDOW_MS)
                .ok_or_else(|| {
                    AssignError::new(format!(
                        "parameter `window_ms` is `{value}`; set it to a whole number of \
                         milliseconds from 0 to {MAX_WINDOW_MS} (a week)"
                    ))
                })?,
        };
        let default = if looks_cooperative(request) {
            Inner::CooperativeSticky
        } else {
            Inner::Sticky
        };
        let inner = Inner::from_params(&request.params, "inner", default)?;
        Ok(Params { window_ms, inner })
    }
}

/// Whether the members follow KIP-429: cooperative clients report the partitions they keep
/// while rejoining; eager ones revoke everything first and report none. Never for a consumer
/// group (KIP-848, [`reconciled_by_host`]).
pub fn looks_cooperative(request: &AssignRequest) -> bool {
    !reconciled_by_host(request)
        && request
            .members
            .iter()
            .any(|m| !m.owned_partitions.is_empty())
}

/// Whether this is a consumer group (KIP-848), whose members carry no protocol metadata
/// (docs/abi.md, `Member.metadata`): its coordinator revokes a partition before it hands it
/// on, so nothing is left out for a hand-over (a partition left out would wait, unowned,
/// for the group's next epoch) and the inner strategy is the plain sticky one.
pub fn reconciled_by_host(request: &AssignRequest) -> bool {
    request.protocol_type == "consumer"
        && !request.members.is_empty()
        && request.members.iter().all(|m| m.metadata.is_empty())
}

/// Who is who this round: the member that came back to each held seat, and the seats still
/// waiting.
#[derive(Debug, Default)]
struct Seats {
    /// Per member of the request, the seat it returns to.
    returning: Vec<Option<Seat>>,
    /// The seats whose window is still open and whose member has not come back.
    held: Vec<Held>,
}

impl Seats {
    fn new(request: &AssignRequest, state: &State, window_ms: u64) -> Seats {
        let now = request.now_ms;
        let present: BTreeSet<&str> = request
            .members
            .iter()
            .map(|m| m.member_id.as_str())
            .collect();
        let known: BTreeSet<&str> = state.members.iter().map(|s| s.member_id.as_str()).collect();
        // Seats waiting from earlier rounds (oldest first), then the members of the last
        // answer that are gone now; a seat whose window has closed is released.
        let mut waiting: Vec<Held> = state.held.clone();
        waiting.sort_by_key(|h| h.since_ms);
        waiting.extend(
            state
                .members
                .iter()
                .filter(|s| !present.contains(s.member_id.as_str()))
                .map(|s| Held {
                    seat: s.clone(),
                    since_ms: now,
                }),
        );
        waiting.retain(|h| !h.seat.partitions.is_empty() && remaining_ms(h, now, window_ms) > 0);
        let mut taken = vec![false; waiting.len()];
        let returning = request
            .members
            .iter()
            .map(|m| {
                if known.contains(m.member_id.as_str()) {
                    return None;
                }
                let found = waiting.iter().enumerate().position(|(i, h)| {
                    !taken[i]
                        && (h.seat.member_id == m.member_id
                            || h.seat.same_consumer(
                                m.group_instance_id.as_deref(),
                                &m.client_id,
                                &m.client_host,
                            ))
                })?;
                taken[found] = true;
                Some(waiting[found].seat.clone())
            })
            .collect();
        let held = waiting
            .into_iter()
            .zip(taken)
            .filter(|(_, taken)| !taken)
            .map(|(h, _)| h)
            .collect();
        Seats { returning, held }
    }
}

/// What is left of a seat's window at `now`, in milliseconds (0 once it has closed).
fn remaining_ms(held: &Held, now: i64, window_ms: u64) -> u64 {
    let end = held
        .since_ms
        .saturating_add(i64::try_from(window_ms).unwrap_or(i64::MAX));
    u64::try_from(end.saturating_sub(now)).unwrap_or(0)
}

/// A member of the inner strategy's request: a member of the group (by position), or a held
/// seat's stand-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Real(usize),
    StandIn,
}

/// The request the inner strategy sees. A returning member stands under its old id, owning
/// its old partitions. With `with_stand_ins` each held seat is a stand-in member under the
/// departed member's id, owning its partitions: the group as it was before anyone left.
/// Returns the request and what each of its member ids stands for.
fn stand_ins<'a>(
    request: &'a AssignRequest,
    seats: &'a Seats,
    with_stand_ins: bool,
) -> (AssignRequest, BTreeMap<&'a str, Role>) {
    let generation = request
        .members
        .iter()
        .map(|m| m.owned_generation)
        .max()
        .filter(|&g| g >= 0)
        .unwrap_or(request.generation_id.saturating_sub(1));
    let present: BTreeSet<&str> = request
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    let mut roles: BTreeMap<&str, Role> = BTreeMap::new();
    let mut members: Vec<Member> = Vec::with_capacity(request.members.len() + seats.held.len());
    for (m, member) in request.members.iter().enumerate() {
        let mut member = member.clone();
        let mut id = request.members[m].member_id.as_str();
        if let Some(seat) = &seats.returning[m] {
            member.owned_partitions = owned_list(request, seat);
            member.previous_assignment = member.owned_partitions.clone();
            member.owned_generation = generation;
            member.user_data = None;
            let old = seat.member_id.as_str();
            // Under its old id unless another member holds that id now.
            if old == id || !present.contains(old) && !roles.contains_key(old) {
                id = old;
                member.member_id = old.to_owned();
            }
        }
        roles.insert(id, Role::Real(m));
        members.push(member);
    }
    for h in seats.held.iter().filter(|_| with_stand_ins) {
        let id = h.seat.member_id.as_str();
        if present.contains(id) || roles.contains_key(id) {
            continue;
        }
        let owned = owned_list(request, &h.seat);
        let topics: Vec<String> = owned.iter().map(|tp| tp.topic.clone()).collect();
        roles.insert(h.seat.member_id.as_str(), Role::StandIn);
        members.push(Member {
            member_id: h.seat.member_id.clone(),
            group_instance_id: h.seat.group_instance_id.clone(),
            client_id: h.seat.client_id.clone(),
            client_host: h.seat.client_host.clone(),
            topics: topics.into(),
            previous_assignment: owned.clone(),
            owned_partitions: owned,
            owned_generation: generation,
            ..Member::default()
        });
    }
    members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    let mut inner = assignor_inner::subgroup(request, |_| true);
    inner.members = members;
    (inner, roles)
}

/// A seat's partitions that exist in `request`, as owned partitions.
fn owned_list(request: &AssignRequest, seat: &Seat) -> Vec<TopicPartitions> {
    seat.partitions
        .iter()
        .filter_map(|(topic, partitions)| {
            let count = request.topic(topic)?.partition_count;
            let partitions: Vec<i32> = partitions
                .iter()
                .copied()
                .filter(|&p| (0..count).contains(&p))
                .collect();
            (!partitions.is_empty()).then(|| TopicPartitions {
                topic: topic.clone(),
                partitions,
            })
        })
        .collect()
}

/// Gives each partition the inner strategy gave a stand-in (beyond its own) to a member
/// that did not come back to a seat: its owner if a member owns it and subscribes, else the
/// member that had it in the last generation, else the subscriber with the fewest partitions (Kafka's member order breaks ties); only when no
/// such member subscribes, to the least loaded returning one. Nobody subscribing: it stays
/// unassigned.
fn hand_out(
    request: &AssignRequest,
    seats: &Seats,
    mut leftovers: Vec<(usize, i32)>,
    given: &mut [BTreeSet<(usize, i32)>],
) {
    leftovers.sort_unstable();
    leftovers.dedup();
    let taken: BTreeSet<(usize, i32)> = given.iter().flatten().copied().collect();
    let order = request.kafka_order();
    for (t, p) in leftovers {
        if taken.contains(&(t, p)) {
            continue;
        }
        let topic = &request.topics[t].name;
        let subscribes = |m: usize| request.members[m].subscribes_to(topic);
        let settled = |m: usize| seats.returning[m].is_none() && subscribes(m);
        // Its owner, else the member that had it (an eager group owns nothing while it
        // rejoins): the inner strategy gives a stand-in the same extras round after round,
        // and each time they go back to where they went the first time.
        let members = 0..request.members.len();
        let owner = members
            .clone()
            .find(|&m| settled(m) && request.members[m].owns(topic, p))
            .or_else(|| {
                members
                    .clone()
                    .find(|&m| settled(m) && request.members[m].was_assigned(topic, p))
            });
        let least = |eligible: &dyn Fn(usize) -> bool| {
            order
                .iter()
                .map(|&m| m as usize)
                .filter(|&m| eligible(m))
                .min_by_key(|&m| given[m].len())
        };
        // A returning member takes more than its seat only when nobody else can.
        let to = owner
            .or_else(|| least(&settled))
            .or_else(|| least(&subscribes));
        if let Some(m) = to {
            given[m].insert((t, p));
        }
    }
}

/// KIP-429: a partition another member still reports owning is taken out of a member's
/// share for this round.
fn withhold_owned(
    request: &AssignRequest,
    topics: &TopicIndex<'_>,
    given: &mut [BTreeSet<(usize, i32)>],
) {
    let mut owner: BTreeMap<(usize, i32), usize> = BTreeMap::new();
    for (m, member) in request.members.iter().enumerate() {
        for (topic, p) in member.owned() {
            if let Some(t) = topics.index(topic) {
                owner.entry((t, p)).or_insert(m);
            }
        }
    }
    for (m, partitions) in given.iter_mut().enumerate() {
        partitions.retain(|key| owner.get(key).is_none_or(|&o| o == m));
    }
}

/// A member's seat for the kept state: who it is and what it got.
fn seat_of(member: &Member, given: &BTreeSet<(usize, i32)>, request: &AssignRequest) -> Seat {
    let mut partitions: Vec<(String, Vec<i32>)> = Vec::new();
    for &(t, p) in given {
        let topic = &request.topics[t].name;
        match partitions.last_mut() {
            Some((last, list)) if last == topic => list.push(p),
            _ => partitions.push((topic.clone(), vec![p])),
        }
    }
    Seat {
        member_id: member.member_id.clone(),
        group_instance_id: member.group_instance_id.clone(),
        client_id: member.client_id.clone(),
        client_host: member.client_host.clone(),
        partitions,
    }
}

/// The request's topics by name, for the seats' and the inner answer's names.
struct TopicIndex<'a> {
    request: &'a AssignRequest,
}

impl<'a> TopicIndex<'a> {
    fn new(request: &'a AssignRequest) -> TopicIndex<'a> {
        TopicIndex { request }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.request.topic_index(name)
    }

    /// A seat's partitions that exist in the request, by topic position.
    fn partitions_of<'s>(&'s self, seat: &'s Seat) -> impl Iterator<Item = (usize, i32)> + 's {
        seat.partitions().filter_map(|(topic, p)| {
            let t = self.index(topic)?;
            (0..self.request.topics[t].partition_count)
                .contains(&p)
                .then_some((t, p))
        })
    }
}

/// The module decodes, assigns and encodes, keeping nearly all it allocates until the call
/// ends: the SDK's bump allocator fits, as in the other built-ins.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
