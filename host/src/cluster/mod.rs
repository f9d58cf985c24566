//! Several host nodes in front of one upstream, sharing its groups through the upstream itself
//! (`serve --upstream HOST:PORT --cluster NAME`); no coordination service of the host's own.
//!
//! - **Shards.** A group belongs to shard `abs(javaHashCode(group_id)) % shards`, Kafka's own
//!   partitioning of `__consumer_offsets` (`shards.rs`). The shards are the partitions of the
//!   internal topic `__assignor_host.<name>.shards` (created at start if missing; a start is
//!   refused if it has another partition count or may not be created).
//! - **Ownership.** Every node is a member of the upstream consumer group
//!   `__assignor_host.<name>`, subscribed to that topic (`membership.rs`); the node assigned a
//!   shard's partition coordinates the shard's groups, while its lease lasts
//!   (`ownership.rs`, which also says how the lease fences a node cut off from the upstream).
//!   The driver's gate answers every other group NOT_COORDINATOR, and a group of a shard
//!   gained less than a lease ago (or held by nobody live) COORDINATOR_LOAD_IN_PROGRESS.
//! - **The others.** Each node reads the node group (DescribeGroups) to learn who holds which
//!   shard and where it listens (`peers.rs`): FindCoordinator names a group's owner, Metadata
//!   lists every reachable node. A node whose endpoint stays dead is removed from the node
//!   group, so its shards move at once.
//! - **Lease watchdog.** When the lease runs out (no renewal accepted in time), every group
//!   this node still has is released: parked requests answered NOT_COORDINATOR, state dropped.
//!
//! - **Modules and group settings** are replicated through the compacted topic
//!   `__assignor_host.<name>.modules` (`modules/`): an upload, activation, rollback or
//!   deletion, or a group's settings, on any node is applied by all.
//!
//! Not yet here (issue 15, next steps): a group's membership moving with its shard (the new
//! holder forms its groups anew from the members that join; Kafka's coordinator loads the old
//! generation and waits for its members), and `group describe` forwarded to the owner.

mod commits;
mod membership;
pub mod modules;
mod ownership;
mod peers;
pub mod shards;
#[cfg(test)]
mod tests;
mod token;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdkafka::ClientConfig;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use ownership::{NodeStatus, Ownership, OwnershipStatus, Peer};

use self::modules::ModuleLog;
use crate::registry::Registry;

use crate::driver::Driver;
use crate::upstream::UpstreamConfig;
use crate::upstream::client::UpstreamClient;

