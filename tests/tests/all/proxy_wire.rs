//! Proxy mode's data path against the fake three-broker cluster: every answer that names a
//! broker names the host instead, each broker port forwards to its own broker, and a broker
//! that appears later gets a port of its own.

use assignor_host_tests::proxy::{api_versions, batch, fetch, produce, values};
use assignor_host_tests::{KafkaClient, str};
use kafka_protocol::messages::{
    ApiKey, DescribeClusterRequest, FindCoordinatorRequest, ProduceRequest,
};

use super::proxy_support::{
    COORDINATOR, HOST, all_topics, brokers, expected_brokers, leaders, proxied,
};

/// A connection to `port` on loopback answers an ApiVersions: something serves it.
async fn answers_on(port: i32) {
    let port = u16::try_from(port).expect("a port");
    let mut client = KafkaClient::connect(([127, 0, 0, 1], port).into())
        .await
        .unwrap_or_else(|e| panic!("port {port} refuses connections: {e}"));
    let response = client.call(&api_versions(), 3).await;
    assert_eq!(
        response.unwrap().error_code,
        0,
        "ApiVersions on port {port}"
    );
}

#[tokio::test]
async fn metadata_and_describe_cluster_name_only_the_host_and_its_coordinator_node() {
    let (cluster, host) = proxied().await;
    let mut client = host.client().await;
    for version in [0, 1, 4, 9, 12] {
        let response = client.call(&all_topics(version), version).await.unwrap();
        let named = brokers(&response);
        assert_eq!(named, expected_brokers(&host, &[1, 2, 3]), "v{version}");
        // Node ids are the upstream's; the ports are the host's, none of them the fake's.
        for (node, _, port) in &named[..3] {
            let upstream = i32::from(cluster.broker_addr(*node).port());
            assert_ne!(
                *port, upstream,
                "v{version}: node {node} at its upstream port"
            );
        }
        assert_eq!(
            leaders(&response, "orders"),
            [1, 2, 3, 1, 2, 3],
            "v{version}"
        );
        assert_eq!(leaders(&response, "audit"), [1, 2], "v{version}");
        if version >= 1 {
            let racks: Vec<Option<String>> = response
                .brokers
                .iter()
                .map(|b| b.rack.as_ref().map(|r| r.to_string()))
                .collect();
            let upstream_racks = ["rack-1", "rack-2", "rack-3"].map(|r| Some(r.to_owned()));
            assert_eq!(racks[..3], upstream_racks, "v{version}: racks kept");
            assert_eq!(response.controller_id.0, 1, "v{version}");
        }
    }
    for version in [0, 1] {
        let described = client
            .call(&DescribeClusterRequest::default(), version)
            .await
            .unwrap();
        let named: Vec<(i32, String, i32)> = described
            .brokers
            .iter()
            .map(|b| (b.broker_id.0, b.host.to_string(), b.port))
            .collect();
        assert_eq!(
            named,
            expected_brokers(&host, &[1, 2, 3]),
            "DescribeCluster v{version}"
        );
    }
    // Every port named accepts connections and answers.
    for (_, _, port) in expected_brokers(&host, &[1, 2, 3]) {
        answers_on(port).await;
    }
    host.stop().await;
}

#[tokio::test]
async fn find_coordinator_names_the_host_for_groups_and_rewrites_transactions() {
    let (cluster, host) = proxied().await;
    let bootstrap = i32::from(host.addr().port());
    for port in [None, Some(2)] {
        let mut client = match port {
            None => host.client().await,
            Some(node) => host.broker_client(node).await,
        };
        let old = FindCoordinatorRequest::default().with_key(str("payments"));
        let answer = client.call(&old, 3).await.unwrap();
        assert_eq!(
            (
                answer.error_code,
                answer.node_id.0,
                answer.host.to_string(),
                answer.port
            ),
            (0, COORDINATOR, HOST.to_owned(), bootstrap),
            "a group's coordinator is the host's node ({port:?})"
        );
        let batched = FindCoordinatorRequest::default()
            .with_coordinator_keys(vec![str("payments"), str("audit")]);
        let answer = client.call(&batched, 4).await.unwrap();
        for c in &answer.coordinators {
            assert_eq!(
                (c.error_code, c.node_id.0, c.host.to_string(), c.port),
                (0, COORDINATOR, HOST.to_owned(), bootstrap),
                "v4 {:?}",
                c.key
            );
        }
    }
    assert!(
        [1, 2, 3].iter().all(|&n| !cluster
            .requests_from(n, "assignor-host-tests")
            .iter()
            .any(|r| r.0 == ApiKey::FindCoordinator)),
        "no group lookup went up"
    );
    // A transactional id is the upstream's: forwarded, and its coordinator (the fake's first
    // broker) named at the host's port for it.
    let node_1 = i32::from(host.broker_port(1).unwrap());
    let mut client = host.client().await;
    let txn = FindCoordinatorRequest::default()
        .with_key(str("tx-1"))
        .with_key_type(1);
    let answer = client.call(&txn, 3).await.unwrap();
    assert_eq!(
        (
            answer.error_code,
            answer.node_id.0,
            answer.host.to_string(),
            answer.port
        ),
        (0, 1, HOST.to_owned(), node_1)
    );
    let batched = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![str("tx-1"), str("tx-2")]);
    let answer = client.call(&batched, 4).await.unwrap();
    let named: Vec<(i32, i32)> = answer
        .coordinators
        .iter()
        .map(|c| (c.node_id.0, c.port))
        .collect();
    assert_eq!(named, [(1, node_1), (1, node_1)]);
    let forwarded = cluster.requests_from(1, "assignor-host-tests");
    let lookups: Vec<i16> = forwarded
        .iter()
        .filter(|r| r.0 == ApiKey::FindCoordinator)
        .map(|r| r.1)
        .collect();
    assert_eq!(
        lookups,
        [3, 4],
        "both transaction lookups went up, to the bootstrap broker"
    );
    answers_on(node_1).await;
    host.stop().await;
}

