//! One shard: a tokio task that owns a [`Coordinator`] for its groups, feeds it commands,
//! timer firings and assignor results, and executes the effects in order. Assignor calls go to
//! the blocking pool (bounded by semaphores, the fallback with its own permits so a stuck
//! module cannot starve it); persistence waits for the store before the next effect, so an
//! OffsetCommit is answered after its write. Offsets are kept as `offsets.rs` says: in the
//! shard's table and the store, or upstream (proxy mode) by tasks of their own.

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use super::gate::{Admission, Gate, Releasing};
use super::notices::NoticeSink;
use super::offsets::{RemoteQueues, UNAVAILABLE, merge_commit, merge_delete, merge_txn_commit};
use super::runner::{AssignorRunner, LagSource};
use super::timers::Timers;
use crate::coordinator::{
    AdminError, AssignorDone, AssignorFailure, AssignorRun, Coordinator, Effect, Event,
    GroupConfig, GroupDetail, GroupRequest, GroupResponse, GroupSummary, Millis, OffsetTable,
    ReplyTo, RequestContext, error_response,
};
use crate::store::Store;
use assignor_sdk::AssignRequest;

/// What a shard is asked to do.
/// What a caller hands the group's shard with a request, to be dropped once the coordinator
/// has taken the request in (`Driver::call_holding`). The driver only drops it.
pub type Holding = Box<dyn Send>;

pub(crate) enum Command {
    Request {
        group_id: String,
        ctx: RequestContext,
        request: GroupRequest,
        reply: oneshot::Sender<GroupResponse>,
        /// Dropped once the coordinator has taken the request in ([`Holding`]).
        held: Option<Holding>,
    },
    ListGroups {
        states: Vec<String>,
        types: Vec<String>,
        reply: oneshot::Sender<Vec<ListedGroup>>,
    },
    Describe {
        group_id: String,
        reply: oneshot::Sender<Option<GroupDetail>>,
    },
    Groups {
        reply: oneshot::Sender<Vec<GroupSummary>>,
    },
    SetConfig {
        group_id: String,
        config: GroupConfig,
        reply: oneshot::Sender<Result<(), AdminError>>,
    },
    Trigger {
        group_id: String,
        why: Option<String>,
        reply: oneshot::Sender<Result<(), AdminError>>,
    },
    AssignRequest {
        group_id: String,
        strategy: String,
        reply: oneshot::Sender<Option<AssignRequest>>,
    },
    /// Drop the groups `which` names (this node no longer coordinates them); `done` gets
    /// how many there were.
    Release {
        which: Releasing,
        done: oneshot::Sender<usize>,
    },
    Event(Event),
    Shutdown {
        done: oneshot::Sender<()>,
    },
}

/// Everything a shard task owns.
pub(crate) struct Shard {
    pub coordinator: Coordinator,
    pub timers: Timers,
    pub replies: HashMap<ReplyTo, oneshot::Sender<GroupResponse>>,
    pub next_reply: u64,
    pub start: Instant,
    pub runner: Arc<dyn AssignorRunner>,
    /// Where runs get offsets for modules that read lag.
    pub lag: Arc<dyn LagSource>,
    pub primary: Arc<Semaphore>,
    pub fallback: Arc<Semaphore>,
    pub store: Option<Store>,
    /// This shard's groups' offsets, standalone (proxy mode keeps none here).
    pub offsets: OffsetTable,
    /// Where offsets live in proxy mode; `None`: in `offsets` and the store.
    pub remote: Option<RemoteQueues>,
    pub sink: Arc<dyn NoticeSink>,
    /// Which groups are served here now; `None`: all.
    pub gate: Option<Arc<dyn Gate>>,
    pub done_tx: mpsc::UnboundedSender<AssignorDone>,
}

