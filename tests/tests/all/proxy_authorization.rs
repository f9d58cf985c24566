//! The group APIs the host answers itself, held to the client's own ACLs on Apache Kafka
//! (`kafka.authentication = "upstream"`): the host asks Kafka on the client's own connection
//! before it acts, and a request Kafka would refuse is refused with Kafka's codes in Kafka's
//! places, even though the host's own user (`admin`, a super user here) could do it. What a
//! refused request would have changed is read back from Kafka directly: nothing; nor do the
//! host's questions change anything there.
//!
//! ACLs: alice may READ groups `shop-*` (prefixed) and READ topic `orders`; bob nothing.

use assignor_host::upstream::connection::Connection;
use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host_tests::{TestHost, str, topic_name};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, CreateAclsRequest, DeleteGroupsRequest, DescribeGroupsRequest,
    FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest,
    OffsetFetchRequest,
};

use super::admin_support::Admin;
use super::proxy_support::{create_on_kafka, login, offset_fetch, sasl_host, shared_kafka};

const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

fn acl(resource_type: i8, name: &str, pattern: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(str(name))
        .with_resource_pattern_type(pattern)
        .with_principal(str("User:alice"))
        .with_host(str("*"))
        .with_operation(3) // READ
        .with_permission_type(3) // ALLOW
}

async fn as_user(host: &TestHost, user: &str) -> Connection {
    login(
        host,
        SaslMechanism::ScramSha512,
        user,
        &format!("{user}-secret"),
    )
    .await
    .unwrap_or_else(|e| panic!("{user} logs in: {e}"))
}

/// A commit of `offset` to each `(topic, partition)` for `group`, as an admin tool sends it
/// (no member, generation -1).
fn commit(group: &str, offsets: &[(&str, i32, i64)]) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(str(""))
        .with_topics(
            offsets
                .iter()
                .map(|&(topic, partition, offset)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(partition)
                                .with_committed_offset(offset),
                        ])
                })
                .collect(),
        )
}

async fn commit_codes(client: &mut Connection, request: &OffsetCommitRequest) -> Vec<i16> {
    let answer = client.call(request, 8).await.unwrap();
    answer
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

fn join(group: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(str(""))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(str("range"))
                .with_metadata(assignor_host_tests::subscription(&["orders"], 0)),
        ])
}

