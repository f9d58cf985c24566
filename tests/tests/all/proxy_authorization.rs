//! The group APIs the host answers itself, held to the client's own ACLs on Apache Kafka
//! (`kafka.authentication = "upstream"`): the host asks Kafka on the client's own connection
//! before it acts, and a request Kafka would refuse is refused with Kafka's codes in Kafka's
//! places, even though the host's own user (`admin`, a super user here) could do it. What a
//! refused request would have changed is read back from Kafka directly: nothing; nor do the
//! host's questions change anything there.
//!
//! ACLs: alice may READ groups `shop-*` (prefixed) and READ topic `orders`; bob nothing. The
//! listing test adds its own (`books-1`, `ledger`), so the two may share one Kafka node.

use assignor_host::upstream::connection::Connection;
use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host_tests::{TestHost, str, topic_name};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateAclsRequest,
    DeleteGroupsRequest, DescribeGroupsRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    JoinGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
};

use super::admin_support::{Admin, sample};
use super::proxy_support::{
    create_on_kafka, login, offset_fetch, sasl_host, sasl_host_with, shared_kafka,
};

const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

fn acl(resource_type: i8, name: &str, pattern: i8) -> AclCreation {
    acl_for("User:alice", resource_type, name, pattern)
}

fn acl_for(principal: &str, resource_type: i8, name: &str, pattern: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(str(name))
        .with_resource_pattern_type(pattern)
        .with_principal(str(principal))
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

    // Each refusal above counted once, by API and resource type.
    let metrics = Admin::new(&host).scrape().await;
    for (api, resource, count) in [
        ("FindCoordinator", "group", 2.0),
        ("JoinGroup", "group", 1.0),
        ("OffsetCommit", "group", 1.0),
        ("OffsetCommit", "topic", 1.0),
        ("OffsetFetch", "group", 2.0),
        ("ConsumerGroupHeartbeat", "topic", 1.0),
        ("DeleteGroups", "group", 1.0),
    ] {
        let name =
            format!("assignor_host_client_denials_total{{api=\"{api}\",resource=\"{resource}\"}}");
        assert_eq!(sample(&metrics, &name), count, "{name} in\n{metrics}");
    }
    host.stop().await;
}

/// `user`'s own connection to Kafka itself (SASL_SSL, SCRAM-SHA-512), to ask it what it
/// answers the same principal.
pub(super) async fn on_kafka_as(kafka: &kafka_harness::KafkaCluster, user: &str) -> Connection {
    use assignor_host::upstream::connection::{
        Secret, Security, SecurityProtocol, SecuritySettings,
    };
    let settings = SecuritySettings {
        security_protocol: SecurityProtocol::SaslSsl,
        sasl_mechanism: Some(SaslMechanism::ScramSha512),
        sasl_username: Some(user.to_owned()),
        sasl_password: Some(Secret::new(format!("{user}-secret"))),
        ssl_ca_location: Some(kafka.state().tls.ca.clone()),
        ..SecuritySettings::default()
    };
    let security = Security::load(&settings).expect("client settings");
    Connection::open(
        kafka.sasl_ssl_bootstrap(),
        &security,
        std::time::Duration::from_secs(20),
    )
    .await
    .unwrap_or_else(|e| panic!("{user} logs in to Kafka: {e}"))
}

/// `(topic, partition, committed offset, error)` of an OffsetFetch answer's one group, sorted.
fn offsets_of(
    topics: impl IntoIterator<Item = (String, Vec<(i32, i64, i16)>)>,
) -> Vec<(String, i32, i64, i16)> {
    let mut rows: Vec<_> = topics
        .into_iter()
        .flat_map(|(t, ps)| ps.into_iter().map(move |(p, o, e)| (t.clone(), p, o, e)))
        .collect();
    rows.sort();
    rows
}

