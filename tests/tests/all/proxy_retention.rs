//! Proxy mode keeps live groups' offsets from expiring upstream: every
//! `upstream.recommit_interval` the host commits a group with members again, unchanged (a
//! group nobody consumes is left to the cluster's retention, as Kafka would leave it).

use std::time::{Duration, Instant};

use assignor_host_tests::fake_cluster::FakeCluster;
use assignor_host_tests::{DEADLINE, TestHost};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use assignor_host_tests::subscription;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

async fn proxy(cluster: &FakeCluster) -> TestHost {
    let bootstrap = cluster.bootstrap();
    TestHost::with_config(|c| {
        c.upstream.bootstrap = bootstrap.split(',').map(str::to_owned).collect();
        c.upstream.broker_ports_from = Some(0);
        c.upstream.recommit_interval = Duration::from_millis(300);
        c.coordinator.initial_rebalance_delay_ms = 0;
    })
    .await
}

fn commit(group: &str, member: &str, generation: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ]),
        ])
}

/// OffsetCommit requests the fake's coordinator (its first broker) received so far.
fn commits(cluster: &FakeCluster) -> usize {
    let coordinator = cluster.broker_ids()[0];
    cluster
        .requests(coordinator)
        .iter()
        .filter(|(api, ..)| *api == ApiKey::OffsetCommit)
        .count()
}

#[tokio::test]
async fn a_live_groups_offsets_are_committed_again_upstream_unchanged() {
    let cluster = FakeCluster::start(&[1, 2], &[("orders", 2)]).await;
    let host = proxy(&cluster).await;
    let mut client = host.client().await;

    // A member joins (two-step join), syncs and commits offset 42 through the host.
    let join = |member: &str| {
        JoinGroupRequest::default()
            .with_group_id(GroupId(s("live")))
            .with_session_timeout_ms(30_000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(s(member))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(s("range"))
                    .with_metadata(subscription(&["orders"], 3)),
            ])
    };
    let first = client.call(&join(""), 5).await.unwrap();
    let joined = client
        .call(&join(first.member_id.as_str()), 5)
        .await
        .unwrap();
    assert_eq!(joined.error_code, 0);
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s("live")))
        .with_generation_id(joined.generation_id)
        .with_member_id(joined.member_id.clone());
    assert_eq!(client.call(&sync, 3).await.unwrap().error_code, 0);
    let committed = client
        .call(
            &commit("live", &joined.member_id, joined.generation_id, 42),
            8,
        )
        .await
        .unwrap();
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    assert_eq!(cluster.committed("live", "orders", 0), Some(42));

    // A group without members (a simple commit) is committed once, by its client.
    let simple = client.call(&commit("idle", "", -1, 7), 8).await.unwrap();
    assert_eq!(simple.topics[0].partitions[0].error_code, 0);

    let after_clients = commits(&cluster);
    let started = Instant::now();
    while commits(&cluster) < after_clients + 2 {
        assert!(
            started.elapsed() < DEADLINE,
            "the host never committed again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        cluster.committed("live", "orders", 0),
        Some(42),
        "committed again unchanged"
    );
    assert_eq!(cluster.committed("idle", "orders", 0), Some(7));
    host.stop().await;
}
