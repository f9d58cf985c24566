//! `kafka.queued_max_request_bytes` over real sockets: a large frame takes its share when its
//! size prefix and API key are read and keeps it while its body arrives; a frame that does not fit then
//! waits unread, while small requests of every other client are answered at once; the share
//! comes back once the request is handed on, and a JoinGroup parked for the rest of its group
//! holds none of it; a frame over its API's cap is refused before it asks. The bytes held
//! and the waits are read from the host's own metrics.
//!
//! The memory this bounds under two hundred maximal JoinGroups at once is a benchmark
//! (`cargo bench -p assignor-host --bench request_budget`), not a test: a process's peak
//! memory depends on the allocator and the machine.

use std::time::Duration;

use assignor_host_tests::{KafkaClient, TestHost, str, subscription};
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, GroupId, JoinGroupRequest, MetadataRequest, RequestHeader,
};
use kafka_protocol::protocol::{Encodable, StrBytes};

use super::admin_support::{Admin, sample};

const BUDGET: usize = 256 * 1024;
const HELD: &str = "assignor_host_kafka_request_budget_bytes";
const WAITS: &str = "assignor_host_kafka_request_budget_waits_total";

/// A JoinGroup of about 200 KiB (a subscription naming 10,000 topics), whole frame with its
/// size prefix and correlation id 1, as a client's first request.
fn large_join(group: &str, version: i16) -> Vec<u8> {
    let names: Vec<String> = (0..10_000)
        .map(|i| format!("budget-topic-{i:05}"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let request = JoinGroupRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(120_000)
        .with_member_id(str(""))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(str("range"))
                .with_metadata(subscription(&names, 0)),
        ]);
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::JoinGroup as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("budget-test")))
        .encode(&mut body, ApiKey::JoinGroup.request_header_version(version))
        .unwrap();
    request.encode(&mut body, version).unwrap();
    let mut frame = BytesMut::new();
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    assert!(
        (150 * 1024..BUDGET).contains(&frame.len()),
        "{} bytes: more than half the budget, less than all of it",
        frame.len()
    );
    frame.to_vec()
}

/// Scrapes until `name` reads `value`; panics with what it read last after 20 s.
async fn until(admin: &Admin, name: &str, value: f64) {
    let mut last = f64::NAN;
    for _ in 0..400 {
        last = sample(&admin.scrape().await, name);
        if last == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} stayed at {last}, never {value}");
}

#[tokio::test]
async fn a_frame_that_does_not_fit_waits_unread_while_small_requests_are_answered() {
    let host = TestHost::with_config(|c| c.kafka.queued_max_request_bytes = BUDGET).await;
    let admin = Admin::new(&host);
    let (a_frame, b_frame) = (large_join("budget-a", 5), large_join("budget-b", 5));

    // A sends half its frame: its share is taken at the size prefix, held while the rest
    // is awaited.
    let mut a = KafkaClient::connect(host.addr()).await.unwrap();
    let half = a_frame.len() / 2;
    a.send_raw(&a_frame[..half]).await.unwrap();
    let share = (a_frame.len() - 4).div_ceil(1024) * 1024;
    until(&admin, HELD, share as f64).await;

    // B's whole frame does not fit beside it: B waits, unread.
    let mut b = KafkaClient::connect(host.addr()).await.unwrap();
    let sent = tokio::spawn(async move {
        b.send_raw(&b_frame).await.unwrap();
        b
    });
    until(&admin, WAITS, 1.0).await;

    // Small requests of another client are answered all the while.
    let mut c = KafkaClient::connect(host.addr()).await.unwrap();
    let versions = c.call(&ApiVersionsRequest::default(), 2).await.unwrap();
    assert_eq!(versions.error_code, 0);
    let metadata = c.call(&MetadataRequest::default(), 12).await.unwrap();
    assert_eq!(metadata.brokers.len(), 1);
    let mut b = sent.await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), b.read_frame())
            .await
            .is_err(),
        "B was answered while A held the budget"
    );

    // A's frame completes: A is answered, its share comes back, and B is read and answered.
    a.send_raw(&a_frame[half..]).await.unwrap();
    let answer = a.receive::<JoinGroupRequest>(1, 5).await.unwrap();
    assert_eq!(
        answer.error_code, 79,
        "MEMBER_ID_REQUIRED: A's JoinGroup was read whole"
    );
    let answer = b.receive::<JoinGroupRequest>(1, 5).await.unwrap();
    assert_eq!(answer.error_code, 79, "B's JoinGroup read after A's");
    until(&admin, HELD, 0.0).await;
    assert_eq!(sample(&admin.scrape().await, WAITS), 1.0);
    host.stop().await;
}

