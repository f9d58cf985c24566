//! Malformed input over real sockets. Each case gets Kafka's answer (a closed connection, for
//! everything but ApiVersions) and never takes the host down: after each, a second connection
//! is served normally.

use assignor_host_tests::{KafkaClient, TestHost, str};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, MetadataRequest, RequestHeader};
use kafka_protocol::protocol::Encodable;

/// The host still serves a fresh connection.
async fn still_serving(host: &TestHost) {
    let mut client = host.client().await;
    let response = client
        .call(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(response.error_code, 0);
    let metadata = client
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await
        .unwrap();
    assert_eq!(metadata.brokers.len(), 1);
}

/// A request header for `key` at `version`, as a client would encode it.
fn header(key: ApiKey, version: i16) -> bytes::BytesMut {
    let mut buf = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(str("mal")))
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    buf
}

async fn assert_closed_after_raw(host: &TestHost, raw: &[u8]) {
    let mut client = host.client().await;
    client.send_raw(raw).await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap(), "{raw:02x?}");
    still_serving(host).await;
}

async fn assert_closed_after_frame(host: &TestHost, payload: &[u8]) {
    let mut client = host.client().await;
    client.send_frame(payload).await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap(), "{payload:02x?}");
    still_serving(host).await;
}

#[tokio::test]
async fn truncated_frame_then_end_of_stream() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    // Announces 100 bytes, sends 10, then closes its side.
    let mut raw = 100i32.to_be_bytes().to_vec();
    raw.extend_from_slice(&[0, 18, 0, 0, 0, 0, 0, 1, 0, 0]);
    client.send_raw(&raw).await.unwrap();
    client.shutdown_write().await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap());
    still_serving(&host).await;
    host.stop().await;
}

#[tokio::test]
async fn oversized_and_negative_sizes_close_before_any_body() {
    let host = TestHost::with_config(|c| {
        c.kafka.max_frame_bytes = 1024;
        c.kafka.max_group_frame_bytes = 768;
        c.kafka.max_local_frame_bytes = 512;
    })
    .await;
    // Over the cap of the API the frame names (its first two bytes after the size): closed
    // without waiting for the announced bytes.
    let over = |size: i32, key: ApiKey| {
        let mut raw = size.to_be_bytes().to_vec();
        raw.extend_from_slice(&(key as i16).to_be_bytes());
        raw
    };
    assert_closed_after_raw(&host, &over(1025, ApiKey::Produce)).await;
    assert_closed_after_raw(&host, &over(769, ApiKey::JoinGroup)).await;
    assert_closed_after_raw(&host, &over(513, ApiKey::Metadata)).await;
    // Over every cap: closed before the key is read.
    assert_closed_after_raw(&host, &1025i32.to_be_bytes()).await;
    assert_closed_after_raw(&host, &(-1i32).to_be_bytes()).await;
    assert_closed_after_raw(&host, &i32::MIN.to_be_bytes()).await;
    host.stop().await;
}

#[tokio::test]
async fn frames_too_short_for_a_header_close() {
    let host = TestHost::start().await;
    assert_closed_after_frame(&host, &[]).await;
    assert_closed_after_frame(&host, &[0, 18]).await;
    // ApiVersions key and version but no correlation id.
    assert_closed_after_frame(&host, &[0, 18, 0, 3]).await;
    host.stop().await;
}

#[tokio::test]
async fn unknown_api_keys_close() {
    let host = TestHost::start().await;
    for key in [i16::MAX, 999, -1] {
        let mut payload = key.to_be_bytes().to_vec();
        payload.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0]);
        assert_closed_after_frame(&host, &payload).await;
    }
    host.stop().await;
}

#[tokio::test]
async fn unsupported_versions_and_unserved_apis_close() {
    let host = TestHost::start().await;
    // Fetch v13 addresses topics by id; the host advertises up to 12.
    let mut fetch_v13 = header(ApiKey::Fetch, 13).to_vec();
    fetch_v13.extend_from_slice(&[0; 32]);
    assert_closed_after_frame(&host, &fetch_v13).await;
    // Metadata v14 does not exist.
    let mut too_new = header(ApiKey::Metadata, 13).to_vec();
    too_new[3] = 14;
    assert_closed_after_frame(&host, &too_new).await;
    // SaslHandshake is a real Kafka API the host does not serve.
    let sasl = header(ApiKey::SaslHandshake, 1);
    assert_closed_after_frame(&host, &sasl).await;
    host.stop().await;
}

#[tokio::test]
async fn garbage_after_a_valid_header_closes() {
    let host = TestHost::start().await;
    for (key, version) in [
        (ApiKey::Metadata, 4),
        (ApiKey::Metadata, 12),
        (ApiKey::CreateTopics, 7),
    ] {
        let mut payload = header(key, version).to_vec();
        payload.extend_from_slice(&[0xde, 0xad]);
        assert_closed_after_frame(&host, &payload).await;
    }
    host.stop().await;
}

#[tokio::test]
async fn impossible_array_counts_close_instead_of_aborting_the_process() {
    let host = TestHost::start().await;
    // Metadata v4: a topics array claiming i32::MAX elements. Decoded naively this asks the
    // allocator for ~150 GB and aborts the whole process.
    let mut classic = header(ApiKey::Metadata, 4).to_vec();
    classic.extend_from_slice(&i32::MAX.to_be_bytes());
    assert_closed_after_frame(&host, &classic).await;
    // Metadata v12 (flexible): the same with a compact (varint) count of 2^32 - 2.
    let mut compact = header(ApiKey::Metadata, 12).to_vec();
    compact.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_closed_after_frame(&host, &compact).await;
    host.stop().await;
}

#[tokio::test]
async fn bytes_after_a_complete_body_are_ignored_like_kafka() {
    let host = TestHost::start().await;
    let mut payload = header(ApiKey::ApiVersions, 2);
    ApiVersionsRequest::default()
        .encode(&mut payload, 2)
        .unwrap();
    payload.extend_from_slice(&[1, 2, 3]);
    let mut client = host.client().await;
    client.send_frame(&payload).await.unwrap();
    let (correlation_id, response) = client
        .receive_as::<kafka_protocol::messages::ApiVersionsResponse>(0, 2)
        .await
        .unwrap();
    assert_eq!(correlation_id, 1);
    assert_eq!(response.error_code, 0);
    host.stop().await;
}

#[tokio::test]
async fn random_frames_never_take_the_host_down() {
    let host = TestHost::start().await;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64*: deterministic, so a failure reproduces.
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let served: Vec<(i16, i16)> = assignor_host::kafka::api_versions::SUPPORTED
        .iter()
        .map(|&(key, _, max)| (key as i16, max))
        .collect();
    for round in 0..300i32 {
        // A valid key and version from the table, then random bytes.
        let (key, max) = served[(next() % served.len() as u64) as usize];
        let version = (next() % (max as u64 + 1)) as i16;
        let mut payload = key.to_be_bytes().to_vec();
        payload.extend_from_slice(&version.to_be_bytes());
        payload.extend_from_slice(&round.to_be_bytes());
        let len = (next() % 64) as usize;
        payload.extend((0..len).map(|_| next() as u8));
        let mut client = KafkaClient::connect(host.addr()).await.unwrap();
        client.send_frame(&payload).await.unwrap();
        client.shutdown_write().await.unwrap();
        // Either an answer or a close; both are fine, a dead host is not.
        while client.read_frame().await.unwrap().is_some() {}
    }
    still_serving(&host).await;
    host.stop().await;
}
