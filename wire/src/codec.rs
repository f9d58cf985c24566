//! Kafka framing: every request and response is an `int32` size followed by that many bytes.
//!
//! The decoder hands out one request frame at a time and never buffers a body before its size
//! has been checked: a negative size or one over the cap is an error that closes the
//! connection, exactly where Kafka raises `InvalidReceiveException`. The cap depends on the
//! request's API key, read as soon as the two bytes after the size are in ([`FrameCaps`]). The encoder writes a
//! response header and body straight into the socket buffer and patches the size in afterwards,
//! so a response is never copied.

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;

/// Growth step while a large frame arrives: memory follows the bytes actually received, not
/// the size a peer announced.
const READ_CHUNK: usize = 64 * 1024;

/// Length-prefixed Kafka frames with a size cap per API.
#[derive(Debug, Clone)]
pub struct FrameCodec {
    caps: FrameCaps,
}

/// The largest request frame by API key, and the setting that says so (named in the error).
#[derive(Debug, Clone)]
pub struct FrameCaps {
    /// Frames relayed or kept as bytes: `kafka.max_frame_bytes`.
    pub bytes: usize,
    /// JoinGroup, SyncGroup, ConsumerGroupHeartbeat: `kafka.max_group_frame_bytes`.
    pub group: usize,
    /// Every other request the host decodes: `kafka.max_local_frame_bytes`.
    pub local: usize,
    /// Which requests are relayed as bytes (proxy mode: those passed up).
    pub relayed: fn(i16) -> bool,
}

impl FrameCaps {
    /// One cap for every API (the encoder's codec, tests).
    pub fn uniform(max: usize) -> FrameCaps {
        FrameCaps {
            bytes: max,
            group: max,
            local: max,
            relayed: |_| true,
        }
    }

    /// The cap for `api_key` and the setting it comes from.
    fn of(&self, api_key: i16) -> (usize, &'static str) {
        const PRODUCE: i16 = ApiKey::Produce as i16;
        const GROUP: [i16; 3] = [
            ApiKey::JoinGroup as i16,
            ApiKey::SyncGroup as i16,
            ApiKey::ConsumerGroupHeartbeat as i16,
        ];
        if api_key == PRODUCE || (self.relayed)(api_key) {
            (self.bytes, "kafka.max_frame_bytes")
        } else if GROUP.contains(&api_key) {
            (self.group, "kafka.max_group_frame_bytes")
        } else {
            (self.local, "kafka.max_local_frame_bytes")
        }
    }
}

impl FrameCodec {
    pub fn new(caps: FrameCaps) -> FrameCodec {
        FrameCodec { caps }
    }

    /// A codec that only encodes responses (no cap applies).
    pub fn encoder() -> FrameCodec {
        FrameCodec::new(FrameCaps::uniform(0))
    }
}

/// A response ready to be written: correlation id, the header and body versions, and the body.
#[derive(Debug)]
pub struct Response {
    pub correlation_id: i32,
    /// The version the body is encoded at (v0 for an ApiVersions answer to an unknown version).
    pub api_version: i16,
    pub body: ResponseKind,
}

