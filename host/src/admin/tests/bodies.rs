//! Every JSON body of the admin API, mutated: each route that reads one gets its valid body
//! and hundreds of corruptions of it (bytes flipped, cut, repeated, numbers made huge or
//! negative, strings made long). Every answer must be a success or a 4xx in the API's one
//! error shape, naming what was wrong, never a 5xx; and what the valid bodies did is still
//! there afterwards.
//!
//! The bodies are serde derives read by `serde_json` (`admin/extract.rs`); coverage-guided
//! fuzzing of them would need the whole host built with instrumentation (a quarter of an
//! hour), so they are mutated here, seeded and bounded, in `cargo test` (fuzz/README.md).

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::*;
use crate::mutate::Mutator;

/// The routes that read a JSON body, each with a body it accepts.
fn bodies() -> Vec<(Method, &'static str, serde_json::Value)> {
    vec![
        (
            Method::PUT,
            "/v1/groups/orders/config",
            json!({"strategy": "range", "pinned_version": 1, "params": {"a": "b"},
                   "stabilize_ms": 1000, "stabilize_max_ms": 4000}),
        ),
        (
            Method::POST,
            "/v1/groups/orders/rebalance",
            json!({"reason": "a test"}),
        ),
        (
            Method::POST,
            "/v1/topics",
            json!({"name": "orders", "partitions": 3, "racks": [["a"], ["b"], ["a"]]}),
        ),
        (
            Method::POST,
            "/v1/topics/orders/partitions",
            json!({"count": 4}),
        ),
        (
            Method::POST,
            "/v1/modules/range/activate",
            json!({"version": 1}),
        ),
        (
            Method::POST,
            "/v1/simulate",
            json!({"module": "range", "scenario": {
            "group_id": "g", "params": {"k": "v"},
            "topics": [{"name": "t", "partitions": 4, "racks": [["a"], ["b"], ["a"], ["b"]]}],
            "members": [
                {"id": "c-1", "rack": "a", "subscription": ["t"], "current": {"t": [0, 1]},
                 "owned_generation": 3, "user_data_hex": "00ff"},
                {"id": "c-2", "instance_id": "i-2", "subscription": ["t"],
                 "owned": {"t": [2]}}
            ]}}),
        ),
    ]
}

#[tokio::test]
async fn mutated_json_bodies_get_a_4xx_naming_the_fault_never_a_5xx() {
    let api = Api::new(state(|_, _| {}));
    let mut mutator = Mutator(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for (method, uri, valid) in bodies() {
        let valid = valid.to_string().into_bytes();
        let (status, answer) = api.send(method.clone(), uri, valid.clone()).await;
        // The rebalance of a group with no members is a 404, after its body was read.
        assert!(
            status.is_success() || status == StatusCode::NOT_FOUND,
            "{method} {uri}: the valid body: {status} {answer}"
        );
        for case in 0..300 {
            let body = mutator.mutate(&valid);
            let (status, answer) = api.send(method.clone(), uri, body.clone()).await;
            let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            if status.is_success() {
                accepted += 1;
                continue;
            }
            assert!(
                status.is_client_error(),
                "{method} {uri} case {case}: {status} {answer} for {shown:?}"
            );
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(
                answer["error"]["code"].is_string() && !message.is_empty(),
                "{method} {uri} case {case}: {status} without the error shape: {answer}"
            );
            refused += 1;
        }
    }
    assert_eq!(api.get("/healthz").await.0, StatusCode::OK);
    let (status, topic) = api.get("/v1/topics/orders").await;
    assert_eq!(status, StatusCode::OK, "{topic}");
    assert!(topic["partitions"].as_i64().unwrap_or(0) >= 4, "{topic}");
    // Most corruptions are refused; some (a flipped letter inside a string) are valid bodies.
    assert!(refused > accepted, "refused {refused}, accepted {accepted}");
}