#[tokio::test]
async fn each_broker_port_forwards_to_its_broker_and_fetch_returns_what_was_produced() {
    let (cluster, host) = proxied().await;
    // orders-p is led by broker p % 3 + 1: produce each on its leader's port here.
    for partition in 0..3 {
        let node = partition + 1;
        let mut client = host.broker_client(node).await;
        let value = format!("to-{node}");
        let request = produce("orders", partition, batch(&[&value, "second"]));
        let correlation_id = client.send(&request, 9).await.unwrap();
        let answer = client
            .receive::<ProduceRequest>(correlation_id, 9)
            .await
            .unwrap();
        let p = &answer.responses[0].partition_responses[0];
        assert_eq!((p.index, p.error_code, p.base_offset), (partition, 0, 0));
        let produced: Vec<_> = cluster
            .requests_from(node, "assignor-host-tests")
            .into_iter()
            .filter(|r| r.0 == ApiKey::Produce)
            .collect();
        assert_eq!(
            produced,
            [(ApiKey::Produce, 9, correlation_id)],
            "node {node}"
        );
        let stored: Vec<String> = cluster
            .records("orders", partition)
            .iter()
            .flat_map(values)
            .collect();
        assert_eq!(stored, [value.clone(), "second".to_owned()]);
        // v12, the highest the host passes up (`versions::FETCH_MAX`).
        let fetched = client
            .call(&fetch("orders", partition, 0, 12), 12)
            .await
            .unwrap();
        let data = &fetched.responses[0].partitions[0];
        assert_eq!(data.error_code, 0, "Fetch v12 on node {node}");
        assert_eq!(data.high_watermark, 2);
        let records = data.records.clone().expect("records");
        assert_eq!(values(&records), [value.clone(), "second".to_owned()]);
    }
    // Nothing produced went anywhere else.
    for node in [1, 2, 3] {
        let produces = cluster
            .requests(node)
            .iter()
            .filter(|r| r.0 == ApiKey::Produce)
            .count();
        assert_eq!(produces, 1, "node {node}");
    }
    host.stop().await;
}

#[tokio::test]
async fn leader_hints_of_produce_name_the_leaders_port_here() {
    let (cluster, host) = proxied().await;
    // orders-1 is led by broker 2: ask broker 1 through its port here.
    let mut wrong = host.broker_client(1).await;
    let leader_port = i32::from(host.broker_port(2).unwrap());
    for version in [10, 11] {
        let answer = wrong
            .call(&produce("orders", 1, batch(&["lost"])), version)
            .await
            .unwrap();
        let p = &answer.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 6, "v{version}: NOT_LEADER_OR_FOLLOWER");
        assert_eq!(p.current_leader.leader_id.0, 2);
        let hints: Vec<(i32, String, i32)> = answer
            .node_endpoints
            .iter()
            .map(|e| (e.node_id.0, e.host.to_string(), e.port))
            .collect();
        assert_eq!(
            hints,
            [(2, HOST.to_owned(), leader_port)],
            "Produce v{version}"
        );
    }
    assert!(
        cluster.records("orders", 1).is_empty(),
        "nothing was appended"
    );
    // A leader the host has not seen yet: its port opens before the hint names it.
    cluster.add_broker(4).await;
    cluster.set_leader("orders", 1, 4);
    let answer = wrong
        .call(&produce("orders", 1, batch(&["lost"])), 11)
        .await
        .unwrap();
    let hint = &answer.node_endpoints[0];
    assert_eq!(hint.node_id.0, 4);
    assert_eq!(Some(hint.port), host.broker_port(4).map(i32::from));
    let mut moved = KafkaClient::connect(([127, 0, 0, 1], hint.port as u16).into())
        .await
        .unwrap();
    let answer = moved
        .call(&produce("orders", 1, batch(&["found"])), 11)
        .await
        .unwrap();
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);
    let stored: Vec<String> = cluster
        .records("orders", 1)
        .iter()
        .flat_map(values)
        .collect();
    assert_eq!(stored, ["found"]);
    host.stop().await;
}

#[tokio::test]
async fn a_large_batch_goes_up_and_comes_back_byte_for_byte() {
    let (cluster, host) = proxied().await;
    // Larger than any socket buffer, so it crosses the host in many reads and writes.
    let big = "x".repeat(256 * 1024);
    let values_sent: Vec<&str> = (0..8).map(|_| big.as_str()).collect();
    let sent = batch(&values_sent);
    let mut client = host.broker_client(3).await;
    let answer = client
        .call(&produce("orders", 2, sent.clone()), 9)
        .await
        .unwrap();
    assert_eq!(answer.responses[0].partition_responses[0].error_code, 0);
    assert_eq!(
        cluster.records("orders", 2),
        std::slice::from_ref(&sent),
        "stored as sent"
    );
    let fetched = client.call(&fetch("orders", 2, 0, 12), 12).await.unwrap();
    let records = fetched.responses[0].partitions[0].records.clone().unwrap();
    assert_eq!(records, sent, "fetched as stored");
    host.stop().await;
}
