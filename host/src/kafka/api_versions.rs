//! ApiVersions (key 18): the table of APIs and versions the host serves, and its answer.
//!
//! [`SUPPORTED`] (in `assignor_wire::versions`, beside the request decoder) is the single source
//! of truth: the request decoder refuses anything outside it, and ApiVersions advertises exactly
//! it. The floors are `kafka-protocol`'s (Kafka 4.0
//! removed the older versions, KIP-896); every client studied negotiates inside them. Two
//! ceilings are lower than the crate's on purpose: Fetch stops at 12 (later versions address
//! topics by id, which the host's fetch path does not resolve; clients fetch by name below
//! v13, as with Kafka 2.x), and OffsetCommit / OffsetFetch at 9 (the crate's structs end
//! there). Metadata goes to 13, never 10 or 11 alone: librdkafka's consumer protocol looks
//! topics up by id and asserts on 10 and 11. ConsumerGroupHeartbeat 0-1: v0 for librdkafka
//! 2.4-2.9, v1 for 2.10+ and regex subscriptions.
//! Produce is advertised although every produce is refused: librdkafka only fetches from a
//! broker that advertises Produce >= 3 (reference/real-clients.md 4.1).
//!
//! TxnOffsetCommit is decoded but served in proxy mode only (`PROXY_ONLY`, advertised by
//! `proxy::versions` where the upstream speaks it): standalone there is no transaction
//! coordinator, so it is not in this table, and a request for it closes the connection, as for
//! any API a Kafka broker does not enable.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

pub use assignor_wire::versions::{PROXY_ONLY, SUPPORTED, advertised, is_served};

fn entry(key: ApiKey, min: i16, max: i16) -> ApiVersion {
    ApiVersion::default()
        .with_api_key(key as i16)
        .with_min_version(min)
        .with_max_version(max)
}

/// SaslHandshake and SaslAuthenticate, advertised where the host authenticates clients itself
/// (`kafka.authentication = "local"`): Kafka's ranges. SaslHandshake v0 is advertised, as
/// Kafka does (clients gate on the key), and refused when sent (`sasl_handshake.rs`).
pub const LOCAL_SASL: [(ApiKey, i16, i16); 2] = [
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// The answer to an ApiVersions request the host could decode; `sasl`: the host authenticates
/// its clients itself.
pub fn handle(request: &ApiVersionsRequest, version: i16, sasl: bool) -> ApiVersionsResponse {
    if version >= 3
        && !(is_valid_software(&request.client_software_name)
            && is_valid_software(&request.client_software_version))
    {
        // Kafka's `ApiVersionsRequest.isValid`; the error response lists no APIs.
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    let mut keys: Vec<(ApiKey, i16, i16)> = advertised().collect();
    if sasl {
        keys.extend(LOCAL_SASL);
        keys.sort_by_key(|(key, ..)| *key as i16);
    }
    ApiVersionsResponse::default().with_api_keys(
        keys.into_iter()
            .map(|(key, min, max)| entry(key, min, max))
            .collect(),
    )
}

/// The v0 answer to an ApiVersions version the host does not know. Like Kafka
/// (`ApiVersionsRequest.getErrorResponse`), it lists only ApiVersions' own range, which is all a
/// client needs to retry.
pub fn unsupported_version() -> ApiVersionsResponse {
    let (_, min, max) = SUPPORTED
        .iter()
        .copied()
        .find(|(key, ..)| *key == ApiKey::ApiVersions)
        .unwrap_or((ApiKey::ApiVersions, 0, 0));
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(vec![entry(ApiKey::ApiVersions, min, max)])
}

/// Kafka's `SOFTWARE_NAME_VERSION_PATTERN`: `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn is_valid_software(value: &str) -> bool {
    let bytes = value.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn table_is_sorted_and_inside_kafka_protocol_ranges() {
        for pair in SUPPORTED.windows(2) {
            assert!((pair[0].0 as i16) < (pair[1].0 as i16));
        }
        for &(key, min, max) in SUPPORTED.iter().chain(PROXY_ONLY) {
            let crate_range = key.valid_versions();
            assert!(crate_range.min <= min && max <= crate_range.max, "{key:?}");
        }
    }

    #[test]
    fn standalone_advertises_no_proxy_only_api() {
        let response = handle(&ApiVersionsRequest::default(), 2, false);
        for &(key, ..) in PROXY_ONLY {
            assert!(
                response.api_keys.iter().all(|k| k.api_key != key as i16),
                "{key:?}"
            );
            assert!(!is_served(key, 5), "{key:?}");
        }
    }

    #[test]
    fn advertises_the_whole_table() {
        let response = handle(&ApiVersionsRequest::default(), 2, false);
        assert_eq!(response.error_code, 0);
        assert_eq!(response.api_keys.len(), SUPPORTED.len());
        let fetch = response
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::Fetch as i16)
            .unwrap();
        assert_eq!((fetch.min_version, fetch.max_version), (4, 12));
    }

    #[test]
    fn local_authentication_adds_the_sasl_keys_in_order() {
        let response = handle(&ApiVersionsRequest::default(), 2, true);
        assert_eq!(response.api_keys.len(), SUPPORTED.len() + 2);
        let keys: Vec<i16> = response.api_keys.iter().map(|k| k.api_key).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        for (key, min, max) in LOCAL_SASL {
            let entry = response
                .api_keys
                .iter()
                .find(|k| k.api_key == key as i16)
                .unwrap();
            assert_eq!((entry.min_version, entry.max_version), (min, max));
            let range = key.valid_versions();
            assert!(range.min <= min && max <= range.max, "{key:?}");
        }
        let without = handle(&ApiVersionsRequest::default(), 2, false);
        assert!(
            without
                .api_keys
                .iter()
                .all(|k| k.api_key != ApiKey::SaslHandshake as i16)
        );
    }

    #[test]
    fn v3_requires_kafkas_software_name_pattern() {
        let ok = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("librdkafka"))
            .with_client_software_version(StrBytes::from_static_str("2.12.1"));
        assert_eq!(handle(&ok, 3, false).error_code, 0);
        for (name, version) in [("", "1"), ("x", "1.0-"), ("a b", "1"), ("x", "1+2")] {
            let bad = ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_string(name.into()))
                .with_client_software_version(StrBytes::from_string(version.into()));
            let response = handle(&bad, 3, false);
            assert_eq!(response.error_code, 42, "{name:?} {version:?}");
            assert!(response.api_keys.is_empty());
        }
        // Below v3 the fields do not exist and are not checked.
        assert_eq!(
            handle(&ApiVersionsRequest::default(), 2, false).error_code,
            0
        );
    }

    #[test]
    fn unknown_version_answer_lists_apiversions_only() {
        let response = unsupported_version();
        assert_eq!(response.error_code, 35);
        assert_eq!(response.api_keys.len(), 1);
        assert_eq!(response.api_keys[0].api_key, 18);
        assert_eq!(response.api_keys[0].max_version, 4);
    }
}
