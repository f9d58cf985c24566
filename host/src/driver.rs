//! The tokio side of the coordinator: groups spread over shards by a hash of the group id,
//! each shard a single task owning one [`Coordinator`] and its keyed timers, assignor calls on
//! the blocking pool, effects executed in order, persistence in the [`Store`].
//!
//! The wire layer calls [`Driver::call`] once per group request, with the request's own type
//! and its own answer type back; the admin API calls the admin hooks ([`Driver::describe`],
//! [`Driver::set_group_config`], ...). Nothing here decides group semantics: that is the
//! coordinator's job. What runs the assignors is handed in ([`AssignorRunner`]); the driver
//! knows neither the registry nor the sandbox.

mod gate;
mod notices;
mod offsets;
mod runner;
mod shard;
pub use shard::Holding;
#[cfg(test)]
mod tests;
mod timers;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use assignor_sdk::AssignRequest;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

pub use gate::{Admission, Gate, Releasing};
pub use notices::{NoticeSink, TracingNotices};
pub use offsets::{BoxFuture, PartitionCodes, RemoteOffsets};
pub use runner::{AssignorRunner, LagSource, StoreLag, UnknownLag, lag_for};

use crate::coordinator::view::{StrategiesView, TopicsView};
use crate::coordinator::{
    AdminError, Coordinator, CoordinatorConfig, Event, GroupCall, GroupConfig, GroupDetail,
    GroupRequest, GroupResponse, GroupSummary, RequestContext, error_response,
};
use crate::store::{Store, StoreError};
use shard::{Command, Shard};

/// The `[driver]` section: how the coordinator runs on tokio. Unset counts follow the
/// machine's cores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DriverSettings {
    /// Coordinator shards (tasks); groups are spread over them by a hash of the group id
    /// (default: one per core).
    pub shards: Option<usize>,
    /// Primary assignor calls running at once (default: the number of cores, at least 2).
    pub assignor_threads: Option<usize>,
    /// Fallback calls running at once, apart from the primary ones so a stuck module cannot
    /// starve the fallback (default 2).
    pub fallback_threads: Option<usize>,
    /// Queue depth of each shard (default 4096).
    pub queue: Option<usize>,
}

impl DriverSettings {
    /// Shards to run: the setting, else one per core.
    pub fn shards(&self) -> usize {
        self.shards.unwrap_or_else(cores)
    }

    /// Primary assignor calls at once: the setting, else the cores (at least 2).
    pub fn assignor_threads(&self) -> usize {
        self.assignor_threads.unwrap_or_else(|| cores().max(2))
    }

    /// Fallback calls at once: the setting, else 2.
    pub fn fallback_threads(&self) -> usize {
        self.fallback_threads.unwrap_or(2)
    }

    /// Each shard's queue depth: the setting, else 4096.
    pub fn queue(&self) -> usize {
        self.queue.unwrap_or(4096)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// How the driver runs: its settings, the coordinator's, and what the host wires in.
#[derive(Clone)]
pub struct DriverConfig {
    /// The `[driver]` section.
    pub settings: DriverSettings,
    /// Each shard's coordinator settings (the `[coordinator]` section).
    pub coordinator: CoordinatorConfig,
    /// Where notices go (metrics, logs).
    pub notices: Arc<dyn NoticeSink>,
    /// Seed the member-id generator from the OS (true) or use `coordinator.seed` (tests).
    pub random_seed: bool,
    /// Where committed offsets live in proxy mode (the upstream cluster); `None`: in each
    /// shard's table and the store.
    pub remote_offsets: Option<Arc<dyn RemoteOffsets>>,
    /// Where a run gets the group's offsets when its module reads lag (ABI v2 input `lag`):
    /// standalone, [`StoreLag`]; in proxy mode, the upstream client. `None`: every offset
    /// unknown ([`UnknownLag`]).
    pub lag: Option<Arc<dyn LagSource>>,
    /// Which groups this node coordinates now (a cluster of host nodes); `None`: all.
    pub gate: Option<Arc<dyn Gate>>,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            settings: DriverSettings::default(),
            coordinator: CoordinatorConfig::default(),
            notices: Arc::new(TracingNotices),
            random_seed: true,
            remote_offsets: None,
            lag: None,
            gate: None,
        }
    }
}

impl std::fmt::Debug for DriverConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverConfig")
            .field("settings", &self.settings)
            .field("coordinator", &self.coordinator)
            .field("random_seed", &self.random_seed)
            .finish_non_exhaustive()
    }
}

/// Something went wrong starting the driver.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("driver configuration: {0}")]
    Config(String),
    #[error("cannot restore groups from the store: {0}")]
    Restore(#[from] StoreError),
    #[error("the driver must be started inside a tokio runtime")]
    NoRuntime,
}

