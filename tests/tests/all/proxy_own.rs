//! What the host answers itself in proxy mode: the group APIs on every port, never passed up,
//! with committed offsets kept in the upstream's offset store; and ApiVersions, the upstream's
//! table merged with the host's own ranges.

use assignor_host_tests::proxy::api_versions;
use assignor_host_tests::str;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, DescribeGroupsRequest, DescribeTopicPartitionsRequest,
    FindCoordinatorRequest, GroupId, LeaveGroupRequest, ListGroupsRequest,
};

use super::admin_support::Member;
use super::proxy_support::{GROUP_APIS, commit, commit_codes, fetched_offsets, proxied};

/// The merged table for the fake's (`fake_cluster::API_VERSIONS`), by hand from the rules of
/// `kafka/proxy/versions.rs`: data APIs at the upstream's ranges (cut to what the host decodes
/// where it rewrites), group APIs at the host's (OffsetCommit/OffsetFetch 9, not the fake's 8;
/// DescribeGroups, ListGroups and OffsetDelete although the fake lists none), FindCoordinator
/// and ApiVersions at the lower of the two; Fetch cut to 12 (v13 names topics by the
/// upstream's ids); the consumer protocol (68, 69) at the host's; TxnOffsetCommit (28), which
/// the host serves and sends on at the client's version, where the host's 2-5 meets the fake's
/// 0-4; DescribeTopicPartitions (75) left out.
const MERGED: &[(i16, i16, i16)] = &[
    (0, 3, 11), // Produce
    (1, 4, 12), // Fetch
    (2, 1, 7),  // ListOffsets
    (3, 0, 12), // Metadata
    (8, 2, 9),  // OffsetCommit
    (9, 1, 9),  // OffsetFetch
    (10, 0, 4), // FindCoordinator
    (11, 0, 9), // JoinGroup
    (12, 0, 4), // Heartbeat
    (13, 0, 5), // LeaveGroup
    (14, 0, 5), // SyncGroup
    (15, 0, 5), // DescribeGroups
    (16, 0, 5), // ListGroups
    (18, 0, 3), // ApiVersions
    (19, 2, 7), // CreateTopics
    (28, 2, 4), // TxnOffsetCommit
    (42, 0, 2), // DeleteGroups
    (47, 0, 0), // OffsetDelete
    (60, 0, 1), // DescribeCluster
    (68, 0, 1), // ConsumerGroupHeartbeat
    (69, 0, 1), // ConsumerGroupDescribe
];

fn table(response: &ApiVersionsResponse) -> Vec<(i16, i16, i16)> {
    response
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect()
}

#[tokio::test]
async fn api_versions_is_the_upstreams_table_merged_with_the_hosts_ranges() {
    let (cluster, host) = proxied().await;
    for node in [None, Some(2)] {
        let mut client = match node {
            None => host.client().await,
            Some(node) => host.broker_client(node).await,
        };
        for version in [0, 1, 2, 3] {
            let response = client.call(&api_versions(), version).await.unwrap();
            assert_eq!(response.error_code, 0);
            assert_eq!(table(&response), MERGED, "v{version} on {node:?}");
        }
        // Newer than the upstream speaks: KIP-511's v0 answer with UNSUPPORTED_VERSION and
        // the ApiVersions range to retry within, not a closed connection.
        let correlation_id = client.send(&api_versions(), 4).await.unwrap();
        let (got, response) = client
            .receive_as::<ApiVersionsResponse>(0, 0)
            .await
            .expect("an answer to ApiVersions v4");
        assert_eq!((got, response.error_code), (correlation_id, 35));
        let range = response
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::ApiVersions as i16)
            .map(|k| (k.min_version, k.max_version));
        assert_eq!(range, Some((0, 3)), "on {node:?}");
        let retried = client.call(&api_versions(), 3).await.unwrap();
        assert_eq!(table(&retried), MERGED, "the retry on the same connection");
    }
    // Each port asked its own broker (the bootstrap port the first bootstrap server).
    for node in [1, 2] {
        let asked: Vec<(ApiKey, i16)> = cluster
            .requests_from(node, "assignor-host-tests")
            .iter()
            .map(|r| (r.0, r.1))
            .collect();
        let versions = [0, 1, 2, 3, 4, 3].map(|v| (ApiKey::ApiVersions, v));
        assert_eq!(asked, versions, "node {node}");
    }
    // A refused API is never passed up: the connection closes instead.
    let mut client = host.broker_client(2).await;
    client
        .send(&DescribeTopicPartitionsRequest::default(), 0)
        .await
        .unwrap();
    assert!(client.is_closed_by_host().await.unwrap());
    assert_eq!(cluster.requests_from(2, "assignor-host-tests").len(), 6);
    host.stop().await;
}

