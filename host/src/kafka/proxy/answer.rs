//! What the connection needs to know of a request or answer passed up: whether a Produce
//! waits for an answer at all (`acks = 0` does not), and the rewritten bytes of an answer that
//! names brokers. Everything is decoded with `kafka-protocol` through the guard, and an answer
//! that needs no change leaves as the upstream sent it.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, DescribeClusterResponse, FindCoordinatorResponse, MetadataRequest,
    MetadataResponse, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::{Proxy, rewrite, versions};
use crate::coordinator::view::TopicsView;
use assignor_wire::guard;

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

/// A Metadata request `frame` (header first, no size prefix) for topics by id (v10+: how
/// librdkafka resolves the topic ids of a consumer-protocol assignment). Those ids are the
/// host's own (the catalog's, [`rewrite::topic_ids`]), which the upstream does not know, so each
/// id the catalog has is asked for by its name instead. Any other request, or one that does not
/// decode, leaves as it came.
pub fn metadata_request(proxy: &Proxy, frame: Bytes, api_version: i16) -> Bytes {
    if api_version < 10 {
        return frame;
    }
    let mut rest = frame.clone();
    let header_version = ApiKey::Metadata.request_header_version(api_version);
    let Ok(header) = guard::decode_from::<RequestHeader>(&mut rest, header_version) else {
        return frame;
    };
    let Ok(mut request) = guard::decode::<MetadataRequest>(&rest, api_version) else {
        return frame;
    };
    let topics = proxy.catalog.topics();
    let mut changed = false;
    for topic in request.topics.iter_mut().flatten() {
        if let Some(name) = topics.name_of(&topic.topic_id) {
            topic.name = Some(TopicName(StrBytes::from_string(name.to_owned())));
            topic.topic_id = uuid::Uuid::nil();
            changed = true;
        }
    }
    if !changed {
        return frame;
    }
    let mut out = BytesMut::new();
    match header
        .encode(&mut out, header_version)
        .and_then(|()| request.encode(&mut out, api_version))
    {
        Ok(()) => out.freeze(),
        Err(_) => frame,
    }
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
            if names_a_new_topic(&r, &proxy.catalog.topics()) {
                proxy.refresh.notify_one();
            }
            rewrite::metadata(&mut r, proxy);
            rewrite::topic_ids(&mut r, version, &proxy.catalog.topics());
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
        ApiKey::ApiVersions => api_versions(&header, header_version, body, version)?,
        ApiKey::Produce => {
            let mut r: ProduceResponse = decode(&mut body, api, version)?;
            if rewrite::produce(&mut r, proxy) {
                Some(encode(&header, header_version, &r, version)?)
            } else {
                None
            }
        }
        _ => None,
    };
    Ok(changed.unwrap_or(frame))
}

/// Whether a Metadata answer names a topic the upstream has and the catalog does not, so the
/// host's own read should run now. A topic the upstream answered with an error (it does not
/// exist there either) is no reason: clients ask for a missing topic again and again, and
/// each would cost a full read.
fn names_a_new_topic(response: &MetadataResponse, catalog: &TopicsView) -> bool {
    response
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| t.name.as_ref())
        .any(|name| !catalog.contains_key(name.as_str()))
}

/// Kafka's error for an ApiVersions newer than the broker knows.
const UNSUPPORTED_VERSION: i16 = kafka_protocol::ResponseError::UnsupportedVersion.code();

