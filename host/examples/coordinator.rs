//! Drives the sans-io coordinator with a fake clock, as the driver does with a real one: two
//! consumers join a consumer-protocol (KIP-848) group, the coordinator asks for a target
//! assignment (an effect), the built-in `range` module computes it in the sandbox, and the
//! consumers' heartbeats carry their partitions. Then one consumer goes silent; the clock is
//! moved to its session timer, which the coordinator armed as an effect, and the other takes
//! every partition. Nothing here waits: time is an argument of `handle`.
//!
//! `cargo run -p assignor-host --example coordinator`

#![allow(
    clippy::print_stdout,
    reason = "an example shows what it does on stdout"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use assignor_host::coordinator::view::{StrategiesView, StrategyEntry, Topics};
use assignor_host::coordinator::{
    AssignorDone, AssignorOutput, AssignorRun, Coordinator, CoordinatorConfig, Effect, Event,
    GroupRequest, GroupResponse, Millis, ReplyTo, RequestContext, TimerKey,
};
use assignor_host::sandbox::{CallTag, CompiledModule, PoolConfig, Sandbox, SandboxLimits};
use assignor_sdk::{RebalanceProtocol, Topic};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

/// The driver's part, in miniature: the timers the coordinator armed, and the module it runs.
struct Driver {
    /// The topic id of `orders`, by which the consumer protocol names it.
    orders: Uuid,
    coordinator: Coordinator,
    now: Millis,
    timers: BTreeMap<TimerKey, Millis>,
    sandbox: Sandbox,
    range: CompiledModule,
    next_reply: u64,
}

impl Driver {
    /// Hands `event` to the coordinator and carries out its effects; returns the answers.
    fn handle(&mut self, event: Event) -> Vec<(ReplyTo, GroupResponse)> {
        let mut answers = Vec::new();
        let mut events = vec![event];
        while let Some(event) = events.pop() {
            for effect in self.coordinator.handle(self.now, event) {
                match effect {
                    Effect::Respond { to, response } => answers.push((to, response)),
                    Effect::ScheduleTimer { key, at } => {
                        self.timers.insert(key, at);
                    }
                    Effect::CancelTimer { key } => {
                        self.timers.remove(&key);
                    }
                    Effect::RunAssignor(run) => events.push(self.run(&run)),
                    _ => {} // persistence and notices: a real driver's business
                }
            }
        }
        answers
    }

    /// Runs the assignor the coordinator asked for (always `range` here) in the sandbox.
    fn run(&self, run: &AssignorRun) -> Event {
        let tag = CallTag {
            module: "range",
            version: 0,
        };
        let outcome = self
            .sandbox
            .assign(&self.range, tag, &run.request, run.cooperative)
            .expect("range assigns");
        Event::AssignorDone(AssignorDone {
            group_id: run.group_id.clone(),
            generation_id: run.generation_id,
            run_id: run.run_id,
            result: Ok(AssignorOutput {
                module: "range".to_owned(),
                version: 0,
                answer: outcome.answer,
                duration_us: outcome.stats.duration.as_micros() as u64,
                fuel: outcome.stats.fuel_used,
            }),
        })
    }

