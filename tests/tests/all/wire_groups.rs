//! The group APIs over real sockets: two consumers join, the host (not a member) leads and
//! computes the assignment with the built-in `range`, each member syncs and decodes its own
//! ConsumerProtocolAssignment, then heartbeats, commits and fetches offsets, describes, lists,
//! leaves and deletes, as a client library would.

use assignor_host_tests::{
    KafkaClient, TestHost, decode_assignment, str, subscription, topic_name,
};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, GroupId, HeartbeatRequest, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest,
    OffsetFetchRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;

const GROUP: &str = "payments";
const JOIN_VERSION: i16 = 5;

fn group() -> GroupId {
    GroupId(str(GROUP))
}

async fn host() -> TestHost {
    TestHost::with_config(|c| {
        c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
            name: "orders".into(),
            partitions: 4,
            partition_racks: Vec::new(),
        }];
        // The first join completes at once, so the test's steps decide the order.
        c.coordinator.initial_rebalance_delay_ms = 0;
    })
    .await
}

fn join(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(group())
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(str(member_id))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(str("range"))
                .with_metadata(subscription(&["orders"], 3)),
        ])
}

/// The two-step join of KIP-394: the first JoinGroup returns MEMBER_ID_REQUIRED with an id.
async fn member_id(client: &mut KafkaClient) -> String {
    let first = client.call(&join(""), JOIN_VERSION).await.unwrap();
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    assert!(!first.member_id.is_empty());
    first.member_id.to_string()
}

fn heartbeat(member_id: &str, generation_id: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(group())
        .with_generation_id(generation_id)
        .with_member_id(str(member_id))
}

fn sync(member_id: &str, generation_id: i32) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(group())
        .with_generation_id(generation_id)
        .with_member_id(str(member_id))
}

/// Heartbeats until the coordinator reports REBALANCE_IN_PROGRESS (what a member does while
/// another joins); each round trip is ordered after the other member's JoinGroup once it lands.
async fn until_rebalance(client: &mut KafkaClient, member_id: &str, generation_id: i32) {
    for _ in 0..100_000 {
        let response = client
            .call(&heartbeat(member_id, generation_id), 3)
            .await
            .unwrap();
        match response.error_code {
            0 => continue,
            27 => return,
            other => panic!("heartbeat answered {other}"),
        }
    }
    panic!("no rebalance started");
}

struct Joined {
    a: (KafkaClient, String),
    b: (KafkaClient, String),
    generation_id: i32,
}

/// A joins alone (generation 1), then B joins, A rejoins, and both get generation 2.
async fn two_members(host: &TestHost) -> (Joined, JoinGroupResponse, JoinGroupResponse) {
    let mut a = host.client().await;
    let a_id = member_id(&mut a).await;
    let alone = a.call(&join(&a_id), JOIN_VERSION).await.unwrap();
    assert_eq!(alone.error_code, 0);
    let first_generation = alone.generation_id;
    let synced = a.call(&sync(&a_id, first_generation), 3).await.unwrap();
    assert_eq!(synced.error_code, 0);
    assert_eq!(
        decode_assignment(synced.assignment).unwrap(),
        [("orders".to_owned(), vec![0, 1, 2, 3])],
        "a lone member gets every partition"
    );

    let mut b = host.client().await;
    let b_id = member_id(&mut b).await;
    let b_join = b.send(&join(&b_id), JOIN_VERSION).await.unwrap();
    until_rebalance(&mut a, &a_id, first_generation).await;
    let a_joined = a.call(&join(&a_id), JOIN_VERSION).await.unwrap();
    let b_joined = b
        .receive::<JoinGroupRequest>(b_join, JOIN_VERSION)
        .await
        .unwrap();
    let generation_id = a_joined.generation_id;
    (
        Joined {
            a: (a, a_id),
            b: (b, b_id),
            generation_id,
        },
        a_joined,
        b_joined,
    )
}