/// The connection cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("invalid receive (size = {size}): negative frame size")]
    NegativeSize { size: i32 },
    #[error("invalid receive (size = {size} larger than {max}): frame exceeds {setting}")]
    TooLarge {
        size: usize,
        max: usize,
        setting: &'static str,
    },
    /// A response could not be encoded at the negotiated version: a bug in a handler, never
    /// the client's fault. The connection is closed rather than sending a half-written frame.
    #[error("cannot encode {api:?} response v{version}: {reason}")]
    Encode {
        api: &'static str,
        version: i16,
        reason: String,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl FrameCodec {
    /// Takes one complete request frame (without its size) off the front of `src`, or `None`
    /// when more bytes are needed. Reserves room for the rest of an announced frame in steps,
    /// never all at once.
    pub fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, FrameError> {
        if src.len() < 4 {
            return Ok(None);
        }
        let size = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
        if size < 0 {
            return Err(FrameError::NegativeSize { size });
        }
        let size = size as usize;
        // The largest cap applies until the API key is in; a frame too short to name one is
        // refused later, as too short for a request header.
        let (max, setting) = match src.get(4..6) {
            Some(key) if size >= 2 => self.caps.of(i16::from_be_bytes([key[0], key[1]])),
            _ => {
                let widest = self.caps.bytes.max(self.caps.group).max(self.caps.local);
                (widest, "kafka.max_frame_bytes")
            }
        };
        if size > max {
            return Err(FrameError::TooLarge { size, max, setting });
        }
        let missing = (4 + size).saturating_sub(src.len());
        if missing > 0 {
            src.reserve(missing.min(READ_CHUNK));
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(src.split_to(size)))
    }

    /// Appends one response frame to `dst`. On error `dst` is left as it was.
    pub fn encode(&mut self, response: Response, dst: &mut BytesMut) -> Result<(), FrameError> {
        let start = dst.len();
        dst.put_i32(0);
        let header_version = response.body.header_version(response.api_version);
        let written = ResponseHeader::default()
            .with_correlation_id(response.correlation_id)
            .encode(dst, header_version)
            .and_then(|()| response.body.encode(dst, response.api_version));
        if let Err(e) = written {
            dst.truncate(start);
            return Err(FrameError::Encode {
                api: api_name(&response.body),
                version: response.api_version,
                reason: e.to_string(),
            });
        }
        let size = (dst.len() - start - 4) as i32;
        dst[start..start + 4].copy_from_slice(&size.to_be_bytes());
        Ok(())
    }
}

/// The Kafka name of a response's API, for logs.
pub fn api_name(body: &ResponseKind) -> &'static str {
    match body {
        ResponseKind::ApiVersions(_) => "ApiVersions",
        ResponseKind::Metadata(_) => "Metadata",
        ResponseKind::FindCoordinator(_) => "FindCoordinator",
        ResponseKind::Produce(_) => "Produce",
        ResponseKind::Fetch(_) => "Fetch",
        ResponseKind::ListOffsets(_) => "ListOffsets",
        ResponseKind::CreateTopics(_) => "CreateTopics",
        ResponseKind::DeleteTopics(_) => "DeleteTopics",
        ResponseKind::CreatePartitions(_) => "CreatePartitions",
        ResponseKind::JoinGroup(_) => "JoinGroup",
        ResponseKind::SyncGroup(_) => "SyncGroup",
        ResponseKind::Heartbeat(_) => "Heartbeat",
        ResponseKind::LeaveGroup(_) => "LeaveGroup",
        ResponseKind::OffsetCommit(_) => "OffsetCommit",
        ResponseKind::OffsetFetch(_) => "OffsetFetch",
        ResponseKind::DescribeGroups(_) => "DescribeGroups",
        ResponseKind::ListGroups(_) => "ListGroups",
        ResponseKind::DeleteGroups(_) => "DeleteGroups",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ApiVersionsResponse;

    fn codec() -> FrameCodec {
        FrameCodec::new(FrameCaps::uniform(16))
    }

    /// A frame prefix: its size, then the API key.
    fn prefix(size: i32, key: ApiKey) -> BytesMut {
        let mut buf = BytesMut::from(&size.to_be_bytes()[..]);
        buf.put_i16(key as i16);
        buf
    }

    #[test]
    fn the_cap_follows_the_api_key_once_it_is_in() {
        let caps = FrameCaps {
            bytes: 1000,
            group: 100,
            local: 10,
            relayed: |key| key == ApiKey::Fetch as i16,
        };
        let mut codec = FrameCodec::new(caps);
        let too_large =
            |codec: &mut FrameCodec, size, key| match codec.decode(&mut prefix(size, key)) {
                Err(FrameError::TooLarge { max, setting, .. }) => Some((max, setting)),
                Ok(None) => None,
                other => panic!("{other:?}"),
            };
        assert_eq!(
            too_large(&mut codec, 11, ApiKey::Metadata),
            Some((10, "kafka.max_local_frame_bytes"))
        );
        assert_eq!(too_large(&mut codec, 10, ApiKey::Metadata), None);
        assert_eq!(
            too_large(&mut codec, 101, ApiKey::SyncGroup),
            Some((100, "kafka.max_group_frame_bytes"))
        );
        assert_eq!(too_large(&mut codec, 100, ApiKey::JoinGroup), None);
        assert_eq!(too_large(&mut codec, 999, ApiKey::Produce), None);
        assert_eq!(too_large(&mut codec, 999, ApiKey::Fetch), None, "relayed");
        assert_eq!(
            too_large(&mut codec, 1001, ApiKey::Fetch),
            Some((1000, "kafka.max_frame_bytes"))
        );
        // Before the key is in, only the widest cap applies.
        let mut size_only = BytesMut::from(&500i32.to_be_bytes()[..]);
        assert!(codec.decode(&mut size_only).unwrap().is_none());
        size_only.put_i16(ApiKey::Metadata as i16);
        assert!(matches!(
            codec.decode(&mut size_only),
            Err(FrameError::TooLarge { max: 10, .. })
        ));
    }

    #[test]
    fn frames_split_on_their_size_prefix() {
        let mut buf = BytesMut::from(&[0, 0, 0, 2, 7, 8, 0, 0, 0, 1][..]);
        assert_eq!(codec().decode(&mut buf).unwrap().unwrap(), &[7, 8][..]);
        assert!(codec().decode(&mut buf).unwrap().is_none());
        buf.put_u8(9);
        assert_eq!(codec().decode(&mut buf).unwrap().unwrap(), &[9][..]);
        assert!(buf.is_empty());
    }

    #[test]
    fn negative_and_oversized_sizes_are_errors_before_any_body() {
        let mut negative = BytesMut::from(&(-1i32).to_be_bytes()[..]);
        assert!(matches!(
            codec().decode(&mut negative),
            Err(FrameError::NegativeSize { size: -1 })
        ));
        let mut big = BytesMut::from(&17i32.to_be_bytes()[..]);
        assert!(matches!(
            codec().decode(&mut big),
            Err(FrameError::TooLarge {
                size: 17,
                max: 16,
                ..
            })
        ));
    }

    #[test]
    fn responses_carry_their_size_and_correlation_id() {
        let mut out = BytesMut::new();
        let response = Response {
            correlation_id: 42,
            api_version: 0,
            body: ResponseKind::ApiVersions(ApiVersionsResponse::default()),
        };
        codec().encode(response, &mut out).unwrap();
        let size = i32::from_be_bytes([out[0], out[1], out[2], out[3]]) as usize;
        assert_eq!(size, out.len() - 4);
        assert_eq!(&out[4..8], &42i32.to_be_bytes());
    }
}
