//! The user data Kafka's sticky assignors put in a member's Subscription, read the way Kafka
//! reads it, and written the way Kafka writes it (tests build subscriptions with it).
//!
//! - `StickyAssignor` (eager, `sticky`) sends its previous assignment and generation,
//!   `STICKY_ASSIGNOR_USER_DATA_V1`: `[topic: STRING, partitions: [INT32]]`, `generation: INT32`
//!   (V0 is the same without the generation). kafka-python's and aiokafka's `sticky` and
//!   librdkafka's `cooperative-sticky` write this format too.
//! - `CooperativeStickyAssignor` sends only a generation,
//!   `COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0`: `generation: INT32`.
//!
//! Everything is big-endian, strings are an `int16` length and UTF-8, arrays an `int32` count.
//! Like Kafka's `Struct` reader, a reader takes what it needs from the front and ignores
//! trailing bytes; a negative or oversized length is an error.

use assignor_sdk::TopicPartitions;

/// Previous ownership as a sticky assignor reads it from one member (Kafka's `MemberData`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberData {
    pub partitions: Vec<TopicPartitions>,
    /// Generation in which `partitions` were owned; -1 when unknown (Kafka's empty `Optional`,
    /// which every comparison Kafka makes treats like -1).
    pub generation: i32,
}

/// Kafka's `DEFAULT_GENERATION`.
pub const DEFAULT_GENERATION: i32 = -1;

/// `StickyAssignor.deserializeTopicPartitionAssignment`: V1, else V0 (no generation), else
/// nothing owned at generation -1 (Kafka ignores user data it cannot parse).
pub fn read_sticky(bytes: &[u8]) -> MemberData {
    let mut partitions: Vec<TopicPartitions> = Vec::new();
    let generation = read_sticky_with(bytes, |topic, p| match partitions.last_mut() {
        Some(last) if last.topic == topic => last.partitions.push(p),
        _ => partitions.push(TopicPartitions {
            topic: topic.to_string(),
            partitions: vec![p],
        }),
    });
    match generation {
        Some(generation) => MemberData {
            partitions,
            generation,
        },
        None => MemberData::default_generation(),
    }
}

/// [`read_sticky`] without building the lists: calls `each(topic, partition)` for every
/// partition of a readable record and returns its generation (-1 for V0), or `None` (and no
/// calls) when the user data cannot be read. A topic name that is not UTF-8 is passed as Java
/// decodes it, with replacement characters.
pub fn read_sticky_with(bytes: &[u8], mut each: impl FnMut(&str, i32)) -> Option<i32> {
    // The V0 record is V1's prefix: check the whole record first, then read it.
    let mut check = Reader { bytes, at: 0 };
    check.skip_topic_partitions()?;
    let generation = check.i32().unwrap_or(DEFAULT_GENERATION);
    let mut reader = Reader { bytes, at: 0 };
    let topics = reader.count()?;
    for _ in 0..topics {
        let raw = reader.raw_string()?;
        let topic = String::from_utf8_lossy(raw);
        let n = reader.count()?;
        for _ in 0..n {
            each(&topic, reader.i32()?);
        }
    }
    Some(generation)
}

/// The generation of librdkafka's `cooperative-sticky` user data (the V1 format above), if
/// `bytes` is exactly that: a V1 record with nothing after it.
pub fn read_sticky_v1_exactly(bytes: &[u8]) -> Option<i32> {
    let mut reader = Reader { bytes, at: 0 };
    reader.skip_topic_partitions()?;
    let generation = reader.i32()?;
    (reader.at == bytes.len()).then_some(generation)
}

/// `CooperativeStickyAssignor`'s user data: the first four bytes as the generation, -1 when
/// there are fewer.
pub fn read_cooperative(bytes: &[u8]) -> i32 {
    Reader { bytes, at: 0 }.i32().unwrap_or(DEFAULT_GENERATION)
}