#[tokio::test]
async fn two_members_get_a_host_computed_range_assignment() {
    let host = host().await;
    let (joined, a_joined, b_joined) = two_members(&host).await;
    for response in [&a_joined, &b_joined] {
        assert_eq!(response.error_code, 0);
        assert_eq!(response.generation_id, joined.generation_id);
        assert_eq!(response.protocol_name.as_deref(), Some("range"));
        // The host leads: no member is named leader, so every client takes the follower path.
        assert_eq!(
            response.leader.as_str(),
            assignor_host::coordinator::HOST_LEADER
        );
        assert!(response.members.is_empty());
    }
    assert_eq!(a_joined.member_id.as_str(), joined.a.1);
    assert_eq!(b_joined.member_id.as_str(), joined.b.1);

    let Joined {
        a: (mut a, a_id),
        b: (mut b, b_id),
        generation_id,
    } = joined;
    let a_sync = a.call(&sync(&a_id, generation_id), 3).await.unwrap();
    let b_sync = b.call(&sync(&b_id, generation_id), 3).await.unwrap();
    assert_eq!((a_sync.error_code, b_sync.error_code), (0, 0));
    let a_assigned = decode_assignment(a_sync.assignment).unwrap();
    let b_assigned = decode_assignment(b_sync.assignment).unwrap();
    // Range: members sorted by id, the first takes partitions 0-1, the second 2-3.
    let (first, second) = if a_id < b_id {
        (a_assigned, b_assigned)
    } else {
        (b_assigned, a_assigned)
    };
    assert_eq!(first, [("orders".to_owned(), vec![0, 1])]);
    assert_eq!(second, [("orders".to_owned(), vec![2, 3])]);

    for (client, id) in [(&mut a, &a_id), (&mut b, &b_id)] {
        let response = client.call(&heartbeat(id, generation_id), 4).await.unwrap();
        assert_eq!(response.error_code, 0);
    }
    host.stop().await;
}

#[tokio::test]
async fn offsets_commit_and_fetch_in_both_layouts() {
    let host = host().await;
    let (joined, ..) = two_members(&host).await;
    let Joined {
        a: (mut a, a_id),
        b: (mut b, b_id),
        generation_id,
    } = joined;
    a.call(&sync(&a_id, generation_id), 3).await.unwrap();
    b.call(&sync(&b_id, generation_id), 3).await.unwrap();

    let partition = |index: i32, offset: i64| {
        OffsetCommitRequestPartition::default()
            .with_partition_index(index)
            .with_committed_offset(offset)
            .with_committed_metadata(Some(str("m")))
    };
    let commit = OffsetCommitRequest::default()
        .with_group_id(group())
        .with_generation_id_or_member_epoch(generation_id)
        .with_member_id(str(&a_id))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name("orders"))
                .with_partitions(vec![partition(0, 42), partition(9, 1)]),
            OffsetCommitRequestTopic::default()
                .with_name(topic_name("unknown"))
                .with_partitions(vec![partition(0, 7)]),
        ]);
    let response = a.call(&commit, 8).await.unwrap();
    let codes: Vec<(String, i32, i16)> = response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("orders".to_owned(), 0, 0),
            ("orders".to_owned(), 9, 3),
            ("unknown".to_owned(), 0, 3)
        ]
    );

    // A stale generation is refused by the coordinator.
    let stale = commit
        .clone()
        .with_generation_id_or_member_epoch(generation_id - 1);
    let response = a.call(&stale, 8).await.unwrap();
    assert_eq!(
        response.topics[0].partitions[0].error_code, 22,
        "ILLEGAL_GENERATION"
    );

    // v1-7: one group.
    let fetch = OffsetFetchRequest::default()
        .with_group_id(group())
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name("orders"))
                .with_partition_indexes(vec![0, 1]),
        ]));
    let response = b.call(&fetch, 5).await.unwrap();
    assert_eq!(response.error_code, 0);
    let offsets: Vec<(i32, i64)> = response.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset))
        .collect();
    assert_eq!(offsets, [(0, 42), (1, -1)]);
    assert_eq!(
        response.topics[0].partitions[0].metadata.as_deref(),
        Some("m")
    );

    // v8+: groups[], answered in request order, an unknown group with -1 offsets.
    let batched = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("nobody")))
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(topic_name("orders"))
                    .with_partition_indexes(vec![0]),
            ])),
        OffsetFetchRequestGroup::default()
            .with_group_id(group())
            .with_topics(None),
    ]);
    let response = b.call(&batched, 8).await.unwrap();
    let groups: Vec<(&str, i16)> = response
        .groups
        .iter()
        .map(|g| (g.group_id.as_str(), g.error_code))
        .collect();
    assert_eq!(groups, [("nobody", 0), (GROUP, 0)]);
    assert_eq!(
        response.groups[0].topics[0].partitions[0].committed_offset,
        -1
    );
    let all: Vec<(String, i32, i64)> = response.groups[1]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    assert_eq!(all, [("orders".to_owned(), 0, 42)]);
    host.stop().await;
}

