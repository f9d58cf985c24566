//! Requests written before any answer is read come back in order, delayed or not, and a
//! pipelined request sees the effects of the ones before it.

use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FetchRequest, MetadataRequest, ProduceRequest,
};

use super::{batch, connect, decode, fetch, produce, three_brokers};
use crate::{DEADLINE, KafkaClient};

/// What was sent, in order: `(api, version, correlation id)`.
type Sent = Vec<(ApiKey, i16, i32)>;

/// Writes `count` requests cycling over ApiVersions, Metadata, Produce and Fetch of
/// `orders`-0 (led by broker 1), without reading.
async fn send_mixed(client: &mut KafkaClient, count: usize, sent: &mut Sent) {
    for i in 0..count {
        let entry = match i % 4 {
            0 => (
                ApiKey::ApiVersions,
                3,
                client.send(&ApiVersionsRequest::default(), 3).await,
            ),
            1 => (
                ApiKey::Metadata,
                12,
                client.send(&MetadataRequest::default(), 12).await,
            ),
            2 => {
                let request = produce("orders", 0, batch(&["v"]), -1);
                (ApiKey::Produce, 11, client.send(&request, 11).await)
            }
            _ => (
                ApiKey::Fetch,
                16,
                client.send(&fetch("orders", 0, 0, 16), 16).await,
            ),
        };
        sent.push((entry.0, entry.1, entry.2.unwrap()));
    }
}

/// Reads one answer per entry of `sent`, decoding each as its request's response, which fails
/// on a correlation id out of order. Returns the record count each Fetch saw.
async fn receive_all(client: &mut KafkaClient, sent: &Sent) -> Vec<usize> {
    let mut fetched = Vec::new();
    for &(api, version, correlation_id) in sent {
        match api {
            ApiKey::ApiVersions => {
                client
                    .receive::<ApiVersionsRequest>(correlation_id, version)
                    .await
                    .unwrap();
            }
            ApiKey::Metadata => {
                let r = client
                    .receive::<MetadataRequest>(correlation_id, version)
                    .await
                    .unwrap();
                assert_eq!(r.brokers.len(), 3);
            }
            ApiKey::Produce => {
                let r = client
                    .receive::<ProduceRequest>(correlation_id, version)
                    .await
                    .unwrap();
                assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
            }
            _ => {
                let r = client
                    .receive::<FetchRequest>(correlation_id, version)
                    .await
                    .unwrap();
                let records = r.responses[0].partitions[0].records.clone().unwrap();
                fetched.push(decode(&records).len());
            }
        }
    }
    fetched
}

#[tokio::test]
async fn a_hundred_pipelined_requests_come_back_in_order() {
    let cluster = three_brokers().await;
    let mut client = connect(&cluster, 1).await;
    let mut sent = Vec::new();
    send_mixed(&mut client, 100, &mut sent).await;
    let fetched = receive_all(&mut client, &sent).await;
    // Each Fetch follows one more Produce than the one before: it saw them all, in order.
    assert_eq!(fetched, (1..=25).collect::<Vec<_>>());
    assert_eq!(cluster.requests(1), sent);
}

#[tokio::test]
async fn delayed_answers_overlap_and_keep_their_order() {
    let cluster = three_brokers().await;
    // Answered one after the other, 100 requests delayed this much would take 30 s, more than
    // the whole exchange is given.
    let delay = Duration::from_millis(300);
    cluster.set_delay(1, delay);
    let mut client = connect(&cluster, 1).await;
    let mut sent = Vec::new();
    let started = tokio::time::Instant::now();
    send_mixed(&mut client, 100, &mut sent).await;
    cluster.wait_for_requests(1, 100).await;
    // Requests from now on are due at once, before the delayed ones: still answered after them.
    cluster.set_delay(1, Duration::ZERO);
    send_mixed(&mut client, 20, &mut sent).await;
    let fetched = tokio::time::timeout(DEADLINE, receive_all(&mut client, &sent))
        .await
        .expect("delays of pipelined requests overlap");
    assert!(started.elapsed() >= delay, "answers waited for the delay");
    assert_eq!(fetched, (1..=30).collect::<Vec<_>>());
    assert_eq!(cluster.requests(1), sent);
}

#[tokio::test]
async fn a_delay_slows_only_its_broker() {
    let cluster = three_brokers().await;
    cluster.set_delay(2, Duration::from_secs(30));
    let mut slow = connect(&cluster, 2).await;
    let pending = slow.send(&ApiVersionsRequest::default(), 3).await.unwrap();
    let mut fast = connect(&cluster, 3).await;
    fast.call(&ApiVersionsRequest::default(), 3).await.unwrap();
    assert_eq!(cluster.requests(2), [(ApiKey::ApiVersions, 3, pending)]);
}