fn find(group: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest::default()
        .with_key(str(group))
        .with_key_type(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_group_api_is_held_to_the_clients_own_acls_on_kafka() {
    let kafka = shared_kafka().await;
    let mut direct = create_on_kafka(kafka, "orders", 2, 1).await;
    create_on_kafka(kafka, "secret", 1, 1).await;
    let acls = CreateAclsRequest::default().with_creations(vec![
        acl(3, "shop-", 4),  // GROUP shop-* PREFIXED
        acl(2, "orders", 3), // TOPIC orders LITERAL
    ]);
    let created = direct.call(&acls, 3).await.unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );
    let host = sasl_host(kafka).await;
    host.wait_for_topic("orders", 2).await;
    host.wait_for_topic("secret", 1).await;
    let mut alice = as_user(&host, "alice").await;
    let mut bob = as_user(&host, "bob").await;

    // FindCoordinator (DESCRIBE GROUP, implied by READ).
    assert_eq!(alice.call(&find("shop-1"), 3).await.unwrap().error_code, 0);
    for (who, client, group) in [
        ("bob", &mut bob, "shop-1"),
        ("alice", &mut alice, "other-1"),
    ] {
        let found = client.call(&find(group), 3).await.unwrap();
        assert_eq!(
            found.error_code, GROUP_AUTHORIZATION_FAILED,
            "{who} {group}"
        );
    }

    // JoinGroup (READ GROUP): alice gets on (v5: MEMBER_ID_REQUIRED, the join's first step);
    // bob is refused, and no group forms for him.
    assert_eq!(alice.call(&join("shop-1"), 5).await.unwrap().error_code, 79);
    assert_eq!(
        bob.call(&join("shop-2"), 5).await.unwrap().error_code,
        GROUP_AUTHORIZATION_FAILED
    );
    let (status, _) = Admin::new(&host).get("/v1/groups/shop-2").await;
    assert_eq!(status, 404, "a group formed for a refused JoinGroup");
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(str("shop-1")))
        .with_generation_id(1)
        .with_member_id(str("m"));
    assert_eq!(
        bob.call(&heartbeat, 4).await.unwrap().error_code,
        GROUP_AUTHORIZATION_FAILED
    );

    // OffsetCommit: READ GROUP, then READ TOPIC per topic. alice's commit to `orders` lands
    // in Kafka, hers to `secret` does not; bob's to `orders` does not.
    let codes = commit_codes(
        &mut alice,
        &commit("shop-1", &[("orders", 0, 5), ("secret", 0, 5)]),
    )
    .await;
    assert_eq!(codes, [0, TOPIC_AUTHORIZATION_FAILED], "alice's commit");
    let codes = commit_codes(&mut bob, &commit("shop-1", &[("orders", 1, 7)])).await;
    assert_eq!(codes, [GROUP_AUTHORIZATION_FAILED], "bob's commit");
    let in_kafka = direct
        .call(
            &OffsetFetchRequest::default()
                .with_group_id(GroupId(str("shop-1")))
                .with_topics(None),
            7,
        )
        .await
        .unwrap();
    let committed: Vec<(String, i32, i64)> = in_kafka
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    assert_eq!(
        committed,
        [("orders".to_owned(), 0, 5)],
        "Kafka holds alice's one allowed commit and nothing else (no refused commit, no probe)"
    );

    // OffsetFetch (DESCRIBE GROUP): one group (v7) and the batched form (v8).
    let fetched = alice.call(&offset_fetch("shop-1", &[0]), 7).await.unwrap();
    assert_eq!(fetched.error_code, 0);
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, 5);
    let fetched = bob.call(&offset_fetch("shop-1", &[0]), 7).await.unwrap();
    assert_eq!(fetched.error_code, GROUP_AUTHORIZATION_FAILED, "bob, v7");
    let batched = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("shop-1")))
            .with_topics(None),
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("other-1")))
            .with_topics(None),
    ]);
    let fetched = alice.call(&batched, 8).await.unwrap();
    let codes: Vec<i16> = fetched.groups.iter().map(|g| g.error_code).collect();
    assert_eq!(codes, [0, GROUP_AUTHORIZATION_FAILED], "alice, v8");

    // DescribeGroups (DESCRIBE GROUP, per group).
    let described = bob
        .call(
            &DescribeGroupsRequest::default().with_groups(vec![GroupId(str("shop-1"))]),
            5,
        )
        .await
        .unwrap();
    assert_eq!(described.groups[0].error_code, GROUP_AUTHORIZATION_FAILED);

    // ConsumerGroupHeartbeat (READ GROUP, and since Kafka 4.0 DESCRIBE on each subscribed
    // name): a subscription to `secret` is refused whole, one to `orders` joins.
    for (topic, expected) in [("secret", TOPIC_AUTHORIZATION_FAILED), ("orders", 0)] {
        let heartbeat = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str("shop-3")))
            .with_member_id(str(""))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(10_000)
            .with_subscribed_topic_names(Some(vec![topic_name(topic)]))
            .with_topic_partitions(Some(Vec::new()));
        let answer = alice.call(&heartbeat, 0).await.unwrap();
        assert_eq!(
            answer.error_code, expected,
            "subscribed to {topic}: {answer:?}"
        );
    }

    // DeleteGroups (DELETE GROUP): alice may read `shop-*` but not delete; the offsets stay.
    let deleted = alice
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(str("shop-1"))]),
            2,
        )
        .await
        .unwrap();
    assert_eq!(deleted.results[0].error_code, GROUP_AUTHORIZATION_FAILED);
    let still = direct.call(&offset_fetch("shop-1", &[0]), 7).await.unwrap();
    assert_eq!(still.topics[0].partitions[0].committed_offset, 5);
    host.stop().await;
}