#[tokio::test]
async fn a_join_group_parked_for_its_group_holds_no_budget() {
    // A new group waits for more members for a minute: both JoinGroups stay parked.
    let host = TestHost::with_config(|c| {
        c.kafka.queued_max_request_bytes = BUDGET;
        c.coordinator.initial_rebalance_delay_ms = 60_000;
    })
    .await;
    let admin = Admin::new(&host);
    // v3: no member id round trip, the JoinGroup parks at once.
    let mut a = KafkaClient::connect(host.addr()).await.unwrap();
    a.send_raw(&large_join("budget-parked", 3)).await.unwrap();
    let mut b = KafkaClient::connect(host.addr()).await.unwrap();
    b.send_raw(&large_join("budget-parked", 3)).await.unwrap();

    // Both members are in the group, so both frames were read and handed on, while neither
    // is answered; had A's parked JoinGroup kept its share, B's would still wait unread.
    let mut members = 0;
    for _ in 0..400 {
        let (_, group) = admin.get("/v1/groups/budget-parked").await;
        members = group["members"].as_array().map_or(0, Vec::len);
        if members == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(members, 2, "both JoinGroups reached the group");
    until(&admin, HELD, 0.0).await;
    assert_eq!(sample(&admin.scrape().await, WAITS), 0.0);
    for client in [&mut a, &mut b] {
        assert!(
            tokio::time::timeout(Duration::from_millis(100), client.read_frame())
                .await
                .is_err(),
            "a JoinGroup was answered before the group's delay"
        );
    }
    host.stop().await;
}

#[tokio::test]
async fn a_frame_over_its_apis_cap_is_refused_before_it_asks_the_budget() {
    let host = TestHost::with_config(|c| c.kafka.queued_max_request_bytes = BUDGET).await;
    let admin = Admin::new(&host);
    // A holds most of the budget, half its frame sent.
    let a_frame = large_join("budget-cap", 5);
    let mut a = KafkaClient::connect(host.addr()).await.unwrap();
    a.send_raw(&a_frame[..a_frame.len() / 2]).await.unwrap();
    let share = (a_frame.len() - 4).div_ceil(1024) * 1024;
    until(&admin, HELD, share as f64).await;

    // C's size prefix claims 9 MiB, within the widest cap (max_frame_bytes) but over
    // JoinGroup's (max_group_frame_bytes, 8 MiB). The budget is asked only once the API key
    // is in, so C is refused by its cap at once instead of waiting for the budget A holds.
    // The prefix goes alone first, with time for the host to read it: a host that asked the
    // budget on the prefix would be waiting now (and count a wait); this one waits for the key.
    let mut c = KafkaClient::connect(host.addr()).await.unwrap();
    c.send_raw(&(9 * 1024 * 1024_i32).to_be_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.send_raw(&(ApiKey::JoinGroup as i16).to_be_bytes())
        .await
        .unwrap();
    assert!(
        c.is_closed_by_host().await.unwrap(),
        "closed for its size, not left waiting"
    );
    assert_eq!(sample(&admin.scrape().await, WAITS), 0.0);
    host.stop().await;
}