/// A handle on the running shards. Cheap to clone.
#[derive(Clone)]
pub struct Driver {
    inner: Arc<Inner>,
}

struct Inner {
    shards: Vec<mpsc::Sender<Command>>,
    closed: AtomicBool,
    tasks: parking_lot::Mutex<Vec<JoinHandle<()>>>,
}

impl Driver {
    /// Starts the shards. Restores persisted groups and offsets from `store` (stable groups
    /// resume without a rebalance: heartbeat timers re-armed from now). Assignor runs go to
    /// `runner` on the blocking pool. Watches `strategies` and `topics` for view changes and
    /// broadcasts them to every shard.
    pub fn start(
        config: DriverConfig,
        runner: Arc<dyn AssignorRunner>,
        strategies: watch::Receiver<Arc<StrategiesView>>,
        topics: watch::Receiver<TopicsView>,
        store: Option<Store>,
    ) -> Result<Driver, DriverError> {
        let settings = &config.settings;
        let (shards, primary, fallback) = (
            settings.shards(),
            settings.assignor_threads(),
            settings.fallback_threads(),
        );
        if shards == 0 || primary == 0 || fallback == 0 {
            return Err(DriverError::Config(
                "shards, assignor_threads and fallback_threads must be at least 1".into(),
            ));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| DriverError::NoRuntime)?;
        let restored = match &store {
            Some(store) => store.load_groups()?,
            None => Vec::new(),
        };
        let primary = Arc::new(Semaphore::new(primary));
        let fallback = Arc::new(Semaphore::new(fallback));
        let start = tokio::time::Instant::now();
        // Coordinator time counts from `start`; modules see wall-clock time.
        let clock_base_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut senders = Vec::with_capacity(shards);
        let mut tasks = Vec::with_capacity(shards + 1);
        for index in 0..shards {
            let mut coordinator_config = config.coordinator.clone();
            coordinator_config.seed = if config.random_seed {
                random_seed()
            } else {
                coordinator_config.seed.wrapping_add(index as u64)
            };
            let (tx, rx) = mpsc::channel(config.settings.queue().max(1));
            let (done_tx, done_rx) = mpsc::unbounded_channel();
            let shard = Shard {
                coordinator: Coordinator::new(
                    coordinator_config,
                    topics.borrow().clone(),
                    strategies.borrow().clone(),
                )
                .with_clock_base(clock_base_ms),
                timers: Default::default(),
                replies: Default::default(),
                next_reply: 1,
                start,
                runner: runner.clone(),
                lag: config.lag.clone().unwrap_or_else(|| Arc::new(UnknownLag)),
                primary: primary.clone(),
                fallback: fallback.clone(),
                store: store.clone(),
                offsets: Default::default(),
                remote: config
                    .remote_offsets
                    .clone()
                    .map(offsets::RemoteQueues::new),
                sink: config.notices.clone(),
                gate: config.gate.clone(),
                done_tx,
            };
            tasks.push(runtime.spawn(shard.run(rx, done_rx)));
            senders.push(tx);
        }
        // Restored groups go first: the channels are FIFO, so no request overtakes them.
        for group in restored {
            let shard = &senders[shard_of(&group.group_id, senders.len())];
            shard
                .try_send(Command::Event(Event::Restore(Box::new(group))))
                .map_err(|_| DriverError::Config("shard queue too small to restore".into()))?;
        }
        tasks.push(runtime.spawn(watch_views(senders.clone(), topics, strategies)));
        Ok(Driver {
            inner: Arc::new(Inner {
                shards: senders,
                closed: AtomicBool::new(false),
                tasks: parking_lot::Mutex::new(tasks),
            }),
        })
    }

    fn shard(&self, group_id: &str) -> &mpsc::Sender<Command> {
        &self.inner.shards[shard_of(group_id, self.inner.shards.len())]
    }

    /// One request for one group, answered with its own response type; resolves when the
    /// coordinator answers (a parked JoinGroup or SyncGroup resolves later). If the driver is
    /// shutting down: COORDINATOR_NOT_AVAILABLE, in the request's shape.
    pub async fn call<R: GroupCall>(
        &self,
        group_id: &str,
        ctx: RequestContext,
        request: R,
    ) -> R::Answer {
        self.call_holding(group_id, ctx, request, None).await
    }

