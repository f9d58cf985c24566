//! Kafka's consumer embedded protocol, the one encoder and decoder of it for the whole host:
//! Subscription (JoinGroup metadata) and Assignment (SyncGroup bytes), via kafka-protocol's
//! `ConsumerProtocolSubscription` and `ConsumerProtocolAssignment`; the leading i16 version is
//! read and written here.
//!
//! Versions above 3 are read with the v3 layout (new versions only append fields), trailing
//! bytes are ignored. Metadata of version 1 or above that ends right after the user data is
//! read as version 0: kafka-go (every release; segmentio/kafka-go#1156) marks its Subscription
//! version 1 but writes only version 0's fields. Sarama accepts those bytes too (its
//! `ConsumerGroupMemberMetadata.decode` stops at the missing owned partitions); Kafka's Java
//! `ConsumerProtocol` throws on them, but the host is the leader of a kafka-go group, so
//! refusing them left the member subscribing to nothing, and kafka-go rejoined as fast as it
//! could. Any other truncation is still refused. A "consumer" member whose metadata is not a
//! valid Subscription is kept
//! in the group as subscribing to nothing: it gets a well-formed empty assignment, never the
//! zero-length bytes Python clients crash on, and never breaks the group.
//!
//! Both decoders walk the bytes and check every declared array count against the bytes left
//! before kafka-protocol allocates by that count: a client's 6 bytes claiming 2^31-1 entries
//! must be refused, not turned into a multi-gigabyte allocation.

use assignor_sdk::TopicPartitions;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::consumer_protocol_assignment::{
    ConsumerProtocolAssignment, TopicPartition as AssignedTopic,
};
use kafka_protocol::messages::consumer_protocol_subscription::{
    ConsumerProtocolSubscription, TopicPartition as OwnedTopic,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// The JoinGroup `protocol_type` of Kafka consumers: their metadata is a Subscription and
/// their assignment an Assignment. Groups of other types carry bytes the host does not read.
pub const PROTOCOL_TYPE: &str = "consumer";

/// The highest embedded-protocol version the host understands.
pub const MAX_VERSION: i16 = 3;

/// A decoded Subscription, in the ABI's terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    /// The version the bytes are read at: the member's, clamped to 0..=3, or 0 for version-1+
    /// metadata carrying only version 0's fields (kafka-go's). Its assignment is written with it.
    pub version: i16,
    /// Subscribed topics, sorted and deduplicated.
    pub topics: Vec<String>,
    pub user_data: Option<Vec<u8>>,
    pub owned_partitions: Vec<TopicPartitions>,
    /// -1 when absent (v0-v1).
    pub owned_generation: i32,
    pub rack_id: Option<String>,
}

/// Why metadata is not a Subscription.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    #[error("subscription metadata is {0} bytes, too short for a version header")]
    TooShort(usize),
    #[error("subscription version {0} is negative")]
    NegativeVersion(i16),
    #[error("subscription v{version} is malformed: {reason}")]
    Malformed { version: i16, reason: String },
}

/// Decodes Subscription metadata (`int16 version` + body).
pub fn decode_subscription(metadata: &[u8]) -> Result<Subscription, SubscriptionError> {
    if metadata.len() < 2 {
        return Err(SubscriptionError::TooShort(metadata.len()));
    }
    let mut buf = metadata;
    let raw_version = buf.get_i16();
    if raw_version < 0 {
        return Err(SubscriptionError::NegativeVersion(raw_version));
    }
    let version = if raw_version >= 1 && ends_after_user_data(buf) {
        0
    } else {
        raw_version.min(MAX_VERSION)
    };
    // kafka-protocol allocates arrays by their declared count; check counts against the bytes
    // that are left first, so a hostile count cannot make the host allocate gigabytes.
    plausible(buf, version).map_err(|reason| SubscriptionError::Malformed {
        version: raw_version,
        reason: reason.to_string(),
    })?;
    let mut body = Bytes::copy_from_slice(buf);
    let decoded = ConsumerProtocolSubscription::decode(&mut body, version).map_err(|e| {
        SubscriptionError::Malformed {
            version: raw_version,
            reason: e.to_string(),
        }
    })?;
    let mut topics: Vec<String> = decoded.topics.iter().map(|t| t.to_string()).collect();
    topics.sort();
    topics.dedup();
    let mut owned: Vec<TopicPartitions> = decoded
        .owned_partitions
        .into_iter()
        .map(|tp| TopicPartitions {
            topic: tp.topic.0.to_string(),
            partitions: tp.partitions,
        })
        .collect();
    owned.sort_by(|a, b| a.topic.cmp(&b.topic));
    Ok(Subscription {
        version,
        topics,
        user_data: decoded.user_data.map(|b| b.to_vec()),
        owned_partitions: owned,
        owned_generation: if version >= 2 {
            decoded.generation_id
        } else {
            -1
        },
        rack_id: decoded.rack_id.map(|r| r.to_string()),
    })
}