/// The upstream's ApiVersions answer `body` (after its header) to a request at `version`,
/// merged with the host's table; `None` to pass it on as it came.
///
/// A broker that does not know `version` answers at v0 with UNSUPPORTED_VERSION and its own
/// ApiVersions range (KIP-511; Kafka writes that answer at v0 whatever was asked). Read at
/// `version`, those bytes fail to decode or decode to garbage, so such an answer is read at v0
/// and passed on unchanged: the client retries within the range it names, as it would
/// straight against the broker.
fn api_versions(
    header: &ResponseHeader,
    header_version: i16,
    body: Bytes,
    version: i16,
) -> Result<Option<Bytes>, String> {
    let api = ApiKey::ApiVersions;
    let at_version: Result<ApiVersionsResponse, String> = decode(&mut body.clone(), api, version);
    match at_version {
        Ok(mut r) if r.error_code != UNSUPPORTED_VERSION => {
            if r.error_code == 0 {
                versions::merge(&mut r);
            }
            Ok(Some(encode(header, header_version, &r, version)?))
        }
        first => {
            let v0: ApiVersionsResponse = decode(&mut body.clone(), api, 0)?;
            if v0.error_code == UNSUPPORTED_VERSION {
                Ok(None)
            } else {
                Err(first.err().unwrap_or_else(|| {
                    format!("upstream ApiVersions v{version} answer: unreadable")
                }))
            }
        }
    }
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

    fn encoded(response: &ApiVersionsResponse, version: i16) -> Bytes {
        let mut out = BytesMut::new();
        response.encode(&mut out, version).unwrap();
        out.freeze()
    }

    fn entry(key: ApiKey, min: i16, max: i16) -> ApiVersion {
        ApiVersion::default()
            .with_api_key(key as i16)
            .with_min_version(min)
            .with_max_version(max)
    }

    #[test]
    fn only_a_topic_the_upstream_has_and_the_catalog_lacks_wakes_the_read() {
        use kafka_protocol::messages::TopicName;
        use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
        use kafka_protocol::protocol::StrBytes;

        let topic = |name: &'static str, error_code: i16| {
            MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str(name))))
                .with_error_code(error_code)
        };
        let known = assignor_sdk::Topic {
            name: "known".into(),
            partition_count: 1,
            partition_racks: Vec::new(),
        };
        let catalog: TopicsView =
            std::sync::Arc::new(crate::coordinator::view::Topics::with_derived_ids(
                [("known".to_owned(), known)].into(),
            ));
        let answer = |topics| MetadataResponse::default().with_topics(topics);
        assert!(!names_a_new_topic(
            &answer(vec![topic("known", 0)]),
            &catalog
        ));
        assert!(names_a_new_topic(&answer(vec![topic("new", 0)]), &catalog));
        // UNKNOWN_TOPIC_OR_PARTITION: missing upstream too.
        assert!(!names_a_new_topic(
            &answer(vec![topic("missing", 3)]),
            &catalog
        ));
    }

    #[test]
    fn an_upstream_that_does_not_know_the_version_is_answered_at_v0_unchanged() {
        let header = ResponseHeader::default().with_correlation_id(7);
        let refusal = ApiVersionsResponse::default()
            .with_error_code(UNSUPPORTED_VERSION)
            .with_api_keys(vec![entry(ApiKey::ApiVersions, 0, 3)]);
        for asked in [3, 4] {
            let passed = api_versions(&header, 0, encoded(&refusal, 0), asked).unwrap();
            assert_eq!(passed, None, "v{asked}: the v0 refusal goes on as it came");
        }
        // A real answer at the version asked is merged (the host's group APIs appear).
        let answer = ApiVersionsResponse::default().with_api_keys(vec![
            entry(ApiKey::ApiVersions, 0, 3),
            entry(ApiKey::Fetch, 4, 16),
        ]);
        let merged = api_versions(&header, 0, encoded(&answer, 3), 3)
            .unwrap()
            .expect("rewritten");
        let mut rest = merged;
        let _: ResponseHeader = guard::decode_from(&mut rest, 0).unwrap();
        let r: ApiVersionsResponse = guard::decode_from(&mut rest, 3).unwrap();
        assert!(
            r.api_keys
                .iter()
                .any(|k| k.api_key == ApiKey::JoinGroup as i16)
        );
        // Anything else that does not decode is an upstream fault.
        assert!(api_versions(&header, 0, Bytes::from_static(&[0, 0, 0]), 3).is_err());
    }
}
