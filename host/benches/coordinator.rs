//! Sans-io coordinator benchmarks (the targets are in docs/numbers.md):
//! 1. 1,000 members rejoining: from the last JoinGroup in to every SyncGroup answered, the
//!    module call included: the built-in range in wasm, in a sandbox on the host's default
//!    limits (and, beside it, the same Rust compiled natively, which shows what the sandbox
//!    adds);
//! 2. heartbeats handled per second with 10,000 members (one shard, one core);
//! 3. memory per idle member (a counting allocator around a 10,000-member stable group).
//!
//! Run: `cargo bench -p assignor-host --bench coordinator`. Each figure is also appended to
//! `target/bench/coordinator.jsonl` (`support/report`; not in the smoke run `cargo test`
//! makes). No Kafka figure has these shapes: Kafka's assignor figures are 10 partitions per
//! member, this rejoin is one.

#![allow(clippy::print_stdout, reason = "a bench prints its results")]

// Only the report part of `support`: the rest brings mimalloc as the global allocator, and this
// bench counts bytes with its own.
#[path = "support/report/mod.rs"]
mod report;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use assignor_host::coordinator::view::{StrategiesView, StrategyEntry, Topics};
use assignor_host::coordinator::{
    AssignorDone, AssignorOutput, Coordinator, CoordinatorConfig, Effect, Event, GroupRequest,
    GroupResponse, ReplyTo, RequestContext,
};
use assignor_host::sandbox::{CallTag, CompiledModule, PoolConfig, Sandbox, SandboxLimits};
use assignor_sdk::{RebalanceProtocol, Topic};
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{GroupId, HeartbeatRequest, JoinGroupRequest, SyncGroupRequest};
use kafka_protocol::protocol::{Encodable, StrBytes};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; counting touches only an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's `alloc` contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const G: &str = "bench";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn ctx(version: i16) -> RequestContext {
    RequestContext {
        api_version: version,
        client_id: "bench-client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

/// Where a harness runs its assignor: range compiled natively, or the built-in module in wasm.
enum Range {
    Native,
    Wasm(Box<(Sandbox, CompiledModule)>),
}

impl Range {
    /// The built-in range in a sandbox with the host's default pool and limits (what `serve`
    /// runs it with).
    fn wasm() -> Range {
        let sandbox =
            Sandbox::new(PoolConfig::default(), SandboxLimits::default()).expect("sandbox");
        let wasm = assignor_host::builtins::builtin("range")
            .expect("built-in")
            .wasm;
        let module = sandbox.load(wasm).expect("module loads");
        Range::Wasm(Box::new((sandbox, module)))
    }

    fn path(&self) -> &'static str {
        match self {
            Range::Native => "native",
            Range::Wasm(_) => "wasm",
        }
    }
}

/// A shard without tokio: answers collected, assignor runs executed inline.
struct Harness {
    coordinator: Coordinator,
    range: Range,
    now: u64,
    answers: HashMap<ReplyTo, GroupResponse>,
    next: u64,
}

impl Harness {
    fn new(topics: usize, partitions: i32, range: Range) -> Harness {
        let mut view = BTreeMap::new();
        for i in 0..topics {
            let name = format!("topic-{i}");
            view.insert(
                name.clone(),
                Topic {
                    name,
                    partition_count: partitions,
                    partition_racks: vec![],
                },
            );
        }
        let mut strategies = StrategiesView::default();
        strategies.modules.insert(
            "range".into(),
            StrategyEntry {
                active_version: 1,
                rebalance_protocol: RebalanceProtocol::Eager,
                in_place: false,
            },
        );
        let config = CoordinatorConfig {
            initial_rebalance_delay_ms: 0,
            ..Default::default()
        };
        Harness {
            coordinator: Coordinator::new(
                config,
                Arc::new(Topics::with_derived_ids(view)),
                Arc::new(strategies),
            ),
            range,
            now: 0,
            answers: HashMap::new(),
            next: 1,
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        let mut events = Vec::new();
        for effect in effects {
            match effect {
                Effect::Respond { to, response } => {
                    self.answers.insert(to, response);
                }
                Effect::RunAssignor(run) => {
                    let started = Instant::now();
                    let (answer, fuel) = match &self.range {
                        Range::Native => {
                            let response = assignor_range::assign(&run.request)
                                .expect("range")
                                .into_response();
                            let answer = assignor_wire::checks::resolve(&run.request, &response)
                                .expect("range answers members and topics of the request");
                            (answer, 0)
                        }
                        Range::Wasm(wasm) => {
                            let (sandbox, module) = &**wasm;
                            let tag = CallTag {
                                module: "range",
                                version: 1,
                            };
                            let outcome = sandbox
                                .assign(module, tag, &run.request, run.cooperative)
                                .expect("range runs in the sandbox");
                            (outcome.answer, outcome.stats.fuel_used)
                        }
                    };
                    events.push(Event::AssignorDone(AssignorDone {
                        group_id: run.group_id.clone(),
                        generation_id: run.generation_id,
                        run_id: run.run_id,
                        result: Ok(AssignorOutput {
                            module: "range".into(),
                            version: 1,
                            answer,
                            duration_us: started.elapsed().as_micros() as u64,
                            fuel,
                        }),
                    }));
                }
                _ => {}
            }
        }
        for event in events {
            let effects = self.coordinator.handle(self.now, event);
            self.apply(effects);
        }
    }

    fn send(&mut self, version: i16, request: GroupRequest) -> ReplyTo {
        let reply_to = ReplyTo(self.next);
        self.next += 1;
        let effects = self.coordinator.handle(
            self.now,
            Event::Request {
                reply_to,
                group_id: G.into(),
                ctx: ctx(version),
                request,
            },
        );
        self.apply(effects);
        reply_to
    }

    fn fire(&mut self, key: assignor_host::coordinator::TimerKey) {
        let effects = self.coordinator.handle(self.now, Event::TimerFired(key));
        self.apply(effects);
    }
}

fn subscription(topics: usize) -> bytes::Bytes {
    let body = ConsumerProtocolSubscription::default()
        .with_topics((0..topics).map(|i| s(&format!("topic-{i}"))).collect());
    let mut out = BytesMut::new();
    out.put_i16(3);
    body.encode(&mut out, 3).unwrap();
    out.freeze()
}

fn join_request(member_id: &str, metadata: &bytes::Bytes) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(G)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(60_000)
        .with_member_id(s(member_id))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(metadata.clone()),
        ])
}