#[tokio::test]
async fn group_apis_are_answered_here_and_offsets_land_upstream_with_generation_minus_one() {
    let (cluster, host) = proxied().await;
    let mut member = Member::new(&host, "payments", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    let assignment = member.sync().await;
    assert_eq!(
        assignment,
        [("orders".to_owned(), (0..6).collect::<Vec<_>>())]
    );
    assert_eq!(member.heartbeat().await, 0);
    // The same group on broker ports: the host answers there too.
    let mut on_2 = host.broker_client(2).await;
    let lookup = FindCoordinatorRequest::default().with_key(str("payments"));
    assert_eq!(on_2.call(&lookup, 3).await.unwrap().error_code, 0);
    let listed = on_2.call(&ListGroupsRequest::default(), 4).await.unwrap();
    let groups: Vec<String> = listed
        .groups
        .iter()
        .map(|g| g.group_id.to_string())
        .collect();
    assert_eq!(groups, ["payments"]);
    let described = on_2
        .call(
            &DescribeGroupsRequest::default().with_groups(vec![GroupId(str("payments"))]),
            5,
        )
        .await
        .unwrap();
    assert_eq!(described.groups[0].group_state.as_str(), "Stable");
    assert_eq!(described.groups[0].members[0].member_id.as_str(), member.id);
    let mut on_3 = host.broker_client(3).await;
    let offsets = [(0, 11), (1, 12), (5, 15)];
    let request = commit("payments", &member.id, member.generation, &offsets);
    assert_eq!(commit_codes(&mut on_3, &request).await, [0, 0, 0]);
    // In the fake's store: it takes only generation -1 with no member id (anything else is
    // ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID there), so the host committed as an admin does.
    for (partition, offset) in offsets {
        assert_eq!(
            cluster.committed("payments", "orders", partition),
            Some(offset)
        );
    }
    let upstream_commits: Vec<ApiKey> = cluster
        .requests_from(1, "assignor-host")
        .iter()
        .map(|r| r.0)
        .filter(|api| *api == ApiKey::OffsetCommit)
        .collect();
    assert_eq!(
        upstream_commits,
        [ApiKey::OffsetCommit],
        "one commit, by the host's client"
    );
    // A commit the host refuses (a stale generation) changes nothing upstream.
    let stale = commit("payments", &member.id, member.generation - 1, &[(0, 99)]);
    assert_eq!(
        commit_codes(&mut on_2, &stale).await,
        [22],
        "ILLEGAL_GENERATION"
    );
    assert_eq!(cluster.committed("payments", "orders", 0), Some(11));
    // OffsetFetch through any port reads the upstream's store.
    let fetched = fetched_offsets(&mut on_2, "payments", &[0, 1, 2, 5]).await;
    assert_eq!(fetched, [(0, 11, 0), (1, 12, 0), (2, -1, 0), (5, 15, 0)]);
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(str("payments")))
        .with_members(vec![
            MemberIdentity::default().with_member_id(str(&member.id)),
        ]);
    assert_eq!(on_3.call(&leave, 3).await.unwrap().error_code, 0);
    // None of the client's group requests reached any broker; nor did anyone's membership.
    for node in [1, 2, 3] {
        let from_client: Vec<ApiKey> = cluster
            .requests_from(node, "assignor-host-tests")
            .iter()
            .map(|r| r.0)
            .filter(|api| GROUP_APIS.contains(api))
            .collect();
        assert_eq!(from_client, [], "node {node}");
        let membership = cluster.requests(node).iter().any(|r| {
            matches!(
                r.0,
                ApiKey::JoinGroup | ApiKey::SyncGroup | ApiKey::Heartbeat | ApiKey::LeaveGroup
            )
        });
        assert!(!membership, "node {node} saw a membership API");
    }
    host.stop().await;
}
