//! The admin API's refusals over real HTTP, as `assignor-host serve` assembles it: the token
//! rules (and the refusal to start an exposed listener without one), body caps enforced by the
//! server, and the JSON error shape for bad bytes, bad JSON and unknown names.

use std::net::SocketAddr;

use assignor_host::config::Config;
use assignor_host::server::{Server, ServerError};
use assignor_host_tests::TestHost;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::admin_support::*;

fn code(answer: &(StatusCode, Value)) -> &str {
    answer.1["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error answer: {answer:?}"))
}

#[tokio::test]
async fn a_token_is_required_when_configured_and_healthz_stays_open() {
    let host = TestHost::with_config(|c| c.admin.token = Some("t0ken".into())).await;
    let anonymous = Admin::new(&host);
    let missing = anonymous.get("/v1/modules").await;
    assert_eq!(
        (missing.0, code(&missing)),
        (StatusCode::UNAUTHORIZED, "missing_token")
    );
    assert_eq!(anonymous.get("/metrics").await.0, StatusCode::UNAUTHORIZED);
    let (status, health) = anonymous.get("/healthz").await;
    assert_eq!(
        (status, health["status"].as_str()),
        (StatusCode::OK, Some("ok"))
    );
    let wrong = Admin::new(&host)
        .with_token("guess")
        .get("/v1/groups")
        .await;
    assert_eq!(
        (wrong.0, code(&wrong)),
        (StatusCode::UNAUTHORIZED, "bad_token")
    );
    let (status, modules) = Admin::new(&host)
        .with_token("t0ken")
        .get("/v1/modules")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        modules["modules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "range")
    );
    host.stop().await;
}

#[tokio::test]
async fn a_loopback_listener_without_a_token_needs_none() {
    let host = TestHost::start().await;
    assert_eq!(Admin::new(&host).get("/v1/modules").await.0, StatusCode::OK);
    host.stop().await;
}

fn exposed(dir: &std::path::Path, token: Option<&str>) -> Config {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.kafka.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.admin.listen = SocketAddr::from(([0, 0, 0, 0], 0));
    config.admin.token = token.map(str::to_owned);
    config
}

#[tokio::test]
async fn an_exposed_listener_without_a_token_or_tls_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Server::start(exposed(dir.path(), None)).await;
    let Err(error @ ServerError::Admin(_)) = refused else {
        panic!("an exposed admin API without a token must not start");
    };
    let message = error.to_string();
    assert!(
        message.contains("0.0.0.0:0") && message.contains("admin.token"),
        "{message}"
    );

    // A token is not enough: it would cross the network in the clear (admin_tls.rs starts one
    // with TLS).
    let refused = Server::start(exposed(dir.path(), Some("t0ken"))).await;
    let Err(error @ ServerError::Admin(_)) = refused else {
        panic!("an exposed admin API without TLS must not start unless told");
    };
    let message = error.to_string();
    assert!(
        message.contains("admin.tls_certificate_location")
            && message.contains("admin.allow_plaintext = true"),
        "{message}"
    );

    let mut told = exposed(dir.path(), Some("t0ken"));
    told.admin.allow_plaintext = true;
    let server = Server::start(told).await.expect("starts");
    assert!(server.admin_addr().ip().is_unspecified());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn bodies_over_the_caps_are_413() {
    let host = TestHost::with_config(|c| {
        c.registry.max_module_bytes = 4096;
        c.admin.max_json_bytes = 256;
    })
    .await;
    let admin = Admin::new(&host);
    let upload = admin
        .send(Method::PUT, "/v1/modules/big", Some(vec![0; 8192]))
        .await;
    assert_eq!(
        (upload.0, code(&upload)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    assert!(
        upload.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096")
    );
    let scenario = json!({ "module": "range", "scenario": { "topics": [], "members": [
        { "id": "x".repeat(300), "subscription": [] } ] } });
    let simulate = admin.json(Method::POST, "/v1/simulate", scenario).await;
    assert_eq!(
        (simulate.0, code(&simulate)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    host.stop().await;
}

#[tokio::test]
async fn bad_bytes_bad_json_and_unknown_names_are_refused_in_one_shape() {
    let host = TestHost::start().await;
    let admin = Admin::new(&host);
    let not_wasm = admin
        .send(
            Method::PUT,
            "/v1/modules/mine",
            Some(b"\x00asm nope".to_vec()),
        )
        .await;
    assert_eq!(
        (not_wasm.0, code(&not_wasm)),
        (StatusCode::UNPROCESSABLE_ENTITY, "module_refused")
    );
    assert_eq!(not_wasm.1["error"]["check"], "compile");

    let malformed = admin
        .send(
            Method::POST,
            "/v1/modules/range/activate",
            Some(b"{version: 1}".to_vec()),
        )
        .await;
    assert_eq!(
        (malformed.0, code(&malformed)),
        (StatusCode::BAD_REQUEST, "malformed_json")
    );

    let module = admin.get("/v1/modules/nope").await;
    assert_eq!(
        (module.0, code(&module)),
        (StatusCode::NOT_FOUND, "module_not_found")
    );
    let version = admin
        .json(
            Method::POST,
            "/v1/modules/range/activate",
            json!({"version": 5}),
        )
        .await;
    assert_eq!(
        (version.0, code(&version)),
        (StatusCode::NOT_FOUND, "version_not_found")
    );
    let group = admin.get("/v1/groups/nobody").await;
    assert_eq!(
        (group.0, code(&group)),
        (StatusCode::NOT_FOUND, "group_not_found")
    );
    let topic = admin.get("/v1/topics/none").await;
    assert_eq!(
        (topic.0, code(&topic)),
        (StatusCode::NOT_FOUND, "topic_not_found")
    );

    admin
        .push(
            "mine",
            assignor_host::builtins::builtin("range").unwrap().wasm,
        )
        .await;
    let active = admin
        .send(Method::DELETE, "/v1/modules/mine/versions/1", None)
        .await;
    assert_eq!(
        (active.0, code(&active)),
        (StatusCode::CONFLICT, "active_version")
    );
    host.stop().await;
}

/// `..` and `.` as a module name: a URL client resolves those path segments away, so the only
/// way to send them is percent-encoded on a raw socket. The host decodes them and refuses the
/// name rather than storing a module no URL could ever reach again.
#[tokio::test]
async fn dot_segment_module_names_are_400_invalid_name() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = TestHost::start().await;
    for encoded in ["%2E%2E", "%2e"] {
        let mut socket = tokio::net::TcpStream::connect(host.server().admin_addr())
            .await
            .unwrap();
        let body = b"\x00asm\x01\x00\x00\x00";
        let head = format!(
            "PUT /v1/modules/{encoded} HTTP/1.1\r\nHost: host\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(body).await.unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{encoded}: {answer}");
        assert!(answer.contains("\"invalid_name\""), "{encoded}: {answer}");
        assert!(answer.contains("URL path"), "{encoded}: {answer}");
    }
    let modules = Admin::new(&host).get("/v1/modules").await;
    let names: Vec<&str> = modules.1["modules"]
        .as_array()
        .expect("a module list")
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with('.')), "{names:?}");
    host.stop().await;
}
