//! Fast readers for the two v2 messages that get large: the request (read by the SDK in every
//! module call) and the answer (read by the host after every call).
//!
//! Both read the canonical encoding, what rmp-serde writes for the structs of
//! [`super`] (any integer width is accepted, as rmp-serde accepts it), straight into the model:
//! no wire structs in between, no serde dispatch per value, no second pass to turn indices into
//! names. Anything else makes them give up with `None`: a map where an array should be, an
//! array of another length, a string sent as `bin`, an index out of range, a subscription out
//! of order, an answer carrying an error. The caller then decodes with rmp-serde
//! ([`super::decode_request`], [`super::decode_response`]), which defines what the bytes mean
//! and words the error. So these readers decide nothing: where they answer, they answer what
//! the rmp-serde path answers (`tests` checks it on random messages), only sooner.

use std::sync::Arc;

use rmp::Marker;

use super::super::{ABI_V2, Answer, AssignRequest, Member, Topic, TopicOffsets, TopicPartitions};
use crate::abi::index::{Index, IndexData};

/// A cursor over MessagePack bytes; every method reads one value or gives up.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    #[inline]
    fn marker(&mut self) -> Option<Marker> {
        let (&first, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(Marker::from_u8(first))
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(head)
    }

    fn be<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    /// Reads a nil if one is next.
    #[inline]
    fn nil(&mut self) -> bool {
        if self.rest.first() == Some(&0xc0) {
            self.rest = &self.rest[1..];
            true
        } else {
            false
        }
    }

    #[inline]
    fn int(&mut self) -> Option<i64> {
        if let [b @ 0..=0x7f, ..] = *self.rest {
            self.rest = &self.rest[1..];
            return Some(i64::from(b));
        }
        Some(match self.marker()? {
            Marker::FixPos(v) => i64::from(v),
            Marker::FixNeg(v) => i64::from(v),
            Marker::U8 => i64::from(self.be::<1>()?[0]),
            Marker::U16 => i64::from(u16::from_be_bytes(self.be()?)),
            Marker::U32 => i64::from(u32::from_be_bytes(self.be()?)),
            Marker::U64 => i64::try_from(u64::from_be_bytes(self.be()?)).ok()?,
            Marker::I8 => i64::from(self.be::<1>()?[0] as i8),
            Marker::I16 => i64::from(i16::from_be_bytes(self.be()?)),
            Marker::I32 => i64::from(i32::from_be_bytes(self.be()?)),
            Marker::I64 => i64::from_be_bytes(self.be()?),
            _ => return None,
        })
    }

    fn u64(&mut self) -> Option<u64> {
        if self.rest.first() == Some(&0xcf) {
            self.rest = &self.rest[1..];
            return Some(u64::from_be_bytes(self.be()?));
        }
        u64::try_from(self.int()?).ok()
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.int()?).ok()
    }

    fn i32(&mut self) -> Option<i32> {
        i32::try_from(self.int()?).ok()
    }

    #[inline]
    fn array(&mut self) -> Option<usize> {
        if let [b @ 0x90..=0x9f, ..] = *self.rest {
            self.rest = &self.rest[1..];
            return Some(usize::from(b & 0x0f));
        }
        Some(match self.marker()? {
            Marker::FixArray(n) => usize::from(n),
            Marker::Array16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Array32 => u32::from_be_bytes(self.be()?) as usize,
            _ => return None,
        })
    }

    /// An array of exactly `n` items.
    fn fields(&mut self, n: usize) -> Option<()> {
        (self.array()? == n).then_some(())
    }

    /// The length of a sequence about to be read, capped for `Vec::with_capacity` so a length
    /// claimed by a short message cannot allocate past the bytes left (one byte per item).
    fn capacity(&self, n: usize) -> usize {
        n.min(self.rest.len())
    }

    fn map(&mut self) -> Option<usize> {
        Some(match self.marker()? {
            Marker::FixMap(n) => usize::from(n),
            Marker::Map16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Map32 => u32::from_be_bytes(self.be()?) as usize,
            _ => return None,
        })
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = match self.marker()? {
            Marker::FixStr(n) => usize::from(n),
            Marker::Str8 => usize::from(self.be::<1>()?[0]),
            Marker::Str16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Str32 => u32::from_be_bytes(self.be()?) as usize,
            _ => return None,
        };
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }

    #[inline]
    fn opt_string(&mut self) -> Option<Option<String>> {
        if self.nil() {
            Some(None)
        } else {
            self.string().map(Some)
        }
    }

    fn bin(&mut self) -> Option<&'a [u8]> {
        let n = match self.marker()? {
            Marker::Bin8 => usize::from(self.be::<1>()?[0]),
            Marker::Bin16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Bin32 => u32::from_be_bytes(self.be()?) as usize,
            _ => return None,
        };
        self.take(n)
    }

    #[inline]
    fn opt_bin(&mut self) -> Option<Option<Vec<u8>>> {
        if self.nil() {
            Some(None)
        } else {
            self.bin().map(|b| Some(b.to_vec()))
        }
    }

    #[inline]
    fn opt_u32(&mut self) -> Option<Option<u32>> {
        if self.nil() {
            Some(None)
        } else {
            self.u32().map(Some)
        }
    }

    fn i32s(&mut self) -> Option<Vec<i32>> {
        let mut out = Vec::new();
        self.i32s_into(&mut out)?;
        Some(out)
    }

    /// An array of `i32` appended to `out`.
    fn i32s_into(&mut self, out: &mut Vec<i32>) -> Option<()> {
        let n = self.array()?;
        out.reserve(self.capacity(n));
        for _ in 0..n {
            // Partition numbers below 65,536 are the common case, read inline.
            match *self.rest {
                [b, ..] if b < 0x80 => {
                    self.rest = &self.rest[1..];
                    out.push(i32::from(b));
                }
                [0xcd, hi, lo, ..] => {
                    self.rest = &self.rest[3..];
                    out.push(i32::from(u16::from_be_bytes([hi, lo])));
                }
                _ => out.push(self.i32()?),
            }
        }
        Some(())
    }

    fn i64s(&mut self) -> Option<Vec<i64>> {
        let n = self.array()?;
        let mut out = Vec::with_capacity(self.capacity(n));
        for _ in 0..n {
            out.push(self.int()?);
        }
        Some(out)
    }

    fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.array()?;
        let mut out = Vec::with_capacity(self.capacity(n));
        for _ in 0..n {
            out.push(self.u32()?);
        }
        Some(out)
    }
}

