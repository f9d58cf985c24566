//! One connection, many requests in flight: requests passed up and requests the host answers
//! itself, written before any answer is read, come back strictly in request order with their
//! correlation ids, while the upstream delays its answers.

use std::time::Duration;

use assignor_host_tests::proxy::{api_versions, batch, fetch, produce, values};
use assignor_host_tests::{KafkaClient, str};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FetchRequest, GroupId, HeartbeatRequest, ListGroupsRequest,
    MetadataRequest, OffsetFetchRequest, ProduceRequest,
};

use super::admin_support::Member;
use super::proxy_support::{all_topics, commit, commit_codes, offset_fetch, proxied};

/// The requests of the mix, each at the version it is sent at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    ApiVersions,
    Metadata,
    Produce,
    Fetch,
    Heartbeat,
    ListGroups,
    OffsetFetch,
}

impl Sent {
    const MIX: [Sent; 7] = [
        Sent::ApiVersions,
        Sent::Metadata,
        Sent::Produce,
        Sent::Heartbeat,
        Sent::Fetch,
        Sent::ListGroups,
        Sent::OffsetFetch,
    ];

    /// The API key and version as the fake records a request passed up; `None` for the
    /// host's own.
    fn upstream(self) -> Option<(ApiKey, i16)> {
        match self {
            Sent::ApiVersions => Some((ApiKey::ApiVersions, 3)),
            Sent::Metadata => Some((ApiKey::Metadata, 12)),
            Sent::Produce => Some((ApiKey::Produce, 9)),
            Sent::Fetch => Some((ApiKey::Fetch, 12)),
            Sent::Heartbeat | Sent::ListGroups | Sent::OffsetFetch => None,
        }
    }
}

/// Writes `count` requests of the mix on `client` without reading; Produce and Fetch go to
/// `orders`-0, led by broker 1.
async fn send_mix(client: &mut KafkaClient, member: &Member, count: usize) -> Vec<(Sent, i32)> {
    let mut sent = Vec::with_capacity(count);
    for i in 0..count {
        let kind = Sent::MIX[i % Sent::MIX.len()];
        let correlation_id = match kind {
            Sent::ApiVersions => client.send(&api_versions(), 3).await,
            Sent::Metadata => client.send(&all_topics(12), 12).await,
            Sent::Produce => {
                let value = format!("record-{i}");
                client
                    .send(&produce("orders", 0, batch(&[&value])), 9)
                    .await
            }
            Sent::Fetch => client.send(&fetch("orders", 0, 0, 12), 12).await,
            Sent::Heartbeat => {
                let request = HeartbeatRequest::default()
                    .with_group_id(GroupId(str("payments")))
                    .with_generation_id(member.generation)
                    .with_member_id(str(&member.id));
                client.send(&request, 3).await
            }
            Sent::ListGroups => client.send(&ListGroupsRequest::default(), 4).await,
            Sent::OffsetFetch => client.send(&offset_fetch("payments", &[0]), 7).await,
        };
        sent.push((kind, correlation_id.unwrap()));
    }
    sent
}