impl Shard {
    fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }

    /// The shard's loop: commands, assignor results and due timers, one at a time.
    pub async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut done_rx: mpsc::UnboundedReceiver<AssignorDone>,
    ) {
        loop {
            let deadline = self
                .timers
                .next_deadline()
                .map(|at| self.start + std::time::Duration::from_millis(at));
            let sleep = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(done) = done_rx.recv() => self.event(Event::AssignorDone(done)).await,
                command = commands.recv() => match command {
                    None => break,
                    Some(Command::Shutdown { done }) => {
                        let effects = self.coordinator.shutdown();
                        let _ = self.execute(effects).await;
                        let _ = done.send(());
                        break;
                    }
                    Some(command) => self.command(command).await,
                },
                () = sleep => {
                    let now = self.now();
                    while let Some(key) = self.timers.pop_due(now) {
                        let effects = self.coordinator.handle(now, Event::TimerFired(key));
                        let _ = self.execute(effects).await;
                    }
                }
            }
        }
        // Callers still waiting get COORDINATOR_NOT_AVAILABLE from the driver when their
        // reply channel drops here.
    }

    async fn event(&mut self, event: Event) {
        if let (Event::Restore(restored), None) = (&event, &self.remote) {
            self.offsets.commit(&restored.group_id, &restored.offsets);
        }
        let effects = self.coordinator.handle(self.now(), event);
        // Storage errors are logged where they happen; the group keeps serving.
        let _ = self.execute(effects).await;
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Request {
                group_id,
                ctx,
                request,
                reply,
                held,
            } => {
                let refusal = match self.gate.as_ref().map(|g| g.admit(&group_id)) {
                    None | Some(Admission::Serve) => None,
                    Some(Admission::Loading) => Some(loading_error(&request)),
                    Some(Admission::Elsewhere) => Some(ResponseError::NotCoordinator),
                };
                if let Some(error) = refusal {
                    let refused = error_response(ctx.api_version, &group_id, &request, error);
                    let _ = reply.send(refused);
                    return;
                }
                let reply_to = ReplyTo(self.next_reply);
                self.next_reply += 1;
                self.replies.insert(reply_to, reply);
                self.event(Event::Request {
                    reply_to,
                    group_id,
                    ctx,
                    request,
                })
                .await;
                drop(held);
            }
            Command::ListGroups {
                states,
                types,
                reply,
            } => {
                let _ = reply.send(self.coordinator.list_groups(&states, &types));
            }
            Command::Describe { group_id, reply } => {
                let _ = reply.send(self.coordinator.group_detail(self.now(), &group_id));
            }
            Command::Groups { reply } => {
                let _ = reply.send(self.coordinator.group_summaries());
            }
            Command::SetConfig {
                group_id,
                config,
                reply,
            } => {
                let result = match self.coordinator.set_group_config(&group_id, config) {
                    Ok(effects) => self.execute(effects).await.map_err(AdminError::Storage),
                    Err(e) => Err(e),
                };
                let _ = reply.send(result);
            }
            Command::Trigger {
                group_id,
                why,
                reply,
            } => {
                let now = self.now();
                let result = match self.coordinator.trigger_rebalance(now, &group_id, why) {
                    Ok(effects) => {
                        let _ = self.execute(effects).await;
                        Ok(())
                    }
                    Err(e) => Err(e),
                };
                let _ = reply.send(result);
            }
            Command::AssignRequest {
                group_id,
                strategy,
                reply,
            } => {
                let now = self.now();
                let _ = reply.send(self.coordinator.assign_request(now, &group_id, &strategy));
            }
            Command::Release { which, done } => {
                let ids: Vec<String> = (self.coordinator.group_ids().into_iter())
                    .filter(|id| which(id))
                    .collect();
                let effects = self.coordinator.release(&ids);
                let _ = self.execute(effects).await;
                self.timers.cancel_groups(|group| which(group));
                for id in &ids {
                    self.offsets.delete_group(id);
                }
                let _ = done.send(ids.len());
            }
            Command::Event(event) => self.event(event).await,
            Command::Shutdown { .. } => unreachable!("handled by the loop"),
        }
    }

    /// Executes effects in order. A failed write is logged and reported; the offsets answer
    /// that depended on it gets COORDINATOR_NOT_AVAILABLE where it failed (the client retries;
    /// Kafka maps storage failures to retriable errors). The first storage error is returned.
    async fn execute(&mut self, effects: Vec<Effect>) -> Result<(), String> {
        let mut first_error = None;
        for effect in effects {
            match effect {
                Effect::Respond { to, response } => self.respond(to, response),
                Effect::ScheduleTimer { key, at } => self.timers.schedule(key, at),
                Effect::CancelTimer { key } => self.timers.cancel(&key),
                Effect::RunAssignor(run) => self.spawn_run(*run),
                Effect::Notice(notice) => self.sink.notice(&notice),
                Effect::CommitOffsets {
                    to,
                    group_id,
                    offsets,
                    response,
                } => {
                    if let Some(queues) = &mut self.remote {
                        let (remote, reply) = (queues.remote.clone(), self.replies.remove(&to));
                        queues.submit(&group_id.clone(), Box::pin(async move {
                            let codes = remote.commit(group_id.clone(), offsets).await;
                            let codes = codes.map_err(|error| {
                                tracing::warn!(group = %group_id, %error, "upstream offset commit failed");
                                UNAVAILABLE
                            });
                            let merged = merge_commit(response, codes.as_deref().map_err(|c| *c));
                            if let Some(reply) = reply {
                                let _ = reply.send(GroupResponse::OffsetCommit(merged));
                            }
                        }));
                        continue;
                    }
                    // Shared with the store's write, then moved into the table: the records are
                    // never copied.
                    let offsets = Arc::new(offsets);
                    let (g, o) = (group_id.clone(), offsets.clone());
                    let written = self.write(move |s| s.save_offsets(&g, &o)).await;
                    let merged = match written {
                        Ok(()) => {
                            // The write's task has ended, so this is the only reference left.
                            let offsets = Arc::try_unwrap(offsets)
                                .unwrap_or_else(|shared| shared.as_ref().clone());
                            self.offsets.commit_owned(&group_id, offsets);
                            response
                        }
                        Err(e) => {
                            first_error.get_or_insert(e);
                            merge_commit(response, Err(UNAVAILABLE))
                        }
                    };
                    self.respond(to, GroupResponse::OffsetCommit(merged));
                }
                Effect::CommitTxnOffsets {
                    to,
                    group_id,
                    api_version,
                    request,
                    response,
                } => {
                    let Some(queues) = &mut self.remote else {
                        // The wire layer refuses TxnOffsetCommit standalone: no transaction
                        // coordinator here to write the offsets into a transaction.
                        tracing::error!(group = %group_id,
                            "a transactional offset commit reached a host without an upstream");
                        let code = ResponseError::UnsupportedVersion.code();
                        let refused = merge_txn_commit(response, Err(code));
                        self.respond(to, GroupResponse::TxnOffsetCommit(refused));
                        continue;
                    };
                    let (remote, reply) = (queues.remote.clone(), self.replies.remove(&to));
                    queues.submit(&group_id.clone(), Box::pin(async move {
                        let codes = remote.commit_txn(group_id.clone(), api_version, request).await;
                        let codes = codes.map_err(|error| {
                            tracing::warn!(group = %group_id, %error, "upstream transactional offset commit failed");
                            UNAVAILABLE
                        });
                        let merged = merge_txn_commit(response, codes.as_ref().map_err(|c| *c));
                        if let Some(reply) = reply {
                            let _ = reply.send(GroupResponse::TxnOffsetCommit(merged));
                        }
                    }));
                }
                Effect::FetchOffsets {
                    to,
                    group_id,
                    query,
                } => match &mut self.remote {
                    Some(queues) => {
                        let (remote, reply) = (queues.remote.clone(), self.replies.remove(&to));
                        queues.submit(&group_id.clone(), Box::pin(async move {
                            let result = remote.fetch(group_id.clone(), query.clone()).await;
                            let response = result.map(GroupResponse::OffsetFetch).unwrap_or_else(|error| {
                                tracing::warn!(group = %group_id, %error, "upstream offset fetch failed");
                                let request = GroupRequest::OffsetFetch(query);
                                error_response(2, &group_id, &request, ResponseError::CoordinatorNotAvailable)
                            });
                            if let Some(reply) = reply {
                                let _ = reply.send(response);
                            }
                        }));
                    }
                    None => {
                        let result = self.offsets.fetch(&group_id, &query);
                        self.respond(to, GroupResponse::OffsetFetch(result));
                    }
                },
                Effect::DeleteOffsets {
                    to,
                    group_id,
                    partitions,
                    response,
                } => {
                    if let Some(queues) = &mut self.remote {
                        let (remote, reply) = (queues.remote.clone(), self.replies.remove(&to));
                        queues.submit(&group_id.clone(), Box::pin(async move {
                            let codes = remote.delete(group_id.clone(), partitions.clone()).await;
                            let codes = codes.map_err(|error| {
                                tracing::warn!(group = %group_id, %error, "upstream offset delete failed");
                                UNAVAILABLE
                            });
                            let merged = merge_delete(
                                response,
                                &partitions,
                                codes.as_deref().map_err(|c| *c),
                            );
                            if let Some(reply) = reply {
                                let _ = reply.send(GroupResponse::OffsetDelete(merged));
                            }
                        }));
                        continue;
                    }
                    let (g, p) = (group_id.clone(), partitions.clone());
                    let merged = match self.write(move |s| s.delete_offsets(&g, &p)).await {
                        Ok(()) => {
                            self.offsets.delete(&group_id, &partitions);
                            merge_delete(response, &partitions, Ok(&vec![0; partitions.len()]))
                        }
                        Err(e) => {
                            first_error.get_or_insert(e);
                            merge_delete(response, &partitions, Err(UNAVAILABLE))
                        }
                    };
                    self.respond(to, GroupResponse::OffsetDelete(merged));
                }
                Effect::PersistGroup(snapshot) => {
                    if let Err(e) = self.write(move |s| s.save_group(&snapshot)).await {
                        first_error.get_or_insert(e);
                    }
                }
                Effect::PersistGroupConfig { group_id, config } => {
                    let result = self
                        .write(move |s| s.save_group_config(&group_id, &config))
                        .await;
                    if let Err(e) = result {
                        first_error.get_or_insert(e);
                    }
                }
                Effect::DeleteGroup { to, group_id } => {
                    let g = group_id.clone();
                    let stored = self.write(move |s| s.delete_group(&g)).await;
                    self.offsets.delete_group(&group_id);
                    if let Err(e) = stored {
                        first_error.get_or_insert(e);
                        self.respond(to, GroupResponse::DeleteGroup(UNAVAILABLE));
                        continue;
                    }
                    let Some(queues) = &mut self.remote else {
                        self.respond(to, GroupResponse::DeleteGroup(0));
                        continue;
                    };
                    let (remote, reply) = (queues.remote.clone(), self.replies.remove(&to));
                    queues.submit(&group_id.clone(), Box::pin(async move {
                        let code = remote.delete_group(group_id.clone()).await.unwrap_or_else(|error| {
                            tracing::warn!(group = %group_id, %error, "upstream group deletion failed");
                            UNAVAILABLE
                        });
                        // Nothing to delete upstream is a deleted group.
                        let code = if code == ResponseError::GroupIdNotFound.code() {
                            0
                        } else {
                            code
                        };
                        if let Some(reply) = reply {
                            let _ = reply.send(GroupResponse::DeleteGroup(code));
                        }
                    }));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn respond(&mut self, to: ReplyTo, response: GroupResponse) {
        if let Some(reply) = self.replies.remove(&to) {
            let _ = reply.send(response);
        }
    }

    /// Runs a store write on the blocking pool and waits for it (no store: nothing to do).
    async fn write<F>(&self, write: F) -> Result<(), String>
    where
        F: FnOnce(&Store) -> Result<(), crate::store::StoreError> + Send + 'static,
    {
        let Some(store) = self.store.clone() else {
            return Ok(());
        };
        let result = tokio::task::spawn_blocking(move || write(&store))
            .await
            .map_err(|e| format!("store task failed: {e}"))
            .and_then(|r| r.map_err(|e| e.to_string()));
        if let Err(error) = &result {
            tracing::error!(%error, "store write failed");
        }
        result
    }

    /// Starts an assignor run on the blocking pool; its result comes back on `done_tx`. The
    /// shard never waits for it, so a slow module delays nothing but its own group.
    fn spawn_run(&self, run: AssignorRun) {
        let runner = self.runner.clone();
        let lag = self.lag.clone();
        let permits = if run.fallback {
            self.fallback.clone()
        } else {
            self.primary.clone()
        };
        let done_tx = self.done_tx.clone();
        tokio::spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let (group_id, generation_id, run_id) =
                (run.group_id.clone(), run.generation_id, run.run_id);
            let strategy = run.strategy.clone();
            // The registry adds `module` and `version` once it has resolved the strategy.
            let span = tracing::info_span!(
                "assignor",
                group = %group_id,
                generation = generation_id,
                strategy = %strategy,
                fallback = run.fallback,
            );
            let result = tokio::task::spawn_blocking(move || {
                let _entered = span.enter();
                runner.run(
                    &run.strategy,
                    run.pinned_version,
                    &run.request,
                    run.cooperative,
                    &*lag,
                )
            })
            .await
            .unwrap_or_else(|e| {
                Err(AssignorFailure {
                    module: strategy,
                    version: None,
                    message: format!("the assignor call panicked: {e}"),
                    duration_us: 0,
                    invalid_output: None,
                })
            });
            let _ = done_tx.send(AssignorDone {
                group_id,
                generation_id,
                run_id,
                result,
            });
        });
    }
}

/// What a request for a group this node is about to coordinate (or that nobody coordinates
/// now) gets. The requests of a member that believes it is in a generation (Heartbeat,
/// SyncGroup, LeaveGroup, ConsumerGroupHeartbeat) get NOT_COORDINATOR: "not now" must not read
/// as "all is well" (Kafka answers a Heartbeat NONE while it loads, and aiokafka's heartbeat
/// task dies on COORDINATOR_LOAD_IN_PROGRESS), and their clients look the coordinator up,
/// which names this node again. The rest get COORDINATOR_LOAD_IN_PROGRESS, which every client
/// retries where it is, as while a Kafka broker loads a `__consumer_offsets` partition.
fn loading_error(request: &GroupRequest) -> ResponseError {
    match request {
        GroupRequest::Heartbeat(_)
        | GroupRequest::SyncGroup(_)
        | GroupRequest::LeaveGroup(_)
        | GroupRequest::ConsumerGroupHeartbeat(_) => ResponseError::NotCoordinator,
        _ => ResponseError::CoordinatorLoadInProgress,
    }
}
