//! Tokens and body caps.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::*;

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
    // TLS is the other rule beyond loopback (admin/config.rs's tests): told away here.
    let public = AdminConfig {
        listen: "0.0.0.0:9644".parse().unwrap(),
        allow_plaintext: true,
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

#[test]
fn the_token_may_come_from_a_file_and_never_shows_in_debug() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin-token");
    std::fs::write(&file, "  from-a-file \nsecond line ignored\n").unwrap();
    let mut config = AdminConfig {
        listen: "0.0.0.0:9644".parse().unwrap(),
        token_file: Some(file.clone()),
        allow_plaintext: true,
        ..AdminConfig::default()
    };
    load_token(&mut config).unwrap();
    assert_eq!(config.token.as_deref(), Some("from-a-file"));
    assert_eq!(check_listen(&config), Ok(()), "a token from a file counts");
    assert!(!format!("{config:?}").contains("from-a-file"), "{config:?}");

    // Both, an empty file, a missing file: the start stops naming the setting.
    assert_eq!(load_token(&mut config), Err(AdminConfigError::TwoTokens));
    std::fs::write(&file, "\n").unwrap();
    let mut empty = AdminConfig {
        token_file: Some(file),
        ..AdminConfig::default()
    };
    let error = load_token(&mut empty).unwrap_err().to_string();
    assert!(
        error.starts_with("admin.token_file") && error.contains("empty"),
        "{error}"
    );
    let mut missing = AdminConfig {
        token_file: Some(dir.path().join("nowhere")),
        ..AdminConfig::default()
    };
    let error = load_token(&mut missing).unwrap_err().to_string();
    assert!(error.contains("nowhere"), "{error}");
}