/// `StickyAssignor.serializeTopicPartitionAssignment` (V1), or V0 when `generation` is `None`.
pub fn write_sticky(partitions: &[TopicPartitions], generation: Option<i32>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
    for tp in partitions {
        out.extend_from_slice(&(tp.topic.len() as i16).to_be_bytes());
        out.extend_from_slice(tp.topic.as_bytes());
        out.extend_from_slice(&(tp.partitions.len() as i32).to_be_bytes());
        for p in &tp.partitions {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    if let Some(generation) = generation {
        out.extend_from_slice(&generation.to_be_bytes());
    }
    out
}

/// `CooperativeStickyAssignor.subscriptionUserData`: the generation as four bytes.
pub fn write_cooperative(generation: i32) -> Vec<u8> {
    generation.to_be_bytes().to_vec()
}

impl MemberData {
    fn default_generation() -> MemberData {
        MemberData {
            partitions: Vec::new(),
            generation: DEFAULT_GENERATION,
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let bytes: &'a [u8] = self.bytes;
        let slice = bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    /// An array count: non-negative and no more elements than bytes left (Kafka's check).
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.i32()?).ok()?;
        (n <= self.bytes.len() - self.at).then_some(n)
    }

    fn raw_string(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.i16()?).ok()?;
        self.take(len)
    }

    /// Reads past a `[topic [partition]]` array, checking every length.
    fn skip_topic_partitions(&mut self) -> Option<()> {
        let topics = self.count()?;
        for _ in 0..topics {
            self.raw_string()?;
            let n = self.count()?;
            self.take(n.checked_mul(4)?)?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tps(list: &[(&str, &[i32])]) -> Vec<TopicPartitions> {
        list.iter()
            .map(|(t, p)| TopicPartitions {
                topic: t.to_string(),
                partitions: p.to_vec(),
            })
            .collect()
    }

    #[test]
    fn v1_round_trips_with_its_generation() {
        let owned = tps(&[("topic1", &[0]), ("topic2", &[1, 3])]);
        let bytes = write_sticky(&owned, Some(7));
        assert_eq!(
            read_sticky(&bytes),
            MemberData {
                partitions: owned.clone(),
                generation: 7
            }
        );
        assert_eq!(read_sticky_v1_exactly(&bytes), Some(7));
    }

    #[test]
    fn v0_reads_with_no_generation() {
        // StickyAssignorTest.testSchemaBackwardCompatibility's old schema.
        let owned = tps(&[("topic", &[1])]);
        let data = read_sticky(&write_sticky(&owned, None));
        assert_eq!(data.partitions, owned);
        assert_eq!(data.generation, DEFAULT_GENERATION);
    }

    #[test]
    fn unreadable_sticky_user_data_owns_nothing() {
        for garbage in [
            &b"\x00"[..],
            b"\xff\xff\xff\xff",
            b"\x00\x00\x00\x01\xff\xff",
            b"\x00\x00\x7f\xff",
        ] {
            assert_eq!(read_sticky(garbage), MemberData::default_generation());
            assert_eq!(read_sticky_v1_exactly(garbage), None);
        }
    }

    #[test]
    fn bytes_after_a_v1_record_are_ignored_by_kafka_but_not_by_the_exact_reader() {
        let mut bytes = write_sticky(&tps(&[("t", &[2])]), Some(3));
        bytes.push(0);
        assert_eq!(read_sticky(&bytes).generation, 3);
        assert_eq!(read_sticky_v1_exactly(&bytes), None);
    }

    #[test]
    fn cooperative_user_data_is_a_generation() {
        // CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration.
        assert_eq!(read_cooperative(&write_cooperative(10)), 10);
        assert_eq!(read_cooperative(&write_cooperative(DEFAULT_GENERATION)), -1);
        assert_eq!(read_cooperative(b""), -1);
        assert_eq!(read_cooperative(b"\x00\x01"), -1);
        // A 4-byte generation is never a whole V1 record (which needs at least 8 bytes).
        assert_eq!(read_sticky_v1_exactly(&write_cooperative(10)), None);
    }
}
