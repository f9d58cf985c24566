//! ApiVersions in proxy mode: the upstream broker's answer (the client's own request, passed
//! up), merged with what the host does itself. For each API:
//! - served by the host (the group APIs): the host's own range, whatever the upstream says;
//!   TxnOffsetCommit, which the host also sends on upstream at the client's version, only
//!   where its range and the upstream's meet ([`SENT_ON`]);
//! - decoded by the host to rewrite its answers (Metadata, DescribeCluster, FindCoordinator,
//!   Produce, Fetch, ApiVersions): the upstream's range cut to what `kafka-protocol` decodes,
//!   and for the two the host also answers itself (FindCoordinator for groups, ApiVersions at a
//!   version it does not know) to its own range;
//! - refused ([`REFUSED`], [`REFUSED_NEWER`]): left out, so clients never send it;
//! - anything else: the upstream's range as it is (those requests pass through undecoded).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use assignor_wire::versions::decoded;

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
    ApiKey::TxnOffsetCommit,
];

/// Served by the host, then sent on upstream at the client's own version (the meaning of a
/// TxnOffsetCommit for the transaction depends on it: from v5 the group coordinator adds the
/// offsets to the transaction itself, KIP-890), so offered only at versions both speak.
pub const SENT_ON: &[ApiKey] = &[ApiKey::TxnOffsetCommit];

/// The highest Fetch passed up: v13 names topics by id, and the ids clients know are the
/// host's (`rewrite::topic_ids`), not the upstream's.
pub const FETCH_MAX: i16 = 12;

/// The highest Produce passed up, for the same reason: v13 names topics by id (KIP-516). The
/// Java producer of kafka-clients 4.x sends v13 with the ids of its Metadata, the host's,
/// which Kafka answers UNKNOWN_TOPIC_ID, and retries forever; v12 names topics, and is the
/// transaction-v2 Produce (KIP-890) too.
pub const PRODUCE_MAX: i16 = 12;

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
/// (the share group protocol) or name brokers or topic ids in answers the host does not
/// rewrite (DescribeTopicPartitions, ShareFetch, ShareAcknowledge). Clients do without them,
/// as against a broker that predates them.
pub const REFUSED: &[ApiKey] = &[
    ApiKey::DescribeTopicPartitions,
    ApiKey::ShareGroupHeartbeat,
    ApiKey::ShareGroupDescribe,
    ApiKey::ShareFetch,
    ApiKey::ShareAcknowledge,
];

/// Refused APIs newer than `kafka-protocol` (which names no key past 87 but the share
/// groups' offsets admin, 90-92), by key: KIP-1071's streams group protocol,
/// StreamsGroupHeartbeat (88), StreamsGroupDescribe (89) and
/// StreamsGroupTopologyDescriptionUpdate (93). Kafka 4.4 offers them, and a Kafka Streams
/// application with `group.protocol=streams` passed up would form its group on the cluster,
/// behind the host's back; without them it is told the protocol is not supported, and the
/// default, `classic`, keeps the group on the host.
pub const REFUSED_NEWER: &[i16] = &[88, 89, 93];

/// Whether proxy mode refuses requests of `api_key` (known to `kafka-protocol` or not).
pub fn refused(api_key: i16) -> bool {
    REFUSED_NEWER.contains(&api_key)
        || ApiKey::try_from(api_key).is_ok_and(|key| REFUSED.contains(&key))
}

/// The host's range of `key` (its `SUPPORTED` and `PROXY_ONLY` tables).
fn host_range(key: ApiKey) -> Option<(i16, i16)> {
    decoded()
        .find(|(k, ..)| *k == key)
        .map(|(_, min, max)| (min, max))
}

