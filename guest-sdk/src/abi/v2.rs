//! ABI v2: the same model as v1, encoded for speed (`docs/abi.md`, "ABI v2").
//!
//! Every message is a MessagePack **array** whose items are the fields in the documented
//! order (rmp-serde's default encoding of a struct, [`rmp_serde::to_vec`]), so no field name
//! travels. A request sends its topics once, in a table sorted by name; every other mention of
//! a topic (a subscription, an owned partition, an answer) is its index in that table. Members
//! with the same subscription share one entry of a table of distinct subscriptions, and the
//! answer names members by their index in the request. The heavy inputs (raw metadata, user
//! data, lag, ...) are `nil` unless the module declared them in `assignor_describe`
//! ([`Input`]).
//!
//! The structs below *are* the wire format: encoding one with [`rmp_serde::to_vec`] gives the
//! bytes `docs/abi.md` documents, and `guest-sdk/tests/abi_v2_doc.rs` checks that. The large
//! messages skip them on the way: the host writes requests with [`encode_request`] straight
//! from the model (`write`), the SDK's glue reads them with [`decode_request`] straight into
//! the model (`read`), the SDK writes answers from an [`crate::Assignment`] and the host reads
//! them with [`read_response`], all in those same bytes. rmp-serde, through these structs,
//! stays the definition: the direct readers give up to it ([`decode_request_serde`],
//! [`decode_response`]) on anything but the canonical encoding, and the tests check that the
//! direct paths agree with it.
//!
//! Arrays have exactly the documented length: a later field would be a new ABI version, which
//! the host would serve beside this one. Two leniencies: trailing items documented as
//! optional may be left out of an answer, and the request's last item (`state`) is there only
//! when there is a state for a module that declared the input, so no module that does not
//! read it ever sees a 13-item request.

// The wire structs' fields are the model's (`crate::abi`), documented there field by field and
// in docs/abi.md's v2 tables; only what differs (indices, inputs) is documented again here.
#![allow(
    missing_docs,
    reason = "fields mirror the model's and docs/abi.md, where each is documented"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::index::{Index, IndexData, name_set};
use super::{
    ABI_V2, Answer, AssignRequest, AssignResponse, Input, Member as ModelMember,
    MemberAssignment as ModelAssignment, Topic as ModelTopic, TopicOffsets as ModelOffsets,
    TopicPartitions as ModelPartitions,
};

mod read;
mod write;

pub use read::{request as read_request, response as read_response};

/// `AssignRequest` (v2): one rebalance's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Request {
    /// Always 2.
    pub abi_version: u32,
    pub group_id: String,
    pub generation_id: i32,
    pub protocol_type: String,
    pub protocol_name: String,
    pub now_ms: i64,
    pub params: BTreeMap<String, String>,
    /// The topic table: every subscribed topic the host knows, sorted by name.
    pub topics: Vec<Topic>,
    /// Distinct subscriptions, each sorted topic indices without duplicates. Two entries hold
    /// the same indices when their members' subscribed names differ only in topics the host
    /// does not know (Kafka counts those as different subscriptions).
    pub subscriptions: Vec<Vec<u32>>,
    /// The members, sorted by member id.
    pub members: Vec<Member>,
    /// Input `racks`: the rack names members and replicas are on, sorted; else nil.
    pub racks: Option<Vec<String>>,
    /// Input `lag`: one entry per topic of `topics`; else nil.
    pub lag: Option<Vec<TopicOffsets>>,
    /// Input `state`: the bytes the module's last answer kept. The one item that may be
    /// absent: the request has 13 items when there is a state to send, 12 otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "serde_bytes")]
    pub state: Option<Vec<u8>>,
}

/// `Topic` (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Topic {
    pub name: String,
    pub partition_count: i32,
    /// Input `racks`: per partition, indices into `racks` of its replicas' racks (empty when
    /// the host does not know them); else nil.
    pub partition_racks: Option<Vec<Vec<u32>>>,
}