/// What Kafka filters without an error, the host filters the same way: OffsetFetch of every
/// committed offset leaves out topics the principal may not DESCRIBE, and a named one it may
/// not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED (offset -1), the same answers Kafka gives
/// alice for the same offsets; ListGroups lists every group to a principal with DESCRIBE on
/// the cluster (admin, a super user) and to any other only the groups it may DESCRIBE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_leave_out_what_kafka_leaves_out() {
    let kafka = shared_kafka().await;
    let mut direct = create_on_kafka(kafka, "ledger", 1, 1).await;
    create_on_kafka(kafka, "hidden", 1, 1).await;
    let acls = CreateAclsRequest::default().with_creations(vec![
        acl_for("User:alice", 3, "books-1", 3), // GROUP books-1 LITERAL
        acl_for("User:alice", 3, "books-c", 3),
        acl_for("User:alice", 3, "books-d", 3),
        acl_for("User:alice", 2, "ledger", 3), // TOPIC ledger LITERAL
    ]);
    let created = direct.call(&acls, 3).await.unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );
    let host = sasl_host(kafka).await;
    host.wait_for_topic("ledger", 1).await;
    host.wait_for_topic("hidden", 1).await;
    let mut admin = as_user(&host, "admin").await;
    for group in ["books-1", "books-2"] {
        let codes = commit_codes(
            &mut admin,
            &commit(group, &[("ledger", 0, 3), ("hidden", 0, 4)]),
        )
        .await;
        assert_eq!(codes, [0, 0], "admin's commit for {group}");
    }
    let mut alice = as_user(&host, "alice").await;
    let mut alice_on_kafka = on_kafka_as(kafka, "alice").await;

    // OffsetFetch of every committed offset (v7 and the batched v8): `hidden` left out.
    let every = OffsetFetchRequest::default()
        .with_group_id(GroupId(str("books-1")))
        .with_topics(None);
    let rows = |r: kafka_protocol::messages::OffsetFetchResponse| {
        offsets_of(r.topics.into_iter().map(|t| {
            let ps = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset, p.error_code));
            (t.name.to_string(), ps.collect())
        }))
    };
    let through_host = rows(alice.call(&every, 7).await.unwrap());
    assert_eq!(
        through_host,
        [("ledger".to_owned(), 0, 3, 0)],
        "every offset, v7"
    );
    let from_kafka = rows(alice_on_kafka.call(&every, 7).await.unwrap());
    assert_eq!(
        through_host, from_kafka,
        "the host's answer and Kafka's, v7"
    );

    let batched_rows = |r: kafka_protocol::messages::OffsetFetchResponse| {
        assert_eq!(r.groups.len(), 1, "{r:?}");
        assert_eq!(r.groups[0].error_code, 0, "{r:?}");
        offsets_of(r.groups[0].topics.iter().map(|t| {
            let ps = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset, p.error_code));
            (t.name.to_string(), ps.collect())
        }))
    };
    let every_batched = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("books-1")))
            .with_topics(None),
    ]);
    let through_host = batched_rows(alice.call(&every_batched, 8).await.unwrap());
    assert_eq!(
        through_host,
        [("ledger".to_owned(), 0, 3, 0)],
        "every offset, v8"
    );
    let from_kafka = batched_rows(alice_on_kafka.call(&every_batched, 8).await.unwrap());
    assert_eq!(
        through_host, from_kafka,
        "the host's answer and Kafka's, v8"
    );

    // Named topics: `hidden` answers TOPIC_AUTHORIZATION_FAILED, as on Kafka.
    let named = OffsetFetchRequest::default()
        .with_group_id(GroupId(str("books-1")))
        .with_topics(Some(
            ["ledger", "hidden"]
                .map(|t| {
                    OffsetFetchRequestTopic::default()
                        .with_name(topic_name(t))
                        .with_partition_indexes(vec![0])
                })
                .to_vec(),
        ));
    let through_host = rows(alice.call(&named, 7).await.unwrap());
    assert_eq!(
        through_host,
        [
            ("hidden".to_owned(), 0, -1, TOPIC_AUTHORIZATION_FAILED),
            ("ledger".to_owned(), 0, 3, 0)
        ],
        "named topics, v7"
    );
    let from_kafka = rows(alice_on_kafka.call(&named, 7).await.unwrap());
    assert_eq!(
        through_host, from_kafka,
        "the host's answer and Kafka's, named, v7"
    );
    let named_batched = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("books-1")))
            .with_topics(Some(
                ["ledger", "hidden"]
                    .map(|t| {
                        OffsetFetchRequestTopics::default()
                            .with_name(topic_name(t))
                            .with_partition_indexes(vec![0])
                    })
                    .to_vec(),
            )),
    ]);
    let through_host = batched_rows(alice.call(&named_batched, 8).await.unwrap());
    let from_kafka = batched_rows(alice_on_kafka.call(&named_batched, 8).await.unwrap());
    assert_eq!(
        through_host, from_kafka,
        "the host's answer and Kafka's, named, v8"
    );
    assert!(
        through_host.contains(&("hidden".to_owned(), 0, -1, TOPIC_AUTHORIZATION_FAILED)),
        "{through_host:?}"
    );

    // ConsumerGroupDescribe (Kafka 4's rule): a consumer group with a member subscribed to
    // `hidden` is refused to alice whole, with no details; one on `ledger` alone is described.
    // The same groups formed on Kafka itself give alice the same answers.
    for (group, topics) in [
        ("books-c", &["ledger", "hidden"][..]),
        ("books-d", &["ledger"][..]),
    ] {
        let join = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(str(group)))
            .with_member_id(str(&format!("{group}-member-0000000")))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(topics.iter().map(|t| topic_name(t)).collect()))
            .with_topic_partitions(Some(Vec::new()));
        let on_host = admin.call(&join, 1).await.unwrap();
        assert_eq!(
            on_host.error_code, 0,
            "{group} through the host: {on_host:?}"
        );
        let on_kafka = direct.call(&join, 1).await.unwrap();
        assert_eq!(on_kafka.error_code, 0, "{group} on Kafka: {on_kafka:?}");
    }
    let describe = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(str("books-c")), GroupId(str("books-d"))]);
    let shape = |r: kafka_protocol::messages::ConsumerGroupDescribeResponse| {
        let mut groups: Vec<(String, i16, Option<String>, usize)> = r
            .groups
            .iter()
            .map(|g| {
                let message = g.error_message.as_ref().map(|m| m.to_string());
                (
                    g.group_id.to_string(),
                    g.error_code,
                    message,
                    g.members.len(),
                )
            })
            .collect();
        groups.sort();
        groups
    };
    let through_host = shape(alice.call(&describe, 1).await.unwrap());
    let from_kafka = shape(alice_on_kafka.call(&describe, 1).await.unwrap());
    assert_eq!(
        through_host, from_kafka,
        "ConsumerGroupDescribe, host and Kafka"
    );
    assert_eq!(
        through_host[0].1, TOPIC_AUTHORIZATION_FAILED,
        "{through_host:?}"
    );
    assert_eq!(
        (through_host[1].1, through_host[1].3),
        (0, 1),
        "{through_host:?}"
    );

    // ListGroups: admin (a super user: DESCRIBE CLUSTER) sees both, alice only hers, bob none.
    let listed = |r: kafka_protocol::messages::ListGroupsResponse| {
        assert_eq!(r.error_code, 0, "{r:?}");
        let mut names: Vec<String> = r.groups.iter().map(|g| g.group_id.to_string()).collect();
        names.sort();
        names
    };
    let list = ListGroupsRequest::default();
    assert_eq!(
        listed(admin.call(&list, 4).await.unwrap()),
        ["books-1", "books-2", "books-c", "books-d"]
    );
    assert_eq!(
        listed(alice.call(&list, 4).await.unwrap()),
        ["books-1", "books-c", "books-d"]
    );
    let mut bob = as_user(&host, "bob").await;
    assert!(listed(bob.call(&list, 4).await.unwrap()).is_empty());

    // Kafka's silent filters count no denial; the named `hidden` (v7 and v8) does.
    let metrics = Admin::new(&host).scrape().await;
    // Sorted: a metric family writes its label sets in no set order.
    let mut denials: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("assignor_host_client_denials_total{"))
        .collect();
    denials.sort_unstable();
    assert_eq!(
        denials,
        [
            "assignor_host_client_denials_total{api=\"ConsumerGroupDescribe\",resource=\"topic\"} 1",
            "assignor_host_client_denials_total{api=\"OffsetFetch\",resource=\"topic\"} 2"
        ],
        "{metrics}"
    );
    host.stop().await;
}

