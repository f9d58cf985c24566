//! The admin API's contract, route by route, through the router itself (no socket): the
//! status and `code` of every error path, the token rules, the body caps, and the happy paths
//! whose answers the CLI relies on. Live groups are exercised by the black-box tests in
//! `tests/tests/admin_*.rs`.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::config::CatalogConfig;
use crate::driver::DriverConfig;
use crate::registry::{BuiltinSource, RegistryConfig};
use crate::sandbox::{PoolConfig, Sandbox, SandboxLimits};

fn sandbox() -> Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX
        .get_or_init(|| {
            let pool = PoolConfig {
                max_instances: 8,
                ..PoolConfig::default()
            };
            Sandbox::new(pool, SandboxLimits::default()).expect("sandbox")
        })
        .clone()
}

fn range_wasm() -> &'static [u8] {
    crate::builtins::builtin("range").unwrap().wasm
}

fn roundrobin_wasm() -> &'static [u8] {
    crate::builtins::builtin("roundrobin").unwrap().wasm
}

/// A host's admin state: built-in `range` only, no store, a running driver.
fn state(edit: impl FnOnce(&mut AdminConfig, &mut usize)) -> AdminState {
    let registry_config = RegistryConfig {
        builtins: BuiltinSource::embedded()
            .into_iter()
            .filter(|b| b.name == "range")
            .collect(),
        ..RegistryConfig::default()
    };
    let registry = Arc::new(Registry::open(sandbox(), None, registry_config).unwrap());
    let catalog = Catalog::open(&CatalogConfig::default(), None).unwrap();
    let metrics = Arc::new(Metrics::new());
    let driver_config = DriverConfig {
        shards: 2,
        notices: metrics.clone(),
        ..DriverConfig::default()
    };
    let driver = Driver::start(driver_config, registry.clone(), catalog.subscribe(), None).unwrap();
    let mut config = AdminConfig::default();
    let mut max_module_bytes = 16 << 20;
    edit(&mut config, &mut max_module_bytes);
    AdminState {
        registry,
        driver: Some(driver),
        catalog,
        metrics,
        config: Arc::new(config),
        max_module_bytes,
    }
}

struct Api {
    router: axum::Router,
    token: Option<String>,
}

impl Api {
    fn new(state: AdminState) -> Api {
        Api {
            router: router(state),
            token: None,
        }
    }

    async fn send(&self, method: Method, uri: &str, body: Vec<u8>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let response = self
            .router
            .clone()
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.send(Method::GET, uri, Vec::new()).await
    }

    async fn json(&self, method: Method, uri: &str, body: Value) -> (StatusCode, Value) {
        self.send(method, uri, body.to_string().into_bytes()).await
    }
}

/// The `code` of an error answer (panics with the answer if it is not one).
fn code(answer: &(StatusCode, Value)) -> &str {
    answer.1["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error answer: {answer:?}"))
}

#[tokio::test]
async fn a_configured_token_is_required_everywhere_but_healthz() {
    let mut api = Api::new(state(|c, _| c.token = Some("s3cret".into())));
    let missing = api.get("/v1/modules").await;
    assert_eq!(missing.0, StatusCode::UNAUTHORIZED);
    assert_eq!(code(&missing), "missing_token");
    assert!(
        missing.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Bearer")
    );
    assert_eq!(api.get("/metrics").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(api.get("/healthz").await.0, StatusCode::OK);

    api.token = Some("wrong".into());
    let wrong = api.get("/v1/modules").await;
    assert_eq!(
        (wrong.0, code(&wrong)),
        (StatusCode::UNAUTHORIZED, "bad_token")
    );

    api.token = Some("s3cret".into());
    let ok = api.get("/v1/modules").await;
    assert_eq!(ok.0, StatusCode::OK);
    assert_eq!(ok.1["modules"][0]["name"], "range");
}

#[tokio::test]
async fn loopback_without_a_token_needs_none() {
    let api = Api::new(state(|_, _| {}));
    let (status, body) = api.get("/v1/modules").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[test]
fn a_non_loopback_listener_needs_a_token_to_start() {
    let public = AdminConfig {
        listen: "0.0.0.0:9644".parse().unwrap(),
        ..AdminConfig::default()
    };
    let error = check_listen(&public).unwrap_err().to_string();
    assert!(
        error.contains("0.0.0.0:9644") && error.contains("admin.token"),
        "{error}"
    );
    let with_token = AdminConfig {
        token: Some("t".into()),
        ..public.clone()
    };
    assert_eq!(check_listen(&with_token), Ok(()));
    assert_eq!(check_listen(&AdminConfig::default()), Ok(()));
    let empty = AdminConfig {
        token: Some(" ".into()),
        ..public
    };
    assert_eq!(check_listen(&empty), Err(AdminConfigError::EmptyToken));
}

#[tokio::test]
async fn oversized_bodies_are_refused_naming_the_cap() {
    let api = Api::new(state(|c, modules| {
        c.max_json_bytes = 64;
        *modules = 1024;
    }));
    let big_json = json!({ "name": "t".repeat(100), "partitions": 1 });
    let answer = api.json(Method::POST, "/v1/topics", big_json).await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("64 bytes")
    );

    let answer = api
        .send(Method::PUT, "/v1/modules/big", vec![0; 2048])
        .await;
    assert_eq!(answer.0, StatusCode::PAYLOAD_TOO_LARGE);
    let message = answer.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("1024 bytes") && message.contains("registry.max_module_bytes"));
}

