//! Groups, topics, simulations and the metrics endpoint.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::*;

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

/// `group set --param`: parameters the module itself refuses (a `filtered` pattern with a
/// `[` class) are refused with its message, and the configuration is not changed; good ones
/// are stored.
#[tokio::test]
async fn parameters_a_module_refuses_are_refused_when_set() {
    let api = Api::new(state_with_builtins(&["range", "filtered"]));
    let config = |body| api.json(Method::PUT, "/v1/groups/g/config", body);
    let answer =
        config(json!({"strategy": "filtered", "params": {"exclude": "laptop-[0-9]"}})).await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::UNPROCESSABLE_ENTITY, "bad_params")
    );
    assert_eq!(
        answer.1["error"]["message"],
        "filtered refuses these parameters: parameter `exclude`: pattern `laptop-[0-9]` uses \
         `[`, which is not supported; the only wildcards are `*` (any characters) and `?` (one \
         character), so list the names separated by commas instead"
    );
    let answer = config(json!({"strategy": "filtered", "params": {"inner": "fastest"}})).await;
    assert_eq!(code(&answer), "bad_params");
    let (status, set) = config(
        json!({"strategy": "filtered", "params": {"exclude": "laptop-*", "inner": "sticky"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["config"]["params"]["exclude"], "laptop-*");
}

/// `group set --stabilize-ms`: the stabilisation settings are stored and shown back; out of
/// bounds they are refused with 400 and what to write instead, and nothing changes.
#[tokio::test]
async fn stabilisation_settings_are_stored_and_bad_ones_refused() {
    let api = Api::new(state_with_builtins(&["range"]));
    let config = |body| api.json(Method::PUT, "/v1/groups/g/config", body);
    let (status, set) = config(json!({"stabilize_ms": 6000, "stabilize_max_ms": 30000})).await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["config"]["stabilize_ms"], 6000);
    assert_eq!(set["config"]["stabilize_max_ms"], 30000);
    let answer = config(json!({"stabilize_ms": 6000, "stabilize_max_ms": 1000})).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{}", answer.1);
    assert_eq!(
        answer.1["error"]["message"],
        "stabilize_max_ms 1000 is below stabilize_ms 6000: the longest wait cannot be shorter \
         than the quiet window"
    );
    let answer = config(json!({"stabilize_max_ms": 1000})).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{}", answer.1);
    let (status, set) = config(json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(set["config"].get("stabilize_ms").is_none(), "{set}");
}

/// Users and ACLs are standalone's: in proxy mode (no users, no ACLs in the state) every route
/// says they are the cluster's; standalone, a body Kafka would refuse is a 400 naming why.
#[tokio::test]
async fn users_and_acls_are_the_clusters_in_proxy_mode_and_checked_standalone() {
    let mut proxied = state(|_, _| {});
    proxied.mode = proxy_mode();
    let api = Api::new(proxied);
    for (method, uri, body, expected) in [
        (Method::GET, "/v1/users", json!(null), "users_are_upstream"),
        (
            Method::PUT,
            "/v1/users/alice",
            json!({"mechanism": "SCRAM-SHA-512", "password": "x"}),
            "users_are_upstream",
        ),
        (Method::GET, "/v1/acls", json!(null), "acls_are_upstream"),
        (
            Method::POST,
            "/v1/acls",
            json!({"acls": []}),
            "acls_are_upstream",
        ),
    ] {
        let answer = if body.is_null() {
            api.get(uri).await
        } else {
            api.json(method, uri, body).await
        };
        assert_eq!(answer.0, StatusCode::CONFLICT, "{uri}: {answer:?}");
        assert_eq!(code(&answer), expected);
    }

    let api = Api::new(state(|_, _| {}));
    let binding = json!({"resource_type": "group", "resource_name": "g",
        "pattern_type": "literal", "principal": "User:alice", "operation": "write",
        "permission": "allow"});
    let answer = api
        .json(Method::POST, "/v1/acls", json!({"acls": [binding]}))
        .await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{answer:?}");
    assert!(
        answer
            .1
            .to_string()
            .contains("is not an operation on a Group"),
        "{answer:?}"
    );
    let unknown_field = json!({"acls": [{"resource_type": "group", "resource_name": "g",
        "pattern_type": "literal", "principal": "User:alice", "operation": "read",
        "permission": "allow", "colour": "red"}]});
    let answer = api.json(Method::POST, "/v1/acls", unknown_field).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{answer:?}");
    let read = json!({"resource_type": "group", "resource_name": "g",
        "pattern_type": "literal", "principal": "User:alice", "operation": "read",
        "permission": "allow"});
    let answer = api
        .json(
            Method::POST,
            "/v1/acls",
            json!({"acls": [read.clone(), read.clone()]}),
        )
        .await;
    assert_eq!(answer.0, StatusCode::CREATED, "{answer:?}");
    assert_eq!(answer.1, json!({"added": 1, "present": 1}));
    let listed = api.get("/v1/acls").await;
    let mut expected = read.clone();
    expected["host"] = json!("*");
    assert_eq!(listed.1, json!({"acls": [expected]}));
    let answer = api.get("/v1/users").await;
    assert_eq!(answer.1, json!({"users": []}));
}