/// Builds a Stable group of `n` members (v3 joins: no MEMBER_ID_REQUIRED round trip).
fn stable_group(h: &mut Harness, n: usize, topics: usize) -> (Vec<String>, i32) {
    let metadata = subscription(topics);
    let replies: Vec<ReplyTo> = (0..n)
        .map(|_| h.send(3, GroupRequest::JoinGroup(join_request("", &metadata))))
        .collect();
    // The initial delay (0 here) is extended once because members kept arriving.
    for _ in 0..10 {
        if replies.iter().all(|r| h.answers.contains_key(r)) {
            break;
        }
        h.fire(assignor_host::coordinator::TimerKey::Join { group: G.into() });
    }
    let mut ids = Vec::with_capacity(n);
    let mut generation = 0;
    for r in &replies {
        let Some(GroupResponse::JoinGroup(j)) = h.answers.remove(r) else {
            panic!("join not answered")
        };
        generation = j.generation_id;
        ids.push(j.member_id.to_string());
    }
    for id in &ids {
        let sync = SyncGroupRequest::default()
            .with_group_id(GroupId(s(G)))
            .with_generation_id(generation)
            .with_member_id(s(id));
        let r = h.send(3, GroupRequest::SyncGroup(sync));
        h.answers.remove(&r);
    }
    (ids, generation)
}

/// One rejoin: ms from the last JoinGroup in to every SyncGroup answered, and ms of it the
/// assignment took.
fn rejoin_bench(members: usize, topics: usize, partitions: i32, range: Range) -> (f64, f64) {
    let mut h = Harness::new(topics, partitions, range);
    let (ids, generation) = stable_group(&mut h, members, topics);
    let metadata = subscription(topics);
    // A rebalance starts (e.g. an operator trigger); every member rejoins.
    let effects = h
        .coordinator
        .trigger_rebalance(h.now, G, Some("bench".into()))
        .unwrap();
    h.apply(effects);
    let mut joins = Vec::with_capacity(members);
    for id in &ids[..members - 1] {
        joins.push(h.send(3, GroupRequest::JoinGroup(join_request(id, &metadata))));
    }
    let start = Instant::now();
    joins.push(h.send(
        3,
        GroupRequest::JoinGroup(join_request(&ids[members - 1], &metadata)),
    ));
    let mut syncs = Vec::with_capacity(members);
    for (id, reply) in ids.iter().zip(&joins) {
        let Some(GroupResponse::JoinGroup(j)) = h.answers.remove(reply) else {
            panic!("join not answered")
        };
        assert_eq!(j.generation_id, generation + 1);
        let sync = SyncGroupRequest::default()
            .with_group_id(GroupId(s(G)))
            .with_generation_id(j.generation_id)
            .with_member_id(s(id));
        syncs.push(h.send(3, GroupRequest::SyncGroup(sync)));
    }
    let all_answered = syncs.iter().all(
        |r| matches!(h.answers.get(r), Some(GroupResponse::SyncGroup(s)) if s.error_code == 0),
    );
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    assert!(all_answered);
    let assignor_us = h
        .coordinator
        .group_detail(h.now, G)
        .and_then(|d| d.last_run)
        .map_or(0, |r| r.duration_us);
    (elapsed, assignor_us as f64 / 1e3)
}

