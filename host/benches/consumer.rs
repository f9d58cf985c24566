//! Consumer-protocol (KIP-848) coordinator benchmarks (targets in docs/numbers.md):
//! 1. 1,000 members, one joins: from its epoch-0 ConsumerGroupHeartbeat in until the target is
//!    computed by the built-in `uniform` wasm module (the sandbox call included), and until
//!    the heartbeat that carries the new member's partitions is answered (the owners'
//!    revocations and their acknowledgements in between, as librdkafka sends them);
//! 2. steady ConsumerGroupHeartbeats handled per second with 10,000 members (one shard, one
//!    core), in the form librdkafka sends once nothing changed (every optional field null).
//!
//! The shard is driven directly through `Coordinator::handle`, as in `coordinator.rs`; module
//! calls run inline in a real `Sandbox` on the embedded built-in. Times are what the shard and
//! the sandbox spend: the time between heartbeats is the clients' heartbeat interval, which a
//! librdkafka consumer shortens to "now" once its assignment changes.
//!
//! Run: `cargo bench -p assignor-host --bench consumer`. Each figure is also appended to
//! `target/bench/consumer.jsonl` (`support::jsonl`; not in the smoke run `cargo test` makes).
//! No Kafka figure has these shapes (two partitions per member).

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use assignor_host::coordinator::view::{StrategiesView, StrategyEntry, Topics};
use assignor_host::coordinator::{
    AssignorDone, AssignorOutput, AssignorRun, Coordinator, CoordinatorConfig, Effect, Event,
    GroupRequest, GroupResponse, ReplyTo, RequestContext,
};
use assignor_host::sandbox::{CallTag, CompiledModule, Sandbox};
use assignor_sdk::{RebalanceProtocol, Topic};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

const G: &str = "bench";
/// Partitions per topic; ten topics. Two partitions per member at 1,000 members, so the
/// joining member takes partitions other members must release first.
const PARTITIONS: i32 = 200;
const TOPICS: usize = 10;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

type Owned = BTreeMap<Uuid, BTreeSet<i32>>;

/// What librdkafka keeps per member: its id, epoch, what it owns, whether its next heartbeat
/// acknowledges a change.
struct Member {
    id: String,
    epoch: i32,
    owned: Owned,
    ack: bool,
}

/// One shard without tokio; module runs executed inline in the sandbox.
struct Shard {
    coordinator: Coordinator,
    topics: Arc<Topics>,
    sandbox: Sandbox,
    module: CompiledModule,
    now: u64,
    next: u64,
    answers: HashMap<ReplyTo, ConsumerGroupHeartbeatResponse>,
    /// Module calls asked for and not run yet.
    runs: Vec<AssignorRun>,
    /// Wall time of each module call, in order.
    calls: Vec<Duration>,
}