#[tokio::test]
async fn describe_list_leave_and_delete() {
    let host = host().await;
    let (joined, ..) = two_members(&host).await;
    let Joined {
        a: (mut a, a_id),
        b: (mut b, b_id),
        generation_id,
    } = joined;
    a.call(&sync(&a_id, generation_id), 3).await.unwrap();
    b.call(&sync(&b_id, generation_id), 3).await.unwrap();

    let mut admin = host.client().await;
    let describe = DescribeGroupsRequest::default()
        .with_groups(vec![group(), GroupId(str("nobody"))])
        .with_include_authorized_operations(true);
    let response = admin.call(&describe, 5).await.unwrap();
    let stable = &response.groups[0];
    assert_eq!(stable.group_id.as_str(), GROUP);
    assert_eq!(stable.error_code, 0);
    assert_eq!(stable.group_state.as_str(), "Stable");
    assert_eq!(stable.protocol_type.as_str(), "consumer");
    assert_eq!(stable.protocol_data.as_str(), "range");
    assert_eq!(stable.members.len(), 2);
    assert!(
        stable
            .members
            .iter()
            .all(|m| m.client_host.as_str() == "/127.0.0.1")
    );
    assert!(
        stable
            .members
            .iter()
            .all(|m| m.client_id.as_str() == "assignor-host-tests")
    );
    assert_ne!(stable.authorized_operations, i32::MIN);
    assert_eq!(response.groups[1].group_state.as_str(), "Dead");
    // Below v3 no authorized operations are sent.
    let old = admin
        .call(
            &describe.clone().with_include_authorized_operations(false),
            0,
        )
        .await;
    assert_eq!(old.unwrap().groups[0].members.len(), 2);

    for version in 0..=5 {
        let response = admin
            .call(&ListGroupsRequest::default(), version)
            .await
            .unwrap();
        let ids: Vec<&str> = response
            .groups
            .iter()
            .map(|g| g.group_id.as_str())
            .collect();
        assert_eq!(ids, [GROUP], "v{version}");
        if version >= 4 {
            assert_eq!(response.groups[0].group_state.as_str(), "Stable");
        }
    }

    // An active group cannot be deleted.
    let delete = DeleteGroupsRequest::default().with_groups_names(vec![group()]);
    let response = admin.call(&delete, 2).await.unwrap();
    assert_eq!(response.results[0].error_code, 68, "NON_EMPTY_GROUP");

    // A leaves (v3 batched layout); B is told to rebalance.
    let leave = LeaveGroupRequest::default()
        .with_group_id(group())
        .with_members(vec![MemberIdentity::default().with_member_id(str(&a_id))]);
    let response = a.call(&leave, 3).await.unwrap();
    assert_eq!(response.error_code, 0);
    assert_eq!(response.members[0].error_code, 0);
    let response = b.call(&heartbeat(&b_id, generation_id), 3).await.unwrap();
    assert_eq!(response.error_code, 27, "REBALANCE_IN_PROGRESS");

    // B leaves with the v0 layout: the group is empty and can be deleted.
    let leave_v0 = LeaveGroupRequest::default()
        .with_group_id(group())
        .with_member_id(StrBytes::from_string(b_id.clone()));
    let response = b.call(&leave_v0, 0).await.unwrap();
    assert_eq!(response.error_code, 0);
    let response = admin.call(&delete, 2).await.unwrap();
    assert_eq!(response.results[0].error_code, 0);
    host.stop().await;
}