#[tokio::test]
async fn uploads_refused_by_a_check_name_the_check() {
    let api = Api::new(state(|_, _| {}));
    let answer = api
        .send(Method::PUT, "/v1/modules/mine", b"not wasm at all".to_vec())
        .await;
    assert_eq!(answer.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(code(&answer), "module_refused");
    assert_eq!(answer.1["error"]["check"], "compile");

    let wrong_sha = format!("/v1/modules/mine?sha256={}", "0".repeat(64));
    let answer = api
        .send(Method::PUT, &wrong_sha, range_wasm().to_vec())
        .await;
    assert_eq!(answer.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer.1["error"]["check"], "sha256");

    let answer = api
        .send(
            Method::PUT,
            "/v1/modules/mine?sha256=xyz",
            range_wasm().to_vec(),
        )
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let answer = api
        .send(
            Method::PUT,
            "/v1/modules/RoundRobinAssigner",
            range_wasm().to_vec(),
        )
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "alias_name")
    );
    let answer = api
        .send(Method::PUT, "/v1/modules/bad%20name", range_wasm().to_vec())
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "invalid_name")
    );
    let answer = api.send(Method::PUT, "/v1/modules/mine", Vec::new()).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST);

    // Nothing was registered by any of these.
    assert_eq!(api.get("/v1/modules/mine").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn upload_versions_activate_and_delete() {
    let api = Api::new(state(|_, _| {}));
    let sha = crate::registry::sha256_hex(range_wasm());
    let (status, first) = api
        .send(
            Method::PUT,
            &format!("/v1/modules/mine?sha256={sha}"),
            range_wasm().to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(
        (first["version"].as_u64(), first["created"].as_bool()),
        (Some(1), Some(true))
    );
    assert!(first["smoke"]["fuel"].as_u64().unwrap() > 0);

    let (status, again) = api
        .send(Method::PUT, "/v1/modules/mine", range_wasm().to_vec())
        .await;
    assert_eq!(status, StatusCode::OK, "identical bytes reuse version 1");
    assert_eq!(
        (again["version"].as_u64(), again["created"].as_bool()),
        (Some(1), Some(false))
    );

    let (status, second) = api
        .send(Method::PUT, "/v1/modules/mine", roundrobin_wasm().to_vec())
        .await;
    assert_eq!(
        (status, second["version"].as_u64()),
        (StatusCode::CREATED, Some(2))
    );

    let (_, shown) = api.get("/v1/modules/mine").await;
    assert_eq!(shown["active_version"], 2);
    assert_eq!(shown["versions"], json!([1, 2]));
    assert_eq!(
        shown["active"]["sha256"],
        crate::registry::sha256_hex(roundrobin_wasm())
    );
    let (_, versions) = api.get("/v1/modules/mine/versions").await;
    assert_eq!(versions["versions"].as_array().unwrap().len(), 2);
    let (status, one) = api.get("/v1/modules/mine/versions/1").await;
    assert_eq!(
        (status, one["sha256"].as_str()),
        (StatusCode::OK, Some(sha.as_str()))
    );

    let delete_active = api
        .send(Method::DELETE, "/v1/modules/mine/versions/2", Vec::new())
        .await;
    assert_eq!(
        (delete_active.0, code(&delete_active)),
        (StatusCode::CONFLICT, "active_version")
    );

    let (status, activated) = api
        .json(
            Method::POST,
            "/v1/modules/mine/activate",
            json!({"version": 1}),
        )
        .await;
    assert_eq!(
        (status, activated["active_version"].as_u64()),
        (StatusCode::OK, Some(1))
    );
    let (status, _) = api
        .send(Method::DELETE, "/v1/modules/mine/versions/2", Vec::new())
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, status_page) = api.get("/v1/modules/mine/status").await;
    assert_eq!(status_page["active_version"], 1);
    assert_eq!(status_page["versions"][0]["calls"], 0);

    let (status, deleted) = api
        .send(Method::DELETE, "/v1/modules/mine", Vec::new())
        .await;
    assert_eq!(
        (status, deleted["removed_versions"].clone()),
        (StatusCode::OK, json!([1]))
    );
    let builtin = api
        .send(Method::DELETE, "/v1/modules/range", Vec::new())
        .await;
    assert_eq!(
        (builtin.0, code(&builtin)),
        (StatusCode::CONFLICT, "builtin_version")
    );
    let rollback = api
        .send(Method::POST, "/v1/modules/range/rollback", Vec::new())
        .await;
    assert_eq!(
        (rollback.0, code(&rollback)),
        (StatusCode::CONFLICT, "no_previous_version")
    );
}

#[tokio::test]
async fn unknown_modules_and_versions_are_404() {
    let api = Api::new(state(|_, _| {}));
    for uri in [
        "/v1/modules/nope",
        "/v1/modules/nope/versions",
        "/v1/modules/nope/status",
    ] {
        let answer = api.get(uri).await;
        assert_eq!(
            (answer.0, code(&answer)),
            (StatusCode::NOT_FOUND, "module_not_found"),
            "{uri}"
        );
    }
    let answer = api
        .json(
            Method::POST,
            "/v1/modules/nope/activate",
            json!({"version": 1}),
        )
        .await;
    assert_eq!(code(&answer), "module_not_found");
    let answer = api
        .json(
            Method::POST,
            "/v1/modules/range/activate",
            json!({"version": 9}),
        )
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "version_not_found")
    );
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no version 9")
    );
    let answer = api.get("/v1/modules/range/versions/9").await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "version_not_found")
    );
    let answer = api
        .send(Method::DELETE, "/v1/modules/range/versions/9", Vec::new())
        .await;
    assert_eq!(code(&answer), "version_not_found");
    let answer = api.get("/v1/modules/range/versions/latest").await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let answer = api.get("/v1/nothing-here").await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "no_such_route")
    );
}

