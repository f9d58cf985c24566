//! Decoding untrusted bytes with `kafka-protocol` without trusting its length prefixes.
//!
//! `kafka-protocol` 0.18 sizes a `Vec` from an array's element count before it decodes a single
//! element (`Vec::with_capacity(n)` in `protocol/types.rs`). A 4-byte Metadata body claiming
//! 2^31 topics therefore asks the allocator for ~150 GB, the allocation fails, and Rust
//! *aborts the process* (measured: "memory allocation of 154618822584 bytes failed"). Upstream
//! fixes are open (kafka-protocol-rs PRs #152, #161, #200) but not in a release.
//!
//! Every element of a Kafka array takes at least one byte on the wire, so a count larger than
//! the bytes left in the frame is impossible. [`decode`] first decodes through [`Probe`], a
//! `Buf` that keeps such counts away from any allocation, and decodes the real value from the
//! same bytes only once the probe succeeded:
//!
//! - `int32` reads (array counts and byte lengths of non-flexible versions, but also ordinary
//!   fields) larger than `remaining + 1` are clamped to `remaining + 1`. A clamped count or
//!   length still cannot be satisfied, so the probe fails exactly when the real decode would;
//!   a clamped ordinary field changes a value the probe throws away, never the structure.
//! - unsigned varints (counts and lengths of flexible versions, tagged-field headers) are
//!   re-assembled from the byte reads they are made of, and one larger than `remaining + 1`
//!   fails the read. The only legitimate varint that can be that large is a tagged-field
//!   *tag number*, and Kafka's tags are single digits.
//!
//! Decoding twice costs a few microseconds for the requests a coordinator sees; in exchange no
//! frame, however crafted, can take the process down.

use bytes::{Buf, Bytes, TryGetError};
use kafka_protocol::protocol::Decodable;
use kafka_protocol::protocol::buf::ByteBuf;

/// Decodes `T` at `version` from `body`, refusing impossible length prefixes first. The error
/// is kafka-protocol's message (or the probe's, which names the impossible length).
pub fn decode<T: Decodable>(body: &Bytes, version: i16) -> Result<T, String> {
    decode_from(&mut body.clone(), version)
}

/// Like [`decode`], advancing `buf` past the decoded value (for a header followed by a body).
pub fn decode_from<T: Decodable>(buf: &mut Bytes, version: i16) -> Result<T, String> {
    let mut probe = Probe::new(buf.clone());
    T::decode(&mut probe, version).map_err(|e| e.to_string())?;
    T::decode(buf, version).map_err(|e| e.to_string())
}

/// A `Buf` over a frame that makes impossible counts fail before they are used (module docs).
pub struct Probe {
    inner: Bytes,
    /// The unsigned varint being assembled from consecutive byte reads.
    varint: u64,
    shift: u32,
}

impl Probe {
    pub fn new(inner: Bytes) -> Probe {
        Probe {
            inner,
            varint: 0,
            shift: 0,
        }
    }

    fn limit(&self) -> usize {
        self.inner.remaining() + 1
    }
}

impl Buf for Probe {
    fn remaining(&self) -> usize {
        self.inner.remaining()
    }

    fn chunk(&self) -> &[u8] {
        self.inner.chunk()
    }

    fn advance(&mut self, cnt: usize) {
        self.inner.advance(cnt)
    }

    fn try_get_i32(&mut self) -> Result<i32, TryGetError> {
        let value = self.inner.try_get_i32()?;
        let limit = self.limit();
        if value > 0 && value as usize > limit {
            // `limit` is at most the frame size, which fits an i32 (the size prefix is one).
            return Ok(i32::try_from(limit).unwrap_or(i32::MAX));
        }
        Ok(value)
    }

    fn get_i32(&mut self) -> i32 {
        // Only reached if a decoder checked `remaining()` itself; keep the same clamping.
        self.try_get_i32().unwrap_or(0)
    }

    fn try_get_u8(&mut self) -> Result<u8, TryGetError> {
        let byte = self.inner.try_get_u8()?;
        self.varint |= u64::from(byte & 0x7f) << self.shift;
        // kafka-protocol reads at most five bytes per varint, stopping at the first byte
        // without the continuation bit; stay in step with it.
        if byte & 0x80 != 0 && self.shift < 28 {
            self.shift += 7;
            return Ok(byte);
        }
        let value = self.varint;
        self.varint = 0;
        self.shift = 0;
        let limit = self.limit();
        if value > limit as u64 {
            return Err(TryGetError {
                requested: usize::try_from(value).unwrap_or(usize::MAX),
                available: limit - 1,
            });
        }
        Ok(byte)
    }
}

impl ByteBuf for Probe {
    fn peek_bytes(&mut self, r: std::ops::Range<usize>) -> Bytes {
        self.inner.slice(r)
    }

    fn get_bytes(&mut self, size: usize) -> Bytes {
        self.inner.split_to(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{GroupId, HeartbeatRequest, MetadataRequest, TopicName};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn encoded<T: Encodable>(value: &T, version: i16) -> Bytes {
        let mut buf = bytes::BytesMut::new();
        value.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn an_impossible_int32_array_count_fails_without_allocating() {
        // Metadata v4: topics array count i32::MAX and nothing after it. Decoding this with
        // kafka-protocol directly aborts the process.
        let body = Bytes::from(i32::MAX.to_be_bytes().to_vec());
        let err = decode::<MetadataRequest>(&body, 4).unwrap_err();
        assert!(!err.is_empty());
    }

    #[test]
    fn an_impossible_compact_array_count_fails_without_allocating() {
        // Metadata v9 (flexible): topics count as the varint 0xFFFFFFFF.
        let mut buf = bytes::BytesMut::new();
        buf.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        let err = decode::<MetadataRequest>(&buf.freeze(), 9).unwrap_err();
        assert!(err.contains("4294967295"), "{err}");
    }

    #[test]
    fn valid_requests_decode_exactly_as_without_the_guard() {
        let request = MetadataRequest::default().with_topics(Some(vec![
            MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str("orders")))),
        ]));
        for version in [0, 4, 9, 12] {
            let body = encoded(&request, version);
            let plain = MetadataRequest::decode(&mut body.clone(), version).unwrap();
            assert_eq!(decode::<MetadataRequest>(&body, version).unwrap(), plain);
        }
        // A large ordinary int32 field (clamped inside the probe) survives unchanged.
        let heartbeat = HeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_generation_id(1_000_000)
            .with_member_id(StrBytes::from_static_str("m"));
        let body = encoded(&heartbeat, 0);
        assert_eq!(decode::<HeartbeatRequest>(&body, 0).unwrap(), heartbeat);
    }
}