/// The model of a v2 request with its index, or `None` where [`super::decode_request`] must
/// decide (see the module documentation).
pub fn request(bytes: &[u8]) -> Option<AssignRequest> {
    let mut r = Reader { rest: bytes };
    let items = r.array()?;
    if !(12..=13).contains(&items) {
        return None;
    }
    if r.u32()? != ABI_V2 {
        return None;
    }
    let group_id = r.string()?;
    let generation_id = r.i32()?;
    let protocol_type = r.string()?;
    let protocol_name = r.string()?;
    let now_ms = r.int()?;
    let mut params = std::collections::BTreeMap::new();
    for _ in 0..r.map()? {
        let key = r.string()?;
        params.insert(key, r.string()?);
    }

    // Topics; replica racks stay indices until the rack table (item 10) is read.
    let topic_count = r.array()?;
    let mut topics = Vec::with_capacity(r.capacity(topic_count));
    let mut topic_racks: Vec<(usize, Vec<Vec<u32>>)> = Vec::new();
    for t in 0..topic_count {
        r.fields(3)?;
        let name = r.string()?;
        let partition_count = r.i32()?;
        if !r.nil() {
            let n = r.array()?;
            let mut per_partition = Vec::with_capacity(r.capacity(n));
            for _ in 0..n {
                per_partition.push(r.u32s()?);
            }
            topic_racks.push((t, per_partition));
        }
        topics.push(Topic {
            name,
            partition_count,
            partition_racks: Vec::new(),
        });
    }

    let subscription_count = r.array()?;
    let mut subscriptions = Vec::with_capacity(r.capacity(subscription_count));
    let mut names: Vec<Arc<[String]>> = Vec::with_capacity(subscriptions.capacity());
    for _ in 0..subscription_count {
        let list = r.u32s()?;
        let in_order = list.is_sorted_by(|a, b| a < b);
        if !in_order || list.last().is_some_and(|&t| t as usize >= topic_count) {
            return None;
        }
        names.push(
            list.iter()
                .map(|&t| topics[t as usize].name.clone())
                .collect(),
        );
        subscriptions.push(list);
    }

    let member_count = r.array()?;
    let mut members = Vec::with_capacity(r.capacity(member_count));
    let mut subscription_of = Vec::with_capacity(members.capacity());
    let mut member_racks: Vec<(usize, u32)> = Vec::new();
    // Whether the ids come strictly increasing, and every member is also `index::plain`:
    // learnt here, while each id is at hand, rather than in another pass over them all.
    let (mut ids_sorted, mut as_sent) = (true, true);
    let mut previous: &str = "";
    for m in 0..member_count {
        r.fields(12)?;
        let id = r.str()?;
        if m > 0 && ids_sorted && previous >= id {
            (ids_sorted, as_sent) = (false, false);
        }
        as_sent &= id.is_ascii();
        previous = id;
        let member_id = id.to_owned();
        let group_instance_id = r.opt_string()?;
        as_sent &= group_instance_id.is_none();
        let subscription = r.u32()?;
        let owned_generation = r.i32()?;
        let owned_partitions = partitions(&mut r, &topics)?;
        let previous_assignment = partitions(&mut r, &topics)?;
        if let Some(rack) = r.opt_u32()? {
            member_racks.push((m, rack));
        }
        let client_id = r.opt_string()?.unwrap_or_default();
        let client_host = r.opt_string()?.unwrap_or_default();
        let user_data = r.opt_bin()?;
        let metadata = r.opt_bin()?.unwrap_or_default();
        let weight = r.opt_u32()?;
        members.push(Member {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rack_id: None,
            topics: names.get(subscription as usize)?.clone(),
            owned_partitions,
            owned_generation,
            previous_assignment,
            user_data,
            metadata,
            weight,
        });
        subscription_of.push(subscription);
    }

    let racks: Vec<String> = if r.nil() {
        Vec::new()
    } else {
        let n = r.array()?;
        let mut racks = Vec::with_capacity(r.capacity(n));
        for _ in 0..n {
            racks.push(r.string()?);
        }
        racks
    };
    let rack = |i: u32| racks.get(i as usize).cloned();
    for (t, per_partition) in topic_racks {
        topics[t].partition_racks = per_partition
            .into_iter()
            .map(|replicas| replicas.into_iter().map(rack).collect())
            .collect::<Option<_>>()?;
    }
    for (m, i) in member_racks {
        members[m].rack_id = Some(rack(i)?);
    }

    let lag = if r.nil() {
        Vec::new()
    } else {
        let n = r.array()?;
        let mut lag = Vec::with_capacity(r.capacity(n));
        for _ in 0..n {
            r.fields(2)?;
            let committed = r.i64s()?;
            lag.push(TopicOffsets {
                committed,
                end: r.i64s()?,
            });
        }
        lag
    };
    let state = if items == 13 { r.opt_bin()? } else { None };

    let index = IndexData::with_order(
        &members,
        topic_count,
        subscriptions,
        subscription_of,
        ids_sorted,
        as_sent,
    );
    Some(AssignRequest {
        abi_version: ABI_V2,
        group_id,
        generation_id,
        protocol_type,
        protocol_name,
        now_ms,
        params,
        members,
        topics,
        lag,
        state,
        index: Index(Some(Arc::new(index))),
    })
}