/// `Member` (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// Index into `subscriptions`.
    pub subscription: u32,
    pub owned_generation: i32,
    pub owned_partitions: Vec<TopicPartitions>,
    pub previous_assignment: Vec<TopicPartitions>,
    /// Input `racks`: index into `racks`; nil when the member has no rack or without the input.
    pub rack: Option<u32>,
    /// Input `client`.
    pub client_id: Option<String>,
    /// Input `client`.
    pub client_host: Option<String>,
    /// Input `user_data`.
    #[serde(with = "serde_bytes")]
    pub user_data: Option<Vec<u8>>,
    /// Input `metadata`.
    #[serde(with = "serde_bytes")]
    pub metadata: Option<Vec<u8>>,
    /// Input `weights`.
    pub weight: Option<u32>,
}

/// `TopicPartitions` (v2): partitions of the topic at index `topic`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TopicPartitions {
    pub topic: u32,
    pub partitions: Vec<i32>,
}

/// `TopicOffsets` (v2): per partition, -1 where unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TopicOffsets {
    pub committed: Vec<i64>,
    pub end: Vec<i64>,
}

/// `AssignResponse` (v2). Every item may be left out from the end: a missing item reads as
/// nil / empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Response {
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub assignments: Vec<MemberAssignment>,
    #[serde(default)]
    pub rebalance_after_ms: Option<u64>,
    /// Input `state`: what the host keeps for the next request; left out (or nil) keeps
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "serde_bytes")]
    pub state: Option<Vec<u8>>,
}

/// `MemberAssignment` (v2): what the member at index `member` of the request gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MemberAssignment {
    pub member: u32,
    pub partitions: Vec<TopicPartitions>,
    #[serde(default, with = "serde_bytes")]
    pub user_data: Option<Vec<u8>>,
    #[serde(default, with = "serde_bytes")]
    pub metadata: Option<Vec<u8>>,
}

/// The set of optional inputs a module reads, as a bit set over [`Input`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Inputs(u8);

impl Inputs {
    /// No optional input.
    pub const NONE: Inputs = Inputs(0);

    /// Whether `input` is in the set.
    pub fn has(self, input: Input) -> bool {
        self.0 & bit(input) != 0
    }

    /// The set with `input` added.
    pub fn with(self, input: Input) -> Inputs {
        Inputs(self.0 | bit(input))
    }

    /// Every input of the set, in wire order.
    pub fn iter(self) -> impl Iterator<Item = Input> {
        Input::ALL.into_iter().filter(move |&i| self.has(i))
    }
}

impl FromIterator<Input> for Inputs {
    fn from_iter<I: IntoIterator<Item = Input>>(iter: I) -> Inputs {
        iter.into_iter().fold(Inputs::NONE, Inputs::with)
    }
}