/// The `[cluster]` section. Without `name` the node is alone (standalone or proxy mode).
///
/// ```toml
/// [cluster]
/// name = "payments"      # flag --cluster
/// shards = 50
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// The cluster's name: nodes with the same name in front of the same upstream share its
    /// groups. Letters, digits, `.`, `_` and `-`. Unset: no cluster.
    pub name: Option<String>,
    /// Shards (partitions of the shard topic), fixed for the cluster's life: like
    /// `__consumer_offsets`, changing it moves almost every group.
    pub shards: u32,
    /// This node's id in Metadata and FindCoordinator. Unset: derived from the advertised
    /// address (1,000,000 plus a hash of `host:port`), so nodes differ without configuration.
    pub node_id: Option<i32>,
    /// Replication factor of the shard topic when the host creates it (-1: the upstream's
    /// default).
    pub replication_factor: i16,
    /// Session timeout of this node's member of the node group (librdkafka
    /// `session.timeout.ms`): how long the upstream waits for a silent node.
    #[serde(with = "crate::duration")]
    pub session_timeout: Duration,
    /// Heartbeat interval of that member (`heartbeat.interval.ms`).
    #[serde(with = "crate::duration")]
    pub heartbeat_interval: Duration,
    /// Rebalance timeout of that member (`max.poll.interval.ms`, at least the session timeout):
    /// how long a rebalance of the node group waits for a node that does not rejoin.
    #[serde(with = "crate::duration")]
    pub rebalance_timeout: Duration,
    /// How much earlier than the upstream could move its shards a node cut off from the
    /// upstream stops serving them: the lease is `session_timeout - heartbeat_interval -
    /// fence_margin`, counted from the sending of the last accepted renewal.
    #[serde(with = "crate::duration")]
    pub fence_margin: Duration,
    /// How often the lease is renewed (a generation-checked commit of the node group).
    #[serde(with = "crate::duration")]
    pub renew_interval: Duration,
    /// How often the node group is read and the other nodes' endpoints are probed.
    #[serde(with = "crate::duration")]
    pub probe_interval: Duration,
    /// How long a node's endpoint must refuse connections, at every probe, before the others
    /// take the node for gone and remove it from the node group (`peers.rs`): a refused
    /// connection means nothing listens there. An endpoint that does not answer at all is
    /// removed only after `session_timeout`.
    #[serde(with = "crate::duration")]
    pub gone_after: Duration,
    /// A file holding the cluster's secret (at least 16 bytes, the same on every node): the
    /// module log's records are signed with it and a record that does not verify is skipped
    /// (`modules/mac.rs`). Unset: records are neither signed nor checked (a warning at start).
    pub secret_file: Option<std::path::PathBuf>,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings {
            name: None,
            shards: 50,
            node_id: None,
            replication_factor: -1,
            session_timeout: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(1),
            rebalance_timeout: Duration::from_secs(15),
            fence_margin: Duration::from_secs(2),
            renew_interval: Duration::from_secs(1),
            probe_interval: Duration::from_secs(1),
            gone_after: Duration::from_millis(500),
            secret_file: None,
        }
    }
}

impl ClusterSettings {
    /// Whether this node is one of a cluster.
    pub fn is_clustered(&self) -> bool {
        self.name.is_some()
    }

    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// The upstream consumer group of the nodes.
    pub fn group(&self) -> String {
        format!("__assignor_host.{}", self.name())
    }

    /// The shard topic.
    pub fn topic(&self) -> String {
        format!("__assignor_host.{}.shards", self.name())
    }

    /// The module log (`modules`): every node's modules, compacted.
    pub fn modules_topic(&self) -> String {
        format!("__assignor_host.{}.modules", self.name())
    }

    /// How long an accepted renewal lets the node serve, from its sending.
    pub fn lease(&self) -> Duration {
        self.session_timeout
            .saturating_sub(self.heartbeat_interval)
            .saturating_sub(self.fence_margin)
    }

    /// This node's id: the setting, else 1,000,000 + FNV-1a(`host:port`) mod 10^9.
    pub fn node_id_for(&self, host: &str, port: i32) -> i32 {
        self.node_id.unwrap_or_else(|| {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in format!("{host}:{port}").bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            1_000_000 + (hash % 1_000_000_000) as i32
        })
    }

