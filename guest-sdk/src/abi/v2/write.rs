//! The host's side of a v2 request: the model written straight to MessagePack.
//!
//! The bytes are exactly rmp-serde's encoding of the [`super::Request`] the model describes
//! (its markers and smallest integer and string forms, `bin` for bytes), written without
//! building that struct and without serde's per-value calls: at 10,000 members this is the
//! host's largest piece of work before a call. `docs/abi.md`'s worked example is checked
//! against these bytes (`guest-sdk/tests/abi_v2_doc.rs`), and `guest-sdk/tests/abi_v2_read.rs`
//! checks on random groups that decoding them with rmp-serde and encoding the result again
//! gives them back.

use std::collections::BTreeMap;

use super::super::{ABI_V2, AssignRequest, Input, Member, Topic, TopicPartitions};
use super::{EncodeError, Extras, Layout, member_weight, topic_position};

/// The v2 request bytes (see [`super::encode_request`]).
pub(super) fn request(
    request: &AssignRequest,
    layout: &Layout,
    extras: Extras<'_>,
) -> Result<Vec<u8>, EncodeError> {
    let inputs = extras.inputs;
    let racks = inputs.has(Input::Racks).then(|| RackTable::new(request));
    let state = request
        .state
        .as_deref()
        .filter(|_| inputs.has(Input::State));
    let mut w = Writer(Vec::with_capacity(64 + request.members.len() * 64));
    w.array(if state.is_some() { 13 } else { 12 })?;
    w.uint(u64::from(ABI_V2));
    w.str(&request.group_id)?;
    w.sint(i64::from(request.generation_id));
    w.str(&request.protocol_type)?;
    w.str(&request.protocol_name)?;
    w.sint(request.now_ms);
    w.params(&request.params)?;

    w.array(request.topics.len())?;
    for t in &request.topics {
        w.topic(t, racks.as_ref())?;
    }
    w.array(layout.subscriptions.len())?;
    for list in &layout.subscriptions {
        w.array(list.len())?;
        for &t in list {
            w.uint(u64::from(t));
        }
    }

    w.array(request.members.len())?;
    for (m, &subscription) in request.members.iter().zip(&layout.subscription_of) {
        w.array(12)?;
        w.str(&m.member_id)?;
        w.opt_str(m.group_instance_id.as_deref())?;
        w.uint(u64::from(subscription));
        w.sint(i64::from(m.owned_generation));
        w.partitions(&request.topics, &m.owned_partitions)?;
        w.partitions(&request.topics, &m.previous_assignment)?;
        let rack = racks
            .as_ref()
            .and_then(|t| m.rack_id.as_deref().map(|r| t.index(r)));
        w.opt_uint(rack.map(u64::from));
        let client = inputs.has(Input::Client);
        w.opt_str(client.then_some(m.client_id.as_str()))?;
        w.opt_str(client.then_some(m.client_host.as_str()))?;
        let user_data = m
            .user_data
            .as_deref()
            .filter(|_| inputs.has(Input::UserData));
        w.opt_bin(user_data)?;
        w.opt_bin(inputs.has(Input::Metadata).then_some(m.metadata.as_slice()))?;
        let weight = inputs
            .has(Input::Weights)
            .then(|| weight(&request.params, m));
        w.opt_uint(weight.map(u64::from));
    }

    match &racks {
        Some(table) => {
            w.array(table.names.len())?;
            for name in &table.names {
                w.str(name)?;
            }
        }
        None => w.nil(),
    }
    if inputs.has(Input::Lag) {
        let lag = extras.lag.unwrap_or(&request.lag);
        w.array(request.topics.len())?;
        for t in 0..request.topics.len() {
            let offsets = lag.get(t);
            w.array(2)?;
            w.i64s(offsets.map_or(&[][..], |o| o.committed.as_slice()))?;
            w.i64s(offsets.map_or(&[][..], |o| o.end.as_slice()))?;
        }
    } else {
        w.nil();
    }
    if state.is_some() {
        w.opt_bin(state)?;
    }
    Ok(w.0)
}

fn weight(params: &BTreeMap<String, String>, member: &Member) -> u32 {
    member
        .weight
        .unwrap_or_else(|| member_weight(params, member))
}

/// Rack names by index, sorted: every member's rack and every replica's.
struct RackTable<'a> {
    names: Vec<&'a str>,
}