/// The upstream's answer, merged as the module docs say. Keys the upstream does not know
/// (newer than `kafka-protocol`) pass through unchanged unless refused.
pub fn merge(upstream: &mut ApiVersionsResponse) {
    let mut merged: Vec<ApiVersion> = Vec::with_capacity(upstream.api_keys.len() + SERVED.len());
    let mut theirs: Vec<(ApiKey, (i16, i16))> = Vec::new();
    for entry in upstream.api_keys.drain(..) {
        let key = ApiKey::try_from(entry.api_key).ok();
        match key {
            _ if refused(entry.api_key) => continue,
            Some(key) if SERVED.contains(&key) => {
                theirs.push((key, (entry.min_version, entry.max_version)));
            }
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
                if key == ApiKey::Produce {
                    max = max.min(PRODUCE_MAX);
                }
                if key == ApiKey::Metadata && (10..METADATA_BY_ID).contains(&max) {
                    max = 9;
                }
                if min <= max {
                    merged.push(entry.with_min_version(min).with_max_version(max));
                }
            }
            // Advertised as the upstream advertises it (Kafka: 0-1) although a v0 request is
            // refused (its unframed tokens cannot be relayed, `kafka::sasl`): librdkafka gates all
            // of SASL on v0 being in the range (`RD_KAFKA_FEATURE_SASL_HANDSHAKE` depends on
            // SaslHandshake 0-0; kcat's 2.0.2 says "SASL Handshake not supported by broker"
            // without it) and then sends v1, as SaslAuthenticate is advertised. An upstream
            // with v0 only has nothing the host can relay.
            Some(ApiKey::SaslHandshake) if entry.max_version >= 1 => merged.push(entry),
            Some(ApiKey::SaslHandshake) => {}
            _ => merged.push(entry),
        }
    }
    for &key in SERVED {
        if let Some((mut min, mut max)) = host_range(key) {
            if SENT_ON.contains(&key) {
                let Some((_, (up_min, up_max))) = theirs.iter().find(|(k, _)| *k == key) else {
                    continue;
                };
                (min, max) = (min.max(*up_min), max.min(*up_max));
                if min > max {
                    continue;
                }
            }
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
            entry(ApiKey::TxnOffsetCommit as i16, 0, 6),
            entry(ApiKey::ShareGroupHeartbeat as i16, 1, 1),
            entry(88, 0, 1),
            entry(89, 0, 1),
            entry(93, 0, 0),
            entry(9_999, 0, 1),
        ]);
        merge(&mut r);
        // Decoded to rewrite: cut to what the host decodes and serves.
        assert_eq!(range(&r, ApiKey::Produce), Some((3, PRODUCE_MAX)));
        assert_eq!(range(&r, ApiKey::Fetch), Some((4, FETCH_MAX)));
        // Passed through undecoded: the upstream's own range.
        assert_eq!(range(&r, ApiKey::ListOffsets), Some((0, 9)));
        // The host's own, whatever the upstream said (or did not say).
        assert_eq!(range(&r, ApiKey::JoinGroup), Some((0, 9)));
        assert_eq!(range(&r, ApiKey::OffsetDelete), Some((0, 0)));
        // The consumer protocol is the host's.
        assert_eq!(range(&r, ApiKey::ConsumerGroupHeartbeat), Some((0, 1)));
        // Served, and sent on at the client's version: where both ranges meet (the host
        // decodes up to v5, Kafka 4.4 speaks v6).
        assert_eq!(range(&r, ApiKey::TxnOffsetCommit), Some((2, 5)));
        // Never passed up: the share and streams group protocols.
        assert_eq!(range(&r, ApiKey::ShareGroupHeartbeat), None);
        for key in [88, 89, 93] {
            assert!(r.api_keys.iter().all(|v| v.api_key != key), "{key}");
        }
        // A key newer than the host knows passes through.
        assert!(r.api_keys.iter().any(|v| v.api_key == 9_999));
        assert!(r.api_keys.is_sorted_by_key(|v| v.api_key));
    }

    #[test]
    fn sasl_handshake_is_offered_as_the_upstream_offers_it_when_v1_is_there() {
        // Kafka's 0-1 stays 0-1 (librdkafka needs v0 in the range to log in; a v0 request
        // is refused when sent); an upstream with v0 only offers nothing the host relays.
        for (upstream, offered) in [((0, 1), Some((0, 1))), ((0, 0), None)] {
            let mut r = ApiVersionsResponse::default().with_api_keys(vec![entry(
                ApiKey::SaslHandshake as i16,
                upstream.0,
                upstream.1,
            )]);
            merge(&mut r);
            assert_eq!(range(&r, ApiKey::SaslHandshake), offered, "{upstream:?}");
        }
    }

    #[test]
    fn txn_offset_commit_is_offered_only_where_the_upstream_speaks_it() {
        // An upstream without transactions (noida-db) offers none: neither does the host.
        let mut none = ApiVersionsResponse::default().with_api_keys(vec![entry(
            ApiKey::Produce as i16,
            3,
            11,
        )]);
        merge(&mut none);
        assert_eq!(range(&none, ApiKey::TxnOffsetCommit), None);
        // An older one: its ceiling.
        let mut older = ApiVersionsResponse::default().with_api_keys(vec![entry(
            ApiKey::TxnOffsetCommit as i16,
            0,
            3,
        )]);
        merge(&mut older);
        assert_eq!(range(&older, ApiKey::TxnOffsetCommit), Some((2, 3)));
        // Ranges that do not meet.
        let mut apart = ApiVersionsResponse::default().with_api_keys(vec![entry(
            ApiKey::TxnOffsetCommit as i16,
            0,
            1,
        )]);
        merge(&mut apart);
        assert_eq!(range(&apart, ApiKey::TxnOffsetCommit), None);
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