/// A member's owned partitions or previous assignment: `[topic index, [partition...]]` pairs.
/// Empty for most members of a first assignment: read inline.
#[inline]
fn partitions(r: &mut Reader<'_>, topics: &[Topic]) -> Option<Vec<TopicPartitions>> {
    if r.rest.first() == Some(&0x90) {
        r.rest = &r.rest[1..];
        return Some(Vec::new());
    }
    some_partitions(r, topics)
}

fn some_partitions(r: &mut Reader<'_>, topics: &[Topic]) -> Option<Vec<TopicPartitions>> {
    let n = r.array()?;
    let mut out = Vec::with_capacity(r.capacity(n));
    for _ in 0..n {
        r.fields(2)?;
        let topic = topics.get(r.u32()? as usize)?.name.clone();
        out.push(TopicPartitions {
            topic,
            partitions: r.i32s()?,
        });
    }
    Some(out)
}

/// The answer to `request` in `bytes` by positions, if it carries no error and every index is
/// inside `request`; else `None`, and [`super::decode_response`] decides (see the module
/// documentation). Nothing is allocated per member or per topic: three vectors hold it all.
pub fn response(request: &AssignRequest, bytes: &[u8]) -> Option<Answer> {
    let (members, topics) = (request.members.len(), request.topics.len());
    let mut r = Reader { rest: bytes };
    let items = r.array()?;
    if items > 4 {
        return None;
    }
    if items == 0 {
        return Some(Answer::default());
    }
    if !r.nil() {
        return None;
    }
    // Every partition is at least one byte and every (member, topic) run at least four, so
    // the bytes bound both.
    let mut out = Answer::with_capacity(0, 0, 0);
    if items >= 2 {
        let n = r.array()?;
        out = Answer::with_capacity(r.capacity(n), r.rest.len() / 4, r.rest.len() / 2);
        for _ in 0..n {
            let fields = r.array()?;
            if !(2..=4).contains(&fields) {
                return None;
            }
            let m = r.u32()?;
            if m as usize >= members {
                return None;
            }
            out.push_entry(m);
            for _ in 0..r.array()? {
                r.fields(2)?;
                let t = r.u32()?;
                if t as usize >= topics {
                    return None;
                }
                out.push_topic_with(t, |list| r.i32s_into(list))?;
            }
            let user_data = if fields >= 3 { r.opt_bin()? } else { None };
            let metadata = if fields >= 4 { r.opt_bin()? } else { None };
            if user_data.is_some() || metadata.is_some() {
                let entry = out.last_entry_mut()?;
                entry.user_data = user_data;
                entry.metadata = metadata;
            }
        }
    }
    if items >= 3 && !r.nil() {
        out.rebalance_after_ms = Some(r.u64()?);
    }
    if items == 4 {
        out.state = r.opt_bin()?;
    }
    Some(out)
}
