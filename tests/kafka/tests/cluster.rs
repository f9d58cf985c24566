//! The harness itself, against the real thing: three KRaft nodes with racks answer Metadata
//! as one cluster, and a node stopped and started again is back in it. (The SASL_SSL listener
//! and its users are checked from the Python suite, whose clients speak TLS:
//! tests/clients/test_kafka_harness.py.)

use std::net::TcpStream;

use kafka_harness::{KafkaCluster, Setup};

/// `(node id, rack)` of every broker a node's Metadata answer lists, sorted.
fn brokers_seen_by(cluster: &KafkaCluster, node_id: i32) -> Vec<(i32, String)> {
    let mut seen = kafka_harness::metadata(cluster.node(node_id).plaintext)
        .unwrap_or_else(|e| panic!("Metadata from node {node_id}: {e:#}"))
        .brokers;
    seen.sort();
    seen
}

#[test]
fn three_nodes_with_racks_and_a_node_restarted() {
    let cluster = KafkaCluster::start(Setup::nodes(3)).unwrap_or_else(|e| panic!("{e:#}"));
    let all: Vec<(i32, String)> = (1..=3).map(|id| (id, format!("rack-{id}"))).collect();
    for node in cluster.nodes() {
        assert_eq!(brokers_seen_by(&cluster, node.node_id), all);
        assert!(
            TcpStream::connect(node.sasl_ssl).is_ok(),
            "node {}'s SASL_SSL listener {} refuses connections",
            node.node_id,
            node.sasl_ssl
        );
    }
    let bootstrap = cluster.bootstrap().split(',').count();
    assert_eq!(bootstrap, 3, "bootstrap {}", cluster.bootstrap());

    cluster.stop_node(2).expect("stop node 2");
    assert!(
        TcpStream::connect(cluster.node(2).plaintext).is_err(),
        "node 2 still listens after its stop"
    );
    let without_2: Vec<_> = all.iter().filter(|(id, _)| *id != 2).cloned().collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // The survivors drop node 2 from Metadata once its broker registration is fenced.
    while brokers_seen_by(&cluster, 1) != without_2 {
        assert!(
            std::time::Instant::now() < deadline,
            "node 1 still lists {:?} 60 s after node 2 stopped",
            brokers_seen_by(&cluster, 1)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    cluster.start_node(2).expect("start node 2 again");
    assert_eq!(brokers_seen_by(&cluster, 2), all);
    assert_eq!(brokers_seen_by(&cluster, 1), all);
}