/// Encodes a Subscription at `subscription.version` (clamped to 0..=3), leaving out the
/// fields that version lacks (owned partitions from v1, generation from v2, rack from v3):
/// what a client sends as its JoinGroup metadata. The host itself never joins a group; the
/// simulator, the upload smoke call and the tests build members with it, so a module sees the
/// bytes a live group would give it.
pub fn encode_subscription(subscription: &Subscription) -> Bytes {
    let version = subscription.version.clamp(0, MAX_VERSION);
    let str = |s: &str| StrBytes::from_string(s.to_owned());
    let mut body = ConsumerProtocolSubscription::default()
        .with_topics(subscription.topics.iter().map(|t| str(t)).collect())
        .with_user_data(subscription.user_data.clone().map(Bytes::from));
    if version >= 1 {
        body.owned_partitions = subscription
            .owned_partitions
            .iter()
            .map(|tp| {
                OwnedTopic::default()
                    .with_topic(TopicName(str(&tp.topic)))
                    .with_partitions(tp.partitions.clone())
            })
            .collect();
    }
    if version >= 2 {
        body.generation_id = subscription.owned_generation;
    }
    if version >= 3 {
        body.rack_id = subscription.rack_id.as_deref().map(str);
    }
    let mut out = BytesMut::new();
    out.put_i16(version);
    // Every field is valid at `version` by construction, and the buffer grows: encoding cannot
    // fail. Were it ever to, the header alone still decodes as "not a Subscription".
    if body.encode(&mut out, version).is_err() {
        out.truncate(2);
    }
    out.freeze()
}

/// Encodes an Assignment with the member's subscription version (clamped to 0..=3).
pub fn encode_assignment(
    version: i16,
    partitions: &[TopicPartitions],
    user_data: Option<&[u8]>,
) -> Bytes {
    let version = version.clamp(0, MAX_VERSION);
    let assignment = ConsumerProtocolAssignment::default()
        .with_assigned_partitions(
            partitions
                .iter()
                .map(|tp| {
                    AssignedTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(tp.topic.clone())))
                        .with_partitions(tp.partitions.clone())
                })
                .collect(),
        )
        .with_user_data(user_data.map(Bytes::copy_from_slice));
    let mut out = BytesMut::new();
    out.put_i16(version);
    // Encoding a valid struct into a growable buffer cannot fail; an empty assignment is the
    // safe answer if it ever did (the bytes are still a well-formed header + empty body).
    if assignment.encode(&mut out, version).is_err() {
        out.truncate(2);
        out.put_i32(0);
        out.put_i32(-1);
    }
    out.freeze()
}

/// Decodes Assignment bytes (describe, simulate, and a client leader's relayed assignments,
/// which are stored as the client sent them). `None` for bytes that are not an Assignment,
/// including counts the bytes cannot hold.
pub fn decode_assignment(bytes: &[u8]) -> Option<(Vec<TopicPartitions>, Option<Vec<u8>>)> {
    if bytes.len() < 2 {
        return None;
    }
    let mut buf = bytes;
    let version = buf.get_i16();
    if version < 0 {
        return None;
    }
    plausible_assignment(buf).ok()?;
    let mut body = Bytes::copy_from_slice(buf);
    let a = ConsumerProtocolAssignment::decode(&mut body, version.min(MAX_VERSION)).ok()?;
    Some((
        a.assigned_partitions
            .into_iter()
            .map(|tp| TopicPartitions {
                topic: tp.topic.0.to_string(),
                partitions: tp.partitions,
            })
            .collect(),
        a.user_data.map(|b| b.to_vec()),
    ))
}

