//! The hooks that change the cluster under a test: a broker added, a leader moved, a broker
//! killed and restarted, the cluster stopped.

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, DescribeClusterRequest};

use super::{all_topics, connect, metadata, three_brokers};

#[tokio::test]
async fn an_added_broker_appears_in_metadata_with_a_connectable_port() {
    let cluster = three_brokers().await;
    let addr = cluster.add_broker(4).await;
    assert_eq!(cluster.broker_addr(4), addr);
    let response = metadata(&cluster, 1, &all_topics(12), 12).await;
    let brokers: Vec<(i32, i32)> = response
        .brokers
        .iter()
        .map(|b| (b.node_id.0, b.port))
        .collect();
    assert_eq!(brokers.last(), Some(&(4, i32::from(addr.port()))));
    assert_eq!(brokers.len(), 4);
    let orders = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some("orders"))
        .unwrap();
    let leaders: Vec<i32> = orders.partitions.iter().map(|p| p.leader_id.0).collect();
    assert_eq!(leaders, [1, 2, 3, 1, 2, 3], "leaders stay where they were");
    let mut fourth = connect(&cluster, 4).await;
    let described = fourth
        .call(&DescribeClusterRequest::default(), 1)
        .await
        .unwrap();
    assert_eq!(described.brokers.len(), 4);
    assert_eq!(cluster.requests(4), [(ApiKey::DescribeCluster, 1, 1)]);
    cluster.set_leader("orders", 0, 4);
    let moved = metadata(&cluster, 4, &all_topics(12), 12).await;
    let orders = moved
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some("orders"))
        .unwrap();
    assert_eq!(
        (
            orders.partitions[0].leader_id.0,
            orders.partitions[0].leader_epoch
        ),
        (4, 1)
    );
}

#[tokio::test]
async fn a_killed_broker_refuses_connections_and_comes_back_on_its_port() {
    let cluster = three_brokers().await;
    let addr = cluster.broker_addr(2);
    let mut open = connect(&cluster, 2).await;
    open.call(&ApiVersionsRequest::default(), 3).await.unwrap();
    cluster.kill_broker(2).await;
    assert!(
        open.is_closed_by_host().await.unwrap(),
        "its connections close"
    );
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens"
    );
    cluster.restart_broker(2).await;
    assert_eq!(cluster.broker_addr(2), addr);
    let mut again = connect(&cluster, 2).await;
    again.call(&ApiVersionsRequest::default(), 3).await.unwrap();
    cluster.stop().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "stopped"
    );
}
