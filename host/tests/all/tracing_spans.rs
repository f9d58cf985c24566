//! The host's tracing spans carry the fields an operator filters on (`group`, `member`,
//! `generation`, `module`, `version`): the registry's `module_call` span around a module run,
//! the driver's `assignor` span around a run on the blocking pool, and the wire layer's
//! `request` span, which `Driver::request` fills in.
//!
//! A capturing layer records every span's fields (as declared and as recorded later) and, for
//! each event, its message with the fields of all its ancestor spans. Assignor runs happen on
//! tokio's blocking-pool threads, so the layer is the global default subscriber, installed once
//! for the whole test binary (so it also sees the events of the other modules' tests, which run
//! in the same process); each test here uses its own group ids and looks only at what names
//! them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use assignor_host::coordinator::view::{Topic, Topics, TopicsView};
use assignor_host::coordinator::{CoordinatorConfig, GroupRequest, GroupResponse, RequestContext};
use assignor_host::driver::{Driver, DriverConfig, DriverSettings};
use assignor_host::registry::{Registry, RegistryConfig};
use bytes::{BufMut, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::sync::watch;
use tracing::field::{Empty, Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Instrument, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::sandbox_support::*;

/// A span's name and fields, as rendered text (`%x` and `x` both end up as plain text).
#[derive(Debug, Clone)]
struct SpanData {
    name: String,
    fields: BTreeMap<String, String>,
}

/// An event: its message, its own fields, and its ancestor spans, innermost first.
#[derive(Debug, Clone)]
struct EventData {
    message: String,
    fields: BTreeMap<String, String>,
    ancestors: Vec<SpanData>,
}

#[derive(Default)]
struct Captured {
    events: Vec<EventData>,
    /// Spans as they were when they closed (every recorded field in).
    closed: Vec<SpanData>,
}

struct FieldText<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldText<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// Records spans and events into a shared [`Captured`]. No level filter: debug spans and
/// events (the `request` span, "assignor ran") get through.
struct CaptureLayer(Arc<Mutex<Captured>>);

impl<S> Layer<S> for CaptureLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut FieldText(&mut fields));
        let span = ctx.span(id).expect("a new span is in the registry");
        span.extensions_mut().insert(SpanData {
            name: attrs.metadata().name().to_owned(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a recorded span is in the registry");
        if let Some(data) = span.extensions_mut().get_mut::<SpanData>() {
            values.record(&mut FieldText(&mut data.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut FieldText(&mut fields));
        let message = fields.remove("message").unwrap_or_default();
        let ancestors = ctx
            .event_scope(event)
            .into_iter()
            .flatten()
            .filter_map(|span| span.extensions().get::<SpanData>().cloned())
            .collect();
        self.0.lock().unwrap().events.push(EventData {
            message,
            fields,
            ancestors,
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).expect("a closing span is in the registry");
        if let Some(data) = span.extensions().get::<SpanData>().cloned() {
            self.0.lock().unwrap().closed.push(data);
        }
    }
}

/// What the global subscriber captured; installs it on first use.
fn captured() -> Arc<Mutex<Captured>> {
    static CAPTURED: OnceLock<Arc<Mutex<Captured>>> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Arc::new(Mutex::new(Captured::default()));
            let subscriber =
                tracing_subscriber::registry().with(CaptureLayer(Arc::clone(&captured)));
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber in this test binary");
            captured
        })
        .clone()
}

/// Events with `message` whose own fields or ancestor spans name `group`.
fn events_of(message: &str, group: &str) -> Vec<EventData> {
    captured()
        .lock()
        .unwrap()
        .events
        .iter()
        .filter(|e| e.message == message)
        .filter(|e| {
            e.fields.get("group").map(String::as_str) == Some(group)
                || e.ancestors
                    .iter()
                    .any(|s| s.fields.get("group").map(String::as_str) == Some(group))
        })
        .cloned()
        .collect()
}

fn field<'a>(span: &'a SpanData, name: &str) -> Option<&'a str> {
    span.fields.get(name).map(String::as_str)
}

/// One registry (the embedded built-ins) for the whole binary: compiling them is the slow part.
fn registry() -> Arc<Registry> {
    static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            Arc::new(Registry::open(sandbox(), None, RegistryConfig::default()).expect("registry"))
        })
        .clone()
}