/// Walks the Subscription layout checking every declared count against the bytes left.
fn plausible(mut buf: &[u8], version: i16) -> Result<(), &'static str> {
    v0_fields(&mut buf)?;
    if version >= 1 {
        topic_partitions(&mut buf)?;
    }
    Ok(())
}

/// Version 0's fields, the start of every version: topics, then nullable user data.
fn v0_fields(buf: &mut &[u8]) -> Result<(), &'static str> {
    for _ in 0..count(buf, 2)? {
        string(buf, false)?;
    }
    bytes(buf)
}

/// Whether the body holds version 0's fields (topics, user data) and nothing after them: what
/// kafka-go sends under version 1 (segmentio/kafka-go#1156).
fn ends_after_user_data(mut buf: &[u8]) -> bool {
    v0_fields(&mut buf).is_ok() && buf.is_empty()
}

/// Walks the Assignment layout (the same at every version: topic partitions, then user data).
fn plausible_assignment(mut buf: &[u8]) -> Result<(), &'static str> {
    topic_partitions(&mut buf)?;
    bytes(&mut buf)
}

/// `[topic string, [int32]]`, the owned partitions of a Subscription and an Assignment's body.
fn topic_partitions(buf: &mut &[u8]) -> Result<(), &'static str> {
    for _ in 0..count(buf, 6)? {
        string(buf, false)?;
        let n = count(buf, 4)?;
        skip(buf, n * 4)?;
    }
    Ok(())
}

fn i16_(buf: &mut &[u8]) -> Result<i16, &'static str> {
    if buf.remaining() < 2 {
        return Err("truncated");
    }
    Ok(buf.get_i16())
}

fn i32_(buf: &mut &[u8]) -> Result<i32, &'static str> {
    if buf.remaining() < 4 {
        return Err("truncated");
    }
    Ok(buf.get_i32())
}

fn skip(buf: &mut &[u8], n: usize) -> Result<(), &'static str> {
    if buf.remaining() < n {
        return Err("truncated");
    }
    buf.advance(n);
    Ok(())
}

fn string(buf: &mut &[u8], nullable: bool) -> Result<(), &'static str> {
    match i16_(buf)? {
        -1 if nullable => Ok(()),
        n if n < 0 => Err("negative string length"),
        n => skip(buf, n as usize),
    }
}

/// Nullable `bytes` (user data).
fn bytes(buf: &mut &[u8]) -> Result<(), &'static str> {
    match i32_(buf)? {
        -1 => Ok(()),
        n if n < 0 => Err("negative bytes length"),
        n => skip(buf, n as usize),
    }
}

