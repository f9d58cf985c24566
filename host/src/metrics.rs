//! The host's Prometheus metrics (`GET /metrics` on the admin listener), kept with
//! `prometheus-client` and encoded in the OpenMetrics text format.
//!
//! Three sources feed them:
//! - the Kafka wire layer calls [`Metrics::kafka_response`] once per answered request
//!   (requests by API, and every error code in the responses, as Kafka's `errorCounts()`);
//! - the coordinator's notices arrive through the driver's [`NoticeSink`], which [`Metrics`]
//!   implements (rebalances, removed members, assignor calls with duration and fuel); it also
//!   logs each notice exactly as [`TracingNotices`] does, so plugging metrics in loses no log;
//! - gauges that describe *current* state (groups by state, members, active module versions,
//!   quarantine) are recomputed at each scrape from the driver and the registry
//!   ([`Metrics::refresh_groups`], [`Metrics::refresh_modules`]), so they can never drift from
//!   the truth the way gauges moved by events can.
//!
//! Label values are bounded: group ids, module names and versions, Kafka API names, Kafka
//! error names, and small fixed sets (outcomes, rebalance reason categories). The full
//! rebalance reason, which names members, stays in the logs and the group's history.

mod kafka;

use std::fmt::Write as _;

use kafka_protocol::messages::{ApiKey, ResponseKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry as PromRegistry;

pub use kafka::{error_counts, error_name};

use crate::coordinator::{GroupSummary, Notice, RemovalReason, RunOutcome};
use crate::driver::{NoticeSink, TracingNotices};
use crate::registry::Registry;

/// Prefix of every metric name.
pub const PREFIX: &str = "assignor_host";

/// Content type of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    api: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiErrorLabels {
    api: String,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RebalanceLabels {
    group: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UnavailableLabels {
    group: String,
    requested: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InPlaceLabels {
    group: String,
    /// `applied` (no rebalance) or `rebalanced`.
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    module: String,
    version: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModuleLabels {
    module: String,
    version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    module: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

type HistogramFamily = Family<ModuleLabels, Histogram, fn() -> Histogram>;

/// Every metric of the host. Create one per process, share it with `Arc`.
pub struct Metrics {
    registry: PromRegistry,
    kafka_requests: Family<ApiLabels, Counter>,
    kafka_errors: Family<ApiErrorLabels, Counter>,
    rebalances: Family<RebalanceLabels, Counter>,
    in_place_rounds: Family<InPlaceLabels, Counter>,
    members_removed: Family<ReasonLabels, Counter>,
    assignor_calls: Family<CallLabels, Counter>,
    assignor_unavailable: Family<UnavailableLabels, Counter>,
    assignor_duration: HistogramFamily,
    assignor_fuel: HistogramFamily,
    groups: Family<StateLabels, Gauge>,
    group_members: Family<GroupLabels, Gauge>,
    members: Gauge,
    module_active_version: Family<NameLabels, Gauge>,
    module_quarantined: Family<ModuleLabels, Gauge>,
    cluster: ClusterGauges,
    upstream: upstream::UpstreamMetrics,
    /// `kafka.queued_max_request_bytes`: bytes held now, frames that waited.
    request_budget_bytes: Gauge,
    request_budget_waits: Counter,
}

/// A cluster of host nodes as this node sees it, sampled at each scrape
/// ([`Metrics::refresh_cluster`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterSample {
    /// The cluster's name (the gauges' `cluster` label).
    pub cluster: String,
    /// Shards the upstream's node group assigned this node.
    pub held: usize,
    /// Held shards whose groups this node serves now.
    pub serving: usize,
    /// Whether the lease lasts now.
    pub leased: bool,
    /// Milliseconds the lease has left.
    pub lease_left_ms: u64,
    /// Nodes of the cluster this node knows, itself included.
    pub nodes: usize,
    /// Of those, the ones whose endpoint refused the last probe.
    pub unreachable: usize,
    /// Module log records skipped since start because their MAC did not verify.
    pub rejected_records: u64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabels {
    cluster: String,
}

/// Families, so that a node of no cluster shows none of them.
#[derive(Default)]
struct ClusterGauges {
    held: Family<ClusterLabels, Gauge>,
    serving: Family<ClusterLabels, Gauge>,
    leased: Family<ClusterLabels, Gauge>,
    lease_left: Family<ClusterLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    nodes: Family<ClusterLabels, Gauge>,
    unreachable: Family<ClusterLabels, Gauge>,
    rejected_records: Family<ClusterLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Assignor call durations: 10 us to about 10 s (the small-group target is 50 us, the
/// default wall-clock cap 5 s).
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_01, 4.0, 11))
}

/// Fuel per call: 10,000 units (a tiny group) to about 10^10 (past the default budget of
/// 2 * 10^9, so a run that used the whole budget lands in a bucket of its own).
fn fuel_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10_000.0, 4.0, 12))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every metric under [`PREFIX`].
    pub fn new() -> Metrics {
        let mut registry = PromRegistry::with_prefix(PREFIX);
        let upstream = upstream::UpstreamMetrics::register(&mut registry);
        let m = Metrics {
            registry: PromRegistry::default(),
            kafka_requests: Family::default(),
            kafka_errors: Family::default(),
            rebalances: Family::default(),
            in_place_rounds: Family::default(),
            members_removed: Family::default(),
            assignor_calls: Family::default(),
            assignor_unavailable: Family::default(),
            assignor_duration: Family::new_with_constructor(duration_histogram),
            assignor_fuel: Family::new_with_constructor(fuel_histogram),
            groups: Family::default(),
            group_members: Family::default(),
            members: Gauge::default(),
            module_active_version: Family::default(),
            module_quarantined: Family::default(),
            cluster: ClusterGauges::default(),
            upstream,
            request_budget_bytes: Gauge::default(),
            request_budget_waits: Counter::default(),
        };
        registry.register(
            "kafka_request_budget_bytes",
            "Bytes of request frames being read and decoded now, of \
             kafka.queued_max_request_bytes",
            m.request_budget_bytes.clone(),
        );
        registry.register(
            "kafka_request_budget_waits",
            "Request frames that waited, unread, for their share of \
             kafka.queued_max_request_bytes",
            m.request_budget_waits.clone(),
        );
        registry.register(
            "kafka_requests",
            "Kafka requests answered, by API",
            m.kafka_requests.clone(),
        );
        registry.register(
            "kafka_errors",
            "Error codes in Kafka responses, by API and error (NONE included; counted as \
             Kafka's RequestMetrics ErrorsPerSec)",
            m.kafka_errors.clone(),
        );
        registry.register(
            "rebalances",
            "Rebalances started, by group and reason category",
            m.rebalances.clone(),
        );
        registry.register(
            "in_place_rounds",
            "Classic-group membership changes tried without a rebalance (modules declaring \
             in_place), by group and outcome: applied, or rebalanced",
            m.in_place_rounds.clone(),
        );
        registry.register(
            "assignor_unavailable",
            "Consumer-group targets computed by the fallback because no module serves the \
             assignor the group names (group.remote.assignor), by group and name",
            m.assignor_unavailable.clone(),
        );
        registry.register(
            "members_removed",
            "Members removed from groups, by reason",
            m.members_removed.clone(),
        );
        registry.register(
            "assignor_calls",
            "Assignor runs, by module, version and outcome (ok, failed, timed_out, stale, refused)",
            m.assignor_calls.clone(),
        );
        registry.register(
            "assignor_duration_seconds",
            "Wall time of assignor runs (marshalling and checks included), by module and version",
            m.assignor_duration.clone(),
        );
        registry.register(
            "assignor_fuel",
            "Fuel used by assignor runs (about one unit per wasm instruction), by module and \
             version",
            m.assignor_fuel.clone(),
        );
        registry.register("groups", "Groups by state", m.groups.clone());
        registry.register(
            "group_members",
            "Members of each group",
            m.group_members.clone(),
        );
        registry.register("members", "Members of all groups", m.members.clone());
        registry.register(
            "module_active_version",
            "The active version of each module (0 is the built-in)",
            m.module_active_version.clone(),
        );
        registry.register(
            "module_quarantined",
            "1 while a module version is quarantined after repeated failures, else 0",
            m.module_quarantined.clone(),
        );
        let cluster = &m.cluster;
        let gauges: [(&str, &str, Family<ClusterLabels, Gauge>); 6] = [
            (
                "cluster_shards_held",
                "In a cluster of hosts: shards the upstream's node group assigned this node",
                cluster.held.clone(),
            ),
            (
                "cluster_shards_serving",
                "In a cluster of hosts: held shards whose groups this node serves now",
                cluster.serving.clone(),
            ),
            (
                "cluster_leased",
                "In a cluster of hosts: 1 while this node's lease lasts, else 0 (no group served)",
                cluster.leased.clone(),
            ),
            (
                "cluster_nodes",
                "In a cluster of hosts: nodes this node knows from the node group, itself included",
                cluster.nodes.clone(),
            ),
            (
                "cluster_nodes_unreachable",
                "In a cluster of hosts: known nodes whose endpoint refused the last probe",
                cluster.unreachable.clone(),
            ),
            (
                "cluster_module_records_rejected",
                "In a cluster of hosts: module log records skipped since start because they do \
                 not carry this cluster's MAC (cluster.secret_file)",
                cluster.rejected_records.clone(),
            ),
        ];
        for (name, help, gauge) in gauges {
            registry.register(name, help, gauge);
        }
        registry.register(
            "cluster_lease_left_seconds",
            "In a cluster of hosts: how long this node's lease lasts from now",
            cluster.lease_left.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Sets the cluster gauges (a node of a cluster calls it at each scrape).
    pub fn refresh_cluster(&self, sample: ClusterSample) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let labels = ClusterLabels {
            cluster: sample.cluster.clone(),
        };
        let c = &self.cluster;
        c.held.get_or_create(&labels).set(count(sample.held));
        c.serving.get_or_create(&labels).set(count(sample.serving));
        c.leased
            .get_or_create(&labels)
            .set(i64::from(sample.leased));
        c.lease_left
            .get_or_create(&labels)
            .set(sample.lease_left_ms as f64 / 1e3);
        c.nodes.get_or_create(&labels).set(count(sample.nodes));
        c.unreachable
            .get_or_create(&labels)
            .set(count(sample.unreachable));
        c.rejected_records
            .get_or_create(&labels)
            .set(i64::try_from(sample.rejected_records).unwrap_or(i64::MAX));
    }

    /// Counts one answered Kafka request and the error codes of its response.
    pub fn kafka_response(&self, api: ApiKey, response: &ResponseKind) {
        let api = format!("{api:?}");
        self.kafka_request(api.clone());
        for (code, count) in error_counts(response) {
            self.kafka_errors
                .get_or_create(&ApiErrorLabels {
                    api: api.clone(),
                    error: error_name(code),
                })
                .inc_by(count);
        }
    }

    /// Counts a client request passed up to an upstream broker (proxy mode).
    pub fn upstream_passed_up(&self, api: i16, bytes: usize) {
        self.upstream.passed_up(api_label(api), bytes as u64);
    }

    /// Records the upstream's answer to a request passed up, `seconds` after it left.
    pub fn upstream_answered(&self, api: i16, seconds: f64, bytes: usize) {
        self.upstream
            .answered(api_label(api), seconds, bytes as u64);
    }

    /// Counts a client's SASL exchange relayed upstream: `result` is `success`, `failure`
    /// (the cluster refused it) or `unsupported` (a mechanism the host does not relay).
    pub fn client_authentication(&self, mechanism: &str, result: &str) {
        self.upstream.authentication(mechanism, result);
    }

    /// Counts a client's successful re-authentication (KIP-368: a new SASL exchange on a
    /// connection that had authenticated; also counted in `client_authentication`).
    pub fn client_reauthentication(&self, mechanism: &str) {
        self.upstream.reauthentication(mechanism);
    }

    /// Counts a client connection closed for its SASL session (`unauthenticated`, `expired`).
    pub fn client_connection_closed(&self, reason: &str) {
        self.upstream.closed(reason);
    }

    /// The budget's gauge of bytes held and counter of waits, for `kafka::budget` to keep.
    pub fn request_budget(&self) -> (Gauge, Counter) {
        (
            self.request_budget_bytes.clone(),
            self.request_budget_waits.clone(),
        )
    }

    /// Counts a right refused to a client for request `api` on a `resource` type.
    pub fn client_denial(&self, api: i16, resource: &str) {
        self.upstream.denial(api_label(api), resource);
    }

    /// Counts a connection opened to an upstream broker.
    pub fn upstream_connected(&self) {
        self.upstream.connected();
    }

    /// Counts an upstream fault: `connect`, `link` (a connection broke), `metadata` (the
    /// host's own read failed) or `offsets` (an offset call failed).
    pub fn upstream_error(&self, kind: &str) {
        self.upstream.error(kind);
    }

    /// Takes the upstream's health (`upstream::connection::Health`) at a scrape.
    pub fn refresh_upstream(&self, health: &crate::upstream::connection::Health) {
        self.upstream
            .health(health.refused().is_some(), health.refusals());
    }

    /// Counts a commit refused because somebody joined `group` on the cluster directly.
    pub fn upstream_group_conflict(&self, group: &str) {
        self.upstream.conflict(group);
    }

    /// Counts a Kafka request that got no response body (Produce with `acks = 0`).
    pub fn kafka_request_without_response(&self, api: ApiKey) {
        self.kafka_request(format!("{api:?}"));
    }

    fn kafka_request(&self, api: String) {
        self.kafka_requests.get_or_create(&ApiLabels { api }).inc();
    }

    /// Sets the group gauges from the driver's current list. Groups that are gone disappear
    /// from `group_members`; every state is reported, zero included, so a dashboard's series
    /// never vanish.
    pub fn refresh_groups(&self, groups: &[GroupSummary]) {
        self.groups.clear();
        self.group_members.clear();
        for state in ALL_STATES {
            let count = groups.iter().filter(|g| g.state == state).count();
            self.groups
                .get_or_create(&StateLabels {
                    state: state.to_owned(),
                })
                .set(count as i64);
        }
        let mut total = 0;
        for group in groups {
            total += group.members;
            self.group_members
                .get_or_create(&GroupLabels {
                    group: group.group_id.clone(),
                })
                .set(group.members as i64);
        }
        self.members.set(total as i64);
    }

    /// Sets the module gauges from the registry: each name's active version, and whether
    /// each version is quarantined now.
    pub fn refresh_modules(&self, registry: &Registry) {
        self.module_active_version.clear();
        self.module_quarantined.clear();
        for module in registry.list() {
            self.module_active_version
                .get_or_create(&NameLabels {
                    module: module.name.clone(),
                })
                .set(i64::from(module.active_version));
            let Ok(versions) = registry.versions(&module.name) else {
                continue;
            };
            for version in versions {
                let quarantined = version.health.quarantined_until_ms.is_some();
                self.module_quarantined
                    .get_or_create(&ModuleLabels {
                        module: module.name.clone(),
                        version: version.version.to_string(),
                    })
                    .set(i64::from(quarantined));
            }
        }
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            // Writing into a String cannot fail; keep the scrape useful if it ever does.
            let _ = writeln!(out, "# encoding failed: {e}");
        }
        out
    }

    fn count(&self, notice: &Notice) {
        match notice {
            Notice::RebalanceStarted { group, reason, .. } => {
                self.rebalances
                    .get_or_create(&RebalanceLabels {
                        group: group.to_string(),
                        reason: reason.category().to_owned(),
                    })
                    .inc();
            }
            Notice::InPlaceRound { group, applied, .. } => {
                self.in_place_rounds
                    .get_or_create(&InPlaceLabels {
                        group: group.to_string(),
                        outcome: if *applied { "applied" } else { "rebalanced" }.to_owned(),
                    })
                    .inc();
            }
            Notice::AssignorUnavailable {
                group, requested, ..
            } => {
                self.assignor_unavailable
                    .get_or_create(&UnavailableLabels {
                        group: group.to_string(),
                        requested: requested.clone(),
                    })
                    .inc();
            }
            Notice::MemberRemoved { reason, .. } => {
                self.members_removed
                    .get_or_create(&ReasonLabels {
                        reason: removal_label(*reason).to_owned(),
                    })
                    .inc();
            }
            Notice::AssignorFinished {
                module,
                version,
                outcome,
                duration_us,
                fuel,
                ..
            } => {
                let version = version.map_or_else(|| "none".to_owned(), |v| v.to_string());
                self.assignor_calls
                    .get_or_create(&CallLabels {
                        module: module.clone(),
                        version: version.clone(),
                        outcome: outcome_label(outcome).to_owned(),
                    })
                    .inc();
                if matches!(outcome, RunOutcome::Stale) {
                    return;
                }
                let labels = ModuleLabels {
                    module: module.clone(),
                    version,
                };
                self.assignor_duration
                    .get_or_create(&labels)
                    .observe(*duration_us as f64 / 1e6);
                if *fuel > 0 {
                    self.assignor_fuel
                        .get_or_create(&labels)
                        .observe(*fuel as f64);
                }
            }
            Notice::StateChanged { .. } | Notice::GenerationCompleted { .. } => {}
        }
    }
}

impl NoticeSink for Metrics {
    fn notice(&self, notice: &Notice) {
        self.count(notice);
        TracingNotices.notice(notice);
    }
}

/// Every state a group can be listed in: a classic group's, then a consumer group's own two
/// (`Empty` and `Stable` are both's).
const ALL_STATES: [&str; 7] = [
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Assigning",
    "Reconciling",
];

/// An API key as a label: Kafka's name when known, else the number.
fn api_label(api: i16) -> String {
    ApiKey::try_from(api).map_or_else(|()| api.to_string(), |key| format!("{key:?}"))
}

fn removal_label(reason: RemovalReason) -> &'static str {
    match reason {
        RemovalReason::SessionExpired => "session_expired",
        RemovalReason::Left => "left",
        RemovalReason::Fenced => "fenced",
        RemovalReason::NotRejoined => "not_rejoined",
        RemovalReason::SyncExpired => "sync_expired",
        RemovalReason::GroupFull => "group_full",
        RemovalReason::PendingExpired => "pending_expired",
    }
}

fn outcome_label(outcome: &RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Ok => "ok",
        RunOutcome::Failed(_) => "failed",
        RunOutcome::TimedOut => "timed_out",
        RunOutcome::Stale => "stale",
        RunOutcome::Refused(_) => "refused",
    }
}

mod upstream;

#[cfg(test)]
mod tests;