    /// A heartbeat of `consumer`, with what it owns (as librdkafka sends it); adopts the
    /// answer's epoch and, when the answer carries one, its new assignment.
    fn heartbeat(&mut self, consumer: &mut Consumer) {
        self.next_reply += 1;
        let owned = TopicPartitions::default()
            .with_topic_id(self.orders)
            .with_partitions(consumer.owned.clone());
        let mut request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("example")))
            .with_member_id(StrBytes::from_string(consumer.id.to_owned()))
            .with_member_epoch(consumer.epoch)
            .with_topic_partitions(Some(vec![owned]));
        if consumer.epoch == 0 {
            request = request
                .with_rebalance_timeout_ms(60_000)
                .with_server_assignor(Some(StrBytes::from_static_str("range")))
                .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str(
                    "orders",
                ))]))
                .with_topic_partitions(Some(Vec::new()));
        }
        let event = Event::Request {
            reply_to: ReplyTo(self.next_reply),
            group_id: "example".to_owned(),
            ctx: RequestContext {
                api_version: 1,
                client_id: consumer.id.to_owned(),
                client_host: "/127.0.0.1".to_owned(),
            },
            request: GroupRequest::ConsumerGroupHeartbeat(Box::new(request)),
        };
        for (_, answer) in self.handle(event) {
            let GroupResponse::ConsumerGroupHeartbeat(answer) = answer else {
                continue;
            };
            consumer.epoch = answer.member_epoch;
            // No assignment in the answer: it has not changed.
            if let Some(assignment) = &answer.assignment {
                consumer.owned = assignment
                    .topic_partitions
                    .iter()
                    .flat_map(|tp| tp.partitions.iter().copied())
                    .collect();
            }
            println!(
                "t={:>6} ms  {}: error {}, epoch {}, owns orders {:?}",
                self.now, consumer.id, answer.error_code, consumer.epoch, consumer.owned
            );
        }
    }

    /// Moves the clock to `to`, firing every timer due on the way, in order.
    fn advance(&mut self, to: Millis) {
        loop {
            let due = self
                .timers
                .iter()
                .filter(|(_, at)| **at <= to)
                .min_by_key(|(_, at)| **at)
                .map(|(key, at)| (key.clone(), *at));
            let Some((key, at)) = due else { break };
            self.timers.remove(&key);
            self.now = self.now.max(at);
            if let TimerKey::Heartbeat { member, .. } = &key {
                println!("t={:>6} ms  {member}: session expired", self.now);
            }
            self.handle(Event::TimerFired(key));
        }
        self.now = to;
    }
}

/// A consumer as the example plays it: its id, its member epoch, the partitions it owns.
struct Consumer {
    id: &'static str,
    epoch: i32,
    owned: Vec<i32>,
}

fn main() -> anyhow::Result<()> {
    let orders = Topic {
        name: "orders".to_owned(),
        partition_count: 4,
        partition_racks: Vec::new(),
    };
    let topics = Arc::new(Topics::with_derived_ids(
        [("orders".to_owned(), orders)].into(),
    ));
    let orders = topics.id("orders").expect("an id");
    let mut strategies = StrategiesView::default();
    let range = StrategyEntry {
        active_version: 0,
        rebalance_protocol: RebalanceProtocol::Eager,
        in_place: false,
    };
    strategies.modules.insert("range".to_owned(), range);
    let config = CoordinatorConfig::default();
    let session_ms = config.consumer_session_timeout_ms;
    let sandbox = Sandbox::new(PoolConfig::default(), SandboxLimits::default())?;
    let wasm = assignor_host::builtins::builtin("range")
        .expect("built in")
        .wasm;
    let mut driver = Driver {
        orders,
        coordinator: Coordinator::new(config, topics, Arc::new(strategies)),
        now: 0,
        timers: BTreeMap::new(),
        range: sandbox.load(wasm)?,
        sandbox,
        next_reply: 0,
    };

    let consumer = |id| Consumer {
        id,
        epoch: 0,
        owned: Vec::new(),
    };
    let (mut a, mut b) = (consumer("consumer-a"), consumer("consumer-b"));
    driver.heartbeat(&mut a);
    driver.advance(100);
    driver.heartbeat(&mut b);
    // Each heartbeats again: `a` gives up what the new target moves to `b`, then `b` gets it.
    for _ in 0..3 {
        driver.advance(driver.now + 1_000);
        driver.heartbeat(&mut a);
        driver.heartbeat(&mut b);
    }
    // `b` goes silent; `a` heartbeats on until `b`'s session has expired.
    println!("consumer-b stops heartbeating (session timeout {session_ms} ms)");
    let expired = driver.now + session_ms as Millis + 5_000;
    while driver.now < expired {
        driver.advance(driver.now + 5_000);
        driver.heartbeat(&mut a);
    }
    Ok(())
}
