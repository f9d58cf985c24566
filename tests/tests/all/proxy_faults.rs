//! The upstream failing under the host (issue 10, item 7): down at start, a broker killed
//! mid-run and restarted, slow answers, a group id taken on the cluster directly. Clients get
//! a closed connection or a retriable error within a bound, never a hang; the host's own APIs
//! keep answering and its groups keep their members; the host reconnects by itself.

use std::time::Duration;

use assignor_host_tests::proxy::{UPSTREAM_TIMEOUT, api_versions, batch, fetch, produce, values};
use assignor_host_tests::{DEADLINE, TestHost, str};
use kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, FetchRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    ListGroupsRequest, MetadataRequest, OffsetCommitRequest, ProduceRequest,
};
use tokio::time::Instant;

use super::admin_support::Member;
use super::proxy_support::{
    all_topics, brokers, commit, commit_codes, expected_brokers, proxied, three_brokers,
};

/// A member of `payments` that joined alone and synced: every partition of `orders` the host
/// knows.
async fn stable_member(host: &TestHost) -> (Member, Vec<(String, Vec<i32>)>) {
    let mut member = Member::new(host, "payments", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    let assignment = member.sync().await;
    assert_eq!(member.heartbeat().await, 0);
    (member, assignment)
}

/// The group's state and generation as DescribeGroups reports them.
async fn described(member: &mut Member) -> (String, Vec<String>) {
    let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(str("payments"))]);
    let group = member
        .client
        .call(&request, 5)
        .await
        .unwrap()
        .groups
        .remove(0);
    let members = group
        .members
        .iter()
        .map(|m| m.member_id.to_string())
        .collect();
    (group.group_state.to_string(), members)
}

#[tokio::test]
async fn upstream_down_at_start_the_host_serves_groups_and_connects_once_it_is_up() {
    let cluster = three_brokers().await;
    for node in [1, 2, 3] {
        cluster.kill_broker(node).await;
    }
    let host = TestHost::proxy(&cluster).await;
    let (mut member, assignment) = stable_member(&host).await;
    assert_eq!(assignment, [], "no topic is known yet");
    // A request for the upstream: a bounded outcome (the connection closes; the client
    // retries), not a hang. `read_frame` fails past the test's deadline.
    let mut client = host.client().await;
    client.send(&all_topics(12), 12).await.unwrap();
    let outcome = client
        .read_frame()
        .await
        .expect("closed or answered, not hung");
    assert!(outcome.is_none(), "closed: nothing to answer with");
    assert_eq!(
        member.heartbeat().await,
        0,
        "the host's own APIs still answer"
    );
    // A client opens every connection with ApiVersions: answered here, with the group APIs,
    // so it reaches the coordinator on that connection.
    let mut client = host.client().await;
    let versions = client.call(&api_versions(), 3).await;
    let versions = versions.expect("ApiVersions answered while the upstream is down");
    assert_eq!(versions.error_code, 0);
    let join = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::JoinGroup as i16);
    assert_eq!(join.map(|k| (k.min_version, k.max_version)), Some((0, 9)));
    let lookup = FindCoordinatorRequest::default().with_key(str("payments"));
    assert_eq!(client.call(&lookup, 3).await.unwrap().error_code, 0);
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(str("payments")))
        .with_generation_id(member.generation)
        .with_member_id(str(&member.id));
    assert_eq!(client.call(&heartbeat, 3).await.unwrap().error_code, 0);
    for node in [1, 2, 3] {
        cluster.restart_broker(node).await;
    }
    // The host's own reads reconnect by themselves: the topics arrive, and the group, which
    // subscribes to one of them, rebalances onto its partitions.
    host.wait_for_topic("orders", 6).await;
    let mut client = host.client().await;
    let response = client.call(&all_topics(12), 12).await.unwrap();
    assert_eq!(brokers(&response), expected_brokers(&host, &[1, 2, 3]));
    member.until_rebalance().await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    assert_eq!(
        member.sync().await,
        [("orders".to_owned(), (0..6).collect())]
    );
    host.stop().await;
}

