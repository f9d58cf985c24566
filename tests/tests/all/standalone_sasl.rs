//! Standalone's own authentication (`kafka.authentication = "local"`): users made through the
//! admin API log in by SCRAM-SHA-256 or -512 (and PLAIN, only where the port speaks TLS);
//! nothing but ApiVersions, SaslHandshake and SaslAuthenticate is answered before; a wrong
//! password, an unknown user, an unknown mechanism and SaslHandshake v0 are refused with Kafka's
//! codes and the connection closed; a session of `kafka.connections_max_reauth` ends at the
//! next request unless the client re-authenticated (KIP-368), as the same principal.
//!
//! Two SCRAM clients: rsasl's driven over a raw connection (to see each answer, and to
//! re-authenticate on the same connection), and the host's own upstream connection type. Real
//! clients (librdkafka, Java, ...) are in `tests/clients/test_standalone_sasl.py`.

use std::time::Duration;

use assignor_host::config::Config;
use assignor_host::kafka::Authentication;
use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host_tests::{KafkaClient, TestHost, str};
use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest,
};
use reqwest::{Method, StatusCode};
use rsasl::prelude::{Mechname, SASLClient, SASLConfig, State};
use serde_json::json;

use super::admin_support::{Admin, sample};
use super::kafka_tls::{certificates, connect, install, tls_settings};
use super::proxy_support::login;

fn local(config: &mut Config) {
    config.kafka.authentication = Some(Authentication::Local);
}