    /// [`Driver::call`], with something the group's shard drops once the coordinator has
    /// taken the request in (and the effects of that are carried out): the connection's share
    /// of `kafka.queued_max_request_bytes`, whose decoded request is the coordinator's from
    /// then on, however long the answer then waits for the rest of the group.
    pub async fn call_holding<R: GroupCall>(
        &self,
        group_id: &str,
        ctx: RequestContext,
        request: R,
        held: Option<Holding>,
    ) -> R::Answer {
        let request = request.into_request();
        let shape = error_shape(&request);
        let version = ctx.api_version;
        let answer = self
            .request_holding(group_id, ctx, request, &shape, held)
            .await;
        R::answer(answer).unwrap_or_else(|other| {
            // The coordinator answers each request kind with its own kind (tested per kind);
            // should that ever break, the client gets a retriable error (it looks the
            // coordinator up again), not a wrong answer.
            tracing::error!(
                group = group_id,
                asked = shape.api(),
                answered = other.api(),
                "coordinator answered with the wrong response kind"
            );
            let error = error_response(
                version,
                group_id,
                &shape,
                ResponseError::CoordinatorNotAvailable,
            );
            R::answer(error).unwrap_or_else(|_| unreachable!("error_response keeps the kind"))
        })
    }

    /// [`Driver::call`] untyped: the coordinator's answer as it came.
    pub async fn request(
        &self,
        group_id: &str,
        ctx: RequestContext,
        request: GroupRequest,
    ) -> GroupResponse {
        let shape = error_shape(&request);
        self.request_holding(group_id, ctx, request, &shape, None)
            .await
    }

    /// `shape`: what an error answer needs of the request ([`error_shape`]), made once by the
    /// caller before the request moves to its shard.
    async fn request_holding(
        &self,
        group_id: &str,
        ctx: RequestContext,
        request: GroupRequest,
        shape: &GroupRequest,
        held: Option<Holding>,
    ) -> GroupResponse {
        let unavailable = |ctx: &RequestContext, shape: &GroupRequest| {
            error_response(
                ctx.api_version,
                group_id,
                shape,
                ResponseError::CoordinatorNotAvailable,
            )
        };
        record_on_span(group_id, &request);
        if self.inner.closed.load(Ordering::Acquire) {
            return unavailable(&ctx, shape);
        }
        let (reply, rx) = oneshot::channel();
        let version = ctx.clone();
        let command = Command::Request {
            group_id: group_id.to_string(),
            ctx,
            request,
            reply,
            held,
        };
        if self.shard(group_id).send(command).await.is_err() {
            return unavailable(&version, shape);
        }
        rx.await.unwrap_or_else(|_| unavailable(&version, shape))
    }

    /// ListGroups over every shard (filters as Kafka: case-insensitive states, types).
    pub async fn list_groups(
        &self,
        states_filter: &[String],
        types_filter: &[String],
    ) -> Vec<ListedGroup> {
        let mut all: Vec<ListedGroup> = self
            .fan_out(|reply| Command::ListGroups {
                states: states_filter.to_vec(),
                types: types_filter.to_vec(),
                reply,
            })
            .await
            .into_iter()
            .flatten()
            .collect();
        all.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
        all
    }

    /// Gives up every group `which` names, on every shard: their parked requests are answered
    /// NOT_COORDINATOR and they are forgotten, with their timers (`Coordinator::release`).
    /// Returns how many groups were dropped, once every shard has done it. A cluster of host
    /// nodes calls it when this node loses shards; the gate already refuses those groups.
    pub async fn release(&self, which: Releasing) -> usize {
        self.fan_out(|done| Command::Release {
            which: which.clone(),
            done,
        })
        .await
        .into_iter()
        .sum()
    }