#[tokio::test]
async fn sync_group_v5_without_protocol_names_is_refused_before_the_coordinator() {
    let host = host().await;
    let mut client = host.client().await;
    let request = sync("anyone", 1)
        .with_protocol_type(None)
        .with_protocol_name(Some(str("range")));
    let response = client.call(&request, 5).await.unwrap();
    assert_eq!(response.error_code, 23, "INCONSISTENT_GROUP_PROTOCOL");
    host.stop().await;
}

#[tokio::test]
async fn a_lone_member_joins_and_syncs_at_every_version() {
    let host = host().await;
    let mut client = host.client().await;
    for join_version in 0..=9i16 {
        let sync_version = join_version.min(5);
        let group_id = format!("g{join_version}");
        let request = join("")
            .with_group_id(GroupId(str(&group_id)))
            // v0 has no rebalance timeout; it must stay at its default there.
            .with_rebalance_timeout_ms(if join_version >= 1 { 30_000 } else { -1 });
        let mut response = client.call(&request, join_version).await.unwrap();
        if join_version >= 4 {
            assert_eq!(response.error_code, 79, "v{join_version}");
            let with_id = request.clone().with_member_id(response.member_id.clone());
            response = client.call(&with_id, join_version).await.unwrap();
        }
        assert_eq!(response.error_code, 0, "JoinGroup v{join_version}");
        assert_eq!(response.protocol_name.as_deref(), Some("range"));
        let member_id = response.member_id.to_string();
        let mut sync_request =
            sync(&member_id, response.generation_id).with_group_id(GroupId(str(&group_id)));
        if sync_version >= 5 {
            sync_request = sync_request
                .with_protocol_type(Some(str("consumer")))
                .with_protocol_name(Some(str("range")));
        }
        let synced = client.call(&sync_request, sync_version).await.unwrap();
        assert_eq!(synced.error_code, 0, "SyncGroup v{sync_version}");
        if sync_version >= 5 {
            assert_eq!(synced.protocol_name.as_deref(), Some("range"));
        }
        assert_eq!(
            decode_assignment(synced.assignment).unwrap(),
            [("orders".to_owned(), vec![0, 1, 2, 3])],
            "v{join_version}"
        );
        let beat =
            heartbeat(&member_id, response.generation_id).with_group_id(GroupId(str(&group_id)));
        let beat = client.call(&beat, join_version.min(4)).await.unwrap();
        assert_eq!(beat.error_code, 0, "Heartbeat v{}", join_version.min(4));
    }
    host.stop().await;
}

/// The host's own names (`__assignor_host.`: a cluster's node group and topics) are refused to
/// every client, as Kafka refuses a group the principal may not use.
#[tokio::test]
async fn the_hosts_own_group_names_are_refused_to_clients() {
    let host = host().await;
    let mut client = host.client().await;
    let own = GroupId(str("__assignor_host.prod"));
    let join = JoinGroupRequest::default()
        .with_group_id(own.clone())
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(str("m"))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(str("range"))
                .with_metadata(subscription(&["orders"], 0)),
        ]);
    let joined = client.call(&join, JOIN_VERSION).await.unwrap();
    assert_eq!(
        joined.error_code, 30,
        "JoinGroup: GROUP_AUTHORIZATION_FAILED"
    );
    let commit = OffsetCommitRequest::default()
        .with_group_id(own.clone())
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(str(""))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name("orders"))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1),
                ]),
        ]);
    let committed = client.call(&commit, 8).await.unwrap();
    assert_eq!(
        committed.topics[0].partitions[0].error_code, 30,
        "OffsetCommit"
    );
    let deleted = client
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![own]),
            2,
        )
        .await
        .unwrap();
    assert_eq!(deleted.results[0].error_code, 30, "DeleteGroups");
    host.stop().await;
}
