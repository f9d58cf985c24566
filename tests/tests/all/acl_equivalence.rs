//! Standalone's ACLs decide as Apache Kafka's `StandardAuthorizer` does: the same principals
//! and the same ACLs on a Kafka node and on a standalone host (`kafka.authentication =
//! "local"`, `allow_everyone_if_no_acl_found = false` and `super_users = ["User:admin"]` as
//! Kafka's defaults and the test cluster's), the same requests sent to each by the same users
//! logged in by SCRAM-SHA-512, and every answer's error codes compared, in their places: every
//! group API in Kafka's table, allowed and denied, literal and prefixed patterns, deny winning,
//! the implied DESCRIBE, `User:*`, a super user, OffsetFetch's silent topic filter and
//! ListGroups' filter; and the topic APIs a standalone host answers itself (Metadata,
//! CreateTopics, DeleteTopics, CreatePartitions, ListOffsets, Produce, Fetch). DescribeGroups
//! and Metadata ask for the authorized operations too, compared as well.
//!
//! Names start with `eq-` so the shared Kafka node's other tests' ACLs do not reach them.

use assignor_host::acls::{
    AclBinding, AclOperation, PatternType as Pattern, Permission, ResourceType,
};
use assignor_host::catalog::TopicSeed;
use assignor_host::kafka::Authentication;
use assignor_host::upstream::connection::Connection;
use assignor_host::upstream::connection::security::SaslMechanism;
use assignor_host_tests::{TestHost, str, topic_name};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, ConsumerGroupHeartbeatRequest, CreateAclsRequest, CreatePartitionsRequest,
    CreateTopicsRequest, DeleteGroupsRequest, DeleteTopicsRequest, DescribeGroupsRequest,
    FetchRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest,
    ListGroupsRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, ProduceRequest,
};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::admin_support::Admin;
use super::proxy_authorization::on_kafka_as;
use super::proxy_support::{create_on_kafka, login, shared_kafka};

const TOPICS: [(&str, i32); 3] = [("eq-orders", 2), ("eq-secret", 1), ("eq-public", 1)];
const USERS: [&str; 3] = ["alice", "bob", "admin"];
/// Every group the cases name.
const GROUPS: [&str; 11] = [
    "eq-shop-1",
    "eq-shop-2",
    "eq-shop-3",
    "eq-shop-4",
    "eq-shop-5",
    "eq-shop-old",
    "eq-shop-banned",
    "eq-view",
    "eq-other",
    "eq-open",
    "eq-admins",
];

/// The ACLs, in the host's form; [`on_kafka`] turns each into Kafka's.
fn acls() -> Vec<AclBinding> {
    use AclOperation::*;
    use ResourceType::{Group, Topic};
    let acl = |permission, principal: &str, operation, kind, name: &str, pattern| AclBinding {
        resource_type: kind,
        resource_name: name.to_owned(),
        pattern_type: pattern,
        principal: principal.to_owned(),
        host: "*".to_owned(),
        operation,
        permission,
    };
    let allow = Permission::Allow;
    vec![
        acl(
            allow,
            "User:alice",
            Read,
            Group,
            "eq-shop-",
            Pattern::Prefixed,
        ),
        acl(
            allow,
            "User:alice",
            Read,
            Topic,
            "eq-orders",
            Pattern::Literal,
        ),
        // Deny wins over the prefixed allow above.
        acl(
            Permission::Deny,
            "User:alice",
            Read,
            Group,
            "eq-shop-banned",
            Pattern::Literal,
        ),
        acl(
            allow,
            "User:alice",
            Delete,
            Group,
            "eq-shop-old",
            Pattern::Literal,
        ),
        acl(
            allow,
            "User:alice",
            Describe,
            Group,
            "eq-view",
            Pattern::Literal,
        ),
        acl(allow, "User:*", Read, Group, "eq-open", Pattern::Literal),
        acl(
            allow,
            "User:*",
            Describe,
            Topic,
            "eq-public",
            Pattern::Literal,
        ),
    ]
}

