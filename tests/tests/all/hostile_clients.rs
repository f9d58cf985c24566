//! Clients that try to hurt the host, over real sockets (issue 14's defects, each reproduced
//! first): whatever they send, the host answers, keeps its data, and serves everyone else.

use std::time::Duration;

use assignor_host_tests::{TestHost, str};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{ApiVersionsRequest, GroupId, SyncGroupRequest};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::admin_support::{Admin, Member};

/// A ConsumerProtocolAssignment v0 claiming 2^31-1 topic entries in six bytes. Decoded
/// naively, the next describe allocated for all of them and aborted the process.
const LYING_ASSIGNMENT: [u8; 6] = [0x00, 0x00, 0x7f, 0xff, 0xff, 0xff];

/// The relayed group `hostile`: one member whose protocol no module serves, so it is the
/// client leader, and whose SyncGroup hands itself [`LYING_ASSIGNMENT`].
async fn relayed_group_with_a_lying_assignment(host: &TestHost) -> Member {
    let mut member = Member::new(host, "hostile", "not-a-module").await;
    let joining = member.send_join().await;
    member.joined(joining).await;
    let request = SyncGroupRequest::default()
        .with_group_id(GroupId(str("hostile")))
        .with_generation_id(member.generation)
        .with_member_id(str(&member.id))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(str(&member.id))
                .with_assignment(bytes::Bytes::from_static(&LYING_ASSIGNMENT)),
        ]);
    let answer = member.client.call(&request, 3).await.unwrap();
    assert_eq!(answer.error_code, 0);
    assert_eq!(
        answer.assignment.as_ref(),
        LYING_ASSIGNMENT,
        "relayed byte for byte, as Kafka relays a leader's assignment"
    );
    member
}

/// The group's describe: the member is listed with no readable assignment.
async fn described_without_partitions(admin: &Admin) {
    let (status, body) = admin.get("/v1/groups/hostile").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["mode"], "relay", "{body}");
    let members = body["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{body}");
    assert_eq!(members[0]["assignment"], json!({}), "{body}");
}

#[tokio::test]
async fn a_leaders_assignment_claiming_two_billion_topics_is_described_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let host = TestHost::with_topics_in(&path, &[("orders", 4)]).await;
    let mut member = relayed_group_with_a_lying_assignment(&host).await;
    let admin = Admin::new(&host);
    described_without_partitions(&admin).await;
    // Simulating on the group reads the same bytes (as the previous assignment).
    let (status, body) = admin
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"group": "hostile", "module": "range"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(member.heartbeat().await, 0, "the group is still served");
    host.stop().await;

    // The bytes were stored with the group; the restarted host reads them again.
    let host = TestHost::with_topics_in(&path, &[("orders", 4)]).await;
    described_without_partitions(&Admin::new(&host)).await;
    host.stop().await;
}

/// Fetch `orders`/0 held for as long as Kafka's protocol allows (2^31-1 ms, 24.8 days).
fn longest_fetch() -> kafka_protocol::messages::FetchRequest {
    assignor_host_tests::proxy::fetch("orders", 0, 0, 12).with_max_wait_ms(i32::MAX)
}

#[tokio::test]
async fn fetches_held_for_weeks_free_their_slots_when_their_clients_leave() {
    let host = TestHost::with_config(|c| {
        c.catalog.topics = seeds_orders();
        c.kafka.max_connections = 20;
    })
    .await;
    // Twenty clients take every slot with a Fetch the host holds, then go away.
    let mut clients = Vec::new();
    for _ in 0..20 {
        let mut client = host.client().await;
        client.send(&longest_fetch(), 12).await.unwrap();
        clients.push(client);
    }
    drop(clients);
    // The host noticed each close: a new client is served.
    let mut client = host.client().await;
    let answer = client
        .call(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(answer.error_code, 0);
    host.stop().await;
}

#[tokio::test]
async fn a_fetch_asking_to_be_held_for_weeks_is_answered_at_max_fetch_wait() {
    let host = TestHost::with_config(|c| {
        c.catalog.topics = seeds_orders();
        c.kafka.max_fetch_wait = Duration::from_millis(300);
    })
    .await;
    let mut client = host.client().await;
    let started = std::time::Instant::now();
    // The client's read gives up after 20 s (`DEADLINE`): answered at all means capped.
    let answer = client.call(&longest_fetch(), 12).await.unwrap();
    assert_eq!(answer.error_code, 0);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "held for the cap, not answered at once"
    );
    host.stop().await;
}

#[tokio::test]
async fn a_frame_that_stalls_is_closed_and_its_slot_serves_the_next_client() {
    let host = TestHost::with_config(|c| {
        c.kafka.max_connections = 3;
        c.kafka.frame_timeout = Duration::from_millis(300);
    })
    .await;
    // Three clients send five bytes of a frame (size and part of a header), then nothing.
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let mut client = host.client().await;
        client.send_raw(&[0, 0, 0, 20, 0]).await.unwrap();
        stalled.push(client);
    }
    for client in &mut stalled {
        assert!(
            client.is_closed_by_host().await.unwrap(),
            "a stalled frame is closed"
        );
    }
    let mut client = host.client().await;
    let answer = client
        .call(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(answer.error_code, 0);
    host.stop().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_but_one_waiting_for_an_answer_is_not() {
    let host = TestHost::with_config(|c| {
        c.catalog.topics = seeds_orders();
        c.kafka.connections_max_idle = Duration::from_millis(300);
    })
    .await;
    let mut idle = host.client().await;
    // A Fetch held longer than the idle timeout: the connection has a request in flight.
    let mut waiting = host.client().await;
    let held = waiting
        .send(&longest_fetch().with_max_wait_ms(1_500), 12)
        .await
        .unwrap();
    assert!(idle.is_closed_by_host().await.unwrap(), "idle, closed");
    let answer = waiting
        .receive::<kafka_protocol::messages::FetchRequest>(held, 12)
        .await
        .unwrap();
    assert_eq!(answer.error_code, 0, "the held Fetch was answered, not cut");
    host.stop().await;
}

#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let host = TestHost::with_config(|c| c.kafka.max_connections_per_address = 2).await;
    let mut first = host.client().await;
    let mut second = host.client().await;
    let mut third = host.client().await;
    assert!(
        third.is_closed_by_host().await.unwrap(),
        "over the address's cap"
    );
    for client in [&mut first, &mut second] {
        let answer = client
            .call(&ApiVersionsRequest::default(), 2)
            .await
            .unwrap();
        assert_eq!(answer.error_code, 0);
    }
    drop(first);
    // The count goes down once the host has seen the close.
    let mut again = None;
    for _ in 0..100 {
        let mut client = host.client().await;
        match client.call(&ApiVersionsRequest::default(), 2).await {
            Ok(answer) => {
                again = Some(answer.error_code);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert_eq!(again, Some(0), "a slot freed by a close is taken again");
    host.stop().await;
}

fn seeds_orders() -> Vec<assignor_host::catalog::TopicSeed> {
    vec![assignor_host::catalog::TopicSeed {
        name: "orders".to_owned(),
        partitions: 4,
        partition_racks: Vec::new(),
    }]
}
