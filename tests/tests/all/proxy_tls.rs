//! Proxy mode in front of Apache Kafka's SSL listener (tests/kafka: a CA made at start): the
//! host's own connections (its Metadata reads, the groups' committed offsets, end offsets)
//! and every client's glued link speak TLS to the cluster, and what a client asks through the
//! host arrives; the cluster stopped and started again under a running host, whose calls and
//! links reconnect over TLS. And an upstream whose certificate the host cannot check: the
//! host's own calls fail with the reason, retriably for the client, and nothing reaches the
//! cluster.

use std::time::Instant;

use assignor_host::upstream::connection::SecurityProtocol;
use assignor_host_tests::proxy::{batch, fetch, produce, values};
use assignor_host_tests::{DEADLINE, KafkaClient, TestHost};
use kafka_harness::{KafkaCluster, Setup};
use kafka_protocol::messages::FindCoordinatorRequest;
use kafka_protocol::protocol::StrBytes;

use super::admin_support::{Admin, Member};
use super::proxy_support::{commit, commit_codes, create_on_kafka, fetched_offsets, offset_fetch};

async fn one_node() -> KafkaCluster {
    kafka_harness::start_async(Setup::default())
        .await
        .unwrap_or_else(|e| panic!("starting a Kafka node: {e:#}"))
}

/// `orders` with 2 partitions, created on Kafka itself over PLAINTEXT.
async fn orders(kafka: &KafkaCluster) -> KafkaClient {
    create_on_kafka(kafka, "orders", 2, 1).await
}

