//! The host's own connection against Apache Kafka's SASL_SSL listener (tests/kafka: a CA made
//! at start, PLAIN and SCRAM-SHA-512 users), and the security settings' checks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::MetadataRequest;

use super::security::{SaslMechanism, Secret, SecurityProtocol, SecuritySettings};
use super::{Connection, ConnectionError, Security};

const TIMEOUT: Duration = Duration::from_secs(20);

fn sasl_ssl(
    kafka: &kafka_harness::KafkaCluster,
    mechanism: SaslMechanism,
    user: &str,
    password: &str,
) -> SecuritySettings {
    SecuritySettings {
        security_protocol: SecurityProtocol::SaslSsl,
        sasl_mechanism: Some(mechanism),
        sasl_username: Some(user.to_owned()),
        sasl_password: Some(Secret::new(password.to_owned())),
        ssl_ca_location: Some(kafka.state().tls.ca.clone()),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    }
}

async fn open(
    kafka: &kafka_harness::KafkaCluster,
    settings: &SecuritySettings,
    listener: std::net::SocketAddr,
) -> Result<Connection, ConnectionError> {
    let security = Security::load(settings).expect("settings load");
    let _ = kafka;
    Connection::open(&listener.to_string(), &security, TIMEOUT).await
}

/// Node ids of a Metadata answer on `connection`.
async fn brokers(connection: &mut Connection) -> Vec<i32> {
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    let answer = connection
        .call(&request, 4)
        .await
        .expect("Metadata answered");
    answer.brokers.iter().map(|b| b.node_id.0).collect()
}

#[tokio::test]
async fn scram_sha_512_over_tls_logs_in_and_the_broker_answers() {
    let kafka = kafka_harness::shared_async().await;
    let node = &kafka.nodes()[0];
    let settings = sasl_ssl(kafka, SaslMechanism::ScramSha512, "admin", "admin-secret");
    let mut connection = open(kafka, &settings, node.sasl_ssl)
        .await
        .unwrap_or_else(|e| panic!("SCRAM-SHA-512 over TLS: {e}"));
    // ApiVersions came first: the versions are Kafka 4.4's.
    assert!(
        connection.version(3, (0, 12)).is_some(),
        "Metadata versions"
    );
    assert_eq!(brokers(&mut connection).await, vec![node.node_id]);
    // Kafka's default `connections.max.reauth.ms` is 0: no lifetime, never expired.
    assert_eq!(connection.renew_in(), None);
    assert!(!connection.expired());
}

#[tokio::test]
async fn a_session_the_broker_bounds_is_due_for_renewal_before_the_broker_closes_it() {
    // A node whose SASL sessions last 8 s (KIP-368): its last SaslAuthenticate answer says so,
    // and the connection is due for a new one 5 s (REAUTH_MARGIN) before.
    let setup = kafka_harness::Setup::default().config("connections.max.reauth.ms", 8000);
    let kafka = kafka_harness::start_async(setup)
        .await
        .unwrap_or_else(|e| panic!("starting a Kafka node: {e:#}"));
    for mechanism in [SaslMechanism::ScramSha512, SaslMechanism::Plain] {
        let settings = sasl_ssl(&kafka, mechanism, "alice", "alice-secret");
        let connection = open(&kafka, &settings, kafka.nodes()[0].sasl_ssl)
            .await
            .unwrap_or_else(|e| panic!("{mechanism:?}: {e}"));
        let renew_in = connection.renew_in();
        assert!(
            renew_in.is_some_and(|d| d <= Duration::from_secs(3)),
            "{mechanism:?}: renew in {renew_in:?}"
        );
    }
}

#[tokio::test]
async fn plain_over_tls_logs_in_and_the_broker_answers() {
    let kafka = kafka_harness::shared_async().await;
    let node = &kafka.nodes()[0];
    let settings = sasl_ssl(kafka, SaslMechanism::Plain, "alice", "alice-secret");
    let mut connection = open(kafka, &settings, node.sasl_ssl)
        .await
        .unwrap_or_else(|e| panic!("PLAIN over TLS: {e}"));
    assert_eq!(brokers(&mut connection).await, vec![node.node_id]);
}

