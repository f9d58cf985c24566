//! TLS on the admin API (`admin.tls_certificate_location`): the API speaks HTTPS only, the
//! CLI's client reaches it trusting `--admin-ca` and refuses it without, a client that opens a
//! socket and says nothing holds up nobody, a rotated certificate serves the next
//! connections, and a listener beyond loopback starts with a token and TLS. (Node-to-node
//! forwarding over HTTPS is exercised by the cluster tests of the real-client suite, whose
//! nodes' admin APIs speak TLS.)
//!
//! Certificates: the Kafka harness's (`kafka_harness::Tls`, made by `openssl`: a CA and a
//! server certificate for 127.0.0.1).

use std::net::SocketAddr;
use std::path::Path;

use assignor_host::cli::AdminClient;
use assignor_host::config::Config;
use assignor_host::server::Server;
use assignor_host_tests::TestHost;
use reqwest::StatusCode;

use super::admin_support::Admin;
use super::kafka_tls::{certificates, install};

const TOKEN: &str = "t0ken";

fn admin_tls(config: &mut Config, cert: &Path, key: &Path) {
    config.admin.tls_certificate_location = Some(cert.to_path_buf());
    config.admin.tls_key_location = Some(key.to_path_buf());
    config.admin.token = Some(TOKEN.into());
}

fn https(host: &TestHost) -> String {
    format!("https://{}", host.server().admin_addr())
}

/// The error's whole chain, as an operator would read it.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn with_tls_the_api_speaks_https_only_and_checks_nothing_else_differently() {
    let dir = tempfile::tempdir().unwrap();
    let tls = certificates(&dir.path().join("ca"));
    let (cert, key) = install(&tls, dir.path());
    let host = TestHost::with_config(|config| admin_tls(config, &cert, &key)).await;

    // HTTPS trusting the CA: the API, with its token rule unchanged.
    let admin = Admin::at(https(&host), Some(&tls.ca));
    assert_eq!(
        admin.get("/v1/modules").await.0,
        StatusCode::UNAUTHORIZED,
        "no token"
    );
    let (status, modules) = admin.with_token(TOKEN).get("/v1/modules").await;
    assert_eq!(status, StatusCode::OK, "{modules}");
    assert!(
        modules.to_string().contains("\"range\""),
        "the built-ins listed: {modules}"
    );

    // Plain HTTP to the same port gets no HTTP answer.
    let plain = assignor_host::tls::http_client(None, "none")
        .unwrap()
        .build()
        .unwrap()
        .get(format!("{}/v1/modules", host.admin_url()))
        .send()
        .await;
    assert!(
        plain.is_err(),
        "a plaintext request must get no answer from a TLS port: {plain:?}"
    );

    // Without the CA (the system's bundle only), the certificate is refused.
    let refused = untrusted_get(&untrusted_client(), &https(&host)).await;
    assert!(
        refused.contains("certificate") || refused.contains("UnknownIssuer"),
        "refused for its certificate: {refused}"
    );

    // The CLI's client, as `--admin https://... --admin-ca CA --token T` builds it.
    let cli = AdminClient::new(&https(&host), Some(TOKEN.into()), Some(&tls.ca)).unwrap();
    assert_eq!(cli.get("/v1/modules").await.unwrap(), modules);
    let cli = AdminClient::new(&https(&host), Some(TOKEN.into()), None).unwrap();
    let refused = cli.get("/v1/modules").await.unwrap_err().to_string();
    assert!(
        refused.contains("certificate") || refused.contains("UnknownIssuer"),
        "the CLI says why: {refused}"
    );
    host.stop().await;
}

fn untrusted_client() -> reqwest::Client {
    assignor_host::tls::http_client(None, "none")
        .unwrap()
        .build()
        .unwrap()
}

async fn untrusted_get(client: &reqwest::Client, base: &str) -> String {
    match client.get(format!("{base}/healthz")).send().await {
        Ok(answer) => panic!("answered without a trusted certificate: {answer:?}"),
        Err(error) => chain(&error),
    }
}

#[tokio::test]
async fn a_silent_client_holds_up_nobody_and_a_rotated_certificate_serves_the_next_connections() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (
        certificates(&dir.path().join("a")),
        certificates(&dir.path().join("b")),
    );
    let (cert, key) = install(&first, dir.path());
    let host = TestHost::with_config(|config| admin_tls(config, &cert, &key)).await;

    // A socket that never starts its handshake: the next client is served all the same.
    let _silent = tokio::net::TcpStream::connect(host.server().admin_addr())
        .await
        .unwrap();
    let healthz = |ca: &Path| Admin::at(https(&host), Some(ca));
    assert_eq!(healthz(&first.ca).get("/healthz").await.0, StatusCode::OK);

    // Rotated: new connections get the second certificate, and the first CA no longer fits.
    install(&second, dir.path());
    assert_eq!(healthz(&second.ca).get("/healthz").await.0, StatusCode::OK);
    let stale = assignor_host::tls::http_client(Some(&first.ca), "first CA")
        .unwrap()
        .build()
        .unwrap();
    let refused = untrusted_get(&stale, &https(&host)).await;
    assert!(refused.contains("certificate"), "{refused}");
    host.stop().await;
}

#[tokio::test]
async fn beyond_loopback_the_api_starts_with_a_token_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let tls = certificates(&dir.path().join("ca"));
    let (cert, key) = install(&tls, dir.path());
    let mut config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    config.kafka.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.admin.listen = SocketAddr::from(([0, 0, 0, 0], 0));
    admin_tls(&mut config, &cert, &key);
    let server = Server::start(config).await.expect("starts");
    let base = format!("https://127.0.0.1:{}", server.admin_addr().port());
    let (status, _) = Admin::at(base, Some(&tls.ca))
        .with_token(TOKEN)
        .get("/v1/modules")
        .await;
    assert_eq!(status, StatusCode::OK);
    server.shutdown().await.unwrap();
}