fn heartbeat_bench(members: usize, rounds: usize) -> f64 {
    let mut h = Harness::new(10, 100, Range::Native);
    let (ids, generation) = stable_group(&mut h, members, 10);
    let requests: Vec<HeartbeatRequest> = ids
        .iter()
        .map(|id| {
            HeartbeatRequest::default()
                .with_group_id(GroupId(s(G)))
                .with_member_id(s(id))
                .with_generation_id(generation)
        })
        .collect();
    let start = Instant::now();
    let mut n = 0u64;
    for _ in 0..rounds {
        for request in &requests {
            h.now += 1;
            let effects = h.coordinator.handle(
                h.now / 1000,
                Event::Request {
                    reply_to: ReplyTo(n),
                    group_id: G.into(),
                    ctx: ctx(4),
                    request: GroupRequest::Heartbeat(request.clone()),
                },
            );
            match &effects[..] {
                [
                    Effect::ScheduleTimer { .. },
                    Effect::Respond {
                        response: GroupResponse::Heartbeat(r),
                        ..
                    },
                ] => assert_eq!(r.error_code, 0),
                other => panic!("unexpected effects {other:?}"),
            }
            n += 1;
        }
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn memory_per_member(members: usize) -> f64 {
    let before = LIVE.load(Ordering::Relaxed);
    let mut h = Harness::new(10, 100, Range::Native);
    let empty = LIVE.load(Ordering::Relaxed);
    let _ = before;
    stable_group(&mut h, members, 10);
    h.answers.clear();
    h.answers.shrink_to_fit();
    let after = LIVE.load(Ordering::Relaxed);
    let per = (after - empty) as f64 / members as f64;
    drop(h);
    per
}

fn main() {
    // Under `cargo test --benches` the harness passes `--bench`-less flags: run a tiny smoke.
    let quick = !std::env::args().any(|a| a == "--bench");
    let (members, rounds) = if quick { (50, 2) } else { (1_000, 100) };
    println!("assignor-host coordinator benchmarks (sans-io, one shard, release build)");
    println!("command: cargo bench -p assignor-host --bench coordinator");
    let run = (!quick).then(|| report::jsonl::Run::start("coordinator"));
    let record = |cell: report::jsonl::Cell| {
        if let Some(run) = &run {
            run.record(&cell);
        }
    };
    let sorted = |values: Vec<f64>| {
        let mut v: Vec<Duration> = values
            .into_iter()
            .map(|ms| Duration::from_secs_f64(ms / 1e3))
            .collect();
        v.sort();
        v
    };
    // The wasm path is the host's; the native one shows what the sandbox adds to it. Runs
    // alternate so a drift of the machine's speed touches both alike.
    let runs = if quick { 1 } else { 7 };
    let (mut wasm, mut native) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        wasm.push(rejoin_bench(members, 10, 100, Range::wasm()));
        native.push(rejoin_bench(members, 10, 100, Range::Native));
    }
    for (path, mut rejoins) in [(Range::wasm().path(), wasm), (Range::Native.path(), native)] {
        rejoins.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (median, assignor) = rejoins[rejoins.len() / 2];
        let best = rejoins[0].0;
        let shape = report::jsonl::Cell {
            strategy: "range".into(),
            members: Some(members),
            topics: Some(10),
            partitions: Some(1_000),
            subscription: Some(report::Subscription::Homogeneous.as_str()),
            assignment: Some("full"),
            path: Some(path),
            ..Default::default()
        };
        record(
            report::jsonl::Cell {
                cell: "rejoin: last JoinGroup in -> every SyncGroup answered".into(),
                ..shape.clone()
            }
            .with_times(&sorted(rejoins.iter().map(|r| r.0).collect())),
        );
        record(
            report::jsonl::Cell {
                cell: "rejoin: of which the assignment".into(),
                ..shape
            }
            .with_times(&sorted(rejoins.iter().map(|r| r.1).collect())),
        );
        println!(
            "rejoin: {members} members, 10 topics x 100 partitions, range in {path}: last JoinGroup in -> every SyncGroup answered: median {median:.2} ms, best {best:.2} ms (module call {assignor:.2} ms) [target <= 20 ms, module call included]"
        );
    }
    let hb_members = if quick { 100 } else { 10_000 };
    let rate = heartbeat_bench(hb_members, rounds);
    println!(
        "heartbeats: {hb_members} members: {rate:.0} handled/s on one core [target >= 100,000/s on 2 cores]"
    );
    record(report::jsonl::Cell {
        cell: "heartbeats handled per second, one shard".into(),
        members: Some(hb_members),
        topics: Some(10),
        samples: hb_members * rounds,
        value: Some(rate),
        unit: Some("heartbeats/s"),
        ..Default::default()
    });
    let per = memory_per_member(if quick { 100 } else { 10_000 });
    record(report::jsonl::Cell {
        cell: "memory per idle member".into(),
        members: Some(10_000),
        topics: Some(10),
        samples: 1,
        value: Some(per),
        unit: Some("bytes"),
        ..Default::default()
    });
    println!(
        "memory: {per:.0} bytes per idle member (10 topics subscribed, v3 subscription, assignment held) [target <= 2048]"
    );
}
