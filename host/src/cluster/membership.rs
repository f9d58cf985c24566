//! This node's member of the upstream group of host nodes: a librdkafka consumer on a thread of
//! its own (`cluster-member`), subscribed to the shard topic with the cooperative-sticky
//! assignor, so a node joining or leaving moves only the shards that must move.
//!
//! librdkafka calls back on this thread, from `poll`:
//! - **revoke** (before a rebalance gives shards away, or when it finds the membership lost):
//!   the shards leave [`Ownership`] (the gate refuses their groups at once), then the thread
//!   blocks until the driver has released their groups (parked requests answered
//!   NOT_COORDINATOR). Only then does librdkafka go on with the rebalance, so the next owner
//!   is assigned a shard after this node stopped serving it;
//! - **assign**: the shards enter [`Ownership`]; their groups are served once a commit renews
//!   the lease (one is sent at once) and a lease's length has passed (`ownership.rs`);
//! - and from its own loop, each renewal's answer (`commits.rs`) renews or ends the lease
//!   (see `ownership.rs`).
//!
//! Every `renew_interval` the thread commits offset 0 of each shard partition it holds, with
//! its member id and generation; nothing is ever produced to the shard topic, the commits
//! exist for what their answer says about the membership.

use std::collections::{HashSet, VecDeque};
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::client::OAuthToken;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, ClientContext, Offset, TopicPartitionList};
use tokio::runtime::Handle;

use super::commits::{self, CommitQueue};
use super::ownership::Ownership;
use super::shards::shard_of;
use super::token::Tokens;
use crate::driver::{Driver, Releasing};

/// What the callbacks reach.
pub(super) struct Member {
    pub ownership: Arc<Ownership>,
    pub driver: Driver,
    pub runtime: Handle,
    pub topic: String,
    /// When each commit in flight was sent, oldest first (librdkafka answers them in order).
    sent: Mutex<VecDeque<Instant>>,
    /// Renew at the next turn of the loop (shards were just assigned).
    renew_now: AtomicBool,
    /// The last renewal failed (so the next failure is not logged again).
    failing: AtomicBool,
    /// OAUTHBEARER tokens, when librdkafka asks.
    tokens: Tokens,
}

impl Member {
    pub fn new(
        ownership: Arc<Ownership>,
        driver: Driver,
        runtime: Handle,
        topic: String,
        tokens: Tokens,
    ) -> Self {
        Member {
            ownership,
            driver,
            runtime,
            topic,
            tokens,
            sent: Mutex::new(VecDeque::new()),
            renew_now: AtomicBool::new(false),
            failing: AtomicBool::new(false),
        }
    }

    fn shards(&self, list: &TopicPartitionList) -> Vec<u32> {
        let mut shards: Vec<u32> = list
            .elements()
            .iter()
            .filter(|e| e.topic() == self.topic)
            .filter_map(|e| u32::try_from(e.partition()).ok())
            .collect();
        shards.sort_unstable();
        shards
    }

    /// A renewal sent at `sent` was answered `result`: the lease goes on or ends.
    fn answered(&self, sent: Option<Instant>, result: Result<(), RDKafkaErrorCode>) {
        tracing::trace!(?result, "lease renewal answered");
        match result {
            // REBALANCE_IN_PROGRESS and ILLEGAL_GENERATION: the coordinator knows this member
            // (Kafka and noida-db check the member id first) and a rebalance is moving its
            // generation; the member rejoins from this thread, and until it has revoked a
            // shard the shard is given to nobody else.
            Ok(())
            | Err(RDKafkaErrorCode::RebalanceInProgress | RDKafkaErrorCode::IllegalGeneration) => {
                if let Some(sent) = sent {
                    self.ownership.renew(sent);
                }
                if self.failing.swap(false, Ordering::AcqRel) {
                    tracing::info!("lease renewed again");
                }
            }
            Err(
                code @ (RDKafkaErrorCode::UnknownMemberId | RDKafkaErrorCode::FencedInstanceId),
            ) => {
                self.ownership.fence();
                let held = self.ownership.held();
                tracing::warn!(%code, ?held, "the upstream refused this node's membership: lease ended");
            }
            Err(code) => {
                // Said once per run of failures, at warning level: a lease that is not
                // renewed stops this node serving.
                if !self.failing.swap(true, Ordering::AcqRel) {
                    tracing::warn!(%code, "lease renewal failed; retrying every renew_interval");
                } else {
                    tracing::debug!(%code, "lease renewal failed");
                }
            }
        }
    }

    /// Gives up `shards`: out of the ownership first, then their groups out of the driver.
    fn give_up(&self, shards: &[u32], why: &str) {
        if shards.is_empty() {
            return;
        }
        self.ownership.lose(shards);
        let count = self.ownership.count();
        let set: HashSet<u32> = shards.iter().copied().collect();
        let which: Releasing = Arc::new(move |group| set.contains(&shard_of(group, count)));
        let released = self.runtime.block_on(self.driver.release(which));
        tracing::info!(?shards, groups = released, why, "gave up shards");
    }
}

impl ClientContext for Member {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", fac, "node group: {message}")
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", fac, "node group: {message}")
            }
            _ => tracing::debug!(target: "librdkafka", fac, "node group: {message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(%error, reason, "node group client");
    }

    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn generate_oauth_token(&self, _config: Option<&str>) -> Result<OAuthToken, Box<dyn Error>> {
        self.tokens.token()
    }
}