impl Shard {
    fn new(members: usize) -> Shard {
        let mut view = BTreeMap::new();
        for i in 0..TOPICS {
            let name = format!("topic-{i}");
            let topic = Topic {
                name: name.clone(),
                partition_count: PARTITIONS * members.div_ceil(1000) as i32,
                partition_racks: vec![],
            };
            view.insert(name, topic);
        }
        let topics = Arc::new(Topics::with_derived_ids(view));
        let mut strategies = StrategiesView::default();
        let entry = StrategyEntry {
            active_version: 1,
            rebalance_protocol: RebalanceProtocol::Eager,
            in_place: false,
        };
        strategies.modules.insert("uniform".into(), entry);
        let config = CoordinatorConfig {
            max_group_size: usize::MAX,
            ..Default::default()
        };
        let sandbox = support::bench_sandbox();
        let wasm = assignor_host::builtins::builtin("uniform")
            .expect("built-in")
            .wasm;
        let module = sandbox.load(wasm).expect("module loads");
        Shard {
            coordinator: Coordinator::new(config, topics.clone(), Arc::new(strategies)),
            topics,
            sandbox,
            module,
            now: 1,
            next: 1,
            answers: HashMap::new(),
            runs: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// Collects the answers; module runs wait in `runs` until [`Shard::drain`], as runs off
    /// the shard overlap the heartbeats that arrive meanwhile.
    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Respond {
                    to,
                    response: GroupResponse::ConsumerGroupHeartbeat(r),
                } => {
                    self.answers.insert(to, r);
                }
                Effect::RunAssignor(run) => self.runs.push(*run),
                _ => {}
            }
        }
    }

    /// Runs the module calls asked for, and those their results ask for, until none is left.
    fn drain(&mut self) {
        while !self.runs.is_empty() {
            for run in std::mem::take(&mut self.runs) {
                let tag = CallTag {
                    module: &run.strategy,
                    version: 1,
                };
                let outcome = self
                    .sandbox
                    .assign(&self.module, tag, &run.request, run.cooperative)
                    .expect("uniform runs");
                self.calls.push(outcome.stats.duration);
                let done = AssignorDone {
                    group_id: run.group_id.clone(),
                    generation_id: run.generation_id,
                    run_id: run.run_id,
                    result: Ok(AssignorOutput {
                        module: run.strategy.clone(),
                        version: 1,
                        answer: outcome.answer,
                        duration_us: outcome.stats.duration.as_micros() as u64,
                        fuel: outcome.stats.fuel_used,
                    }),
                };
                let effects = self.coordinator.handle(self.now, Event::AssignorDone(done));
                self.apply(effects);
            }
        }
    }

    /// Sends `member`'s next heartbeat (a join at epoch 0, an acknowledgement after a change,
    /// else every optional field null); the answer may wait for a target.
    fn send(&mut self, member: &Member) -> ReplyTo {
        let mut request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(G)))
            .with_member_id(s(&member.id))
            .with_member_epoch(member.epoch)
            .with_rebalance_timeout_ms(-1);
        if member.epoch == 0 {
            let names = (0..TOPICS).map(|i| TopicName(s(&format!("topic-{i}"))));
            request = request
                .with_rebalance_timeout_ms(300_000)
                .with_subscribed_topic_names(Some(names.collect()))
                .with_topic_partitions(Some(Vec::new()));
        } else if member.ack {
            let owned = member.owned.iter().map(|(id, ps)| {
                TopicPartitions::default()
                    .with_topic_id(*id)
                    .with_partitions(ps.iter().copied().collect())
            });
            request = request.with_topic_partitions(Some(owned.collect()));
        }
        let reply_to = ReplyTo(self.next);
        self.next += 1;
        let effects = self.coordinator.handle(
            self.now,
            Event::Request {
                reply_to,
                group_id: G.into(),
                ctx: RequestContext {
                    api_version: 1,
                    client_id: "rdkafka".into(),
                    client_host: "/127.0.0.1".into(),
                },
                request: GroupRequest::ConsumerGroupHeartbeat(Box::new(request)),
            },
        );
        self.apply(effects);
        reply_to
    }

    /// Applies the answer to `reply_to` as librdkafka does: adopt the epoch and, when it
    /// differs, the assignment, to be acknowledged on the next heartbeat.
    fn receive(&mut self, member: &mut Member, reply_to: ReplyTo) {
        let response = self.answers.remove(&reply_to).expect("answered");
        assert_eq!(response.error_code, 0, "{:?}", response.error_message);
        member.epoch = response.member_epoch;
        member.ack = false;
        if let Some(assignment) = response.assignment {
            let given: Owned = assignment
                .topic_partitions
                .iter()
                .map(|t| (t.topic_id, t.partitions.iter().copied().collect()))
                .filter(|(_, ps): &(Uuid, BTreeSet<i32>)| !ps.is_empty())
                .collect();
            if given != member.owned {
                member.owned = given;
                member.ack = true;
            }
        }
    }

    /// One heartbeat of `member`, module runs included, answered.
    fn heartbeat(&mut self, member: &mut Member) {
        let reply_to = self.send(member);
        self.drain();
        self.receive(member, reply_to);
    }

    /// Every member heartbeats, round after round (module runs between rounds), until a
    /// round changes nothing.
    fn settle(&mut self, members: &mut [Member]) {
        for _ in 0..20 {
            let replies: Vec<ReplyTo> = members.iter().map(|m| self.send(m)).collect();
            self.drain();
            for (m, r) in members.iter_mut().zip(replies) {
                self.receive(m, r);
            }
            if members.iter().all(|m| !m.ack && m.epoch > 0) {
                return;
            }
        }
        panic!("the group did not settle");
    }

    /// A stable group of `n` members, each owning its target.
    fn stable(&mut self, n: usize) -> Vec<Member> {
        let mut members: Vec<Member> = (0..n)
            .map(|i| Member {
                id: format!("rdkafka-{i:05}-5d1f0c3e-8a2b-4c6d-9e7f-0a1b2c3d{i:04x}"),
                epoch: 0,
                owned: Owned::new(),
                ack: false,
            })
            .collect();
        self.settle(&mut members);
        let total: usize = members
            .iter()
            .flat_map(|m| m.owned.values())
            .map(BTreeSet::len)
            .sum();
        let per_topic = self.topics.values().next().map_or(0, |t| t.partition_count);
        assert_eq!(
            total,
            TOPICS * per_topic as usize,
            "every partition owned once settled"
        );
        members
    }
}

/// One member joins a stable group of `n`: ms until the target is computed, of which the join
/// heartbeat itself (epoch bump, the module's request built) and the module call; ms of shard
/// and sandbox work until the joiner's heartbeat carries its partitions; heartbeats that took.
struct Join {
    target: f64,
    heartbeat: f64,
    module: f64,
    work: f64,
    beats: usize,
}