#[tokio::test]
async fn malformed_json_is_a_400_saying_where() {
    let api = Api::new(state(|_, _| {}));
    let answer = api
        .send(
            Method::POST,
            "/v1/modules/range/activate",
            b"{\"version\": ".to_vec(),
        )
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "malformed_json")
    );
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 1")
    );
    let answer = api
        .json(
            Method::POST,
            "/v1/modules/range/activate",
            json!({"version": "one"}),
        )
        .await;
    assert_eq!(code(&answer), "malformed_json");
    let answer = api
        .json(
            Method::POST,
            "/v1/topics",
            json!({"name": "t", "partitons": 3}),
        )
        .await;
    assert_eq!(
        code(&answer),
        "malformed_json",
        "unknown fields are refused: {answer:?}"
    );
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("partitons")
    );
    let answer = api
        .send(Method::POST, "/v1/modules/range/activate", Vec::new())
        .await;
    assert_eq!(code(&answer), "malformed_json");
}

#[tokio::test]
async fn group_errors() {
    let api = Api::new(state(|_, _| {}));
    let answer = api.get("/v1/groups/ghost").await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "group_not_found")
    );
    let answer = api
        .send(Method::POST, "/v1/groups/ghost/rebalance", Vec::new())
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "group_not_found")
    );
    let config = |body| api.json(Method::PUT, "/v1/groups/g/config", body);
    let answer = config(json!({"strategy": "nope"})).await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "module_not_found")
    );
    let answer = config(json!({"strategy": "range", "pinned_version": 4})).await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "version_not_found")
    );
    let answer = config(json!({"pinned_version": 0})).await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let (status, set) = config(json!({"strategy": "range", "params": {"k": "v"}})).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a group need not exist to be configured: {set}"
    );
    let (status, list) = api.get("/v1/groups").await;
    assert_eq!(
        (status, list["groups"].clone()),
        (StatusCode::OK, json!([]))
    );
}