impl ConsumerContext for Member {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            let why = if consumer.assignment_lost() {
                "the membership was lost"
            } else {
                "the node group rebalances"
            };
            self.give_up(&self.shards(list), why);
        }
    }

    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(list) => {
                let shards = self.shards(list);
                if !shards.is_empty() {
                    self.ownership.gain(&shards);
                    self.renew_now.store(true, Ordering::Release);
                    tracing::info!(
                        ?shards,
                        after = ?self.ownership.lease(),
                        "holds shards; serving them once the previous holder's lease is over"
                    );
                }
            }
            Rebalance::Error(error) => tracing::warn!(%error, "node group rebalance failed"),
            Rebalance::Revoke(_) => {}
        }
    }
}

/// The consumer's settings and the loop's.
pub(super) struct MemberSettings {
    pub config: ClientConfig,
    pub renew_interval: Duration,
    /// The partitions the shard topic must have.
    pub shards: u32,
    /// How long to wait for the shard topic to show in the upstream's Metadata.
    pub metadata_timeout: Duration,
}

/// Creates the consumer (which checks the settings) and starts its thread. `stop` ends the
/// loop, after which the consumer leaves the group (its revoke callback releases every group).
pub(super) fn spawn(
    settings: MemberSettings,
    member: Member,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, String> {
    let topic = member.topic.clone();
    // Every line of this thread (librdkafka's callbacks too) names the node: tests run
    // several nodes in one process.
    let span = tracing::info_span!("node", id = member.ownership.me().node_id);
    let consumer: BaseConsumer<Member> = settings
        .config
        .create_with_context(member)
        .map_err(|e| format!("cannot create the node group's consumer: {e}"))?;
    check_partitions(
        &consumer,
        &topic,
        settings.shards,
        settings.metadata_timeout,
    )?;
    consumer
        .subscribe(&[&topic])
        .map_err(|e| format!("cannot subscribe to {topic}: {e}"))?;
    let every = settings.renew_interval;
    std::thread::Builder::new()
        .name("cluster-member".into())
        .spawn(move || {
            let _node = span.enter();
            let commits = CommitQueue::new(&consumer);
            let mut last = Instant::now();
            while !stop.load(Ordering::Acquire) {
                if let Some(Err(error)) = consumer.poll(Duration::from_millis(100)) {
                    tracing::debug!(%error, "node group poll");
                }
                // At every turn, not only at renewals: the peer watch removes this node's
                // members other than the current one, and must never take a new membership
                // for a stale one.
                consumer
                    .context()
                    .ownership
                    .set_member_id(commits::member_id(&consumer));
                if consumer.context().ownership.take_rejoin() {
                    rejoin(&consumer);
                }
                let now = consumer.context().renew_now.swap(false, Ordering::AcqRel);
                if now || last.elapsed() >= every {
                    last = Instant::now();
                    renew(&consumer, &commits);
                }
                while let Some(result) = commits.poll() {
                    let member = consumer.context();
                    let sent = member.sent.lock().pop_front();
                    member.answered(sent, result);
                }
            }
            // The queue goes before the instance it belongs to.
            drop(commits);
            // Dropping the consumer closes it: the revoke callback releases every group,
            // then it leaves the group, so the others take the shards at once.
            drop(consumer);
            tracing::info!("left the node group");
        })
        .map_err(|e| format!("cannot start the node group's thread: {e}"))
}

/// Refuses a shard topic with another partition count than the cluster's shards (every node
/// must map groups to shards alike). A topic just created may take a moment to show.
fn check_partitions(
    consumer: &BaseConsumer<Member>,
    topic: &str,
    shards: u32,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        // A poll serves librdkafka's events, among them the OAUTHBEARER token refresh its
        // first connection waits for; the consumer has no subscription yet, so nothing else.
        let _ = consumer.poll(Duration::ZERO);
        let found = consumer
            .fetch_metadata(Some(topic), Duration::from_secs(2))
            .map_err(|e| e.to_string())
            .map(|m| {
                m.topics()
                    .iter()
                    .find(|t| t.name() == topic)
                    .map_or(0, |t| t.partitions().len())
            });
        match found {
            Ok(0) | Err(_) if Instant::now() < deadline => {
                let _ = consumer.poll(Duration::from_millis(200));
            }
            Ok(count) if count == shards as usize => return Ok(()),
            Ok(0) => {
                return Err(format!(
                    "the shard topic {topic} does not show in the upstream's Metadata"
                ));
            }
            Ok(count) => {
                return Err(format!(
                    "the shard topic {topic} has {count} partitions, and cluster.shards is \
                     {shards}: every node of a cluster must use the topic's count (set \
                     cluster.shards = {count}, or delete the topic when no node runs)"
                ));
            }
            Err(error) => return Err(format!("cannot read the shard topic {topic}: {error}")),
        }
    }
}

/// Leaves the node group and joins it again with a new member id (librdkafka has no other
/// way to send a JoinGroup on demand); asked by the peer watch for a node left out of a
/// stable group, which holds nothing, so nothing is given up (`peers.rs`).
fn rejoin(consumer: &BaseConsumer<Member>) {
    let topic = consumer.context().topic.clone();
    consumer.unsubscribe();
    match consumer.subscribe(&[&topic]) {
        Ok(()) => tracing::info!("left the node group and joined it again"),
        Err(error) => tracing::error!(%error, "cannot subscribe to the shard topic again"),
    }
}

/// Commits offset 0 of every held shard partition, with the member's generation.
fn renew(consumer: &BaseConsumer<Member>, commits: &CommitQueue) {
    let Ok(mut list) = consumer.assignment() else {
        return;
    };
    if list.count() == 0 || list.set_all_offsets(Offset::Offset(0)).is_err() {
        return;
    }
    let member = consumer.context();
    member.sent.lock().push_back(Instant::now());
    if let Err(error) = commits.commit(consumer, &list) {
        member.sent.lock().pop_back();
        tracing::debug!(%error, "lease renewal not sent");
    }
}