/// A host authenticating its own users: alice (SCRAM-SHA-512) and bob (SCRAM-SHA-256), made
/// through the admin API.
async fn host_with_users(edit: impl FnOnce(&mut Config)) -> TestHost {
    let host = TestHost::with_config(|config| {
        local(config);
        edit(config);
    })
    .await;
    let admin = Admin::new(&host);
    for (user, mechanism, password) in [
        ("alice", "SCRAM-SHA-512", "alice-secret"),
        ("bob", "SCRAM-SHA-256", "bob-secret"),
    ] {
        let (status, body) = admin
            .json(
                Method::PUT,
                &format!("/v1/users/{user}"),
                json!({ "mechanism": mechanism, "password": password }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    host
}

/// SaslHandshake v1 then SaslAuthenticate v2 steps by rsasl's SCRAM client, on `client`'s own
/// connection: the last answer (an error, or the server-final the client verified).
async fn scram(
    client: &mut KafkaClient,
    mechanism: &str,
    user: &str,
    password: &str,
) -> SaslAuthenticateResponse {
    let handshake = client
        .call(
            &SaslHandshakeRequest::default().with_mechanism(str(mechanism)),
            1,
        )
        .await
        .unwrap();
    assert_eq!(handshake.error_code, 0, "SaslHandshake {mechanism}");
    let config = SASLConfig::with_credentials(None, user.into(), password.into()).unwrap();
    let mut session = SASLClient::new(config)
        .start_suggested(&[Mechname::parse(mechanism.as_bytes()).unwrap()])
        .unwrap();
    let mut out = Vec::new();
    session.step(None, &mut out).unwrap();
    loop {
        let answer = client
            .call(
                &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(out.clone())),
                2,
            )
            .await
            .unwrap();
        if answer.error_code != 0 {
            return answer;
        }
        out.clear();
        let state = session.step(Some(&answer.auth_bytes), &mut out).unwrap();
        if matches!(state, State::Finished(_)) {
            return answer;
        }
    }
}

fn metadata() -> MetadataRequest {
    MetadataRequest::default().with_topics(Some(Vec::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_log_in_by_scram_and_nothing_else_is_answered_before() {
    let host = host_with_users(|_| {}).await;

    // ApiVersions before authentication lists the SASL keys.
    let mut client = KafkaClient::connect(host.addr()).await.unwrap();
    let versions = client
        .call(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    let range = |key: ApiKey| {
        versions
            .api_keys
            .iter()
            .find(|k| k.api_key == key as i16)
            .map(|k| (k.min_version, k.max_version))
    };
    assert_eq!(range(ApiKey::SaslHandshake), Some((0, 1)), "{versions:?}");
    assert_eq!(range(ApiKey::SaslAuthenticate), Some((0, 2)));

    // Each user by the mechanism it holds, then served.
    let answer = scram(&mut client, "SCRAM-SHA-512", "alice", "alice-secret").await;
    assert_eq!(
        (answer.error_code, answer.session_lifetime_ms),
        (0, 0),
        "{answer:?}"
    );
    let served = client.call(&metadata(), 9).await.unwrap();
    assert_eq!(served.cluster_id.as_deref(), Some("assignor-host"));
    // A group request too (d4a4886 refused every one of a local user's: it asked an upstream
    // that standalone does not have, found by the real clients' suite).
    let found = client
        .call(
            &FindCoordinatorRequest::default()
                .with_key(str("local-group"))
                .with_key_type(0),
            3,
        )
        .await
        .unwrap();
    assert_eq!(found.error_code, 0, "{found:?}");
    let mut bob = KafkaClient::connect(host.addr()).await.unwrap();
    assert_eq!(
        scram(&mut bob, "SCRAM-SHA-256", "bob", "bob-secret")
            .await
            .error_code,
        0
    );
    // The host's own client type (rsasl too, through ApiVersions and the handshake as it
    // logs in to Kafka).
    login(&host, SaslMechanism::ScramSha512, "alice", "alice-secret")
        .await
        .unwrap_or_else(|e| panic!("alice by SCRAM-SHA-512: {e}"));

    // Anything else before authentication closes the connection unanswered.
    let mut early = KafkaClient::connect(host.addr()).await.unwrap();
    early.send(&metadata(), 9).await.unwrap();
    assert!(early.is_closed_by_host().await.unwrap());

    let metrics = Admin::new(&host).scrape().await;
    let logins = |mechanism: &str, result: &str| {
        sample(
            &metrics,
            &format!(
                "assignor_host_client_authentications_total{{mechanism=\"{mechanism}\",result=\"{result}\"}}"
            ),
        )
    };
    assert_eq!(logins("SCRAM-SHA-512", "success"), 2.0, "{metrics}");
    assert_eq!(logins("SCRAM-SHA-256", "success"), 1.0, "{metrics}");
    assert_eq!(
        sample(
            &metrics,
            "assignor_host_client_connections_closed_total{reason=\"unauthenticated\"}"
        ),
        1.0,
        "{metrics}"
    );
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_unknown_mechanisms_and_handshake_v0_are_refused_and_closed() {
    let host = host_with_users(|_| {}).await;
    let refused = "Authentication failed during authentication due to invalid credentials with \
                   SASL mechanism SCRAM-SHA-512";
    for (user, password) in [
        ("alice", "wrong"),
        ("nobody", "alice-secret"),
        ("bob", "bob-secret"),
    ] {
        let mut client = KafkaClient::connect(host.addr()).await.unwrap();
        let answer = scram(&mut client, "SCRAM-SHA-512", user, password).await;
        assert_eq!(answer.error_code, 58, "{user}: {answer:?}");
        assert_eq!(answer.error_message.as_deref(), Some(refused), "{user}");
        assert!(client.is_closed_by_host().await.unwrap(), "{user}");
    }
    let error = login(&host, SaslMechanism::ScramSha512, "alice", "wrong")
        .await
        .err();
    assert!(
        error.as_deref().is_some_and(|e| e.contains(refused)),
        "{error:?}"
    );

    // PLAIN is not offered on a plaintext port, nor GSSAPI anywhere: 33, the offered list.
    for mechanism in ["PLAIN", "GSSAPI"] {
        let mut client = KafkaClient::connect(host.addr()).await.unwrap();
        let answer = client
            .call(
                &SaslHandshakeRequest::default().with_mechanism(str(mechanism)),
                1,
            )
            .await
            .unwrap();
        assert_eq!(answer.error_code, 33, "{mechanism}");
        let offered: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
        assert_eq!(offered, ["SCRAM-SHA-256", "SCRAM-SHA-512"], "{mechanism}");
        assert!(client.is_closed_by_host().await.unwrap(), "{mechanism}");
    }
    // SaslHandshake v0 (unframed tokens after it): 35, closed.
    let mut client = KafkaClient::connect(host.addr()).await.unwrap();
    let answer = client
        .call(
            &SaslHandshakeRequest::default().with_mechanism(str("SCRAM-SHA-512")),
            0,
        )
        .await
        .unwrap();
    assert_eq!(answer.error_code, 35);
    assert!(client.is_closed_by_host().await.unwrap());
    // SaslAuthenticate with no handshake before it: 34 ILLEGAL_SASL_STATE, closed.
    let mut client = KafkaClient::connect(host.addr()).await.unwrap();
    let answer = client
        .call(
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"n,,n=alice")),
            2,
        )
        .await
        .unwrap();
    assert_eq!(answer.error_code, 34);
    assert!(client.is_closed_by_host().await.unwrap());

    let metrics = Admin::new(&host).scrape().await;
    assert_eq!(
        sample(
            &metrics,
            "assignor_host_client_authentications_total{mechanism=\"SCRAM-SHA-512\",result=\"failure\"}"
        ),
        4.0,
        "{metrics}"
    );
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_at_connections_max_reauth_unless_renewed_as_the_same_user() {
    // Long enough that a loaded machine's pauses do not reach the margins below (a quarter of it).
    let lifetime = Duration::from_millis(3000);
    let host = host_with_users(|config| config.kafka.connections_max_reauth = lifetime).await;

    // Told the lifetime; a request after it closes the connection.
    let mut client = KafkaClient::connect(host.addr()).await.unwrap();
    let answer = scram(&mut client, "SCRAM-SHA-512", "alice", "alice-secret").await;
    assert_eq!((answer.error_code, answer.session_lifetime_ms), (0, 3000));
    client.call(&metadata(), 9).await.unwrap();
    tokio::time::sleep(lifetime + Duration::from_millis(300)).await;
    client.send(&metadata(), 9).await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap());

    // Re-authenticated on the same connection before the end: served past the first lifetime.
    let mut client = KafkaClient::connect(host.addr()).await.unwrap();
    scram(&mut client, "SCRAM-SHA-512", "alice", "alice-secret").await;
    tokio::time::sleep(lifetime * 2 / 5).await;
    let again = scram(&mut client, "SCRAM-SHA-512", "alice", "alice-secret").await;
    assert_eq!((again.error_code, again.session_lifetime_ms), (0, 3000));
    tokio::time::sleep(lifetime * 3 / 4).await;
    let served = client.call(&metadata(), 9).await.unwrap();
    assert_eq!(served.cluster_id.as_deref(), Some("assignor-host"));

    // Re-authenticating as someone else is refused, and closes.
    let other = scram(&mut client, "SCRAM-SHA-256", "bob", "bob-secret").await;
    assert_eq!(other.error_code, 58);
    assert_eq!(
        other.error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User:alice: User:bob")
    );
    assert!(client.is_closed_by_host().await.unwrap());

    let metrics = Admin::new(&host).scrape().await;
    assert_eq!(
        sample(
            &metrics,
            "assignor_host_client_connections_closed_total{reason=\"expired\"}"
        ),
        1.0,
        "{metrics}"
    );
    assert_eq!(
        sample(
            &metrics,
            "assignor_host_client_reauthentications_total{mechanism=\"SCRAM-SHA-512\"}"
        ),
        1.0,
        "{metrics}"
    );
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_is_offered_over_tls_and_checks_the_scram_credential() {
    let dir = tempfile::tempdir().unwrap();
    let tls = certificates(&dir.path().join("ca"));
    let (cert, key) = install(&tls, dir.path());
    let host = host_with_users(|config| tls_settings(config, &cert, &key)).await;
    let addr = host.addr().to_string();
    let mut client = connect(
        &addr,
        &tls,
        None,
        Some((SaslMechanism::Plain, "alice", "alice-secret")),
    )
    .await
    .unwrap_or_else(|e| panic!("alice by PLAIN over TLS: {e}"));
    let served = client.call(&metadata(), 9).await.unwrap();
    assert_eq!(served.cluster_id.as_deref(), Some("assignor-host"));
    let error = connect(
        &addr,
        &tls,
        None,
        Some((SaslMechanism::Plain, "alice", "bob-secret")),
    )
    .await
    .err();
    assert!(
        error.as_deref().is_some_and(|e| e.contains(
            "Authentication failed during authentication due to invalid credentials with SASL \
             mechanism PLAIN"
        )),
        "{error:?}"
    );
    connect(
        &addr,
        &tls,
        None,
        Some((SaslMechanism::ScramSha256, "bob", "bob-secret")),
    )
    .await
    .unwrap_or_else(|e| panic!("bob by SCRAM-SHA-256 over TLS: {e}"));
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_are_kept_across_a_restart_and_managed_by_the_admin_api() {
    let keep = tempfile::tempdir().unwrap();
    let path = keep.path().to_path_buf();
    let host = host_with_users(|config| config.data_dir = path.clone()).await;
    let admin = Admin::new(&host);
    let (status, listed) = admin.get("/v1/users").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        listed,
        json!({ "users": [
            { "name": "alice", "credentials": [{ "mechanism": "SCRAM-SHA-512", "iterations": 4096 }] },
            { "name": "bob", "credentials": [{ "mechanism": "SCRAM-SHA-256", "iterations": 4096 }] },
        ]})
    );
    // A new password for alice, at more iterations: 200 (not created).
    let (status, body) = admin
        .json(
            Method::PUT,
            "/v1/users/alice",
            json!({ "mechanism": "SCRAM-SHA-512", "password": "new-secret", "iterations": 8192 }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["created"], json!(false));
    // Refusals name what is wrong.
    for (body, needle) in [
        (
            json!({ "mechanism": "SCRAM-SHA-1", "password": "x" }),
            "unknown mechanism",
        ),
        (
            json!({ "mechanism": "SCRAM-SHA-256", "password": "x", "iterations": 10 }),
            "outside Kafka's range",
        ),
        (
            json!({ "mechanism": "SCRAM-SHA-256", "password": "" }),
            "password is empty",
        ),
    ] {
        let (status, answer) = admin.json(Method::PUT, "/v1/users/carol", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer.to_string().contains(needle), "{answer}");
    }
    let (status, answer) = admin
        .json(
            Method::PUT,
            "/v1/users/a%3Db",
            json!({ "mechanism": "SCRAM-SHA-256", "password": "x" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let (status, removed) = admin
        .send(
            Method::DELETE,
            "/v1/users/bob?mechanism=SCRAM-SHA-256",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(
        removed,
        json!({ "name": "bob", "removed": ["SCRAM-SHA-256"] })
    );
    let (status, _) = admin.send(Method::DELETE, "/v1/users/bob", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Restarted on the same store: alice's new password logs in, the old one and bob do not.
    host.stop().await;
    let host = TestHost::with_config(|config| {
        local(config);
        config.data_dir = path.clone();
    })
    .await;
    login(&host, SaslMechanism::ScramSha512, "alice", "new-secret")
        .await
        .unwrap_or_else(|e| panic!("alice's new password after a restart: {e}"));
    assert!(
        login(&host, SaslMechanism::ScramSha512, "alice", "alice-secret")
            .await
            .is_err()
    );
    assert!(
        login(&host, SaslMechanism::ScramSha256, "bob", "bob-secret")
            .await
            .is_err()
    );
    let (_, listed) = Admin::new(&host).get("/v1/users").await;
    assert_eq!(
        listed,
        json!({ "users": [
            { "name": "alice", "credentials": [{ "mechanism": "SCRAM-SHA-512", "iterations": 8192 }] },
        ]})
    );
    host.stop().await;
}