#[tokio::test]
async fn a_host_without_a_coordinator_answers_503_for_groups() {
    let mut state = state(|_, _| {});
    state.driver = None;
    let api = Api::new(state);
    let answer = api.get("/v1/groups").await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::SERVICE_UNAVAILABLE, "coordinator_unavailable")
    );
}

#[tokio::test]
async fn topics_are_created_listed_grown_and_deleted() {
    let api = Api::new(state(|_, _| {}));
    let (status, created) = api
        .json(
            Method::POST,
            "/v1/topics",
            json!({"name": "orders", "partitions": 3}),
        )
        .await;
    assert_eq!(
        (status, created["partitions"].as_i64()),
        (StatusCode::CREATED, Some(3))
    );
    let again = api
        .json(
            Method::POST,
            "/v1/topics",
            json!({"name": "orders", "partitions": 3}),
        )
        .await;
    assert_eq!(
        (again.0, code(&again)),
        (StatusCode::CONFLICT, "topic_exists")
    );
    let bad = api
        .json(
            Method::POST,
            "/v1/topics",
            json!({"name": "bad/name", "partitions": 1}),
        )
        .await;
    assert_eq!(
        (bad.0, code(&bad)),
        (StatusCode::BAD_REQUEST, "invalid_topic")
    );
    let zero = api
        .json(
            Method::POST,
            "/v1/topics",
            json!({"name": "z", "partitions": 0}),
        )
        .await;
    assert_eq!(code(&zero), "invalid_partitions");
    let (status, grown) = api
        .json(
            Method::POST,
            "/v1/topics/orders/partitions",
            json!({"count": 5}),
        )
        .await;
    assert_eq!(
        (status, grown["partitions"].as_i64()),
        (StatusCode::OK, Some(5))
    );
    let shrink = api
        .json(
            Method::POST,
            "/v1/topics/orders/partitions",
            json!({"count": 2}),
        )
        .await;
    assert_eq!(code(&shrink), "invalid_partitions");
    let (_, list) = api.get("/v1/topics").await;
    assert_eq!(list["topics"], json!([{"name": "orders", "partitions": 5}]));
    let missing = api.get("/v1/topics/ghost").await;
    assert_eq!(
        (missing.0, code(&missing)),
        (StatusCode::NOT_FOUND, "topic_not_found")
    );
    let (status, _) = api
        .send(Method::DELETE, "/v1/topics/orders", Vec::new())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(api.get("/v1/topics/orders").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn simulate_a_scenario_and_its_errors() {
    let api = Api::new(state(|_, _| {}));
    let scenario = json!({
        "topics": [{"name": "t", "partitions": 4}],
        "members": [
            {"id": "a", "subscription": ["t"], "current": {"t": [0, 1, 2, 3]}},
            {"id": "b", "subscription": ["t"]}
        ]
    });
    let (status, report) = api
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"module": "range", "scenario": scenario}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["members"][0]["assignment"], json!({"t": [0, 1]}));
    assert_eq!(report["members"][1]["assignment"], json!({"t": [2, 3]}));
    assert_eq!(report["movement"]["moved"], 2);
    assert_eq!(report["version"], 0);

    let answer = api
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"module": "nope", "scenario": scenario}),
        )
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::NOT_FOUND, "module_not_found")
    );
    let answer = api
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"module": "range", "version": 3, "scenario": scenario}),
        )
        .await;
    assert_eq!(code(&answer), "version_not_found");
    let answer = api
        .json(Method::POST, "/v1/simulate", json!({"module": "range"}))
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::BAD_REQUEST, "bad_request")
    );
    let answer = api
        .json(Method::POST, "/v1/simulate", json!({"group": "ghost"}))
        .await;
    assert_eq!(code(&answer), "group_not_found");
    let mut broken = scenario.clone();
    broken["members"][1]["subscription"] = json!(["missing"]);
    let answer = api
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"module": "range", "scenario": broken}),
        )
        .await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST);
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing")
    );
}

#[tokio::test]
async fn metrics_are_scraped_as_openmetrics_text() {
    let api = Api::new(state(|_, _| {}));
    let request = Request::get("/metrics").body(Body::empty()).unwrap();
    let response = api.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        metrics::CONTENT_TYPE
    );
    let text = String::from_utf8(
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(
        text.contains("assignor_host_module_active_version{module=\"range\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("assignor_host_groups{state=\"Stable\"} 0"),
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"));
}