fn join_bench(n: usize) -> Join {
    let mut shard = Shard::new(n);
    let mut members = shard.stable(n);
    let calls_before = shard.calls.len();
    let mut joiner = Member {
        id: "rdkafka-joiner-5d1f0c3e-8a2b-4c6d-9e7f-0a1b2c3d4e5f".to_string(),
        epoch: 0,
        owned: Owned::new(),
        ack: false,
    };
    shard.now += 1_000;
    let started = Instant::now();
    // The join bumps the group epoch; the module runs inline, so the target is in place when
    // the join's answer is.
    let reply_to = shard.send(&joiner);
    let sent = started.elapsed();
    shard.drain();
    shard.receive(&mut joiner, reply_to);
    let target = started.elapsed();
    assert_eq!(
        shard.calls.len(),
        calls_before + 1,
        "one module call for the join"
    );
    let module = shard.calls[calls_before];
    // Every member heartbeats (the owners learn what to release), then the ones that changed
    // acknowledge, then the joiner heartbeats again: counted until it owns its partitions.
    let mut work = target;
    let mut beats = 1;
    for _ in 0..4 {
        if !joiner.owned.is_empty() {
            break;
        }
        for m in members.iter_mut() {
            let t = Instant::now();
            shard.heartbeat(m);
            work += t.elapsed();
            beats += 1;
        }
        for m in members.iter_mut().filter(|m| m.ack) {
            let t = Instant::now();
            shard.heartbeat(m);
            work += t.elapsed();
            beats += 1;
        }
        let t = Instant::now();
        shard.heartbeat(&mut joiner);
        work += t.elapsed();
        beats += 1;
    }
    assert!(!joiner.owned.is_empty(), "the joiner got partitions");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Join {
        target: ms(target),
        heartbeat: ms(sent),
        module: ms(module),
        work: ms(work),
        beats,
    }
}

/// Steady heartbeats handled per second in a stable group of `n` members.
fn heartbeat_bench(n: usize, rounds: usize) -> f64 {
    let mut shard = Shard::new(n);
    let mut members = shard.stable(n);
    let started = Instant::now();
    let mut count = 0u64;
    for _ in 0..rounds {
        shard.now += 1;
        for m in members.iter_mut() {
            shard.heartbeat(m);
            count += 1;
        }
    }
    assert!(
        members.iter().all(|m| !m.ack),
        "nothing changed while heartbeating"
    );
    count as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    // Under `cargo test --benches` the harness passes `--bench`-less flags: run a tiny smoke.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (members, samples, hb_members, rounds) = if quick {
        (50, 1, 100, 2)
    } else {
        (1_000, 7, 10_000, 50)
    };
    println!("assignor-host consumer-protocol benchmarks (sans-io, one shard, release build)");
    println!("command: cargo bench -p assignor-host --bench consumer");
    let mut runs: Vec<Join> = (0..samples).map(|_| join_bench(members)).collect();
    runs.sort_by(|a, b| a.target.total_cmp(&b.target));
    let j = &runs[runs.len() / 2];
    let run = (!quick).then(|| support::Run::start("consumer"));
    let record = |cell: support::Cell| {
        if let Some(run) = &run {
            run.record(&cell);
        }
    };
    // Each figure's samples, sorted.
    let sorted = |pick: &dyn Fn(&Join) -> f64| {
        let mut v: Vec<Duration> = runs
            .iter()
            .map(|r| Duration::from_secs_f64(pick(r) / 1e3))
            .collect();
        v.sort();
        v
    };
    let shape = support::Cell {
        strategy: "uniform".into(),
        members: Some(members + 1),
        topics: Some(TOPICS),
        partitions: Some(TOPICS * (PARTITIONS * members.div_ceil(1000) as i32) as usize),
        subscription: Some(support::Subscription::Homogeneous.as_str()),
        assignment: Some("incremental"),
        path: Some("wasm"),
        metering: Some("fuel"),
        ..Default::default()
    };
    let cells = [
        (
            "join: epoch-0 heartbeat in -> target computed and the join answered",
            sorted(&|r| r.target),
        ),
        ("join: of which the module call", sorted(&|r| r.module)),
        (
            "join: shard work until the joiner's heartbeat carries its partitions",
            sorted(&|r| r.work),
        ),
    ];
    for (what, times) in cells {
        record(
            support::Cell {
                cell: what.into(),
                ..shape.clone()
            }
            .with_times(&times),
        );
    }
    println!(
        "join: {members} members + 1, {TOPICS} topics x {} partitions, uniform in wasm: \
         epoch-0 heartbeat in -> target computed: median {:.2} ms (the join heartbeat {:.2} ms, \
         the module call {:.2} ms, installing and answering the rest) [target <= 20 ms]; \
         until the joiner's heartbeat carries its partitions: {:.2} ms of shard work over {} \
         heartbeats",
        PARTITIONS * members.div_ceil(1000) as i32,
        j.target,
        j.heartbeat,
        j.module,
        j.work,
        j.beats
    );
    let rate = heartbeat_bench(hb_members, rounds);
    println!(
        "heartbeats: {hb_members} members: {rate:.0} ConsumerGroupHeartbeats handled/s on one \
         core [target >= 100,000/s on 2 cores]"
    );
    record(support::Cell {
        cell: "ConsumerGroupHeartbeats handled per second, one shard".into(),
        members: Some(hb_members),
        topics: Some(TOPICS),
        samples: hb_members * rounds,
        value: Some(rate),
        unit: Some("heartbeats/s"),
        ..Default::default()
    });
}
