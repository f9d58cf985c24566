//! Uploads, versions, activation and deletion, and their refusals.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::*;

#[tokio::test]
async fn uploads_refused_by_a_check_name_the_check() {
    let api = Api::new(state(|_, _| {}));
    let answer = api
        .send(Method::PUT, "/v1/modules/mine", b"not wasm at all".to_vec())
        .await;
    assert_eq!(answer.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(code(&answer), "module_refused");
    assert_eq!(answer.1["error"]["check"], "compile");

    // WebAssembly text is refused by name, with how to get the binary.
    let text = "(module (memory (export \"memory\") 1))";
    assert!(
        wat::parse_str(text).is_ok(),
        "the text itself is a valid module"
    );
    let answer = api
        .send(Method::PUT, "/v1/modules/mine", text.as_bytes().to_vec())
        .await;
    assert_eq!(
        (answer.0, code(&answer)),
        (StatusCode::UNPROCESSABLE_ENTITY, "module_refused")
    );
    assert_eq!(answer.1["error"]["check"], "compile");
    let message = answer.1["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("this is WebAssembly text (WAT); upload the binary .wasm"),
        "{message}"
    );

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