/// `kafka.acl_file`: the host serves a group request only when the cluster's ACLs and the
/// file's both allow it. The cluster lets alice READ groups `file-*` and topic `file-orders`;
/// the file denies her `file-denied` and allows bob `file-bobs` (which the cluster does not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_acl_file_must_allow_too() {
    let kafka = shared_kafka().await;
    let mut direct = create_on_kafka(kafka, "file-orders", 1, 1).await;
    let acls = CreateAclsRequest::default().with_creations(vec![
        acl(3, "file-", 4),       // GROUP file-* PREFIXED
        acl(2, "file-orders", 3), // TOPIC file-orders LITERAL
    ]);
    let created = direct.call(&acls, 3).await.unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acls.json");
    std::fs::write(
        &file,
        serde_json::json!({ "acls": [
            { "resource_type": "group", "resource_name": "file-denied", "pattern_type": "literal",
              "principal": "User:alice", "operation": "read", "permission": "deny" },
            { "resource_type": "group", "resource_name": "file-bobs", "pattern_type": "literal",
              "principal": "User:bob", "operation": "read", "permission": "allow" },
        ]})
        .to_string(),
    )
    .unwrap();
    let host = sasl_host_with(kafka, |config| config.kafka.acl_file = Some(file.clone())).await;
    host.wait_for_topic("file-orders", 1).await;
    let mut alice = as_user(&host, "alice").await;
    let mut bob = as_user(&host, "bob").await;

    // Both allow: served. The file denies: refused, though Kafka allows.
    assert_eq!(alice.call(&join("file-1"), 5).await.unwrap().error_code, 79);
    assert_eq!(
        alice
            .call(&join("file-denied"), 5)
            .await
            .unwrap()
            .error_code,
        GROUP_AUTHORIZATION_FAILED
    );
    let codes = commit_codes(&mut alice, &commit("file-denied", &[("file-orders", 0, 9)])).await;
    assert_eq!(codes, [GROUP_AUTHORIZATION_FAILED]);
    let in_kafka = direct
        .call(
            &OffsetFetchRequest::default()
                .with_group_id(GroupId(str("file-denied")))
                .with_topics(None),
            7,
        )
        .await
        .unwrap();
    assert!(
        in_kafka.topics.is_empty(),
        "a refused commit reached Kafka: {in_kafka:?}"
    );
    // The file allows, Kafka does not: refused.
    assert_eq!(
        bob.call(&join("file-bobs"), 5).await.unwrap().error_code,
        GROUP_AUTHORIZATION_FAILED
    );
    host.stop().await;

    // A file that cannot be read, or holds an ACL Kafka would refuse, stops the start.
    std::fs::write(&file, r#"{"acls": [{"resource_type": "group"}]}"#).unwrap();
    let config = {
        let mut config = assignor_host::config::Config {
            data_dir: dir.path().join("data"),
            ..Default::default()
        };
        config.kafka.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        config.admin.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        config.upstream.bootstrap = vec![kafka.bootstrap().to_owned()];
        config.kafka.acl_file = Some(file.clone());
        config
    };
    let refused = assignor_host::server::Server::start(config).await.err();
    let said = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        said.contains("kafka.acl_file") && said.contains("acls.json"),
        "{said}"
    );
}
