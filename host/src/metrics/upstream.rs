//! Proxy mode's metrics: the requests passed up to the upstream brokers (count and latency by
//! API, bytes each way), the upstream connections opened and the faults seen, and groups whose
//! id somebody joined on the cluster directly.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabels {
    api: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    direction: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AuthenticationLabels {
    mechanism: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MechanismLabels {
    mechanism: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DenialLabels {
    api: String,
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

/// The upstream's part of the host's metrics.
pub(super) struct UpstreamMetrics {
    requests: Family<ApiLabels, Counter>,
    latency: Family<ApiLabels, Histogram, fn() -> Histogram>,
    bytes: Family<DirectionLabels, Counter>,
    connects: Counter,
    errors: Family<KindLabels, Counter>,
    conflicts: Family<GroupLabels, Counter>,
    refused: Gauge,
    authentications: Family<AuthenticationLabels, Counter>,
    reauthentications: Family<MechanismLabels, Counter>,
    closed: Family<ReasonLabels, Counter>,
    denials: Family<DenialLabels, Counter>,
}

/// Upstream round trips: 20 us (loopback) to about 80 s (a long-poll Fetch).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_02, 4.0, 12))
}

impl UpstreamMetrics {
    pub(super) fn register(registry: &mut Registry) -> UpstreamMetrics {
        let m = UpstreamMetrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            bytes: Family::default(),
            connects: Counter::default(),
            errors: Family::default(),
            conflicts: Family::default(),
            refused: Gauge::default(),
            authentications: Family::default(),
            reauthentications: Family::default(),
            closed: Family::default(),
            denials: Family::default(),
        };
        registry.register(
            "upstream_requests",
            "Client requests passed up to an upstream broker, by API",
            m.requests.clone(),
        );
        registry.register(
            "upstream_request_seconds",
            "Time from passing a request up to its answer from the upstream broker, by API",
            m.latency.clone(),
        );
        registry.register(
            "upstream_bytes",
            "Bytes passed to (up) and from (down) the upstream brokers, frames included",
            m.bytes.clone(),
        );
        registry.register(
            "upstream_connects",
            "Connections opened to upstream brokers (client links and the host's own reads)",
            m.connects.clone(),
        );
        registry.register(
            "upstream_errors",
            "Upstream faults, by kind (connect, link, metadata, offsets, refused)",
            m.errors.clone(),
        );
        registry.register(
            "upstream_refused",
            "1 while the upstream refuses the host's connections (TLS or SASL failed: a \
             setting to change, GET /v1/upstream says which), else 0",
            m.refused.clone(),
        );
        registry.register(
            "upstream_group_conflicts",
            "Offset commits refused because the group id has members on the cluster itself",
            m.conflicts.clone(),
        );
        registry.register(
            "client_authentications",
            "Clients' SASL exchanges relayed to the upstream (kafka.authentication = \"upstream\"), \
             by mechanism and result (success, failure, unsupported)",
            m.authentications.clone(),
        );
        registry.register(
            "client_reauthentications",
            "Clients' successful re-authentications (KIP-368: a new SASL exchange on a \
             connection that had authenticated, before the cluster's connections.max.reauth.ms \
             ran out), by mechanism; also counted in client_authentications",
            m.reauthentications.clone(),
        );
        registry.register(
            "client_connections_closed",
            "Client connections closed: a TLS handshake that failed or stalled \
             (tls_handshake), a request before SASL authentication (unauthenticated) or one \
             the host answers after the SASL session expired (expired)",
            m.closed.clone(),
        );
        registry.register(
            "client_denials",
            "Rights the cluster refused a client (kafka.authentication = \"upstream\") for a \
             request the host answers, or refused on the host's own names, by API and resource \
             type (group, topic, cluster); silent filters (ListGroups, OffsetFetch of every \
             offset) are not counted, as Kafka does not log them",
            m.denials.clone(),
        );
        m
    }

    pub(super) fn denial(&self, api: String, resource: &str) {
        self.denials
            .get_or_create(&DenialLabels {
                api,
                resource: resource.to_owned(),
            })
            .inc();
    }

    pub(super) fn authentication(&self, mechanism: &str, result: &str) {
        self.authentications
            .get_or_create(&AuthenticationLabels {
                mechanism: mechanism.to_owned(),
                result: result.to_owned(),
            })
            .inc();
    }

    pub(super) fn reauthentication(&self, mechanism: &str) {
        self.reauthentications
            .get_or_create(&MechanismLabels {
                mechanism: mechanism.to_owned(),
            })
            .inc();
    }

    pub(super) fn closed(&self, reason: &str) {
        self.closed
            .get_or_create(&ReasonLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    pub(super) fn passed_up(&self, api: String, bytes: u64) {
        self.requests.get_or_create(&ApiLabels { api }).inc();
        self.bytes(Direction::Up, bytes);
    }

    pub(super) fn answered(&self, api: String, seconds: f64, bytes: u64) {
        self.latency
            .get_or_create(&ApiLabels { api })
            .observe(seconds);
        self.bytes(Direction::Down, bytes);
    }

    fn bytes(&self, direction: Direction, bytes: u64) {
        let direction = match direction {
            Direction::Up => "up",
            Direction::Down => "down",
        };
        self.bytes
            .get_or_create(&DirectionLabels {
                direction: direction.to_owned(),
            })
            .inc_by(bytes);
    }

    pub(super) fn connected(&self) {
        self.connects.inc();
    }

    pub(super) fn error(&self, kind: &str) {
        self.errors
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// Takes the upstream's health: whether it refuses the host now, and the refusals since
    /// the last sample, counted as `errors{kind="refused"}`.
    pub(super) fn health(&self, refused: bool, refusals: u64) {
        self.refused.set(i64::from(refused));
        let counted = self
            .errors
            .get_or_create(&KindLabels {
                kind: "refused".to_owned(),
            })
            .clone();
        counted.inc_by(refusals.saturating_sub(counted.get()));
    }

    pub(super) fn conflict(&self, group: &str) {
        self.conflicts
            .get_or_create(&GroupLabels {
                group: group.to_owned(),
            })
            .inc();
    }
}

enum Direction {
    Up,
    Down,
}