    /// Refuses settings that cannot work, saying which and why.
    pub fn check(&self, upstream: &UpstreamConfig) -> Result<(), String> {
        let Some(name) = &self.name else {
            return Ok(());
        };
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if name.is_empty() || name.len() > 200 || !name.chars().all(allowed) {
            return Err(format!(
                "cluster.name {name:?}: 1 to 200 letters, digits, '.', '_' or '-' (it names an \
                 upstream group and topic)"
            ));
        }
        if !upstream.is_proxy() {
            return Err(
                "cluster.name is set but upstream.bootstrap is empty: a cluster of host nodes \
                 shares an upstream cluster (--upstream HOST:PORT)"
                    .into(),
            );
        }
        // The node group and the module log reach the upstream through librdkafka, secured
        // as the host's own connections are; what it cannot do (OAUTHBEARER) stops the start.
        crate::upstream::connection::security::librdkafka_config(&upstream.security())?;
        if !(1..=10_000).contains(&self.shards) {
            return Err(format!(
                "cluster.shards {} not within 1..=10000",
                self.shards
            ));
        }
        if self.heartbeat_interval >= self.session_timeout {
            return Err(
                "cluster.heartbeat_interval must be shorter than cluster.session_timeout".into(),
            );
        }
        if self.rebalance_timeout < self.session_timeout {
            return Err(
                "cluster.rebalance_timeout must be at least cluster.session_timeout (librdkafka \
                 requires max.poll.interval.ms >= session.timeout.ms)"
                    .into(),
            );
        }
        if self.gone_after < Duration::from_millis(100) || self.gone_after >= self.session_timeout {
            return Err(format!(
                "cluster.gone_after ({:?}) must be at least 100ms (one refused connection is not \
                 a node gone) and shorter than cluster.session_timeout ({:?})",
                self.gone_after, self.session_timeout
            ));
        }
        if self.lease() < self.renew_interval * 2 {
            return Err(format!(
                "the lease (session_timeout - heartbeat_interval - fence_margin = {:?}) must be \
                 at least twice cluster.renew_interval ({:?}), or one late renewal fences the node",
                self.lease(),
                self.renew_interval
            ));
        }
        Ok(())
    }
}

/// A running member of a cluster of host nodes.
pub struct Cluster {
    ownership: Arc<Ownership>,
    modules: Arc<ModuleLog>,
    stop_member: Arc<AtomicBool>,
    member: Option<std::thread::JoinHandle<()>>,
    /// How long `stop` waits for the node group's consumer to close (the session timeout).
    close_limit: Duration,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Cluster {
    /// Applies the module log to `registry` (creating it if missing), creates the shard topic
    /// if missing (and checks its partition count), joins the node group, and starts the peer
    /// watch and the lease watchdog. Groups are served once the upstream group has assigned
    /// shards here and a renewal was accepted.
    pub async fn start(
        settings: &ClusterSettings,
        upstream: &UpstreamConfig,
        client: UpstreamClient,
        ownership: Arc<Ownership>,
        driver: Driver,
        registry: Arc<Registry>,
    ) -> Result<Cluster, String> {
        let secret = match &settings.secret_file {
            Some(path) => Some(modules::mac::Secret::read(path)?),
            None => {
                tracing::warn!(
                    "cluster.secret_file is not set: the module log's records are not \
                     authenticated, and anyone who may write its topic can put a module on \
                     every node"
                );
                None
            }
        };
        let modules = Arc::new(
            ModuleLog::start(
                settings.modules_topic(),
                settings.replication_factor,
                upstream,
                &client,
                registry,
                driver.clone(),
                secret,
            )
            .await?,
        );
        let topic = settings.topic();
        let shards = i32::try_from(settings.shards).unwrap_or(i32::MAX);
        match client
            .create_topic(&topic, shards, settings.replication_factor)
            .await
        {
            Ok(0) => tracing::info!(%topic, shards, "created the shard topic"),
            Ok(36) => {} // TOPIC_ALREADY_EXISTS: the partition count is checked below
            Ok(code) => {
                return Err(format!(
                    "cannot create the shard topic {topic} (Kafka error {code}); create it with \
                     {shards} partitions, or let the host's upstream principal create topics"
                ));
            }
            Err(error) => return Err(format!("cannot create the shard topic {topic}: {error}")),
        }
        let millis = |d: Duration| d.as_millis().to_string();
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", upstream.bootstrap.join(","))
            .set("group.id", settings.group())
            .set("client.id", ownership.me().client_id())
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "latest")
            .set("session.timeout.ms", millis(settings.session_timeout))
            .set("heartbeat.interval.ms", millis(settings.heartbeat_interval))
            .set("max.poll.interval.ms", millis(settings.rebalance_timeout))
            .set("reconnect.backoff.max.ms", "1000");
        for (key, value) in
            crate::upstream::connection::security::librdkafka_config(&upstream.security())?
        {
            config.set(key, value);
        }
        for (key, value) in &upstream.client {
            config.set(key, value);
        }
        let stop_member = Arc::new(AtomicBool::new(false));
        let member = membership::Member::new(
            ownership.clone(),
            driver.clone(),
            tokio::runtime::Handle::current(),
            topic.clone(),
            token::Tokens::new(&upstream.security()),
        );
        let member_settings = membership::MemberSettings {
            config,
            renew_interval: settings.renew_interval,
            shards: settings.shards,
            metadata_timeout: upstream.request_timeout.max(Duration::from_secs(5)),
        };
        let stop_thread = stop_member.clone();
        let thread = tokio::task::spawn_blocking(move || {
            membership::spawn(member_settings, member, stop_thread)
        })
        .await
        .map_err(|e| format!("the node group's start failed: {e}"))??;

        let stop = CancellationToken::new();
        let watch = peers::Watch {
            client,
            group: settings.group(),
            topic,
            ownership: ownership.clone(),
            probe_interval: settings.probe_interval,
            gone_after: settings.gone_after,
            dead_after: settings.session_timeout,
        };
        let span = tracing::info_span!("node", id = ownership.me().node_id);
        let tasks = vec![
            tokio::spawn(peers::run(watch, stop.clone()).instrument(span.clone())),
            tokio::spawn(watchdog(ownership.clone(), driver, stop.clone()).instrument(span)),
        ];
        tracing::info!(
            cluster = settings.name(),
            node = ownership.me().node_id,
            shards = settings.shards,
            lease = ?settings.lease(),
            "joined the cluster of host nodes"
        );
        Ok(Cluster {
            ownership,
            modules,
            stop_member,
            member: Some(thread),
            close_limit: settings.session_timeout,
            stop,
            tasks,
        })
    }

