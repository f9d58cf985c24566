//! From a frame to a decoded request, with Kafka's answers to what cannot be decoded.
//!
//! The first four bytes of every request header are the API key and version, in every header
//! version, so they decide everything else: the header version (`ApiKey::request_header_version`)
//! and the body schema. Kafka's rules, followed here:
//!
//! - an unknown API key, or a known one at a version the host does not decode
//!   (`versions::decoded`: what either mode serves), closes the connection (Kafka's `SocketServer` throws `InvalidRequestException` for a request that is
//!   not enabled);
//! - ApiVersions is the exception: any version is accepted, and one newer than the host knows is
//!   answered as v0 with UNSUPPORTED_VERSION (KIP-511) so the client can retry lower;
//! - a header or body that does not decode closes the connection;
//! - bytes left after a complete body are ignored, as Kafka's `ByteBuffer` parsing does.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};

use crate::{guard, versions as api_versions};

/// A frame the connection must act on.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per request, handled at once
pub enum Inbound {
    /// A request for an API and version the host serves.
    Request(Request),
    /// ApiVersions at a version the host does not know (answered v0 + UNSUPPORTED_VERSION).
    UnsupportedApiVersions(RequestHeader),
}

/// A decoded request.
#[derive(Debug)]
pub struct Request {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub body: RequestKind,
}

impl Request {
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }
}

/// Why a frame cannot be served. Every variant closes the connection.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("frame of {len} bytes is too short for a request header")]
    Truncated { len: usize },
    #[error("unknown api key {api_key} (version {api_version})")]
    UnknownApiKey { api_key: i16, api_version: i16 },
    #[error("{api_key:?} v{api_version} is not served by this host")]
    UnsupportedVersion { api_key: ApiKey, api_version: i16 },
    #[error("{api_key:?} v{api_version}: malformed request header: {reason}")]
    Header {
        api_key: ApiKey,
        api_version: i16,
        reason: String,
    },
    #[error(
        "{api_key:?} v{api_version} (correlation id {correlation_id}): malformed body: {reason}"
    )]
    Body {
        api_key: ApiKey,
        api_version: i16,
        correlation_id: i32,
        reason: String,
    },
}