/// Reads one answer per request sent, in order, decoding each as its request's answer (which
/// checks its correlation id) and checking what it says. Returns the records each Fetch saw.
async fn receive_mix(client: &mut KafkaClient, sent: &[(Sent, i32)]) -> Vec<usize> {
    let mut fetched = Vec::new();
    for &(kind, id) in sent {
        match kind {
            Sent::ApiVersions => {
                let r = client.receive::<ApiVersionsRequest>(id, 3).await.unwrap();
                assert_eq!(r.error_code, 0);
            }
            Sent::Metadata => {
                let r = client.receive::<MetadataRequest>(id, 12).await.unwrap();
                assert_eq!(r.brokers.len(), 4, "three brokers and the coordinator node");
            }
            Sent::Produce => {
                let r = client.receive::<ProduceRequest>(id, 9).await.unwrap();
                assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
            }
            Sent::Fetch => {
                let r = client.receive::<FetchRequest>(id, 12).await.unwrap();
                let records = r.responses[0].partitions[0].records.clone().unwrap();
                fetched.push(values(&records).len());
            }
            Sent::Heartbeat => {
                let r = client.receive::<HeartbeatRequest>(id, 3).await.unwrap();
                assert_eq!(r.error_code, 0, "Heartbeat {id}");
            }
            Sent::ListGroups => {
                let r = client.receive::<ListGroupsRequest>(id, 4).await.unwrap();
                assert_eq!(r.groups.len(), 1);
            }
            Sent::OffsetFetch => {
                let r = client.receive::<OffsetFetchRequest>(id, 7).await.unwrap();
                assert_eq!(r.topics[0].partitions[0].committed_offset, 7);
            }
        }
    }
    fetched
}

#[tokio::test]
async fn a_hundred_pipelined_requests_mixing_passed_up_and_local_answers_come_back_in_order() {
    let (cluster, host) = proxied().await;
    let mut member = Member::new(&host, "payments", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    member.sync().await;
    let request = commit("payments", &member.id, member.generation, &[(0, 7)]);
    assert_eq!(commit_codes(&mut member.client, &request).await, [0]);
    // Every upstream answer waits, so the host's own answers are ready long before the
    // passed-up ones around them.
    cluster.set_delay(1, Duration::from_millis(200));
    let mut client = host.broker_client(1).await;
    let sent = send_mix(&mut client, &member, 100).await;
    let fetched = receive_mix(&mut client, &sent).await;
    // Each Fetch saw every Produce before it on the connection, and none after.
    let produced_before: Vec<usize> = sent
        .iter()
        .enumerate()
        .filter(|(_, (kind, _))| *kind == Sent::Fetch)
        .map(|(i, _)| {
            sent[..i]
                .iter()
                .filter(|(k, _)| *k == Sent::Produce)
                .count()
        })
        .collect();
    assert_eq!(fetched, produced_before);
    // Exactly the passed-up requests reached broker 1, in order, with the client's ids.
    let passed_up: Vec<(ApiKey, i16, i32)> = sent
        .iter()
        .filter_map(|&(kind, id)| kind.upstream().map(|(api, version)| (api, version, id)))
        .collect();
    assert_eq!(cluster.requests_from(1, "assignor-host-tests"), passed_up);
    assert_eq!(
        passed_up.len(),
        14 * 4 + 2,
        "fourteen rounds of the mix, then two more"
    );
    host.stop().await;
}

#[tokio::test]
async fn a_produce_without_acks_waits_for_no_answer_and_the_next_answers_keep_their_ids() {
    let (cluster, host) = proxied().await;
    let mut member = Member::new(&host, "payments", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    member.sync().await;
    let mut client = host.broker_client(1).await;
    let mut unanswered = produce("orders", 0, batch(&["fire", "forget"]));
    unanswered.acks = 0;
    client.send(&unanswered, 9).await.unwrap();
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(str("payments")))
        .with_generation_id(member.generation)
        .with_member_id(str(&member.id));
    let local = client.send(&heartbeat, 3).await.unwrap();
    let up = client.send(&fetch("orders", 0, 0, 12), 12).await.unwrap();
    let r = client.receive::<HeartbeatRequest>(local, 3).await.unwrap();
    assert_eq!(r.error_code, 0);
    let r = client.receive::<FetchRequest>(up, 12).await.unwrap();
    let records = r.responses[0].partitions[0].records.clone().unwrap();
    assert_eq!(
        values(&records),
        ["fire", "forget"],
        "the Produce landed before the Fetch"
    );
    let passed_up: Vec<ApiKey> = cluster
        .requests_from(1, "assignor-host-tests")
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(passed_up, [ApiKey::Produce, ApiKey::Fetch]);
    host.stop().await;
}