/// Kafka's CreateAcls form of a binding.
fn on_kafka(b: &AclBinding) -> AclCreation {
    let resource_type = match b.resource_type {
        ResourceType::Topic => 2,
        ResourceType::Group => 3,
        ResourceType::Cluster => 4,
        ResourceType::TransactionalId => 5,
    };
    let operation = match b.operation {
        AclOperation::All => 2,
        AclOperation::Read => 3,
        AclOperation::Write => 4,
        AclOperation::Create => 5,
        AclOperation::Delete => 6,
        AclOperation::Alter => 7,
        AclOperation::Describe => 8,
        AclOperation::ClusterAction => 9,
        AclOperation::DescribeConfigs => 10,
        AclOperation::AlterConfigs => 11,
        AclOperation::IdempotentWrite => 12,
    };
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(str(&b.resource_name))
        .with_resource_pattern_type(match b.pattern_type {
            Pattern::Literal => 3,
            Pattern::Prefixed => 4,
        })
        .with_principal(str(&b.principal))
        .with_host(str(&b.host))
        .with_operation(operation)
        .with_permission_type(match b.permission {
            Permission::Allow => 3,
            Permission::Deny => 2,
        })
}

/// One request sent to both, as one user.
#[derive(Debug, Clone)]
enum Case {
    Find(&'static str),
    Join(&'static str),
    Heartbeat(&'static str),
    Commit(&'static str, &'static [&'static str]),
    FetchAll(&'static str),
    FetchNamed(&'static str, &'static str),
    FetchBatch(&'static [&'static str]),
    Describe(&'static [&'static str]),
    Delete(&'static [&'static str]),
    OffsetDelete(&'static str, &'static str),
    ConsumerHeartbeat(&'static str, &'static str),
    /// ListGroups, the `eq-` groups listed.
    List,
    /// Metadata of these topics (no auto-creation), or of every topic (the `eq-` ones listed).
    Metadata(Option<&'static [&'static str]>),
    /// CreateTopics, validate-only (nothing is created on either side).
    CreateTopics(&'static [&'static str]),
    DeleteTopics(&'static [&'static str]),
    /// CreatePartitions to 3, validate-only.
    CreatePartitions(&'static str),
    ListOffsets(&'static [&'static str]),
    /// Produce of one record to partition 0 (the host stores none: POLICY_VIOLATION where
    /// Kafka would take it, so only refused produces are compared).
    Produce(&'static str),
    /// Fetch of partition 0 from offset 0, not waiting.
    Fetch(&'static [&'static str]),
}

fn gid(group: &str) -> GroupId {
    GroupId(str(group))
}

/// `name: code` rows, sorted: Kafka lists the resources it refused first, the host in the
/// request's order, and clients match the answer to the request by name.
fn by_name(rows: impl Iterator<Item = (String, i16)>) -> Vec<String> {
    let mut rows: Vec<String> = rows.map(|(name, code)| format!("{name}: {code}")).collect();
    rows.sort();
    rows
}

