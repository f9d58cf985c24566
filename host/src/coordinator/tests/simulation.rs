//! A deterministic simulation: hundreds of follower clients join, leave, go silent (their
//! sessions expire) and rejoin under the fake clock, with a seeded RNG and a partition-count
//! change in the middle. After every step: no partition has two owners in any generation, and
//! no live client waits longer than the protocol allows for an answer. After the churn stops:
//! the group converges to Stable with every live client a member and every partition owned.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use assignor_sdk::Topic;
use kafka_protocol::ResponseError;

use super::context::*;
use crate::coordinator::view::Topics;
use crate::coordinator::{Event, GroupResponse, GroupState, Millis, ReplyTo};

/// SplitMix64, seeded: the simulation is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Needs to send JoinGroup.
    Idle,
    Joining(ReplyTo, Millis),
    Syncing(ReplyTo, Millis, i32),
    Stable(i32),
}

struct Client {
    name: String,
    member_id: String,
    instance: Option<String>,
    version: i16,
    phase: Phase,
    live: bool,
    next_heartbeat: Millis,
}

const SESSION: i32 = 10_000;
const REBALANCE: i32 = 15_000;

fn topics(a: i32) -> Event {
    let mut map = BTreeMap::new();
    for (name, n) in [("a", a), ("b", 32)] {
        map.insert(
            name.to_string(),
            Topic {
                name: name.into(),
                partition_count: n,
                partition_racks: vec![],
            },
        );
    }
    Event::TopicsChanged(Arc::new(Topics::with_derived_ids(map)))
}

struct Sim {
    ctx: TestContext,
    clients: Vec<Client>,
    rng: Rng,
    /// generation -> partition -> owner.
    owners: HashMap<i32, HashMap<(String, i32), String>>,
}

impl Sim {
    fn join_request(&self, i: usize) -> Join {
        let c = &self.clients[i];
        let mut j = Join::new(G)
            .version(c.version)
            .client(&c.name)
            .session(SESSION)
            .rebalance(REBALANCE)
            .member(&c.member_id)
            .protocols(&[("range", sub(&["a", "b"]))]);
        if let Some(instance) = &c.instance {
            j = j.instance(instance);
        }
        j
    }

    fn send_join(&mut self, i: usize) {
        let reply = self.ctx.join(&self.join_request(i));
        self.clients[i].phase = Phase::Joining(reply, self.ctx.now);
    }

    /// Moves every live client forward on the answers it got.
    fn progress(&mut self) {
        for i in 0..self.clients.len() {
            if !self.clients[i].live {
                continue;
            }
            loop {
                let phase = self.clients[i].phase.clone();
                match phase {
                    Phase::Idle => self.send_join(i),
                    Phase::Joining(reply, _) => {
                        let Some(GroupResponse::JoinGroup(r)) = self.ctx.responses.remove(&reply)
                        else {
                            break;
                        };
                        let c = &mut self.clients[i];
                        if r.error_code == ResponseError::MemberIdRequired.code() {
                            c.member_id = r.member_id.to_string();
                            c.phase = Phase::Idle;
                        } else if r.error_code == 0 {
                            assert_eq!(r.leader.as_str(), crate::coordinator::HOST_LEADER);
                            c.member_id = r.member_id.to_string();
                            let sync = Sync::new(G, &c.member_id, r.generation_id)
                                .protocol(Some("consumer"), r.protocol_name.as_deref());
                            let sync = match &c.instance {
                                Some(id) => sync.instance(id),
                                None => sync,
                            };
                            let generation = r.generation_id;
                            let reply = self.ctx.sync(&sync);
                            self.clients[i].phase = Phase::Syncing(reply, self.ctx.now, generation);
                        } else {
                            if r.error_code == ResponseError::UnknownMemberId.code() {
                                c.member_id.clear();
                            }
                            c.phase = Phase::Idle;
                        }
                    }
                    Phase::Syncing(reply, _, generation) => {
                        let Some(GroupResponse::SyncGroup(r)) = self.ctx.responses.remove(&reply)
                        else {
                            break;
                        };
                        let c = &mut self.clients[i];
                        if r.error_code == 0 {
                            assert!(!r.assignment.is_empty(), "never zero bytes");
                            let owned = assigned(&r.assignment);
                            let owners = self.owners.entry(generation).or_default();
                            for (topic, partitions) in owned {
                                for p in partitions {
                                    // A client is one owner across a static restart (same
                                    // instance, new member id, same generation).
                                    let previous =
                                        owners.insert((topic.clone(), p), c.name.clone());
                                    assert!(
                                        previous.is_none()
                                            || previous.as_deref() == Some(c.name.as_str()),
                                        "{topic}-{p} owned by {previous:?} and {} in generation {generation}",
                                        c.name
                                    );
                                }
                            }
                            c.phase = Phase::Stable(generation);
                            c.next_heartbeat = self.ctx.now + 3_000;
                        } else {
                            if r.error_code == ResponseError::UnknownMemberId.code() {
                                c.member_id.clear();
                            }
                            c.phase = Phase::Idle;
                        }
                    }
                    Phase::Stable(generation) => {
                        if self.ctx.now < self.clients[i].next_heartbeat {
                            break;
                        }
                        let (id, instance) = (
                            self.clients[i].member_id.clone(),
                            self.clients[i].instance.clone(),
                        );
                        let code =
                            self.ctx
                                .heartbeat_static(G, &id, instance.as_deref(), generation);
                        let c = &mut self.clients[i];
                        c.next_heartbeat = self.ctx.now + 3_000;
                        if code == 0 {
                            break;
                        }
                        if code == ResponseError::UnknownMemberId.code()
                            || code == ResponseError::FencedInstanceId.code()
                        {
                            c.member_id.clear();
                        }
                        c.phase = Phase::Idle;
                    }
                }
            }
        }
    }

