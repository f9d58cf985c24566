//! What the connection needs to know of a request or answer passed up: whether a Produce
//! waits for an answer at all (`acks = 0` does not), and the rewritten bytes of an answer that
//! names brokers. Everything is decoded with `kafka-protocol` through the guard, and an answer
//! that needs no change leaves as the upstream sent it.

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, DescribeClusterResponse, FetchResponse, FindCoordinatorResponse,
    MetadataResponse, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::{Proxy, rewrite, versions};
use crate::kafka::guard;

/// Whether a Produce request frame has `acks = 0` (no answer will come). A frame that does
/// not decode is passed up as one that waits for an answer: the broker answers or closes.
pub fn acks_zero(frame: &Bytes, api_version: i16) -> bool {
    let mut rest = frame.clone();
    let header_version = ApiKey::Produce.request_header_version(api_version);
    if guard::decode_from::<RequestHeader>(&mut rest, header_version).is_err() {
        return false;
    }
    guard::decode::<ProduceRequest>(&rest, api_version).is_ok_and(|r| r.acks == 0)
}

/// The upstream's answer `frame` (correlation id first, no size prefix) to a request of `api`
/// at `version`, with what names brokers pointed at this host. A Metadata answer also tells
/// the topology reader when it names a topic the catalog does not know.
pub fn rewrite(proxy: &Proxy, api: ApiKey, version: i16, frame: Bytes) -> Result<Bytes, String> {
    let header_version = api.response_header_version(version);
    let mut body = frame.clone();
    let header: ResponseHeader = guard::decode_from(&mut body, header_version)
        .map_err(|e| format!("upstream {api:?} v{version} answer: {e}"))?;
    let changed = match api {
        ApiKey::Metadata => {
            let mut r: MetadataResponse = decode(&mut body, api, version)?;
            let catalog = proxy.catalog.topics();
            let unknown = r
                .topics
                .iter()
                .filter_map(|t| t.name.as_ref())
                .any(|name| !catalog.contains_key(name.as_str()));
            if unknown {
                proxy.refresh.notify_one();
            }
            rewrite::metadata(&mut r, proxy);
            Some(encode(&header, header_version, &r, version)?)
        }
        ApiKey::DescribeCluster => {
            let mut r: DescribeClusterResponse = decode(&mut body, api, version)?;
            rewrite::describe_cluster(&mut r, proxy);
            Some(encode(&header, header_version, &r, version)?)
        }
        ApiKey::FindCoordinator => {
            let mut r: FindCoordinatorResponse = decode(&mut body, api, version)?;
            rewrite::find_coordinator(&mut r, proxy);
            Some(encode(&header, header_version, &r, version)?)
        }
        ApiKey::ApiVersions => Some(api_versions(&header, header_version, body, version)?),
        ApiKey::Produce => {
            let mut r: ProduceResponse = decode(&mut body, api, version)?;
            if rewrite::produce(&mut r, proxy) {
                Some(encode(&header, header_version, &r, version)?)
            } else {
                None
            }
        }
        ApiKey::Fetch => {
            let mut r: FetchResponse = decode(&mut body, api, version)?;
            if rewrite::fetch(&mut r, proxy) {
                Some(encode(&header, header_version, &r, version)?)
            } else {
                None
            }
        }
        _ => None,
    };
    Ok(changed.unwrap_or(frame))
}

/// The upstream's ApiVersions answer, merged ([`versions::merge`]). A broker asked at a
/// version newer than its own answers UNSUPPORTED_VERSION with a **version 0** body, whatever
/// the version asked (KIP-511; noida-db 0.2.3 and Kafka before 3.7 to the v4 that
/// kafka-python 3 sends first), so that answer is read and passed on as v0: the client then
/// retries at the highest version it names.
fn api_versions(
    header: &ResponseHeader,
    header_version: i16,
    body: Bytes,
    version: i16,
) -> Result<Bytes, String> {
    let api = ApiKey::ApiVersions;
    // error_code is the first field of every version.
    let unsupported = body.get(..2).map(|b| i16::from_be_bytes([b[0], b[1]]))
        == Some(ResponseError::UnsupportedVersion.code());
    let version = if unsupported { 0 } else { version };
    let mut r: ApiVersionsResponse = decode(&mut body.clone(), api, version)?;
    if r.error_code == 0 || unsupported {
        versions::merge(&mut r);
    }
    encode(header, header_version, &r, version)
}

fn decode<T: Decodable>(body: &mut Bytes, api: ApiKey, version: i16) -> Result<T, String> {
    guard::decode_from(body, version)
        .map_err(|e| format!("upstream {api:?} v{version} answer: {e}"))
}

fn encode<T: Encodable>(
    header: &ResponseHeader,
    header_version: i16,
    body: &T,
    version: i16,
) -> Result<Bytes, String> {
    let mut out = BytesMut::new();
    header
        .encode(&mut out, header_version)
        .and_then(|()| body.encode(&mut out, version))
        .map_err(|e| format!("cannot encode the rewritten answer: {e}"))?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    use super::*;

    fn answer(body: &ApiVersionsResponse, version: i16) -> Bytes {
        let header = ResponseHeader::default().with_correlation_id(7);
        encode(&header, 0, body, version).unwrap()
    }

    fn read(frame: &Bytes, version: i16) -> ApiVersionsResponse {
        let mut rest = frame.clone();
        let header: ResponseHeader = guard::decode_from(&mut rest, 0).unwrap();
        assert_eq!(header.correlation_id, 7);
        guard::decode_from(&mut rest, version).unwrap()
    }

    #[test]
    fn an_unsupported_version_answer_is_read_and_passed_on_as_version_0() {
        // What noida-db 0.2.3 answers to ApiVersions v4: v0 layout, error 35, its range 0-3.
        let upstream = ApiVersionsResponse::default()
            .with_error_code(ResponseError::UnsupportedVersion.code())
            .with_api_keys(vec![
                ApiVersion::default()
                    .with_api_key(ApiKey::ApiVersions as i16)
                    .with_min_version(0)
                    .with_max_version(3),
            ]);
        let frame = answer(&upstream, 0);
        let mut body = frame.clone();
        let header: ResponseHeader = guard::decode_from(&mut body, 0).unwrap();
        let passed = api_versions(&header, 0, body, 4).unwrap();
        let r = read(&passed, 0);
        assert_eq!(r.error_code, ResponseError::UnsupportedVersion.code());
        let own = r
            .api_keys
            .iter()
            .find(|v| v.api_key == ApiKey::ApiVersions as i16);
        assert_eq!(own.map(|v| (v.min_version, v.max_version)), Some((0, 3)));
    }

    #[test]
    fn a_successful_answer_keeps_its_version() {
        let upstream = ApiVersionsResponse::default().with_api_keys(vec![
            ApiVersion::default()
                .with_api_key(ApiKey::Fetch as i16)
                .with_min_version(0)
                .with_max_version(12),
        ]);
        let frame = answer(&upstream, 3);
        let mut body = frame.clone();
        let header: ResponseHeader = guard::decode_from(&mut body, 0).unwrap();
        let r = read(&api_versions(&header, 0, body, 3).unwrap(), 3);
        assert_eq!(r.error_code, 0);
        let fetch = r
            .api_keys
            .iter()
            .find(|v| v.api_key == ApiKey::Fetch as i16);
        assert_eq!(fetch.map(|v| (v.min_version, v.max_version)), Some((4, 12)));
        assert!(
            r.api_keys
                .iter()
                .any(|v| v.api_key == ApiKey::JoinGroup as i16)
        );
    }
}