/// A host in front of `kafka`'s SSL listener trusting the PEM file `ca`.
async fn host_over_tls(kafka: &KafkaCluster, ca: std::path::PathBuf) -> TestHost {
    TestHost::proxy_with(kafka.ssl_bootstrap(), |config| {
        config.upstream.security_protocol = SecurityProtocol::Ssl;
        config.upstream.ssl_ca_location = Some(ca);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_front_of_kafkas_ssl_listener_the_hosts_calls_and_the_clients_links_are_tls() {
    let kafka = one_node().await;
    let mut direct = orders(&kafka).await;
    let host = host_over_tls(&kafka, kafka.state().tls.ca.clone()).await;
    // The host's Metadata read, over TLS: the topic is known and node 1 has a port here.
    host.wait_for_topic("orders", 2).await;

    // A client's Produce and Fetch on node 1's port go up its glued link, over TLS.
    let mut on_1 = host.broker_client(1).await;
    let produced = on_1
        .call(&produce("orders", 0, batch(&["a", "b", "c"])), 11)
        .await
        .unwrap();
    let p = &produced.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    let fetched = on_1.call(&fetch("orders", 0, 0, 12), 12).await.unwrap();
    let data = &fetched.responses[0].partitions[0];
    assert_eq!(data.error_code, 0);
    assert_eq!(values(data.records.as_ref().unwrap()), ["a", "b", "c"]);

    // A group on the host: its commit goes to the group's coordinator on the host's own TLS
    // connection, and Kafka has it.
    let mut member = Member::new(&host, "tls-group", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    assert_eq!(member.sync().await, [("orders".to_owned(), vec![0, 1])]);
    let request = commit(
        "tls-group",
        &member.id,
        member.generation,
        &[(0, 3), (1, 0)],
    );
    let mut client = host.client().await;
    assert_eq!(commit_codes(&mut client, &request).await, [0, 0]);
    assert_eq!(
        fetched_offsets(&mut direct, "tls-group", &[0, 1]).await,
        [(0, 3, 0), (1, 0, 0)],
        "the offsets in Kafka, read on its PLAINTEXT listener"
    );

    // The group's lag: end offsets from the partitions' leader, over TLS.
    let admin = Admin::new(&host);
    let deadline = Instant::now() + DEADLINE;
    let ends = loop {
        let (status, body) = admin.get("/v1/groups/tls-group").await;
        assert_eq!(status, 200, "{body}");
        let mut ends: Vec<(i64, Option<i64>, Option<i64>)> = body["offsets"]
            .as_array()
            .unwrap_or_else(|| panic!("no offsets in {body}"))
            .iter()
            .map(|p| {
                let number = |key: &str| p[key].as_i64();
                (number("partition").unwrap(), number("end"), number("lag"))
            })
            .collect();
        ends.sort();
        if ends.iter().all(|(_, end, _)| end.is_some()) || Instant::now() > deadline {
            break ends;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(ends, [(0, Some(3), Some(0)), (1, Some(0), Some(0))]);
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_that_did_not_sign_kafkas_certificate_gets_the_host_refused_and_said_so() {
    let kafka = one_node().await;
    let mut direct = orders(&kafka).await;
    // alice's certificate as the only trust anchor: it signed no broker's certificate.
    let host = host_over_tls(&kafka, kafka.state().tls.client_cert.clone()).await;
    let admin = Admin::new(&host);
    let deadline = Instant::now() + DEADLINE;
    let upstream = loop {
        let (status, body) = admin.get("/v1/upstream").await;
        assert_eq!(status, 200, "{body}");
        if body["state"] == "refused" || Instant::now() > deadline {
            break body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(upstream["state"], "refused", "{upstream}");
    assert_eq!(upstream["security_protocol"], "SSL", "{upstream}");
    let reason = upstream["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not signed by a CA of upstream.ssl_ca_location"),
        "{upstream}"
    );
    let scraped = admin.scrape().await;
    assert_eq!(
        super::admin_support::sample(&scraped, "assignor_host_upstream_refused"),
        1.0
    );
    assert!(
        super::admin_support::sample(
            &scraped,
            "assignor_host_upstream_errors_total{kind=\"refused\"}"
        ) >= 1.0
    );

    // A group on the host still forms (its coordinator is the host), and its commit, which
    // needs the cluster, fails with a code the client retries; nothing reaches Kafka.
    let mut member = Member::new(&host, "refused-group", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    member.sync().await;
    let request = commit("refused-group", &member.id, member.generation, &[(0, 3)]);
    let mut client = host.client().await;
    let codes = commit_codes(&mut client, &request).await;
    let retriable =
        kafka_protocol::ResponseError::try_from_code(codes[0]).is_some_and(|e| e.is_retriable());
    assert!(retriable, "the commit answered {codes:?}");
    // Kafka has no offsets topic yet (nothing of the host's reached it): a FindCoordinator
    // creates it, and once the coordinator has loaded, the group has nothing committed.
    let find =
        FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("refused-group"));
    let deadline = Instant::now() + DEADLINE;
    loop {
        let found = direct.call(&find, 3).await.unwrap();
        let fetched = direct
            .call(&offset_fetch("refused-group", &[0]), 7)
            .await
            .unwrap();
        if found.error_code == 0 && fetched.error_code == 0 {
            let offsets: Vec<i64> = fetched.topics[0]
                .partitions
                .iter()
                .map(|p| p.committed_offset)
                .collect();
            assert_eq!(offsets, [-1], "nothing committed in Kafka");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Kafka's coordinator: FindCoordinator {}, OffsetFetch {}",
            found.error_code,
            fetched.error_code
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_restarting_with_tls_on_is_survived_by_the_hosts_calls_and_links() {
    let kafka = one_node().await;
    orders(&kafka).await;
    let host = host_over_tls(&kafka, kafka.state().tls.ca.clone()).await;
    host.wait_for_topic("orders", 2).await;
    let mut member = Member::new(&host, "restart-group", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    member.sync().await;
    let mut client = host.client().await;
    let first = commit("restart-group", &member.id, member.generation, &[(0, 1)]);
    assert_eq!(commit_codes(&mut client, &first).await, [0]);

    // Kafka stops and starts again on its ports: the host's open TLS connections are dead.
    let dir = kafka.state().dir.clone();
    tokio::task::spawn_blocking(move || {
        let cluster = KafkaCluster::attach(&dir).unwrap();
        cluster.stop_node(1).expect("node 1 stops");
        cluster.start_node(1).expect("node 1 starts again");
    })
    .await
    .unwrap();

    // The group on the host never noticed; its next commit reaches Kafka on a new TLS
    // connection (retried by the client while Kafka's coordinator loads).
    assert_eq!(member.heartbeat().await, 0);
    let second = commit("restart-group", &member.id, member.generation, &[(0, 2)]);
    let deadline = Instant::now() + DEADLINE;
    loop {
        let codes = commit_codes(&mut client, &second).await;
        if codes == [0] {
            break;
        }
        let retriable = kafka_protocol::ResponseError::try_from_code(codes[0])
            .is_some_and(|e| e.is_retriable());
        assert!(
            retriable && Instant::now() < deadline,
            "the commit after the restart answered {codes:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // A new connection of the test's own: its first died with the restart.
    let mut direct = KafkaClient::connect(kafka.nodes()[0].plaintext)
        .await
        .unwrap();
    assert_eq!(
        fetched_offsets(&mut direct, "restart-group", &[0]).await,
        [(0, 2, 0)]
    );
    // A client's new connection on node 1's port gets a new glued link, over TLS.
    let mut on_1 = host.broker_client(1).await;
    let deadline = Instant::now() + DEADLINE;
    loop {
        let produced = on_1
            .call(&produce("orders", 1, batch(&["after"])), 11)
            .await;
        match produced {
            Ok(answer) if answer.responses[0].partition_responses[0].error_code == 0 => break,
            other => {
                assert!(
                    Instant::now() < deadline,
                    "Produce through the host after the restart: {:?}",
                    other.map(|a| a.responses[0].partition_responses[0].error_code)
                );
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                on_1 = host.broker_client(1).await;
            }
        }
    }
    host.stop().await;
}

/// A broker's certificate rotated under a running host, as operators rotate them: the new CA
/// is added to the host's trust first (`ssl_ca_location` rewritten as a bundle), then the
/// broker's SSL keystore is replaced while it runs (Kafka's per-broker dynamic
/// `listener.name.ssl.ssl.keystore.location`, which Kafka accepts for a certificate of the
/// same subject and names). Kafka serves the new certificate (a client trusting only the old
/// CA is refused now), and the host goes on with no restart: its next commit, and a client's
/// glued link opened after the rotation (a new handshake, checked against the bundle).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brokers_certificate_rotated_under_the_host_is_taken_without_a_restart() {
    use assignor_host::upstream::connection::Connection;
    use assignor_host::upstream::connection::security::{Security, SecuritySettings};
    use kafka_protocol::messages::IncrementalAlterConfigsRequest;
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };

    let kafka = one_node().await;
    orders(&kafka).await;
    let dir = tempfile::tempdir().unwrap();
    let old_ca = std::fs::read_to_string(&kafka.state().tls.ca).unwrap();
    let bundle = dir.path().join("trusted.pem");
    std::fs::write(&bundle, &old_ca).unwrap();
    let host = host_over_tls(&kafka, bundle.clone()).await;
    host.wait_for_topic("orders", 2).await;
    let mut member = Member::new(&host, "rotated-group", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    member.sync().await;
    let mut client = host.client().await;
    let first = commit("rotated-group", &member.id, member.generation, &[(0, 1)]);
    assert_eq!(commit_codes(&mut client, &first).await, [0]);

    // A new CA, and a broker certificate from it with the harness's subject and names.
    let new = kafka_harness::Tls::make(&dir.path().join("new")).expect("openssl makes a CA");
    let (cert, key) = new
        .sign(
            "rotated",
            "/CN=localhost",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
            30,
        )
        .expect("openssl signs the new broker certificate");
    let keystore = dir.path().join("rotated-keystore.pem");
    let parts = [&key, &cert, &new.ca].map(|p| std::fs::read_to_string(p).unwrap());
    std::fs::write(&keystore, parts.concat()).unwrap();
    // Trust first: the bundle holds both CAs (the host reads it again for new connections).
    let new_ca = std::fs::read_to_string(&new.ca).unwrap();
    std::fs::write(&bundle, format!("{old_ca}{new_ca}")).unwrap();
    // Then the broker's keystore, while it runs.
    let mut direct = KafkaClient::connect(kafka.nodes()[0].plaintext)
        .await
        .unwrap();
    let rotate = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(4) // BROKER
            .with_resource_name(StrBytes::from_static_str("1"))
            .with_configs(vec![
                AlterableConfig::default()
                    .with_name(StrBytes::from_static_str(
                        "listener.name.ssl.ssl.keystore.location",
                    ))
                    .with_config_operation(0) // SET
                    .with_value(Some(StrBytes::from_string(keystore.display().to_string()))),
            ]),
    ]);
    let answer = direct.call(&rotate, 1).await.unwrap();
    assert_eq!(
        answer.responses[0].error_code, 0,
        "Kafka refused the new keystore: {:?}",
        answer.responses[0].error_message
    );

    // Kafka serves the new certificate: a client trusting only the old CA is refused.
    let only_old = SecuritySettings {
        security_protocol: SecurityProtocol::Ssl,
        ssl_ca_location: Some(kafka.state().tls.ca.clone()),
        ssl_endpoint_identification: true,
        ..SecuritySettings::default()
    };
    let security = Security::load(&only_old).unwrap();
    let deadline = Instant::now() + DEADLINE;
    let ssl = kafka.nodes()[0].ssl.to_string();
    while Connection::open(&ssl, &security, std::time::Duration::from_secs(10))
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "Kafka still serves the old certificate"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // The host goes on: a commit (on whichever connection its pool holds), and a new client
    // connection's glued link (a new TLS handshake, with the new certificate).
    assert_eq!(member.heartbeat().await, 0);
    let second = commit("rotated-group", &member.id, member.generation, &[(0, 2)]);
    assert_eq!(commit_codes(&mut client, &second).await, [0]);
    let mut on_1 = host.broker_client(1).await;
    let produced = on_1
        .call(&produce("orders", 1, batch(&["after the rotation"])), 11)
        .await
        .unwrap();
    assert_eq!(
        produced.responses[0].partition_responses[0].error_code, 0,
        "Produce through a glued link opened after the rotation"
    );
    assert_eq!(
        fetched_offsets(&mut direct, "rotated-group", &[0]).await,
        [(0, 2, 0)]
    );
    host.stop().await;
}