impl<'a> RackTable<'a> {
    fn new(request: &'a AssignRequest) -> RackTable<'a> {
        let mut names: Vec<&str> = request
            .members
            .iter()
            .filter_map(|m| m.rack_id.as_deref())
            .chain(
                request
                    .topics
                    .iter()
                    .flat_map(|t| t.partition_racks.iter().flatten().map(String::as_str)),
            )
            .collect();
        names.sort_unstable();
        names.dedup();
        RackTable { names }
    }

    fn index(&self, rack: &str) -> u32 {
        self.names.binary_search(&rack).unwrap_or(0) as u32
    }
}

/// MessagePack into a `Vec`, with rmp's choice of markers. Writing into a `Vec` cannot fail,
/// so rmp's `io::Error`s are never there to ignore; a length past 32 bits is refused.
struct Writer(Vec<u8>);

impl Writer {
    fn nil(&mut self) {
        self.0.push(0xc0);
    }

    fn len(n: usize, what: &'static str) -> Result<u32, EncodeError> {
        u32::try_from(n).map_err(|_| EncodeError::TooLarge(what))
    }

    fn array(&mut self, n: usize) -> Result<(), EncodeError> {
        if n < 16 {
            self.0.push(0x90 | n as u8);
        } else {
            let _ = rmp::encode::write_array_len(&mut self.0, Writer::len(n, "array items")?);
        }
        Ok(())
    }

    fn uint(&mut self, v: u64) {
        if v < 128 {
            self.0.push(v as u8);
        } else {
            let _ = rmp::encode::write_uint(&mut self.0, v);
        }
    }

    fn sint(&mut self, v: i64) {
        if (0..128).contains(&v) {
            self.0.push(v as u8);
        } else {
            let _ = rmp::encode::write_sint(&mut self.0, v);
        }
    }

    fn str(&mut self, s: &str) -> Result<(), EncodeError> {
        Writer::len(s.len(), "string bytes")?;
        let _ = rmp::encode::write_str(&mut self.0, s);
        Ok(())
    }

    fn opt_str(&mut self, s: Option<&str>) -> Result<(), EncodeError> {
        match s {
            Some(s) => self.str(s),
            None => {
                self.nil();
                Ok(())
            }
        }
    }

    fn opt_uint(&mut self, v: Option<u64>) {
        match v {
            Some(v) => self.uint(v),
            None => self.nil(),
        }
    }

    fn opt_bin(&mut self, b: Option<&[u8]>) -> Result<(), EncodeError> {
        match b {
            Some(b) => {
                Writer::len(b.len(), "bytes")?;
                let _ = rmp::encode::write_bin(&mut self.0, b);
            }
            None => self.nil(),
        }
        Ok(())
    }

    fn i64s(&mut self, list: &[i64]) -> Result<(), EncodeError> {
        self.array(list.len())?;
        for &v in list {
            self.sint(v);
        }
        Ok(())
    }

    fn params(&mut self, params: &BTreeMap<String, String>) -> Result<(), EncodeError> {
        let _ = rmp::encode::write_map_len(&mut self.0, Writer::len(params.len(), "params")?);
        for (k, v) in params {
            self.str(k)?;
            self.str(v)?;
        }
        Ok(())
    }

    fn topic(&mut self, t: &Topic, racks: Option<&RackTable<'_>>) -> Result<(), EncodeError> {
        self.array(3)?;
        self.str(&t.name)?;
        self.sint(i64::from(t.partition_count));
        match racks {
            Some(racks) => {
                self.array(t.partition_racks.len())?;
                for replicas in &t.partition_racks {
                    self.array(replicas.len())?;
                    for r in replicas {
                        self.uint(u64::from(racks.index(r)));
                    }
                }
            }
            None => self.nil(),
        }
        Ok(())
    }

    /// Owned partitions or a previous assignment by topic index; entries whose topic is not in
    /// the table are left out (nothing can be assigned from them).
    fn partitions(
        &mut self,
        topics: &[Topic],
        list: &[TopicPartitions],
    ) -> Result<(), EncodeError> {
        let known = || {
            list.iter()
                .filter_map(|tp| topic_position(topics, &tp.topic).map(|t| (t, &tp.partitions)))
        };
        self.array(known().count())?;
        for (topic, partitions) in known() {
            self.array(2)?;
            self.uint(u64::from(topic));
            self.array(partitions.len())?;
            for &p in partitions {
                self.sint(i64::from(p));
            }
        }
        Ok(())
    }
}