    /// What this node holds and knows.
    pub fn ownership(&self) -> &Arc<Ownership> {
        &self.ownership
    }

    /// The module log every admin change of modules goes through.
    pub fn modules(&self) -> &Arc<ModuleLog> {
        &self.modules
    }

    /// Leaves the node group (releasing every group first, so the others take the shards at
    /// once) and stops the peer watch. Call before the driver stops.
    ///
    /// Closing waits at most the session timeout for each of the node's librdkafka consumers:
    /// librdkafka 2.12 never finishes closing a group consumer whose commit is still waiting
    /// for a coordinator when the upstream has gone away (seen against Kafka: "waiting for 1
    /// commit(s) (state query-coord, join-state wait-unassign-to-complete) before
    /// terminating", for as long as the upstream stays away). Past that bound nobody needs the
    /// LeaveGroup (the upstream drops the member at its session timeout anyway), so the node
    /// stops without it and leaves the consumer's thread to the process's exit.
    pub async fn stop(mut self) {
        self.stop_member.store(true, Ordering::Release);
        if let Some(thread) = self.member.take()
            && !finished_within(&thread, self.close_limit).await
        {
            tracing::warn!(
                limit = ?self.close_limit,
                "the node group's consumer did not close in time (is the upstream unreachable?); \
                 stopping without leaving the node group, the upstream drops this node at its \
                 session timeout"
            );
        }
        self.stop.cancel();
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
        if let Some(reader) = self.modules.stop()
            && !finished_within(&reader, self.close_limit).await
        {
            tracing::warn!(
                limit = ?self.close_limit,
                "the module log's reader did not close in time (is the upstream unreachable?)"
            );
        }
    }
}