/// What an answer says, in its places: error codes (and for the listings, what is listed).
async fn answer(client: &mut Connection, case: &Case) -> Vec<String> {
    let codes = |codes: Vec<i16>| codes.into_iter().map(|c| c.to_string()).collect();
    match case {
        Case::Find(group) => {
            let request = FindCoordinatorRequest::default()
                .with_key(str(group))
                .with_key_type(0);
            codes(vec![client.call(&request, 3).await.unwrap().error_code])
        }
        Case::Join(group) => {
            let request = JoinGroupRequest::default()
                .with_group_id(gid(group))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_member_id(str(""))
                .with_protocol_type(str("consumer"))
                .with_protocols(vec![
                    JoinGroupRequestProtocol::default()
                        .with_name(str("range"))
                        .with_metadata(assignor_host_tests::subscription(&["eq-orders"], 0)),
                ]);
            codes(vec![client.call(&request, 5).await.unwrap().error_code])
        }
        Case::Heartbeat(group) => {
            let request = HeartbeatRequest::default()
                .with_group_id(gid(group))
                .with_generation_id(1)
                .with_member_id(str("m"));
            codes(vec![client.call(&request, 4).await.unwrap().error_code])
        }
        Case::Commit(group, topics) => {
            let request = OffsetCommitRequest::default()
                .with_group_id(gid(group))
                .with_generation_id_or_member_epoch(-1)
                .with_member_id(str(""))
                .with_topics(
                    topics
                        .iter()
                        .map(|t| {
                            OffsetCommitRequestTopic::default()
                                .with_name(topic_name(t))
                                .with_partitions(vec![
                                    OffsetCommitRequestPartition::default()
                                        .with_partition_index(0)
                                        .with_committed_offset(5),
                                ])
                        })
                        .collect(),
                );
            let answer = client.call(&request, 8).await.unwrap();
            by_name(answer.topics.iter().flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        format!("{}-{}", t.name.as_str(), p.partition_index),
                        p.error_code,
                    )
                })
            }))
        }
        Case::FetchAll(group) | Case::FetchNamed(group, _) => {
            let topics = match case {
                Case::FetchNamed(_, topic) => Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(topic_name(topic))
                        .with_partition_indexes(vec![0]),
                ]),
                _ => None,
            };
            let request = OffsetFetchRequest::default()
                .with_group_id(gid(group))
                .with_topics(topics);
            let answer = client.call(&request, 7).await.unwrap();
            let mut rows = vec![answer.error_code.to_string()];
            let mut listed: Vec<String> = answer
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(move |p| {
                        format!(
                            "{}-{} offset {} error {}",
                            t.name.as_str(),
                            p.partition_index,
                            p.committed_offset,
                            p.error_code
                        )
                    })
                })
                .collect();
            listed.sort();
            rows.extend(listed);
            rows
        }
        Case::FetchBatch(groups) => {
            let request = OffsetFetchRequest::default().with_groups(
                groups
                    .iter()
                    .map(|g| {
                        OffsetFetchRequestGroup::default()
                            .with_group_id(gid(g))
                            .with_topics(Some(vec![
                                OffsetFetchRequestTopics::default()
                                    .with_name(topic_name("eq-orders"))
                                    .with_partition_indexes(vec![0]),
                            ]))
                    })
                    .collect(),
            );
            let answer = client.call(&request, 8).await.unwrap();
            by_name(
                answer
                    .groups
                    .iter()
                    .map(|g| (g.group_id.to_string(), g.error_code)),
            )
        }
        Case::Describe(groups) => {
            let request = DescribeGroupsRequest::default()
                .with_groups(groups.iter().map(|g| gid(g)).collect())
                .with_include_authorized_operations(true);
            let answer = client.call(&request, 5).await.unwrap();
            // With the operations the principal may do on each group (Kafka's
            // `AuthHelper.authorizedOperations`: the ACLs asked once per operation).
            by_name(answer.groups.iter().map(|g| {
                let ops = g.authorized_operations;
                (
                    format!("{} ops={ops:#x}", g.group_id.as_str()),
                    g.error_code,
                )
            }))
        }
        Case::Delete(groups) => {
            let request = DeleteGroupsRequest::default()
                .with_groups_names(groups.iter().map(|g| gid(g)).collect());
            let answer = client.call(&request, 2).await.unwrap();
            by_name(
                answer
                    .results
                    .iter()
                    .map(|r| (r.group_id.to_string(), r.error_code)),
            )
        }
        Case::OffsetDelete(group, topic) => {
            let request = OffsetDeleteRequest::default()
                .with_group_id(gid(group))
                .with_topics(vec![
                    OffsetDeleteRequestTopic::default()
                        .with_name(topic_name(topic))
                        .with_partitions(vec![
                            OffsetDeleteRequestPartition::default().with_partition_index(0),
                        ]),
                ]);
            let answer = client.call(&request, 0).await.unwrap();
            let mut rows = vec![answer.error_code];
            rows.extend(
                answer
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            );
            codes(rows)
        }
        Case::ConsumerHeartbeat(group, topic) => {
            let request = ConsumerGroupHeartbeatRequest::default()
                .with_group_id(gid(group))
                .with_member_id(str(&uuid::Uuid::new_v4().to_string()))
                .with_member_epoch(0)
                .with_rebalance_timeout_ms(10_000)
                .with_subscribed_topic_names(Some(vec![topic_name(topic)]))
                .with_topic_partitions(Some(Vec::new()));
            codes(vec![client.call(&request, 0).await.unwrap().error_code])
        }
        Case::Metadata(topics) => {
            let request = MetadataRequest::default()
                .with_topics(topics.map(|names| {
                    names
                        .iter()
                        .map(|t| MetadataRequestTopic::default().with_name(Some(topic_name(t))))
                        .collect()
                }))
                .with_allow_auto_topic_creation(false)
                .with_include_topic_authorized_operations(true);
            let answer = client.call(&request, 12).await.unwrap();
            by_name(
                answer
                    .topics
                    .iter()
                    .filter(|t| t.name.as_ref().is_some_and(|n| n.starts_with("eq-")))
                    .map(|t| {
                        let name = t.name.as_ref().map_or("", |n| n.as_str());
                        let (partitions, ops) = (t.partitions.len(), t.topic_authorized_operations);
                        (
                            format!("{name} ({partitions} partitions) ops={ops:#x}"),
                            t.error_code,
                        )
                    }),
            )
        }
        Case::CreateTopics(topics) => {
            let request = CreateTopicsRequest::default()
                .with_timeout_ms(10_000)
                .with_validate_only(true)
                .with_topics(
                    topics
                        .iter()
                        .map(|t| {
                            CreatableTopic::default()
                                .with_name(topic_name(t))
                                .with_num_partitions(1)
                                .with_replication_factor(1)
                        })
                        .collect(),
                );
            let answer = client.call(&request, 7).await.unwrap();
            by_name(
                answer
                    .topics
                    .iter()
                    .map(|t| (t.name.to_string(), t.error_code)),
            )
        }
        Case::DeleteTopics(topics) => {
            let request = DeleteTopicsRequest::default()
                .with_timeout_ms(10_000)
                .with_topic_names(topics.iter().map(|t| topic_name(t)).collect());
            let answer = client.call(&request, 5).await.unwrap();
            by_name(answer.responses.iter().map(|r| {
                let name = r.name.as_ref().map_or(String::new(), |n| n.to_string());
                (name, r.error_code)
            }))
        }
        Case::CreatePartitions(topic) => {
            let request = CreatePartitionsRequest::default()
                .with_timeout_ms(10_000)
                .with_validate_only(true)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(topic_name(topic))
                        .with_count(3)
                        .with_assignments(None),
                ]);
            let answer = client.call(&request, 3).await.unwrap();
            by_name(
                answer
                    .results
                    .iter()
                    .map(|r| (r.name.to_string(), r.error_code)),
            )
        }
        Case::ListOffsets(topics) => {
            let request = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(
                    topics
                        .iter()
                        .map(|t| {
                            ListOffsetsTopic::default()
                                .with_name(topic_name(t))
                                .with_partitions(vec![
                                    ListOffsetsPartition::default()
                                        .with_partition_index(0)
                                        .with_timestamp(-2),
                                ])
                        })
                        .collect(),
                );
            let answer = client.call(&request, 7).await.unwrap();
            by_name(answer.topics.iter().flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        format!("{}-{}", t.name.as_str(), p.partition_index),
                        p.error_code,
                    )
                })
            }))
        }
        Case::Produce(topic) => {
            let request = ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(10_000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(topic_name(topic))
                        .with_partition_data(vec![
                            PartitionProduceData::default()
                                .with_index(0)
                                .with_records(Some(assignor_host_tests::proxy::batch(&[
                                    "eq-value",
                                ]))),
                        ]),
                ]);
            let answer = client.call(&request, 9).await.unwrap();
            by_name(answer.responses.iter().flat_map(|t| {
                t.partition_responses
                    .iter()
                    .map(|p| (format!("{}-{}", t.name.as_str(), p.index), p.error_code))
            }))
        }
        Case::Fetch(topics) => {
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_min_bytes(0)
                .with_max_bytes(1 << 20)
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(
                    topics
                        .iter()
                        .map(|t| {
                            FetchTopic::default()
                                .with_topic(topic_name(t))
                                .with_partitions(vec![
                                    FetchPartition::default()
                                        .with_partition(0)
                                        .with_fetch_offset(0)
                                        .with_partition_max_bytes(1 << 20),
                                ])
                        })
                        .collect(),
                );
            let answer = client.call(&request, 12).await.unwrap();
            let mut rows = vec![answer.error_code.to_string()];
            rows.extend(by_name(answer.responses.iter().flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        format!("{}-{}", t.topic.as_str(), p.partition_index),
                        p.error_code,
                    )
                })
            })));
            rows
        }
        Case::List => {
            let answer = client.call(&ListGroupsRequest::default(), 4).await.unwrap();
            let mut listed: Vec<String> = answer
                .groups
                .iter()
                .map(|g| g.group_id.to_string())
                .filter(|g| g.starts_with("eq-"))
                .collect();
            listed.sort();
            listed.insert(0, answer.error_code.to_string());
            listed
        }
    }
}