fn bit(input: Input) -> u8 {
    1 << Input::ALL.iter().position(|&i| i == input).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// The host's side: the model to v2 bytes.

/// Why a model request cannot become a v2 request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// Two topics have the same name, or topics are not sorted by name.
    Topics(String),
    /// A count does not fit the wire's 32-bit indices.
    TooLarge(&'static str),
    /// rmp-serde refused a value.
    Msgpack(String),
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::Topics(m) => write!(f, "topics: {m}"),
            EncodeError::TooLarge(what) => write!(f, "too many {what} for 32-bit indices"),
            EncodeError::Msgpack(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for EncodeError {}

/// What a v2 request refers to by index, worked out once from the model: each member's
/// subscription as a position in a table of distinct subscriptions (topic indices). It depends
/// on the topics and on which members share which subscription, not on anything else, so the
/// host can keep it for the next rebalance of a group whose topics and subscriptions did not
/// change ([`Layout::fits`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    /// Distinct subscriptions, as sorted, de-duplicated topic indices (subscribed names that
    /// are not in the topic table are left out).
    pub subscriptions: Vec<Vec<u32>>,
    /// The names of the first member with each distinct subscription.
    pub names: Vec<Arc<[String]>>,
    /// Per member of the request, its subscription's position.
    pub subscription_of: Vec<u32>,
}

impl Layout {
    /// Works out the layout of `request`. Members whose `topics` are the same `Arc` cost one
    /// pointer comparison; equal lists in distinct `Arc`s are found by content. Fails when the
    /// topics are not sorted by name without duplicates (the host's guarantee).
    pub fn new(request: &AssignRequest) -> Result<Layout, EncodeError> {
        check_topics(&request.topics)?;
        if request.members.len() > u32::MAX as usize {
            return Err(EncodeError::TooLarge("members"));
        }
        let mut layout = Layout::default();
        let mut by_content: std::collections::HashMap<&[String], u32> = Default::default();
        let mut by_pointer: std::collections::HashMap<*const String, u32> = Default::default();
        // Kafka tells subscriptions apart by their sets of names, unknown topics included (a
        // member also subscribing to a topic that does not exist makes the group
        // heterogeneous), so two entries may hold the same indices.
        let mut by_names: std::collections::HashMap<Vec<&str>, u32> = Default::default();
        let mut last: Option<(&Arc<[String]>, u32)> = None;
        layout.subscription_of.reserve(request.members.len());
        for member in &request.members {
            let topics = &member.topics;
            let id = match last {
                Some((previous, id)) if Arc::ptr_eq(previous, topics) => id,
                _ => match by_pointer.get(&topics.as_ptr()) {
                    Some(&id) if !topics.is_empty() => id,
                    _ => {
                        let id = match by_content.get(&**topics) {
                            Some(&id) => id,
                            None => {
                                let names = name_set(topics);
                                let id = match by_names.get(&names) {
                                    Some(&id) => id,
                                    None => {
                                        let id = layout.subscriptions.len() as u32;
                                        by_names.insert(names, id);
                                        let ids = resolve(&request.topics, topics);
                                        layout.subscriptions.push(ids);
                                        layout.names.push(topics.clone());
                                        id
                                    }
                                };
                                by_content.insert(topics, id);
                                id
                            }
                        };
                        by_pointer.insert(topics.as_ptr(), id);
                        id
                    }
                },
            };
            layout.subscription_of.push(id);
            last = Some((topics, id));
        }
        Ok(layout)
    }

    /// Whether this layout, worked out for an earlier request, describes `request`'s
    /// subscriptions too: same number of members, and each member's subscription equal (by
    /// pointer, else by content) to the one the layout gives it. The topic table is the
    /// caller's to compare.
    pub fn fits(&self, request: &AssignRequest) -> bool {
        self.subscription_of.len() == request.members.len()
            && request
                .members
                .iter()
                .zip(&self.subscription_of)
                .all(|(m, &s)| {
                    let names = &self.names[s as usize];
                    Arc::ptr_eq(names, &m.topics) || **names == *m.topics
                })
            && self.names.len() == self.subscriptions.len()
    }
}

fn check_topics(topics: &[ModelTopic]) -> Result<(), EncodeError> {
    if topics.len() > u32::MAX as usize {
        return Err(EncodeError::TooLarge("topics"));
    }
    match topics.windows(2).find(|w| w[0].name >= w[1].name) {
        Some(w) => Err(EncodeError::Topics(format!(
            "`{}` and `{}` are not in name order without duplicates",
            w[0].name, w[1].name
        ))),
        None => Ok(()),
    }
}

/// Topic indices of `names` (sorted, de-duplicated), leaving out names not in `topics`.
fn resolve(topics: &[ModelTopic], names: &[String]) -> Vec<u32> {
    let mut ids: Vec<u32> = names
        .iter()
        .filter_map(|n| topic_position(topics, n))
        .collect();
    if !ids.is_sorted_by(|a, b| a < b) {
        ids.sort_unstable();
        ids.dedup();
    }
    ids
}

fn topic_position(topics: &[ModelTopic], name: &str) -> Option<u32> {
    topics
        .binary_search_by(|t| t.name.as_str().cmp(name))
        .ok()
        .map(|i| i as u32)
}

/// What the host sends besides the model: the inputs the module declared, and the lag it
/// fetched for them (`None`: the request's own `lag`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras<'a> {
    pub inputs: Inputs,
    pub lag: Option<&'a [ModelOffsets]>,
}

/// The v2 request for `request`, laid out by `layout` (from [`Layout::new`] on this request,
/// or one that [`Layout::fits`] it), with the optional inputs of `extras`. Weights come from
/// each member's `weight`, else from the operator parameters ([`member_weight`]).
pub fn encode_request(
    request: &AssignRequest,
    layout: &Layout,
    extras: Extras<'_>,
) -> Result<Vec<u8>, EncodeError> {
    write::request(request, layout, extras)
}

/// A member's weight from the operator's parameters: `weight.instance.<group.instance.id>`
/// for a static member, else `weight.client.<client.id>`, else `weight.default`, else 1. A
/// value that is not a whole number from 0 to 2^32 - 1 is ignored.
pub fn member_weight(params: &BTreeMap<String, String>, member: &ModelMember) -> u32 {
    let lookup = |key: String| params.get(&key).and_then(|v| v.trim().parse::<u32>().ok());
    member
        .group_instance_id
        .as_ref()
        .and_then(|i| lookup(format!("weight.instance.{i}")))
        .or_else(|| lookup(format!("weight.client.{}", member.client_id)))
        .or_else(|| lookup("weight.default".to_owned()))
        .unwrap_or(1)
}

/// The host reads a module's answer: one MessagePack value from the start of `bytes`.
pub fn decode_response(bytes: &[u8]) -> Result<Response, rmp_serde::decode::Error> {
    rmp_serde::from_slice(bytes)
}

/// Encodes a v2 message (a struct of this module) as the wire wants it: positional arrays.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    rmp_serde::to_vec(value)
}

