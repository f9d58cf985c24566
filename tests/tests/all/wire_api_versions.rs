//! ApiVersions over a real socket: every version, the v3+ software-name check, and the KIP-511
//! fallback for a version the host does not know.

use assignor_host::kafka::api_versions;
use assignor_host_tests::{TestHost, str};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader};
use kafka_protocol::protocol::Encodable;

fn advertised(response: &ApiVersionsResponse) -> Vec<(i16, i16, i16)> {
    response
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect()
}

/// The table the host under test advertises.
fn table(_host: &TestHost) -> Vec<(i16, i16, i16)> {
    api_versions::advertised()
        .map(|(key, min, max)| (key as i16, min, max))
        .collect()
}

#[tokio::test]
async fn every_version_advertises_the_served_table() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    for version in 0..=4 {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(str("assignor-host-tests"))
            .with_client_software_version(str("0.1.0"));
        let response = client.call(&request, version).await.unwrap();
        assert_eq!(response.error_code, 0, "v{version}");
        assert_eq!(advertised(&response), table(&host), "v{version}");
    }
    host.stop().await;
}

#[tokio::test]
async fn the_table_has_what_real_clients_need() {
    let host = TestHost::start().await;
    let response = host
        .client()
        .await
        .call(&ApiVersionsRequest::default(), 0)
        .await
        .unwrap();
    let range = |key: ApiKey| {
        advertised(&response)
            .into_iter()
            .find(|(k, ..)| *k == key as i16)
            .map(|(_, min, max)| (min, max))
    };
    // librdkafka fetches only with Produce >= 3 advertised; kafkajs crashes without Fetch.
    assert_eq!(range(ApiKey::Produce), Some((3, 13)));
    assert_eq!(range(ApiKey::Fetch), Some((4, 12)));
    assert_eq!(range(ApiKey::ListOffsets), Some((1, 10)));
    assert_eq!(range(ApiKey::Metadata), Some((0, 13)));
    assert_eq!(range(ApiKey::FindCoordinator), Some((0, 6)));
    assert_eq!(range(ApiKey::ApiVersions), Some((0, 4)));
    // KIP-848: librdkafka 2.10+ sends ConsumerGroupHeartbeat v1 only, 2.4-2.9 v0; its
    // consumer protocol looks topics up by id and asserts on Metadata 10 and 11.
    assert_eq!(range(ApiKey::ConsumerGroupHeartbeat), Some((0, 1)));
    assert_eq!(range(ApiKey::ConsumerGroupDescribe), Some((0, 1)));
    assert!(range(ApiKey::Metadata).is_some_and(|(_, max)| max >= 12));
    host.stop().await;
}

#[tokio::test]
async fn v3_with_an_invalid_software_name_is_invalid_request() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    let request = ApiVersionsRequest::default()
        .with_client_software_name(str("bad name"))
        .with_client_software_version(str("1.0"));
    let response = client.call(&request, 3).await.unwrap();
    assert_eq!(response.error_code, 42);
    assert!(response.api_keys.is_empty());
    host.stop().await;
}

#[tokio::test]
async fn a_too_new_version_gets_a_v0_answer_and_the_connection_stays_usable() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    // ApiVersions v9, flexible header (v2) as a newer client would send, then a v4 body.
    let mut frame = bytes::BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::ApiVersions as i16)
        .with_request_api_version(9)
        .with_correlation_id(77)
        .with_client_id(Some(str("future-client")))
        .encode(&mut frame, 2)
        .unwrap();
    ApiVersionsRequest::default()
        .with_client_software_name(str("future-client"))
        .with_client_software_version(str("9.9"))
        .encode(&mut frame, 4)
        .unwrap();
    client.send_frame(&frame).await.unwrap();
    // Header v0 and body v0, whatever the request's version (KIP-511).
    let (correlation_id, response) = client
        .receive_as::<ApiVersionsResponse>(0, 0)
        .await
        .unwrap();
    assert_eq!(correlation_id, 77);
    assert_eq!(response.error_code, 35);
    assert_eq!(advertised(&response), vec![(18, 0, 4)]);

    // The client retries at the advertised maximum on the same connection.
    let retry = client
        .call(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(retry.error_code, 0);
    assert_eq!(advertised(&retry), table(&host));
    host.stop().await;
}