/// An array count, refused when `count * min_item` exceeds the bytes left.
fn count(buf: &mut &[u8], min_item: usize) -> Result<usize, &'static str> {
    let n = i32_(buf)?;
    if n < 0 {
        return Err("negative array length");
    }
    if (n as usize).saturating_mul(min_item) > buf.remaining() {
        return Err("array longer than the metadata");
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partitions: &[i32]) -> TopicPartitions {
        TopicPartitions {
            topic: topic.to_owned(),
            partitions: partitions.to_vec(),
        }
    }

    #[test]
    fn a_subscription_round_trips_at_every_version() {
        for version in 0..=MAX_VERSION {
            let written = Subscription {
                version,
                topics: vec!["a".into(), "b".into()],
                user_data: Some(vec![1, 2]),
                owned_partitions: if version >= 1 {
                    vec![tp("a", &[0, 3])]
                } else {
                    vec![]
                },
                owned_generation: if version >= 2 { 7 } else { -1 },
                rack_id: (version >= 3).then(|| "r1".to_owned()),
            };
            let read = decode_subscription(&encode_subscription(&written)).unwrap();
            assert_eq!(read, written, "v{version}");
        }
    }

    #[test]
    fn an_assignment_round_trips() {
        let bytes = encode_assignment(3, &[tp("a", &[1, 2]), tp("b", &[0])], Some(b"ud"));
        let (partitions, user_data) = decode_assignment(&bytes).unwrap();
        assert_eq!(partitions, vec![tp("a", &[1, 2]), tp("b", &[0])]);
        assert_eq!(user_data.as_deref(), Some(&b"ud"[..]));
    }

    #[test]
    fn an_assignment_claiming_more_partitions_than_its_bytes_hold_is_refused() {
        // ConsumerProtocolAssignment v0 whose topic array claims 2^31-1 entries: decoding it
        // must not allocate by the claim.
        assert_eq!(decode_assignment(&[0, 0, 0x7f, 0xff, 0xff, 0xff]), None);
        // One topic whose partition array claims 2^31-1 entries.
        let mut bytes = vec![0, 0, 0, 0, 0, 1, 0, 1, b'a'];
        bytes.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(decode_assignment(&bytes), None);
    }

    /// kafka-go's JoinGroup metadata (segmentio/kafka-go#1156): version 1, topics `["t"]`,
    /// null user data, and none of version 1's owned partitions.
    const KAFKA_GO_V1: [u8; 13] = [0, 1, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff];

    #[test]
    fn kafka_go_version_1_without_owned_partitions_reads_as_version_0() {
        let read = decode_subscription(&KAFKA_GO_V1).expect("kafka-go's subscription");
        assert_eq!(
            read,
            Subscription {
                version: 0,
                topics: vec!["t".into()],
                user_data: None,
                owned_partitions: vec![],
                owned_generation: -1,
                rack_id: None,
            }
        );
        // The same fields under version 0, as a conforming client writes them.
        let mut v0 = KAFKA_GO_V1;
        v0[1] = 0;
        assert_eq!(decode_subscription(&v0), Ok(read));
    }

    #[test]
    fn any_version_above_0_ending_after_the_user_data_reads_as_version_0() {
        // Sarama stops at the missing owned partitions whatever the version says.
        for version in [2i16, 3, 7] {
            let mut bytes = KAFKA_GO_V1;
            bytes[0..2].copy_from_slice(&version.to_be_bytes());
            let read = decode_subscription(&bytes).unwrap();
            assert_eq!(
                (read.version, read.topics),
                (0, vec!["t".to_owned()]),
                "v{version}"
            );
        }
        // With user data, which kafka-go fills when its GroupBalancer writes some.
        let mut bytes = KAFKA_GO_V1[..9].to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 2, 7, 8]);
        let read = decode_subscription(&bytes).unwrap();
        assert_eq!((read.version, read.user_data), (0, Some(vec![7, 8])));
    }

    #[test]
    fn a_version_1_subscription_cut_anywhere_else_is_still_refused() {
        let malformed = |bytes: &[u8]| {
            matches!(
                decode_subscription(bytes),
                Err(SubscriptionError::Malformed { version: 1, .. })
            )
        };
        // Cut inside version 0's fields: in the topic name, in the user data length.
        assert!(malformed(&KAFKA_GO_V1[..8]));
        assert!(malformed(&KAFKA_GO_V1[..11]));
        // One to three bytes of an owned-partitions count.
        for extra in 1..=3 {
            let mut bytes = KAFKA_GO_V1.to_vec();
            bytes.extend(std::iter::repeat_n(0, extra));
            assert!(malformed(&bytes), "{extra} bytes of a count");
        }
        // A count of one owned topic with nothing after it, and one claiming 2^31-1.
        let mut bytes = KAFKA_GO_V1.to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 1]);
        assert!(malformed(&bytes));
        bytes[13..].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(malformed(&bytes));
        // Version 2 whose owned partitions are there but whose generation is not.
        let mut bytes = KAFKA_GO_V1.to_vec();
        bytes[1] = 2;
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        assert!(matches!(
            decode_subscription(&bytes),
            Err(SubscriptionError::Malformed { version: 2, .. })
        ));
    }

    #[test]
    fn a_subscription_claiming_more_topics_than_its_bytes_hold_is_refused() {
        assert!(matches!(
            decode_subscription(&[0, 1, 0x7f, 0xff, 0xff, 0xff]),
            Err(SubscriptionError::Malformed { .. })
        ));
    }
}