#[test]
fn registry_run_logs_inside_a_module_call_span_naming_module_version_group_generation() {
    captured();
    let registry = registry();
    let group = "tracing-registry-run";
    let mut request = request();
    request.group_id = group.to_owned();
    request.generation_id = 7;
    let report = registry
        .run("range", None, &request, false)
        .expect("range runs");
    let active = registry.status("range").unwrap().active_version;
    assert_eq!(report.version, active);

    let ran = events_of("assignor ran", group);
    assert_eq!(ran.len(), 1, "one run, one \"assignor ran\": {ran:#?}");
    let call = ran[0]
        .ancestors
        .iter()
        .find(|s| s.name == "module_call")
        .unwrap_or_else(|| panic!("\"assignor ran\" outside a module_call span: {ran:#?}"));
    assert_eq!(field(call, "module"), Some("range"));
    assert_eq!(field(call, "version"), Some(active.to_string().as_str()));
    assert_eq!(field(call, "group"), Some(group));
    assert_eq!(field(call, "generation"), Some("7"));
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn ctx(version: i16) -> RequestContext {
    RequestContext {
        api_version: version,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

/// A v9 JoinGroup proposing `range` with a v3 Subscription to topic `t`.
fn join_request(group: &str, member: &str) -> JoinGroupRequest {
    let mut metadata = BytesMut::new();
    metadata.put_i16(3);
    ConsumerProtocolSubscription::default()
        .with_topics(vec![s("t")])
        .encode(&mut metadata, 3)
        .expect("encodable");
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(20_000)
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(metadata.freeze()),
        ])
}

async fn join(driver: &Driver, group: &str, member: &str) -> JoinGroupResponse {
    let request = GroupRequest::JoinGroup(join_request(group, member));
    let GroupResponse::JoinGroup(r) = driver.request(group, ctx(9), request).await else {
        panic!("not a JoinGroup answer")
    };
    r
}

/// The wire layer's `request` span, with the fields a group API fills in left empty.
fn request_span() -> tracing::Span {
    tracing::debug_span!("request", group = Empty, member = Empty, generation = Empty)
}

/// The closed `request` spans that recorded `group`.
fn closed_request_spans(group: &str) -> Vec<SpanData> {
    captured()
        .lock()
        .unwrap()
        .closed
        .iter()
        .filter(|s| s.name == "request" && field(s, "group") == Some(group))
        .cloned()
        .collect()
}

#[tokio::test]
async fn driver_requests_fill_the_request_span_and_the_run_nests_module_call_in_assignor() {
    captured();
    let group = "tracing-driver-group";
    let registry = registry();
    let active = registry.status("range").unwrap().active_version;
    let topic = Topic {
        name: "t".into(),
        partition_count: 4,
        partition_racks: Vec::new(),
    };
    let (_topics, topics_rx) = watch::channel::<TopicsView>(Arc::new(Topics::with_derived_ids(
        BTreeMap::from([("t".to_owned(), topic)]),
    )));
    let config = DriverConfig {
        settings: DriverSettings {
            shards: Some(1),
            assignor_threads: Some(1),
            fallback_threads: Some(1),
            ..DriverSettings::default()
        },
        random_seed: false,
        coordinator: CoordinatorConfig {
            initial_rebalance_delay_ms: 0,
            ..CoordinatorConfig::default()
        },
        ..DriverConfig::default()
    };
    let strategies = registry.subscribe();
    let driver = Driver::start(config, registry, strategies, topics_rx, None).expect("driver");

    // Kafka's two-step join: the first answer hands out the member id.
    let first = join(&driver, group, "").await;
    assert_eq!(first.error_code, ResponseError::MemberIdRequired.code());
    let joined = join(&driver, group, &first.member_id).await;
    assert_eq!(joined.error_code, 0);
    let (member, generation) = (joined.member_id.to_string(), joined.generation_id);

    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(&member))
        .with_generation_id(generation)
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(joined.protocol_name.clone());
    let synced = driver
        .request(group, ctx(5), GroupRequest::SyncGroup(sync))
        .instrument(request_span())
        .await;
    let GroupResponse::SyncGroup(synced) = synced else {
        panic!("not a SyncGroup answer")
    };
    assert_eq!(synced.error_code, 0);
    assert!(
        !synced.assignment.is_empty(),
        "the member got its assignment"
    );

    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(&member))
        .with_generation_id(generation);
    let beat = driver
        .request(group, ctx(4), GroupRequest::Heartbeat(heartbeat))
        .instrument(request_span())
        .await;
    let GroupResponse::Heartbeat(beat) = beat else {
        panic!("not a Heartbeat answer")
    };
    assert_eq!(beat.error_code, 0);
    driver.shutdown().await;

    // Both request spans (SyncGroup, Heartbeat) got group, member and generation recorded.
    let spans = closed_request_spans(group);
    assert_eq!(
        spans.len(),
        2,
        "two request spans name the group: {spans:#?}"
    );
    for span in &spans {
        assert_eq!(field(span, "member"), Some(member.as_str()), "{span:#?}");
        assert_eq!(
            field(span, "generation"),
            Some(generation.to_string().as_str()),
            "{span:#?}"
        );
    }

    // The group's run: "assignor ran" inside module_call, itself inside the driver's assignor
    // span, each naming the group and generation.
    let ran = events_of("assignor ran", group);
    assert_eq!(ran.len(), 1, "one rebalance, one run: {ran:#?}");
    let names: Vec<&str> = ran[0].ancestors.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["module_call", "assignor"], "innermost first");
    let (call, assignor) = (&ran[0].ancestors[0], &ran[0].ancestors[1]);
    assert_eq!(field(call, "module"), Some("range"));
    assert_eq!(field(call, "version"), Some(active.to_string().as_str()));
    assert_eq!(field(call, "group"), Some(group));
    assert_eq!(
        field(call, "generation"),
        Some(generation.to_string().as_str())
    );
    assert_eq!(field(assignor, "group"), Some(group));
    assert_eq!(
        field(assignor, "generation"),
        Some(generation.to_string().as_str())
    );
    assert_eq!(field(assignor, "strategy"), Some("range"));
    assert_eq!(field(assignor, "fallback"), Some("false"));
}