    /// No live client has waited longer than a join phase (initial delay + rebalance timeout)
    /// plus a sync phase and the assignor deadlines.
    fn check_waits(&self) {
        let bound = (3_000 + 2 * REBALANCE as Millis) + 1_000;
        for c in self.clients.iter().filter(|c| c.live) {
            match c.phase {
                Phase::Joining(_, since) | Phase::Syncing(_, since, _) => {
                    assert!(
                        self.ctx.now - since <= bound,
                        "{} waited {} ms",
                        c.name,
                        self.ctx.now - since
                    );
                }
                _ => {}
            }
        }
    }

    fn step(&mut self, churn: bool) {
        if churn {
            match self.rng.below(10) {
                0 | 1 => {
                    // A new client (every fifth one static, some on JoinGroup v3).
                    let n = self.clients.len();
                    let version = if n.is_multiple_of(7) { 3 } else { 9 };
                    let instance = n.is_multiple_of(5).then(|| format!("instance-{n}"));
                    self.clients.push(Client {
                        name: format!("c{n}"),
                        member_id: String::new(),
                        instance,
                        version,
                        phase: Phase::Idle,
                        live: true,
                        next_heartbeat: 0,
                    });
                }
                2 => {
                    // A live client leaves cleanly.
                    if let Some(i) = self.pick_live() {
                        let id = self.clients[i].member_id.clone();
                        let instance = self.clients[i].instance.clone();
                        if !id.is_empty() {
                            self.ctx.leave(G, 4, &[(&id, instance.as_deref())]);
                        }
                        self.clients[i].live = false;
                    }
                }
                3 => {
                    // A live client goes silent: its session will expire.
                    if let Some(i) = self.pick_live() {
                        self.clients[i].live = false;
                    }
                }
                4 => {
                    // A client restarts: static ones keep their instance id, dynamic ones start
                    // over with no member id.
                    if let Some(i) = self.pick_live() {
                        self.clients[i].member_id.clear();
                        self.clients[i].phase = Phase::Idle;
                    }
                }
                _ => {}
            }
        }
        self.progress();
        let ms = self.rng.below(1_500);
        self.ctx.advance(ms);
        self.progress();
        self.check_waits();
    }

    fn pick_live(&mut self) -> Option<usize> {
        let live: Vec<usize> = (0..self.clients.len())
            .filter(|i| self.clients[*i].live)
            .collect();
        (!live.is_empty()).then(|| live[self.rng.below(live.len() as u64) as usize])
    }
}

#[test]
fn simulation_hundreds_of_members_churn_and_the_group_converges() {
    let mut sim = Sim {
        ctx: TestContext::new(),
        clients: Vec::new(),
        rng: Rng(42),
        owners: HashMap::new(),
    };
    sim.ctx.event(topics(64));
    for n in 0..200usize {
        sim.clients.push(Client {
            name: format!("c{n}"),
            member_id: String::new(),
            instance: n.is_multiple_of(5).then(|| format!("instance-{n}")),
            version: if n.is_multiple_of(7) { 3 } else { 9 },
            phase: Phase::Idle,
            live: true,
            next_heartbeat: 0,
        });
    }
    for step in 0..400 {
        if step == 200 {
            sim.ctx.event(topics(96)); // the host notices and rebalances by itself
        }
        sim.step(true);
    }
    // Churn stops: everyone still alive settles.
    for _ in 0..200 {
        sim.step(false);
        if sim.ctx.state(G) == GroupState::Stable
            && sim
                .clients
                .iter()
                .filter(|c| c.live)
                .all(|c| matches!(c.phase, Phase::Stable(_)))
        {
            break;
        }
    }
    sim.ctx.assert_state(G, GroupState::Stable);
    let generation = sim.ctx.generation(G);
    let live: BTreeSet<String> = sim
        .clients
        .iter()
        .filter(|c| c.live)
        .map(|c| c.member_id.clone())
        .collect();
    assert!(
        live.len() > 150,
        "the simulation keeps hundreds of members ({})",
        live.len()
    );
    for c in sim.clients.iter().filter(|c| c.live) {
        assert_eq!(
            c.phase,
            Phase::Stable(generation),
            "{} settled in the last generation",
            c.name
        );
    }
    let members: BTreeSet<String> = sim
        .ctx
        .coordinator
        .group_detail(sim.ctx.now, G)
        .unwrap()
        .members
        .into_iter()
        .map(|m| m.member_id)
        .collect();
    assert_eq!(members, live, "exactly the live clients are members");
    let owned = &sim.owners[&generation];
    assert_eq!(owned.len(), 96 + 32, "every partition has an owner");
    assert!(
        sim.owners.len() > 10,
        "many generations went through ({})",
        sim.owners.len()
    );
}