    /// Stops the shards after answering what is in flight (parked JoinGroup / SyncGroup get
    /// COORDINATOR_NOT_AVAILABLE, so clients look the coordinator up again).
    pub async fn shutdown(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for shard in &self.inner.shards {
            let (done, rx) = oneshot::channel();
            if shard.send(Command::Shutdown { done }).await.is_ok() {
                let _ = rx.await;
            }
        }
        let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *self.inner.tasks.lock());
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
    }

    /// One group in detail (state, generation, strategy and module version, members with
    /// subscriptions and assignments, last assignor run, recent rebalances).
    pub async fn describe(&self, group_id: &str) -> Option<GroupDetail> {
        let (reply, rx) = oneshot::channel();
        let command = Command::Describe {
            group_id: group_id.to_string(),
            reply,
        };
        self.shard(group_id).send(command).await.ok()?;
        rx.await.ok().flatten()
    }

    /// Every group: id, state, members, strategy.
    pub async fn groups(&self) -> Vec<GroupSummary> {
        let mut all: Vec<GroupSummary> = self
            .fan_out(|reply| Command::Groups { reply })
            .await
            .into_iter()
            .flatten()
            .collect();
        all.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        all
    }

    /// Sets a group's strategy override (optionally pinned to a version) and parameters;
    /// persisted, applied at the group's next rebalance.
    pub async fn set_group_config(
        &self,
        group_id: &str,
        cfg: GroupConfig,
    ) -> Result<(), AdminError> {
        let (reply, rx) = oneshot::channel();
        let command = Command::SetConfig {
            group_id: group_id.to_string(),
            config: cfg,
            reply,
        };
        self.admin(group_id, command, rx).await
    }

    /// Starts a rebalance of a group (members learn of it from their next Heartbeat); `why`
    /// goes into the group's history.
    pub async fn trigger_rebalance(
        &self,
        group_id: &str,
        why: Option<String>,
    ) -> Result<(), AdminError> {
        let (reply, rx) = oneshot::channel();
        let command = Command::Trigger {
            group_id: group_id.to_string(),
            why,
            reply,
        };
        self.admin(group_id, command, rx).await
    }

    /// The request a rebalance with `strategy` would send now (for simulate).
    pub async fn assign_request(&self, group_id: &str, strategy: &str) -> Option<AssignRequest> {
        let (reply, rx) = oneshot::channel();
        let command = Command::AssignRequest {
            group_id: group_id.to_string(),
            strategy: strategy.to_string(),
            reply,
        };
        self.shard(group_id).send(command).await.ok()?;
        rx.await.ok().flatten()
    }

    async fn admin(
        &self,
        group_id: &str,
        command: Command,
        rx: oneshot::Receiver<Result<(), AdminError>>,
    ) -> Result<(), AdminError> {
        let stopped = || AdminError::Storage("the driver is shutting down".into());
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(stopped());
        }
        self.shard(group_id)
            .send(command)
            .await
            .map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    async fn fan_out<T>(&self, make: impl Fn(oneshot::Sender<T>) -> Command) -> Vec<T> {
        let mut receivers = Vec::with_capacity(self.inner.shards.len());
        for shard in &self.inner.shards {
            let (reply, rx) = oneshot::channel();
            if shard.send(make(reply)).await.is_ok() {
                receivers.push(rx);
            }
        }
        let mut out = Vec::with_capacity(receivers.len());
        for rx in receivers {
            if let Ok(v) = rx.await {
                out.push(v);
            }
        }
        out
    }
}

/// The shard of a group: FNV-1a of the id, so the mapping is stable across runs.
pub fn shard_of(group_id: &str, shards: usize) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in group_id.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % shards as u64) as usize
}

/// What [`error_response`] needs of a request, kept before the request moves to a shard.
fn error_shape(request: &GroupRequest) -> GroupRequest {
    use kafka_protocol::messages::{
        HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
    };
    match request {
        GroupRequest::JoinGroup(r) => {
            GroupRequest::JoinGroup(JoinGroupRequest::default().with_member_id(r.member_id.clone()))
        }
        GroupRequest::SyncGroup(_) => GroupRequest::SyncGroup(SyncGroupRequest::default()),
        GroupRequest::Heartbeat(_) => GroupRequest::Heartbeat(HeartbeatRequest::default()),
        GroupRequest::LeaveGroup(_) => GroupRequest::LeaveGroup(LeaveGroupRequest::default()),
        other => other.clone(),
    }
}

/// Broadcasts topic and strategy changes to every shard.
async fn watch_views(
    shards: Vec<mpsc::Sender<Command>>,
    mut topics: watch::Receiver<TopicsView>,
    mut strategies: watch::Receiver<Arc<StrategiesView>>,
) {
    loop {
        let event = tokio::select! {
            changed = topics.changed() => match changed {
                Ok(()) => Event::TopicsChanged(topics.borrow_and_update().clone()),
                Err(_) => break,
            },
            changed = strategies.changed() => match changed {
                Ok(()) => Event::StrategiesChanged(strategies.borrow_and_update().clone()),
                Err(_) => break,
            },
        };
        for shard in &shards {
            if shard.send(Command::Event(event.clone())).await.is_err() {
                return;
            }
        }
    }
}

fn random_seed() -> u64 {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

/// Fills the `group`, `member` and `generation` fields of the caller's span (the wire layer's
/// `request` span declares them empty), so every line logged for this request, here or in the
/// connection, names the group and member it is about.
fn record_on_span(group_id: &str, request: &GroupRequest) {
    let span = tracing::Span::current();
    span.record("group", group_id);
    let (member, generation) = match request {
        GroupRequest::JoinGroup(r) => (Some(&r.member_id), None),
        GroupRequest::SyncGroup(r) => (Some(&r.member_id), Some(r.generation_id)),
        GroupRequest::Heartbeat(r) => (Some(&r.member_id), Some(r.generation_id)),
        GroupRequest::OffsetCommit(r) => {
            (Some(&r.member_id), Some(r.generation_id_or_member_epoch))
        }
        GroupRequest::TxnOffsetCommit(r) => (Some(&r.member_id), Some(r.generation_id)),
        GroupRequest::LeaveGroup(r) => (r.members.first().map(|m| &m.member_id), None),
        _ => (None, None),
    };
    if let Some(member) = member.filter(|m| !m.is_empty()) {
        span.record("member", member.as_str());
    }
    if let Some(generation) = generation {
        span.record("generation", generation);
    }
}