/// Whether `thread` ends within `limit`, waiting without blocking the runtime (a blocking
/// join on tokio's pool would hold the runtime's shutdown as long as the thread runs). The
/// caller drops the handle either way: a finished thread needs no join, an unfinished one is
/// left running, detached.
async fn finished_within(thread: &std::thread::JoinHandle<()>, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while !thread.is_finished() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Releases every group when the lease has run out (the gate already refuses them; this
/// answers what is parked and drops their state), at most `TICK` after it did.
async fn watchdog(ownership: Arc<Ownership>, driver: Driver, stop: CancellationToken) {
    const TICK: Duration = Duration::from_millis(100);
    let mut holding = false;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(TICK) => {}
        }
        if ownership.leased() {
            holding = true;
            continue;
        }
        if holding {
            holding = false;
            let released = driver.release(Arc::new(|_| true)).await;
            tracing::warn!(
                groups = released,
                held = ?ownership.held(),
                "the lease ran out (no renewal accepted in time): serving no group until one is"
            );
        }
    }
}

#[cfg(test)]
mod settings_tests {
    use super::*;

    fn clustered() -> (ClusterSettings, UpstreamConfig) {
        let settings = ClusterSettings {
            name: Some("payments".into()),
            ..ClusterSettings::default()
        };
        let upstream = UpstreamConfig {
            bootstrap: vec!["127.0.0.1:9092".into()],
            ..UpstreamConfig::default()
        };
        (settings, upstream)
    }

    #[test]
    fn the_defaults_name_kafka_like_resources_and_a_seven_second_lease() {
        let (settings, upstream) = clustered();
        assert_eq!(settings.check(&upstream), Ok(()));
        assert_eq!(settings.group(), "__assignor_host.payments");
        assert_eq!(settings.topic(), "__assignor_host.payments.shards");
        assert_eq!(settings.lease(), Duration::from_secs(7));
        assert!(!ClusterSettings::default().is_clustered());
    }

    #[test]
    fn settings_that_cannot_work_are_refused_saying_why() {
        let (good, upstream) = clustered();
        let standalone = UpstreamConfig::default();
        let cases: Vec<(ClusterSettings, &UpstreamConfig, &str)> = vec![
            (
                ClusterSettings {
                    name: Some("a b".into()),
                    ..good.clone()
                },
                &upstream,
                "letters, digits",
            ),
            (good.clone(), &standalone, "upstream.bootstrap is empty"),
            (
                ClusterSettings {
                    shards: 0,
                    ..good.clone()
                },
                &upstream,
                "cluster.shards 0",
            ),
            (
                ClusterSettings {
                    heartbeat_interval: Duration::from_secs(10),
                    ..good.clone()
                },
                &upstream,
                "heartbeat_interval",
            ),
            (
                ClusterSettings {
                    rebalance_timeout: Duration::from_secs(5),
                    ..good.clone()
                },
                &upstream,
                "max.poll.interval.ms",
            ),
            (
                ClusterSettings {
                    fence_margin: Duration::from_secs(8),
                    ..good.clone()
                },
                &upstream,
                "twice cluster.renew_interval",
            ),
            (
                ClusterSettings {
                    gone_after: Duration::ZERO,
                    ..good.clone()
                },
                &upstream,
                "cluster.gone_after (0ns) must be at least 100ms",
            ),
            (
                ClusterSettings {
                    gone_after: Duration::from_secs(30),
                    ..good.clone()
                },
                &upstream,
                "shorter than cluster.session_timeout",
            ),
        ];
        for (settings, upstream, expected) in cases {
            let error = settings.check(upstream).unwrap_err();
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn node_ids_differ_by_address_unless_set() {
        let settings = ClusterSettings::default();
        let a = settings.node_id_for("127.0.0.1", 19092);
        let b = settings.node_id_for("127.0.0.1", 19093);
        assert_ne!(a, b);
        assert!(a >= 1_000_000 && b >= 1_000_000);
        assert_eq!(a, settings.node_id_for("127.0.0.1", 19092), "stable");
        let set = ClusterSettings {
            node_id: Some(7),
            ..settings
        };
        assert_eq!(set.node_id_for("127.0.0.1", 19092), 7);
    }
}
