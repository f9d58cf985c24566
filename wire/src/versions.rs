//! The APIs and versions the host serves: the table the request decoder refuses anything
//! outside of, and the one the host's ApiVersions answer advertises (`assignor_host`'s
//! `kafka::api_versions` has the reasons for each range).

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

/// What the host advertises: every API it serves with its version range.
pub fn advertised() -> impl Iterator<Item = (ApiKey, i16, i16)> {
    SUPPORTED.iter().copied()
}

/// Whether the host serves `api` at `version`.
pub fn is_served(api: ApiKey, version: i16) -> bool {
    advertised().any(|(key, min, max)| key == api && (min..=max).contains(&version))
}