#[tokio::test]
async fn a_broker_killed_and_restarted_closes_its_connections_while_the_group_stays_stable() {
    let (cluster, host) = proxied().await;
    let (mut member, _) = stable_member(&host).await;
    let generation = member.generation;
    // orders-1 is led by broker 2.
    let mut idle = host.broker_client(2).await;
    let answer = idle
        .call(&produce("orders", 1, batch(&["before"])), 9)
        .await;
    assert_eq!(
        answer.unwrap().responses[0].partition_responses[0].error_code,
        0
    );
    // A request in flight when the broker dies, held far longer than the test waits.
    cluster.set_delay(2, DEADLINE * 2);
    let mut busy = host.broker_client(2).await;
    let before = cluster.requests(2).len();
    busy.send(&all_topics(12), 12).await.unwrap();
    cluster.wait_for_requests(2, before + 1).await;
    cluster.kill_broker(2).await;
    assert!(
        busy.is_closed_by_host().await.unwrap(),
        "in flight: closed, not held"
    );
    idle.send(&produce("orders", 1, batch(&["lost"])), 9)
        .await
        .unwrap();
    assert!(
        idle.is_closed_by_host().await.unwrap(),
        "idle: closed at its next request"
    );
    // A new connection while it is down: ApiVersions from the host, the rest closes.
    let mut down = host.broker_client(2).await;
    let versions = down.call(&api_versions(), 3).await;
    assert_eq!(versions.unwrap().error_code, 0);
    down.send(&produce("orders", 1, batch(&["lost"])), 9)
        .await
        .unwrap();
    assert!(
        down.is_closed_by_host().await.unwrap(),
        "new: closed while it is down"
    );
    assert_eq!(member.heartbeat().await, 0, "the group does not notice");
    cluster.set_delay(2, Duration::ZERO);
    cluster.restart_broker(2).await;
    let mut again = host.broker_client(2).await;
    let answer = again
        .call(&produce("orders", 1, batch(&["after"])), 9)
        .await;
    assert_eq!(
        answer.unwrap().responses[0].partition_responses[0].error_code,
        0
    );
    let stored: Vec<String> = cluster
        .records("orders", 1)
        .iter()
        .flat_map(values)
        .collect();
    assert_eq!(stored, ["before", "after"]);
    assert_eq!(member.heartbeat().await, 0);
    assert_eq!(member.generation, generation);
    assert_eq!(
        described(&mut member).await,
        ("Stable".to_owned(), vec![member.id.clone()])
    );
    host.stop().await;
}

#[tokio::test]
async fn a_slow_upstream_holds_its_answers_in_order_and_the_hosts_own_apis_meanwhile_answer() {
    let (cluster, host) = proxied().await;
    let (mut member, _) = stable_member(&host).await;
    let delay = Duration::from_secs(3);
    cluster.set_delay(2, delay);
    let mut slow = host.broker_client(2).await;
    let sent_at = Instant::now();
    let metadata = slow.send(&all_topics(12), 12).await.unwrap();
    let produced = slow
        .send(&produce("orders", 1, batch(&["slow"])), 9)
        .await
        .unwrap();
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(str("payments")))
        .with_generation_id(member.generation)
        .with_member_id(str(&member.id));
    let local = slow.send(&heartbeat, 3).await.unwrap();
    let fetched = slow.send(&fetch("orders", 1, 0, 12), 12).await.unwrap();
    let answers = tokio::spawn(async move {
        let r = slow.receive::<MetadataRequest>(metadata, 12).await.unwrap();
        let first_at = Instant::now();
        assert_eq!(r.brokers.len(), 4);
        let r = slow.receive::<ProduceRequest>(produced, 9).await.unwrap();
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
        let r = slow.receive::<HeartbeatRequest>(local, 3).await.unwrap();
        assert_eq!(r.error_code, 0, "the host's answer waits its turn");
        let r = slow.receive::<FetchRequest>(fetched, 12).await.unwrap();
        let records = r.responses[0].partitions[0].records.clone().unwrap();
        assert_eq!(values(&records), ["slow"]);
        first_at
    });
    // Meanwhile, on another connection: the host's own APIs.
    assert_eq!(member.heartbeat().await, 0);
    let lookup = FindCoordinatorRequest::default().with_key(str("payments"));
    assert_eq!(member.client.call(&lookup, 3).await.unwrap().error_code, 0);
    let listed = member.client.call(&ListGroupsRequest::default(), 4).await;
    assert_eq!(listed.unwrap().groups.len(), 1);
    let own_done = Instant::now();
    let first_slow = answers.await.expect("the slow answers, in order");
    assert!(
        own_done < first_slow,
        "the host's own answers did not wait for the slow ones"
    );
    assert!(
        first_slow - sent_at >= delay,
        "the slow answers waited for the upstream"
    );
    host.stop().await;
}

#[tokio::test]
async fn a_commit_upstream_slower_than_the_request_timeout_fails_retriably_in_bounded_time() {
    let (cluster, host) = proxied().await;
    let (mut member, _) = stable_member(&host).await;
    // Broker 1 coordinates every group upstream.
    cluster.set_delay(1, UPSTREAM_TIMEOUT * 2);
    let request = commit("payments", &member.id, member.generation, &[(0, 5)]);
    let codes = commit_codes(&mut member.client, &request).await;
    assert_eq!(codes, [15], "COORDINATOR_NOT_AVAILABLE: the client retries");
    assert_eq!(member.heartbeat().await, 0);
    cluster.set_delay(1, Duration::ZERO);
    let request = commit("payments", &member.id, member.generation, &[(0, 6)]);
    commit_as_a_client_does(&mut member, &request).await;
    assert_eq!(cluster.committed("payments", "orders", 0), Some(6));
    host.stop().await;
}

