//! The APIs and versions the host serves: the tables the request decoder refuses anything
//! outside of, and the ones the host's ApiVersions answers advertise (`assignor_host`'s
//! `kafka::api_versions` has the reasons for each range): [`SUPPORTED`] in either mode, and
//! [`PROXY_ONLY`] in proxy mode alone.

use kafka_protocol::messages::ApiKey;

/// `(api, min, max)` for every API the host serves, by key.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 13),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
];

/// `(api, min, max)` for the APIs the host serves only in proxy mode, in front of a cluster
/// that has what they need.
///
/// TxnOffsetCommit (key 28): a transaction's offsets go to the group's coordinator, which the
/// host is; it checks them against its group and commits them on the cluster inside the
/// client's transaction, whose coordinator is the cluster's. Standalone there is no
/// transaction coordinator (InitProducerId, EndTxn are not served), so it is not offered. From
/// v2 (Kafka 4.0 removed v0-1, KIP-896) to v5, the last that names topics (v6 names them by
/// id, and the ids clients know are the host's).
pub const PROXY_ONLY: &[(ApiKey, i16, i16)] = &[(ApiKey::TxnOffsetCommit, 2, 5)];

/// What the host advertises standalone: every API it serves with its version range.
pub fn advertised() -> impl Iterator<Item = (ApiKey, i16, i16)> {
    SUPPORTED.iter().copied()
}

/// Whether the host serves `api` at `version` standalone.
pub fn is_served(api: ApiKey, version: i16) -> bool {
    advertised().any(|(key, min, max)| key == api && (min..=max).contains(&version))
}

/// Every API and version range the request decoder reads: [`SUPPORTED`], then
/// [`PROXY_ONLY`]. Standalone refuses the proxy-only APIs before their frames are decoded.
pub fn decoded() -> impl Iterator<Item = (ApiKey, i16, i16)> {
    SUPPORTED.iter().chain(PROXY_ONLY).copied()
}

/// Whether the request decoder reads `api` at `version`.
pub fn is_decoded(api: ApiKey, version: i16) -> bool {
    decoded().any(|(key, min, max)| key == api && (min..=max).contains(&version))
}

/// Whether `api` is served in proxy mode only.
pub fn is_proxy_only(api: ApiKey) -> bool {
    PROXY_ONLY.iter().any(|(key, ..)| *key == api)
}