/// The requests, in order (earlier ones make the groups and offsets later ones read).
fn cases() -> Vec<(&'static str, Case)> {
    use Case::*;
    vec![
        // FindCoordinator: DESCRIBE GROUP, implied by READ; a DESCRIBE-only ACL; deny wins.
        ("alice", Find("eq-shop-1")),
        ("bob", Find("eq-shop-1")),
        ("alice", Find("eq-view")),
        ("alice", Find("eq-shop-banned")),
        ("alice", Find("eq-other")),
        ("bob", Find("eq-open")),
        // The join family: READ GROUP (DESCRIBE does not imply it).
        ("alice", Join("eq-shop-1")),
        ("bob", Join("eq-shop-1")),
        ("alice", Join("eq-view")),
        ("alice", Join("eq-shop-banned")),
        ("bob", Join("eq-open")),
        ("admin", Join("eq-admins")),
        ("bob", Heartbeat("eq-shop-1")),
        // OffsetCommit: READ GROUP, then READ TOPIC per topic; a super user past every ACL.
        ("alice", Commit("eq-shop-2", &["eq-orders", "eq-secret"])),
        ("bob", Commit("eq-shop-2", &["eq-orders"])),
        ("alice", Commit("eq-shop-old", &["eq-orders"])),
        ("admin", Commit("eq-shop-2", &["eq-secret", "eq-public"])),
        // OffsetFetch: DESCRIBE GROUP; every offset: silently only topics she may DESCRIBE
        // (eq-public by `User:*`, eq-orders by READ; not eq-secret); a named topic she may
        // not DESCRIBE: TOPIC_AUTHORIZATION_FAILED in its place.
        ("alice", FetchAll("eq-shop-2")),
        ("bob", FetchAll("eq-shop-2")),
        ("admin", FetchAll("eq-shop-2")),
        ("alice", FetchNamed("eq-shop-2", "eq-secret")),
        ("alice", FetchNamed("eq-shop-2", "eq-orders")),
        ("alice", FetchBatch(&["eq-shop-2", "eq-other", "eq-view"])),
        // DescribeGroups: DESCRIBE GROUP per group.
        (
            "alice",
            Describe(&["eq-shop-2", "eq-other", "eq-view", "eq-shop-banned"]),
        ),
        ("bob", Describe(&["eq-shop-2", "eq-open"])),
        // ConsumerGroupHeartbeat: READ GROUP and DESCRIBE on each subscribed topic.
        ("alice", ConsumerHeartbeat("eq-shop-3", "eq-secret")),
        ("alice", ConsumerHeartbeat("eq-shop-4", "eq-orders")),
        ("bob", ConsumerHeartbeat("eq-shop-5", "eq-public")),
        // ListGroups: every group to a super user, to others those they may DESCRIBE.
        ("alice", List),
        ("bob", List),
        // OffsetDelete: DELETE GROUP, then READ TOPIC.
        ("alice", OffsetDelete("eq-shop-2", "eq-orders")),
        ("alice", OffsetDelete("eq-shop-old", "eq-orders")),
        ("alice", OffsetDelete("eq-shop-old", "eq-secret")),
        // The topic APIs: Metadata's DESCRIBE (named: refused in place, also for a topic that
        // does not exist; every topic: silently filtered), CREATE on the cluster or topic,
        // DELETE, ALTER, ListOffsets' DESCRIBE, Produce's WRITE, Fetch's READ.
        (
            "alice",
            Metadata(Some(&["eq-orders", "eq-secret", "eq-public", "eq-missing"])),
        ),
        ("bob", Metadata(Some(&["eq-orders", "eq-public"]))),
        ("alice", Metadata(None)),
        ("bob", Metadata(None)),
        ("admin", Metadata(None)),
        ("alice", CreateTopics(&["eq-new", "eq-shop-topic"])),
        ("admin", CreateTopics(&["eq-new"])),
        ("alice", DeleteTopics(&["eq-secret", "eq-missing"])),
        ("alice", CreatePartitions("eq-orders")),
        ("admin", CreatePartitions("eq-orders")),
        (
            "alice",
            ListOffsets(&["eq-orders", "eq-secret", "eq-public"]),
        ),
        ("bob", ListOffsets(&["eq-orders"])),
        ("alice", Produce("eq-orders")),
        ("bob", Produce("eq-public")),
        ("alice", Fetch(&["eq-orders", "eq-secret"])),
        ("bob", Fetch(&["eq-public"])),
        // DeleteGroups: DELETE GROUP per group.
        ("alice", Delete(&["eq-shop-2", "eq-shop-old", "eq-other"])),
        ("admin", Delete(&["eq-admins"])),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_acls_decide_every_group_api_as_kafkas_standard_authorizer() {
    let kafka = shared_kafka().await;
    let mut direct = create_on_kafka(kafka, TOPICS[0].0, TOPICS[0].1, 1).await;
    for (topic, partitions) in &TOPICS[1..] {
        create_on_kafka(kafka, topic, *partitions, 1).await;
    }
    let created = direct
        .call(
            &CreateAclsRequest::default().with_creations(acls().iter().map(on_kafka).collect()),
            3,
        )
        .await
        .unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );

    let host = TestHost::with_config(|config| {
        config.kafka.authentication = Some(Authentication::Local);
        config.kafka.allow_everyone_if_no_acl_found = false;
        config.kafka.super_users = vec!["User:admin".into()];
        config.catalog.topics = TOPICS
            .iter()
            .map(|(name, partitions)| TopicSeed {
                name: (*name).to_owned(),
                partitions: *partitions,
                partition_racks: Vec::new(),
            })
            .collect();
    })
    .await;
    let admin = Admin::new(&host);
    for user in USERS {
        let (status, body) = admin
            .json(
                Method::PUT,
                &format!("/v1/users/{user}"),
                json!({ "mechanism": "SCRAM-SHA-512", "password": format!("{user}-secret") }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = admin
        .json(Method::POST, "/v1/acls", json!({ "acls": acls() }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let mut on_kafka_clients = Vec::new();
    let mut on_host_clients = Vec::new();
    for user in USERS {
        on_kafka_clients.push(on_kafka_as(kafka, user).await);
        on_host_clients.push(
            login(
                &host,
                SaslMechanism::ScramSha512,
                user,
                &format!("{user}-secret"),
            )
            .await
            .unwrap_or_else(|e| panic!("{user} logs in to the host: {e}")),
        );
    }
    let index = |user: &str| USERS.iter().position(|u| *u == user).unwrap();
    // Kafka creates `__consumer_offsets` at the first FindCoordinator and loads each of its
    // partitions, answering NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS until then: wait
    // until it describes every group of the cases before comparing.
    let groups: Vec<GroupId> = GROUPS.iter().map(|g| gid(g)).collect();
    let mut last = None;
    for _ in 0..600 {
        on_kafka_clients[index("admin")]
            .call(
                &FindCoordinatorRequest::default()
                    .with_key(str("eq-warm-up"))
                    .with_key_type(0),
                3,
            )
            .await
            .unwrap();
        let described = on_kafka_clients[index("admin")]
            .call(
                &DescribeGroupsRequest::default().with_groups(groups.clone()),
                5,
            )
            .await
            .unwrap();
        if described.groups.iter().all(|g| g.error_code == 0) {
            last = None;
            break;
        }
        last = Some(described);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        last.is_none(),
        "Kafka's coordinators are not loaded: {last:?}"
    );

    let cases = cases();
    let mut differ = Vec::new();
    let mut denials = 0;
    for (user, case) in &cases {
        let on_kafka = answer(&mut on_kafka_clients[index(user)], case).await;
        let on_host = answer(&mut on_host_clients[index(user)], case).await;
        denials += on_kafka
            .iter()
            .filter(|c| {
                ["29", "30", ": 29", ": 30", "error 29"]
                    .iter()
                    .any(|e| c.ends_with(e))
            })
            .count();
        if on_kafka != on_host {
            differ.push(format!(
                "{user} {case:?}: Kafka {on_kafka:?}, host {on_host:?}"
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} cases answered differently:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
    // The cases exercise refusals, not only successes.
    assert!(denials >= 25, "only {denials} refusals among the answers");
    host.stop().await;
}
