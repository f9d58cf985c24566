//! From a request frame to its answer: the fixed ApiVersions table, header and body decoding,
//! and one dispatch on the API key.
//!
//! Kafka's rules for what cannot be served are kept, because the proxy must live with them: an
//! API or version outside [`API_VERSIONS`] closes the connection (ApiVersions excepted: a newer
//! one is answered v0 with UNSUPPORTED_VERSION, KIP-511), and so does a body that does not
//! decode. The group APIs are advertised but closed: the proxy must serve them itself, and a
//! test that finds one in `FakeCluster::requests` has caught it forwarding.

use assignor_wire::guard;
use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};

use super::state::{Received, Shared};
use super::{cluster, data, fetch, offsets};

/// What every broker advertises: `(api, min, max)`. Produce v10+ and Fetch v16 carry KIP-951
/// leader hints; the group APIs, TxnOffsetCommit, ConsumerGroupHeartbeat and
/// DescribeTopicPartitions are listed but never served (module docs).
pub const API_VERSIONS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 11),
    (ApiKey::Fetch, 4, 16),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::DescribeCluster, 0, 1),
    // Advertised but never served, as a Kafka 4 broker advertises them: a proxy must leave
    // them out of its own ApiVersions answer and never pass them up.
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::DescribeTopicPartitions, 0, 0),
];

/// Whether the fake advertises `version` of `api`.
pub fn advertised(api: ApiKey, version: i16) -> bool {
    API_VERSIONS
        .iter()
        .any(|&(key, min, max)| key == api && (min..=max).contains(&version))
}

/// A request whose header decoded; the body is decoded when it is answered.
pub struct Request {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub body: Bytes,
}

impl Request {
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }

    pub fn received(&self) -> Received {
        (self.api_key, self.version(), self.header.correlation_id)
    }
}

/// What a connection does with one request.
#[allow(clippy::large_enum_variant)] // one per request, written at once
pub enum Answer {
    /// Write this response, encoded at `version` with the header version it prescribes.
    Reply { version: i16, body: ResponseKind },
    /// Write nothing and go on (Produce with acks=0).
    Silent,
    /// Close the connection, answering nothing more.
    Close(String),
}

impl Answer {
    pub fn reply(version: i16, body: impl Into<ResponseKind>) -> Answer {
        Answer::Reply {
            version,
            body: body.into(),
        }
    }
}

/// Decodes the header of a frame (without its size prefix).
pub fn parse(mut frame: Bytes) -> Result<Request, String> {
    if frame.len() < 4 {
        return Err(format!("frame of {} bytes", frame.len()));
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api_key = ApiKey::try_from(raw_key).map_err(|()| format!("unknown api key {raw_key}"))?;
    let header: RequestHeader =
        guard::decode_from(&mut frame, api_key.request_header_version(version))
            .map_err(|e| format!("{api_key:?} v{version}: header: {e}"))?;
    Ok(Request {
        header,
        api_key,
        body: frame,
    })
}

/// Answers one request as broker `broker`, when it is due.
pub async fn answer(shared: &Shared, broker: i32, request: Request) -> Answer {
    let (api, version) = (request.api_key, request.version());
    if api == ApiKey::ApiVersions && !advertised(api, version) {
        return Answer::reply(0, cluster::api_versions_unsupported());
    }
    if !advertised(api, version) {
        return Answer::Close(format!("{api:?} v{version} is not advertised"));
    }
    let body = match decode(api, &request.body, version) {
        Ok(body) => body,
        Err(reason) => return Answer::Close(format!("{api:?} v{version}: body: {reason}")),
    };
    match body {
        RequestKind::ApiVersions(_) => Answer::reply(version, cluster::api_versions()),
        RequestKind::Metadata(req) => cluster::metadata(&shared.lock(), &req, version),
        RequestKind::DescribeCluster(_) => cluster::describe_cluster(&shared.lock(), version),
        RequestKind::FindCoordinator(req) => {
            cluster::find_coordinator(&shared.lock(), &req, version)
        }
        RequestKind::CreateTopics(req) => cluster::create_topics(&mut shared.lock(), &req, version),
        RequestKind::Produce(req) => data::produce(shared, broker, &req, version),
        RequestKind::Fetch(req) => fetch::fetch(shared, broker, &req, version).await,
        RequestKind::ListOffsets(req) => data::list_offsets(&shared.lock(), broker, &req, version),
        RequestKind::OffsetCommit(req) => {
            offsets::offset_commit(&mut shared.lock(), broker, &req, version)
        }
        RequestKind::OffsetFetch(req) => {
            offsets::offset_fetch(&shared.lock(), broker, &req, version)
        }
        RequestKind::DeleteGroups(req) => {
            offsets::delete_groups(&mut shared.lock(), broker, &req, version)
        }
        _ => Answer::Close(format!("{api:?} is not served by the fake cluster")),
    }
}

/// Decodes the body of an API the fake answers (through the host's guard against impossible
/// length prefixes, since a proxy forwards whatever a test client wrote).
fn decode(api: ApiKey, body: &Bytes, version: i16) -> Result<RequestKind, String> {
    macro_rules! answered {
        ($($key:ident),* $(,)?) => {
            match api {
                $(ApiKey::$key => guard::decode(body, version).map(RequestKind::$key),)*
                other => Err(format!("{other:?} is advertised but not served")),
            }
        };
    }
    answered!(
        ApiVersions,
        Metadata,
        DescribeCluster,
        FindCoordinator,
        CreateTopics,
        Produce,
        Fetch,
        ListOffsets,
        OffsetCommit,
        OffsetFetch,
        DeleteGroups,
    )
}
