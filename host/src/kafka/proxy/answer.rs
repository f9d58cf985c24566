//! What the connection needs to know of a request or answer passed up: whether a Produce
//! waits for an answer at all (`acks = 0` does not), and the rewritten bytes of an answer that
//! names brokers. Everything is decoded with `kafka-protocol` through the guard, and an answer
//! that needs no change leaves as the upstream sent it.

use bytes::{Bytes, BytesMut};
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
            rewrite::find_coordinator(&mut r, version, proxy);
            Some(encode(&header, header_version, &r, version)?)
        }
        ApiKey::ApiVersions => {
            let mut r: ApiVersionsResponse = decode(&mut body, api, version)?;
            if r.error_code == 0 {
                versions::merge(&mut r);
            }
            Some(encode(&header, header_version, &r, version)?)
        }
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