#[tokio::test]
async fn a_client_certificate_and_key_load_as_a_pair_and_the_login_goes_on_with_them() {
    let kafka = kafka_harness::shared_async().await;
    let tls = &kafka.state().tls;
    let mut settings = sasl_ssl(kafka, SaslMechanism::ScramSha512, "alice", "alice-secret");
    settings.ssl_certificate_location = Some(tls.client_cert.clone());
    settings.ssl_key_location = Some(tls.client_key.clone());
    let mut connection = open(kafka, &settings, kafka.nodes()[0].sasl_ssl)
        .await
        .unwrap_or_else(|e| panic!("with alice's certificate: {e}"));
    assert_eq!(brokers(&mut connection).await.len(), 1);
}

#[tokio::test]
async fn an_expired_client_certificate_is_refused_naming_ssl_certificate_location() {
    let kafka = kafka_harness::shared_async().await;
    let tls = &kafka.state().tls;
    // Signed by the cluster's own CA, valid for 0 days: expired once its second has passed.
    let (cert, key) = tls
        .sign(
            "expired-client",
            "/O=assignor-host tests/CN=expired-client",
            "extendedKeyUsage=clientAuth\n",
            0,
        )
        .expect("openssl signs a certificate");
    let expired = || {
        std::process::Command::new("openssl")
            .args(["x509", "-checkend", "0", "-noout", "-in"])
            .arg(&cert)
            .stdout(std::process::Stdio::null())
            .status()
            .map(|s| !s.success())
            .unwrap_or(false)
    };
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !expired() {
        assert!(
            std::time::Instant::now() < until,
            "{} never expired",
            cert.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let settings = SecuritySettings {
        security_protocol: SecurityProtocol::Ssl,
        ssl_ca_location: Some(tls.ca.clone()),
        ssl_certificate_location: Some(cert),
        ssl_key_location: Some(key),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    };
    // Kafka's SSL listener asks for a client certificate and checks the one it is given.
    let error = open(kafka, &settings, kafka.nodes()[0].ssl)
        .await
        .err()
        .expect("an expired client certificate was accepted");
    // Under TLS 1.3 Kafka's refusal (an alert) comes after the handshake, on the first
    // request: still a refusal naming the setting, not a broken connection.
    let text = error.to_string();
    assert!(matches!(error, ConnectionError::Tls { .. }), "{error:?}");
    assert!(
        text.contains("upstream.ssl_certificate_location"),
        "{error:?}: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_certificate_without_the_address_is_refused_naming_endpoint_identification() {
    // A CA of the test's own, and a broker certificate from it naming only kafka.invalid, on
    // the SSL listener of a Kafka node of the test's own.
    let dir = tempfile::tempdir().unwrap();
    let own = kafka_harness::Tls::make(dir.path()).expect("openssl makes a CA");
    let (cert, key) = own
        .sign(
            "elsewhere",
            "/CN=kafka.invalid",
            "subjectAltName=DNS:kafka.invalid\nextendedKeyUsage=serverAuth\n",
            30,
        )
        .expect("openssl signs a certificate");
    let keystore = dir.path().join("elsewhere-keystore.pem");
    let parts = [&key, &cert, &own.ca].map(|p| std::fs::read_to_string(p).unwrap());
    std::fs::write(&keystore, parts.concat()).unwrap();
    let setup = kafka_harness::Setup {
        config: [(
            "listener.name.ssl.ssl.keystore.location".to_owned(),
            keystore.display().to_string(),
        )]
        .into(),
        ..kafka_harness::Setup::default()
    };
    let kafka = kafka_harness::start_async(setup)
        .await
        .unwrap_or_else(|e| panic!("starting a Kafka node: {e:#}"));
    let mut settings = SecuritySettings {
        security_protocol: SecurityProtocol::Ssl,
        ssl_ca_location: Some(own.ca.clone()),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    };
    let listener = kafka.nodes()[0].ssl;
    let error = open(&kafka, &settings, listener)
        .await
        .err()
        .expect("a certificate for kafka.invalid was taken for 127.0.0.1");
    let text = error.to_string();
    assert!(matches!(error, ConnectionError::Tls { .. }), "{text}");
    assert!(
        text.contains("does not name the address")
            && text.contains("upstream.ssl_endpoint_identification"),
        "{text}"
    );
    // With the name unchecked (the chain and the dates still are) the same broker answers.
    settings.ssl_endpoint_identification = false;
    let mut connection = open(&kafka, &settings, listener)
        .await
        .unwrap_or_else(|e| panic!("without endpoint identification: {e}"));
    assert_eq!(brokers(&mut connection).await, [1]);
}

#[tokio::test]
async fn a_wrong_password_is_refused_with_kafkas_error_and_the_settings_to_check() {
    let kafka = kafka_harness::shared_async().await;
    for mechanism in [SaslMechanism::ScramSha512, SaslMechanism::Plain] {
        let settings = sasl_ssl(kafka, mechanism, "alice", "not-alices-password");
        let error = open(kafka, &settings, kafka.nodes()[0].sasl_ssl)
            .await
            .err()
            .unwrap_or_else(|| panic!("{mechanism:?}: a wrong password logged in"));
        let text = error.to_string();
        assert!(
            matches!(error, ConnectionError::Sasl { .. }) && error.is_refusal(),
            "{mechanism:?}: {text}"
        );
        assert!(
            text.contains("SaslAuthenticationFailed (58)")
                && text.contains("upstream.sasl_username"),
            "{mechanism:?}: {text}"
        );
        assert!(
            !text.contains("not-alices-password"),
            "the password in: {text}"
        );
    }
}

#[tokio::test]
async fn a_mechanism_the_listener_does_not_enable_is_refused_naming_sasl_mechanism() {
    let kafka = kafka_harness::shared_async().await;
    // The listener enables PLAIN and SCRAM-SHA-512.
    let settings = sasl_ssl(kafka, SaslMechanism::ScramSha256, "alice", "alice-secret");
    let error = open(kafka, &settings, kafka.nodes()[0].sasl_ssl)
        .await
        .err()
        .expect("SCRAM-SHA-256 logged in");
    let text = error.to_string();
    assert!(
        text.contains("does not enable SCRAM-SHA-256")
            && text.contains("SCRAM-SHA-512")
            && text.contains("upstream.sasl_mechanism"),
        "{text}"
    );
}

#[tokio::test]
async fn a_ca_that_did_not_sign_the_brokers_certificate_is_refused_naming_ssl_ca_location() {
    let kafka = kafka_harness::shared_async().await;
    let mut settings = sasl_ssl(kafka, SaslMechanism::ScramSha512, "alice", "alice-secret");
    // alice's own certificate as the only trust anchor: it signed nothing.
    settings.ssl_ca_location = Some(kafka.state().tls.client_cert.clone());
    let error = open(kafka, &settings, kafka.nodes()[0].sasl_ssl)
        .await
        .err()
        .expect("a broker certificate from another CA was accepted");
    let text = error.to_string();
    assert!(matches!(error, ConnectionError::Tls { .. }), "{text}");
    assert!(text.contains("upstream.ssl_ca_location"), "{text}");
}

#[tokio::test]
async fn a_ca_file_rewritten_in_place_is_read_again_for_the_next_connection() {
    let kafka = kafka_harness::shared_async().await;
    let tls = &kafka.state().tls;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    // First the wrong anchor (alice's certificate), then the CA, as a rotation writes it.
    std::fs::copy(&tls.client_cert, &ca).unwrap();
    let mut settings = sasl_ssl(kafka, SaslMechanism::ScramSha512, "alice", "alice-secret");
    settings.ssl_ca_location = Some(ca.clone());
    let security = Security::load(&settings).unwrap();
    let addr = kafka.nodes()[0].sasl_ssl.to_string();
    let error = Connection::open(&addr, &security, TIMEOUT)
        .await
        .err()
        .expect("the wrong anchor refused");
    assert!(matches!(error, ConnectionError::Tls { .. }), "{error}");
    assert!(security.health.refused().is_some());

    std::fs::copy(&tls.ca, &ca).unwrap();
    // A modification time of its own, whatever the file system's clock granularity.
    let later = std::time::SystemTime::now() + Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(&ca)
        .and_then(|f| f.set_modified(later))
        .unwrap();
    let mut connection = Connection::open(&addr, &security, TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("after the CA file changed: {e}"));
    assert_eq!(brokers(&mut connection).await.len(), 1);
    assert_eq!(security.health.refused(), None, "the refusal is mended");
}

#[tokio::test]
async fn tls_to_a_plaintext_listener_fails_saying_the_listener_may_not_be_tls() {
    let kafka = kafka_harness::shared_async().await;
    let settings = SecuritySettings {
        security_protocol: SecurityProtocol::Ssl,
        ssl_ca_location: Some(kafka.state().tls.ca.clone()),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    };
    let error = open(kafka, &settings, kafka.nodes()[0].plaintext)
        .await
        .err()
        .expect("TLS to the PLAINTEXT listener");
    let text = error.to_string();
    assert!(matches!(error, ConnectionError::Tls { .. }), "{text}");
    assert!(text.contains("security_protocol"), "{text}");
}

#[tokio::test]
async fn sasl_to_a_listener_without_sasl_is_refused_naming_security_protocol() {
    let kafka = kafka_harness::shared_async().await;
    let settings = SecuritySettings {
        security_protocol: SecurityProtocol::SaslPlaintext,
        sasl_mechanism: Some(SaslMechanism::Plain),
        sasl_username: Some("alice".into()),
        sasl_password: Some(Secret::new("alice-secret".into())),
        ..SecuritySettings::default()
    };
    let error = open(kafka, &settings, kafka.nodes()[0].plaintext)
        .await
        .err()
        .expect("SASL on the PLAINTEXT listener");
    let text = error.to_string();
    assert!(error.is_refusal(), "{text}");
    assert!(text.contains("upstream.security_protocol"), "{text}");
}

#[tokio::test]
async fn oauthbearer_logs_in_with_the_token_its_file_holds_at_each_login() {
    let kafka = kafka_harness::shared_async().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, kafka_harness::unsigned_token("admin", 3600) + "\n").unwrap();
    let settings = SecuritySettings {
        security_protocol: SecurityProtocol::SaslSsl,
        sasl_mechanism: Some(SaslMechanism::OauthBearer),
        sasl_oauthbearer_token_file: Some(token.clone()),
        ssl_ca_location: Some(kafka.state().tls.ca.clone()),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    };
    let security = Security::load(&settings).unwrap();
    let addr = kafka.nodes()[0].sasl_ssl.to_string();
    let mut connection = Connection::open(&addr, &security, TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("OAUTHBEARER: {e}"));
    assert_eq!(brokers(&mut connection).await.len(), 1);

    // The file now holds an expired token: the next login presents it, and Kafka's refusal
    // comes back with its reason and the setting to look at.
    let expired = kafka_harness::unsigned_token("admin", -600);
    std::fs::write(&token, &expired).unwrap();
    let error = Connection::open(&addr, &security, TIMEOUT)
        .await
        .err()
        .expect("an expired token logged in");
    let text = error.to_string();
    assert!(error.is_refusal(), "{text}");
    assert!(
        text.contains("SaslAuthenticationFailed (58)")
            && text.contains("invalid_token")
            && text.contains("upstream.sasl_oauthbearer_token_file"),
        "{text}"
    );
    assert!(!text.contains(&expired), "the token in: {text}");
}

fn load(settings: SecuritySettings) -> Result<Arc<Security>, String> {
    Security::load(&settings)
}

#[test]
fn settings_that_contradict_the_protocol_are_refused_with_their_names() {
    let tls_without_tls = SecuritySettings {
        ssl_ca_location: Some(PathBuf::from("/ca.pem")),
        ..SecuritySettings::default()
    };
    let error = load(tls_without_tls).unwrap_err();
    assert!(
        error.contains("upstream.ssl_ca_location") && error.contains("security_protocol"),
        "{error}"
    );
    let sasl_without_sasl = SecuritySettings {
        sasl_username: Some("alice".into()),
        ..SecuritySettings::default()
    };
    let error = load(sasl_without_sasl).unwrap_err();
    assert!(error.contains("upstream.sasl_username"), "{error}");

    let sasl = |f: fn(&mut SecuritySettings)| {
        let mut s = SecuritySettings {
            security_protocol: SecurityProtocol::SaslPlaintext,
            sasl_mechanism: Some(SaslMechanism::Plain),
            sasl_username: Some("alice".into()),
            sasl_password: Some(Secret::new("pw".into())),
            ..SecuritySettings::default()
        };
        f(&mut s);
        load(s)
    };
    assert!(sasl(|_| {}).is_ok());
    let error = sasl(|s| s.sasl_mechanism = None).unwrap_err();
    assert!(error.contains("upstream.sasl_mechanism"), "{error}");
    let error = sasl(|s| s.sasl_username = None).unwrap_err();
    assert!(error.contains("upstream.sasl_username"), "{error}");
    let error = sasl(|s| s.sasl_password = None).unwrap_err();
    assert!(
        error.contains("sasl_password_file")
            && error.contains("ASSIGNOR_HOST_UPSTREAM__SASL_PASSWORD"),
        "{error}"
    );
    let error = sasl(|s| s.sasl_password_file = Some("/pw".into())).unwrap_err();
    assert!(error.contains("keep one"), "{error}");
    let error = sasl(|s| s.sasl_mechanism = Some(SaslMechanism::OauthBearer)).unwrap_err();
    assert!(
        error.contains("upstream.sasl_oauthbearer_token_file is not set"),
        "{error}"
    );
    let error = sasl(|s| s.sasl_oauthbearer_token_file = Some("/t".into())).unwrap_err();
    assert!(error.contains("set it to OAUTHBEARER"), "{error}");
    let error = sasl(|s| {
        s.sasl_password = None;
        s.sasl_password_file = Some("/nonexistent/pw".into());
    })
    .unwrap_err();
    assert!(
        error.contains("upstream.sasl_password_file /nonexistent/pw"),
        "{error}"
    );
}

#[test]
fn the_password_file_gives_its_first_line_and_the_password_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, "s3cret-line\nignored\n").unwrap();
    let security = load(SecuritySettings {
        security_protocol: SecurityProtocol::SaslPlaintext,
        sasl_mechanism: Some(SaslMechanism::ScramSha512),
        sasl_username: Some("alice".into()),
        sasl_password_file: Some(file),
        ..SecuritySettings::default()
    })
    .unwrap();
    let credentials = security.sasl.as_ref().unwrap();
    assert_eq!(credentials.password.expose(), "s3cret-line");
    let shown = format!("{security:?} {:?}", credentials.password);
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("SCRAM-SHA-512") && shown.contains("alice"),
        "{shown}"
    );
}

#[test]
fn a_ca_file_without_a_certificate_and_a_key_without_its_certificate_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let tls = |f: &dyn Fn(&mut SecuritySettings)| {
        let mut s = SecuritySettings {
            security_protocol: SecurityProtocol::Ssl,
            ssl_endpoint_identification: true,
            ..SecuritySettings::default()
        };
        f(&mut s);
        load(s)
    };
    let error = tls(&|s| s.ssl_ca_location = Some(empty.clone())).unwrap_err();
    assert!(
        error.contains("upstream.ssl_ca_location") && error.contains("no PEM certificate"),
        "{error}"
    );
    let error = tls(&|s| s.ssl_key_location = Some(empty.clone())).unwrap_err();
    assert!(
        error.contains("without ssl_certificate_location"),
        "{error}"
    );
}