/// Decodes one request frame (without its size prefix).
pub fn parse(frame: Bytes) -> Result<Inbound, ProtocolError> {
    if frame.len() < 4 {
        return Err(ProtocolError::Truncated { len: frame.len() });
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    let api_key = ApiKey::try_from(raw_key).map_err(|()| ProtocolError::UnknownApiKey {
        api_key: raw_key,
        api_version,
    })?;
    let served = api_versions::is_decoded(api_key, api_version);
    if !served && api_key != ApiKey::ApiVersions {
        return Err(ProtocolError::UnsupportedVersion {
            api_key,
            api_version,
        });
    }
    let mut rest = frame;
    let header_version = api_key.request_header_version(api_version);
    let header: RequestHeader =
        guard::decode_from(&mut rest, header_version).map_err(|reason| ProtocolError::Header {
            api_key,
            api_version,
            reason,
        })?;
    if !served {
        return Ok(Inbound::UnsupportedApiVersions(header));
    }
    let body = decode_body(api_key, &rest, api_version).map_err(|reason| ProtocolError::Body {
        api_key,
        api_version,
        correlation_id: header.correlation_id,
        reason,
    })?;
    Ok(Inbound::Request(Request {
        header,
        api_key,
        body,
    }))
}

/// Decodes the body of a request for `api_key` at `version` (already known to be decoded),
/// through the guard.
pub fn decode_body(api_key: ApiKey, body: &Bytes, version: i16) -> Result<RequestKind, String> {
    macro_rules! served {
        ($($key:ident),* $(,)?) => {
            match api_key {
                $(ApiKey::$key => guard::decode(body, version).map(RequestKind::$key),)*
                other => Err(format!("{other:?} is not served")),
            }
        };
    }
    served!(
        Produce,
        Fetch,
        ListOffsets,
        Metadata,
        OffsetCommit,
        OffsetFetch,
        FindCoordinator,
        JoinGroup,
        Heartbeat,
        LeaveGroup,
        SyncGroup,
        DescribeGroups,
        ListGroups,
        ApiVersions,
        CreateTopics,
        DeleteTopics,
        DeleteGroups,
        CreatePartitions,
        OffsetDelete,
        ConsumerGroupHeartbeat,
        ConsumerGroupDescribe,
        TxnOffsetCommit,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn frame<T: Encodable>(key: ApiKey, version: i16, body: &T) -> Bytes {
        let mut buf = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("t")))
            .encode(&mut buf, key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn served_requests_decode_with_their_header() {
        let Inbound::Request(request) =
            parse(frame(ApiKey::Metadata, 12, &MetadataRequest::default())).unwrap()
        else {
            panic!("expected a request")
        };
        assert_eq!(request.api_key, ApiKey::Metadata);
        assert_eq!(request.version(), 12);
        assert_eq!(request.header.correlation_id, 7);
        assert!(matches!(request.body, RequestKind::Metadata(_)));
    }

    #[test]
    fn txn_offset_commit_decodes_from_v2_to_v5_and_no_other_version() {
        use kafka_protocol::messages::TxnOffsetCommitRequest;
        use kafka_protocol::messages::txn_offset_commit_request::{
            TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        };
        // What a Kafka 4.4 producer's sendOffsetsToTransaction sends (v5 is its version
        // against a broker that stops at 5): the consumer's member id and generation.
        let request = |version: i16| {
            let mut request = TxnOffsetCommitRequest::default()
                .with_transactional_id(StrBytes::from_static_str("app-0_0").into())
                .with_group_id(StrBytes::from_static_str("app").into())
                .with_producer_id(4000.into())
                .with_producer_epoch(3)
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(StrBytes::from_static_str("in").into())
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(2)
                                .with_committed_offset(41)
                                .with_committed_leader_epoch(0),
                        ]),
                ]);
            if version >= 3 {
                // The consumer's member id and generation come with v3.
                request.generation_id = 7;
                request.member_id = StrBytes::from_static_str("m-1");
            }
            request
        };
        for version in 2..=5 {
            let Inbound::Request(decoded) =
                parse(frame(ApiKey::TxnOffsetCommit, version, &request(version))).unwrap()
            else {
                panic!("v{version}: expected a request")
            };
            let RequestKind::TxnOffsetCommit(body) = decoded.body else {
                panic!("v{version}: {:?}", decoded.body)
            };
            assert_eq!(body.topics[0].partitions[0].committed_offset, 41);
            assert_eq!(body.generation_id, if version >= 3 { 7 } else { -1 });
        }
        for version in [1, 6] {
            let mut raw = frame(ApiKey::TxnOffsetCommit, 5, &request(5)).to_vec();
            raw[3] = version as u8;
            assert!(
                matches!(
                    parse(Bytes::from(raw)),
                    Err(ProtocolError::UnsupportedVersion { .. })
                ),
                "v{version}"
            );
        }
    }

    #[test]
    fn newer_api_versions_is_answered_not_refused() {
        let mut raw = frame(ApiKey::ApiVersions, 4, &ApiVersionsRequest::default()).to_vec();
        raw[3] = 9; // claim v9
        let inbound = parse(Bytes::from(raw)).unwrap();
        assert!(matches!(inbound, Inbound::UnsupportedApiVersions(h) if h.correlation_id == 7));
    }

    #[test]
    fn refusals_name_what_was_wrong() {
        assert!(matches!(
            parse(Bytes::from_static(&[0, 3])),
            Err(ProtocolError::Truncated { len: 2 })
        ));
        assert!(matches!(
            parse(Bytes::from_static(&[0x7f, 0, 0, 0, 0, 0, 0, 1])),
            Err(ProtocolError::UnknownApiKey {
                api_key: 0x7f00,
                ..
            })
        ));
        let mut too_new = frame(ApiKey::Metadata, 13, &MetadataRequest::default()).to_vec();
        too_new[3] = 14;
        assert!(matches!(
            parse(Bytes::from(too_new)),
            Err(ProtocolError::UnsupportedVersion {
                api_version: 14,
                ..
            })
        ));
        let mut garbage = frame(ApiKey::Metadata, 4, &MetadataRequest::default()).to_vec();
        garbage.truncate(11); // the header: key, version, correlation id, client id "t"
        garbage.extend_from_slice(&[0xff; 3]);
        assert!(matches!(
            parse(Bytes::from(garbage)),
            Err(ProtocolError::Body {
                correlation_id: 7,
                ..
            })
        ));
    }
}