/// Decodes a v2 message of this module.
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, rmp_serde::decode::Error> {
    rmp_serde::from_slice(bytes)
}

// ---------------------------------------------------------------------------------------------
// The module's side: v2 bytes to the model.

/// The model of a v2 request, with its [`Index`]; the message says what is wrong otherwise.
pub fn decode_request(bytes: &[u8]) -> Result<AssignRequest, String> {
    if let Some(request) = read_request(bytes) {
        return Ok(request);
    }
    decode_request_serde(bytes)
}

/// [`decode_request`] through rmp-serde and the wire structs: what the bytes mean, and the
/// error when they mean nothing. The fast reader (`read`) gives up to this on anything but the
/// canonical encoding of a valid request.
pub fn decode_request_serde(bytes: &[u8]) -> Result<AssignRequest, String> {
    let wire: Request = rmp_serde::from_slice(bytes)
        .map_err(|e| format!("malformed AssignRequest ({} bytes): {e}", bytes.len()))?;
    if wire.abi_version != ABI_V2 {
        return Err(format!(
            "this module speaks assignor ABI v{ABI_V2}, but the request is ABI v{}",
            wire.abi_version
        ));
    }
    into_model(wire)
}

/// Turns a decoded wire request into the model, checking every index.
pub fn into_model(wire: Request) -> Result<AssignRequest, String> {
    let topic_count = wire.topics.len();
    let racks = wire.racks.unwrap_or_default();
    let rack = |i: u32| {
        racks
            .get(i as usize)
            .cloned()
            .ok_or_else(|| format!("rack index {i} is outside the {} racks", racks.len()))
    };
    let mut topics = Vec::with_capacity(topic_count);
    for t in wire.topics {
        let partition_racks = match t.partition_racks {
            Some(per_partition) => per_partition
                .into_iter()
                .map(|replicas| replicas.into_iter().map(rack).collect())
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        topics.push(ModelTopic {
            name: t.name,
            partition_count: t.partition_count,
            partition_racks,
        });
    }
    let mut names: Vec<Arc<[String]>> = Vec::with_capacity(wire.subscriptions.len());
    for (s, list) in wire.subscriptions.iter().enumerate() {
        if let Some(&t) = list.iter().find(|&&t| t as usize >= topic_count) {
            return Err(format!(
                "subscription {s} names topic index {t}, outside the {topic_count} topics"
            ));
        }
        if !list.is_sorted_by(|a, b| a < b) {
            return Err(format!("subscription {s} is not sorted without duplicates"));
        }
        names.push(
            list.iter()
                .map(|&t| topics[t as usize].name.clone())
                .collect(),
        );
    }
    let partitions = |list: Vec<TopicPartitions>| -> Result<Vec<ModelPartitions>, String> {
        list.into_iter()
            .map(|tp| match topics.get(tp.topic as usize) {
                Some(topic) => Ok(ModelPartitions {
                    topic: topic.name.clone(),
                    partitions: tp.partitions,
                }),
                None => Err(format!(
                    "topic index {} is outside the {topic_count} topics",
                    tp.topic
                )),
            })
            .collect()
    };
    let mut members = Vec::with_capacity(wire.members.len());
    let mut subscription_of = Vec::with_capacity(wire.members.len());
    for m in wire.members {
        let Some(topics_of) = names.get(m.subscription as usize) else {
            return Err(format!(
                "member `{}` has subscription {}, outside the {} subscriptions",
                m.member_id,
                m.subscription,
                names.len()
            ));
        };
        subscription_of.push(m.subscription);
        members.push(ModelMember {
            topics: topics_of.clone(),
            owned_partitions: partitions(m.owned_partitions)?,
            previous_assignment: partitions(m.previous_assignment)?,
            rack_id: m.rack.map(rack).transpose()?,
            member_id: m.member_id,
            group_instance_id: m.group_instance_id,
            client_id: m.client_id.unwrap_or_default(),
            client_host: m.client_host.unwrap_or_default(),
            owned_generation: m.owned_generation,
            user_data: m.user_data,
            metadata: m.metadata.unwrap_or_default(),
            weight: m.weight,
        });
    }
    let lag = wire
        .lag
        .map(|lag| {
            lag.into_iter()
                .map(|o| ModelOffsets {
                    committed: o.committed,
                    end: o.end,
                })
                .collect()
        })
        .unwrap_or_default();
    let index = IndexData::new(&members, topic_count, wire.subscriptions, subscription_of);
    Ok(AssignRequest {
        abi_version: ABI_V2,
        group_id: wire.group_id,
        generation_id: wire.generation_id,
        protocol_type: wire.protocol_type,
        protocol_name: wire.protocol_name,
        now_ms: wire.now_ms,
        params: wire.params,
        members,
        topics,
        lag,
        state: wire.state,
        index: Index(Some(Arc::new(index))),
    })
}

/// A decoded v2 answer by positions, as [`read_response`] gives it. The indices are not looked
/// at: check them first (the host's `check_indices` does).
pub fn response_to_answer(response: Response) -> Answer {
    let topics = response
        .assignments
        .iter()
        .map(|a| a.partitions.len())
        .sum();
    let partitions = response
        .assignments
        .iter()
        .flat_map(|a| &a.partitions)
        .map(|tp| tp.partitions.len())
        .sum();
    let mut answer = Answer::with_capacity(response.assignments.len(), topics, partitions);
    for a in response.assignments {
        let entry = answer.push_entry(a.member);
        entry.user_data = a.user_data;
        entry.metadata = a.metadata;
        for tp in a.partitions {
            answer.push_topic(tp.topic, tp.partitions);
        }
    }
    answer.rebalance_after_ms = response.rebalance_after_ms;
    answer.state = response.state;
    answer
}

/// The model of an answer (names instead of indices) for the request it answers. Indices must
/// have been checked (the host's output checks do).
pub fn response_to_model(request: &AssignRequest, response: Response) -> AssignResponse {
    AssignResponse {
        error: response.error,
        assignments: response
            .assignments
            .into_iter()
            .map(|a| ModelAssignment {
                member_id: request.members[a.member as usize].member_id.clone(),
                partitions: a
                    .partitions
                    .into_iter()
                    .map(|tp| ModelPartitions {
                        topic: request.topics[tp.topic as usize].name.clone(),
                        partitions: tp.partitions,
                    })
                    .collect(),
                user_data: a.user_data,
                metadata: a.metadata,
            })
            .collect(),
        rebalance_after_ms: response.rebalance_after_ms,
        state: response.state,
    }
}
