//! ApiVersions in proxy mode: the upstream broker's answer (the client's own request, passed
//! up), merged with what the host does itself. For each API:
//! - served by the host (the group APIs): the host's own range, whatever the upstream says;
//! - decoded by the host to rewrite its answers (Metadata, DescribeCluster, FindCoordinator,
//!   Produce, Fetch, ApiVersions): the upstream's range cut to what `kafka-protocol` decodes,
//!   and for the two the host also answers itself (FindCoordinator for groups, ApiVersions at a
//!   version it does not know) to its own range;
//! - refused ([`REFUSED`]): left out, so clients never send it;
//! - anything else: the upstream's range as it is (those requests pass through undecoded).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use crate::kafka::api_versions::SUPPORTED;

/// APIs answered by the host itself on every port of proxy mode: the group APIs. Produce,
/// Fetch and the rest pass through to the glued broker.
pub const SERVED: &[ApiKey] = &[
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// The highest Fetch passed up: v13 names topics by id, and the ids clients know are the
/// host's (`rewrite::topic_ids`), not the upstream's.
pub const FETCH_MAX: i16 = 12;

/// Metadata by topic id (librdkafka's lookup of an assignment's topics) needs v12: librdkafka
/// asserts on a broker whose Metadata stops at 10 or 11, so such a range is cut to 9 (the
/// client then asks for every topic).
const METADATA_BY_ID: i16 = 12;

/// APIs passed through whose answers the host decodes (to rewrite broker addresses).
pub const REWRITTEN: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::Metadata,
    ApiKey::FindCoordinator,
    ApiKey::ApiVersions,
    ApiKey::DescribeCluster,
];

/// APIs neither passed up nor served: passing them up would bypass the host's coordinator
/// (the share group protocol, transactional offset commits, which go to the group
/// coordinator) or name brokers or topic ids in answers the host does not rewrite
/// (DescribeTopicPartitions, ShareFetch, ShareAcknowledge). Clients do without them, as
/// against a broker that predates them.
pub const REFUSED: &[ApiKey] = &[
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeTopicPartitions,
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::ShareFetch,
    ApiKey::ShareAcknowledge,
];

/// The host's range of `key` (its [`SUPPORTED`] table).
fn host_range(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, ..)| *k == key)
        .map(|&(_, min, max)| (min, max))
}

/// The upstream's answer, merged as the module docs say. Keys the upstream does not know
/// (newer than `kafka-protocol`) pass through unchanged unless refused.
pub fn merge(upstream: &mut ApiVersionsResponse) {
    let mut merged: Vec<ApiVersion> = Vec::with_capacity(upstream.api_keys.len() + SERVED.len());
    for entry in upstream.api_keys.drain(..) {
        let key = ApiKey::try_from(entry.api_key).ok();
        match key {
            Some(key) if REFUSED.contains(&key) || SERVED.contains(&key) => continue,
            Some(key) if REWRITTEN.contains(&key) => {
                let crate_range = key.valid_versions();
                let (mut min, mut max) = (
                    entry.min_version.max(crate_range.min),
                    entry.max_version.min(crate_range.max),
                );
                let answered_here = matches!(key, ApiKey::FindCoordinator | ApiKey::ApiVersions);
                if answered_here && let Some((host_min, host_max)) = host_range(key) {
                    min = min.max(host_min);
                    max = max.min(host_max);
                }
                if key == ApiKey::Fetch {
                    max = max.min(FETCH_MAX);
                }
                if key == ApiKey::Metadata && (10..METADATA_BY_ID).contains(&max) {
                    max = 9;
                }
                if min <= max {
                    merged.push(entry.with_min_version(min).with_max_version(max));
                }
            }
            _ => merged.push(entry),
        }
    }
    for &key in SERVED {
        if let Some((min, max)) = host_range(key) {
            merged.push(
                ApiVersion::default()
                    .with_api_key(key as i16)
                    .with_min_version(min)
                    .with_max_version(max),
            );
        }
    }
    merged.sort_by_key(|v| v.api_key);
    upstream.api_keys = merged;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: i16, min: i16, max: i16) -> ApiVersion {
        ApiVersion::default()
            .with_api_key(key)
            .with_min_version(min)
            .with_max_version(max)
    }

    fn range(r: &ApiVersionsResponse, key: ApiKey) -> Option<(i16, i16)> {
        r.api_keys
            .iter()
            .find(|v| v.api_key == key as i16)
            .map(|v| (v.min_version, v.max_version))
    }

    #[test]
    fn the_merge_keeps_upstream_data_apis_and_puts_the_hosts_group_apis_in() {
        let mut r = ApiVersionsResponse::default().with_api_keys(vec![
            entry(ApiKey::Produce as i16, 0, 13),
            entry(ApiKey::Fetch as i16, 0, 20),
            entry(ApiKey::ListOffsets as i16, 0, 9),
            entry(ApiKey::JoinGroup as i16, 0, 3),
            entry(ApiKey::ConsumerGroupHeartbeat as i16, 0, 1),
            entry(ApiKey::TxnOffsetCommit as i16, 0, 5),
            entry(9_999, 0, 1),
        ]);
        merge(&mut r);
        // Decoded to rewrite: cut to what the host decodes and serves.
        assert_eq!(range(&r, ApiKey::Produce), Some((3, 13)));
        assert_eq!(range(&r, ApiKey::Fetch), Some((4, FETCH_MAX)));
        // Passed through undecoded: the upstream's own range.
        assert_eq!(range(&r, ApiKey::ListOffsets), Some((0, 9)));
        // The host's own, whatever the upstream said (or did not say).
        assert_eq!(range(&r, ApiKey::JoinGroup), Some((0, 9)));
        assert_eq!(range(&r, ApiKey::OffsetDelete), Some((0, 0)));
        // The consumer protocol is the host's.
        assert_eq!(range(&r, ApiKey::ConsumerGroupHeartbeat), Some((0, 1)));
        // Never passed up.
        assert_eq!(range(&r, ApiKey::TxnOffsetCommit), None);
        // A key newer than the host knows passes through.
        assert!(r.api_keys.iter().any(|v| v.api_key == 9_999));
        assert!(r.api_keys.is_sorted_by_key(|v| v.api_key));
    }

    #[test]
    fn metadata_stopping_at_10_or_11_is_cut_to_9_and_12_is_kept() {
        for (upstream, advertised) in [(11, 9), (10, 9), (12, 12), (9, 9)] {
            let mut r = ApiVersionsResponse::default().with_api_keys(vec![entry(
                ApiKey::Metadata as i16,
                0,
                upstream,
            )]);
            merge(&mut r);
            assert_eq!(
                range(&r, ApiKey::Metadata),
                Some((0, advertised)),
                "{upstream}"
            );
        }
    }
}
