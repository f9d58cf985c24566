//! From a request frame to its answer: the fixed ApiVersions table, header and body decoding,
//! and one dispatch on the API key.
//!
//! Kafka's rules for what cannot be served are kept, because the proxy must live with them: an
//! API or version outside [`API_VERSIONS`](super::cluster::API_VERSIONS) closes the connection (ApiVersions excepted: a newer
//! one is answered v0 with UNSUPPORTED_VERSION, KIP-511), and so does a body that does not
//! decode. The group APIs are advertised but closed: the proxy must serve them itself, and a
//! test that finds one in `FakeCluster::requests` has caught it forwarding.

use assignor_wire::guard;
use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};

use super::answer::Answer;
use super::cluster::advertised;
use super::state::{Received, Shared};
use super::{cluster, data, fetch, offsets};

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