/// Commits as a client does: again while the answer is COORDINATOR_NOT_AVAILABLE (each try
/// is bounded by the host's request timeout), a few times at most.
async fn commit_as_a_client_does(member: &mut Member, request: &OffsetCommitRequest) {
    for _ in 0..5 {
        match commit_codes(&mut member.client, request).await[..] {
            [0] => return,
            [15] => continue,
            ref other => panic!("commit answered {other:?}"),
        }
    }
    panic!("the commit never landed");
}

#[tokio::test]
async fn the_upstream_coordinator_killed_and_restarted_fails_commits_retriably_then_takes_them() {
    let (cluster, host) = proxied().await;
    let (mut member, _) = stable_member(&host).await;
    let request = commit("payments", &member.id, member.generation, &[(0, 1)]);
    assert_eq!(commit_codes(&mut member.client, &request).await, [0]);
    cluster.kill_broker(1).await;
    let request = commit("payments", &member.id, member.generation, &[(0, 2)]);
    let codes = commit_codes(&mut member.client, &request).await;
    assert_eq!(codes, [15], "COORDINATOR_NOT_AVAILABLE while it is down");
    assert_eq!(cluster.committed("payments", "orders", 0), Some(1));
    assert_eq!(member.heartbeat().await, 0, "the group does not notice");
    cluster.restart_broker(1).await;
    // The host's client reconnects by itself.
    commit_as_a_client_does(&mut member, &request).await;
    assert_eq!(cluster.committed("payments", "orders", 0), Some(2));
    assert_eq!(described(&mut member).await.0, "Stable");
    host.stop().await;
}

#[tokio::test]
async fn a_commit_to_a_group_joined_on_the_cluster_directly_overwrites_nothing() {
    let (cluster, host) = proxied().await;
    let (mut member, _) = stable_member(&host).await;
    let request = commit("payments", &member.id, member.generation, &[(0, 5)]);
    assert_eq!(commit_codes(&mut member.client, &request).await, [0]);
    assert_eq!(cluster.committed("payments", "orders", 0), Some(5));
    cluster.occupy_group("payments");
    let request = commit("payments", &member.id, member.generation, &[(0, 9), (1, 9)]);
    let codes = commit_codes(&mut member.client, &request).await;
    assert_eq!(codes, [30, 30], "GROUP_AUTHORIZATION_FAILED");
    assert_eq!(cluster.committed("payments", "orders", 0), Some(5));
    assert_eq!(cluster.committed("payments", "orders", 1), None);
    assert_eq!(member.heartbeat().await, 0, "the host's group is untouched");
    host.stop().await;
}

/// The host's commits to a coordinator that stays away for many times the request timeout,
/// then comes back. librdkafka's coordinator-targeted admin calls abort the process in just
/// this case (`upstream/client/groups.rs`): every commit meanwhile must be answered
/// COORDINATOR_NOT_AVAILABLE within the timeout, and the first after the return must land.
#[tokio::test]
async fn a_coordinator_away_for_many_request_timeouts_fails_commits_retriably_and_the_host_lives() {
    let cluster = crate::proxy_support::three_brokers().await;
    let host = TestHost::proxy_with(&cluster.bootstrap(), |c| {
        c.upstream.request_timeout = Duration::from_millis(300);
    })
    .await;
    host.wait_for_topic("orders", 6).await;
    let (mut member, _) = stable_member(&host).await;
    let request = commit("payments", &member.id, member.generation, &[(0, 1)]);
    assert_eq!(commit_codes(&mut member.client, &request).await, [0]);
    cluster.kill_broker(1).await;
    // Twenty commits, about eight seconds: some twenty-five request timeouts.
    for offset in 2..22 {
        let request = commit("payments", &member.id, member.generation, &[(0, offset)]);
        let codes = commit_codes(&mut member.client, &request).await;
        assert_eq!(
            codes,
            [15],
            "commit of {offset} while the coordinator is away"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(cluster.committed("payments", "orders", 0), Some(1));
    cluster.restart_broker(1).await;
    let request = commit("payments", &member.id, member.generation, &[(0, 30)]);
    commit_as_a_client_does(&mut member, &request).await;
    assert_eq!(cluster.committed("payments", "orders", 0), Some(30));
    assert_eq!(member.heartbeat().await, 0, "the group went on");
    host.stop().await;
}
