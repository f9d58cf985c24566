//! The upstream's topology as the host follows it: a broker that joins the cluster later gets
//! a port here, opened by the host's own Metadata read or by the first client answer that names
//! it, and the bootstrap port falls over to the next bootstrap server.

use std::time::Duration;

use assignor_host_tests::TestHost;
use assignor_host_tests::proxy::{batch, fetch, produce, values};
use kafka_protocol::messages::ApiKey;

use super::proxy_support::{
    all_topics, brokers, expected_brokers, leaders, proxied, three_brokers,
};

/// Broker 4's requests from the test's clients after a Produce of `value` to `late`-3 (led
/// by broker 4) on the host's port for it, and the values Fetch reads back there.
async fn produce_on_the_fourth(host: &TestHost, value: &str) -> Vec<String> {
    let mut fourth = host.broker_client(4).await;
    let answer = fourth
        .call(&produce("late", 3, batch(&[value])), 9)
        .await
        .unwrap();
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);
    let fetched = fourth.call(&fetch("late", 3, 0, 12), 12).await.unwrap();
    let records = fetched.responses[0].partitions[0].records.clone().unwrap();
    values(&records)
}

#[tokio::test]
async fn a_broker_added_later_gets_a_port_that_forwards_to_it() {
    let (cluster, host) = proxied().await;
    assert_eq!(host.broker_port(4), None);
    cluster.add_broker(4).await;
    // Partition 3 of a topic created now is led by the fourth broker.
    cluster.set_partitions("late", 4);
    host.wait_for_topic("late", 4).await;
    let port = host
        .broker_port(4)
        .expect("the host's own Metadata read opened a port");
    let mut client = host.client().await;
    let response = client.call(&all_topics(12), 12).await.unwrap();
    assert_eq!(brokers(&response), expected_brokers(&host, &[1, 2, 3, 4]));
    assert_eq!(leaders(&response, "late"), [1, 2, 3, 4]);
    assert_eq!(produce_on_the_fourth(&host, "fourth").await, ["fourth"]);
    let on_4: Vec<ApiKey> = cluster
        .requests_from(4, "assignor-host-tests")
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(
        on_4,
        [ApiKey::Produce, ApiKey::Fetch],
        "port {port} reaches broker 4"
    );
    host.stop().await;
}

#[tokio::test]
async fn a_client_metadata_naming_a_new_broker_opens_its_port_and_wakes_the_hosts_read() {
    let cluster = three_brokers().await;
    // The host's own reads: one at start, then not for an hour unless woken.
    let host = TestHost::proxy_with(&cluster.bootstrap(), |c| {
        c.upstream.metadata_refresh = Duration::from_secs(3600);
    })
    .await;
    host.wait_for_topic("orders", 6).await;
    cluster.add_broker(4).await;
    cluster.set_partitions("late", 4);
    let mut client = host.client().await;
    let response = client.call(&all_topics(9), 9).await.unwrap();
    // The answer itself opened broker 4's port before it left.
    assert_eq!(brokers(&response), expected_brokers(&host, &[1, 2, 3, 4]));
    assert_eq!(produce_on_the_fourth(&host, "direct").await, ["direct"]);
    // It named a topic the host did not know: the host read the upstream again at once.
    host.wait_for_topic("late", 4).await;
    host.stop().await;
}

#[tokio::test]
async fn the_bootstrap_port_falls_over_to_the_next_bootstrap_server() {
    let (cluster, host) = proxied().await;
    cluster.kill_broker(1).await;
    let mut client = host.client().await;
    let before = cluster.requests(2).len();
    let response = client.call(&all_topics(12), 12).await.unwrap();
    assert_eq!(brokers(&response), expected_brokers(&host, &[1, 2, 3]));
    let answered_by_2 = &cluster.requests(2)[before..];
    assert!(
        answered_by_2.iter().any(|r| r.0 == ApiKey::Metadata),
        "broker 2, the next bootstrap server, answered"
    );
    // The partitions broker 2 leads are still reachable through its port.
    let mut second = host.broker_client(2).await;
    let answer = second
        .call(&produce("orders", 1, batch(&["still"])), 9)
        .await
        .unwrap();
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);
    host.stop().await;
}
