//! What a scenario records of an answer: every field that is deterministic, as a string, with
//! what cannot match between Kafka and the host normalized away.
//!
//! Normalized, and why:
//! - member ids are random on each side (`<client.id>-<uuid>`): an id is replaced by the name
//!   of the scenario member it was handed to ([`Names::member`]); an id the scenario made up
//!   (it starts with `made-up`) is kept; any other id is `<other id>`;
//! - group ids and topic names carry a prefix unique to the run (the three runs share one
//!   Kafka): it is cut;
//! - topic ids are each side's own (Kafka's, the standalone host's, and the proxy's own ids
//!   in front of Kafka): they are named by the target's own Metadata;
//! - throttle times and error messages are never recorded (Kafka's wording is not the
//!   specification; the code is);
//! - assignments are recorded by shape (partitions per topic), because which member gets
//!   which partitions follows the order of random member ids; a scenario records the
//!   partitions themselves across members with `Session::note_assignments`.
//!
//! Here: the normalization and the answers of the membership APIs; [`super::answers`]: the
//! offset, administration and consumer-protocol answers.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use kafka_protocol::messages::{
    HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::decode_assignment;

/// The name the host's JoinGroup answers give as leader (no member has it).
pub const HOST_LEADER: &str = assignor_host::coordinator::HOST_LEADER;

/// Turns the ids and names of one run into the scenario's names.
#[derive(Debug, Default)]
pub struct Names {
    /// Cut from group ids.
    pub group_prefix: String,
    /// Cut from topic names.
    pub topic_prefix: String,
    /// Member id -> scenario member name.
    pub ids: HashMap<String, String>,
    /// Topic id -> full topic name, from the target's Metadata.
    pub topic_ids: HashMap<Uuid, String>,
}

impl Names {
    pub fn member(&self, id: &str) -> String {
        if id.is_empty() || id == HOST_LEADER || id.starts_with("made-up") {
            return id.to_owned();
        }
        self.ids
            .get(id)
            .cloned()
            .unwrap_or_else(|| "<other id>".to_owned())
    }

    pub fn group(&self, id: &str) -> String {
        id.strip_prefix(&self.group_prefix).unwrap_or(id).to_owned()
    }

    pub fn topic(&self, name: &str) -> String {
        name.strip_prefix(&self.topic_prefix)
            .unwrap_or(name)
            .to_owned()
    }

    pub fn topic_id(&self, id: Uuid) -> String {
        match self.topic_ids.get(&id) {
            Some(name) => self.topic(name),
            None => format!("<unknown topic id {id}>"),
        }
    }

    /// `t:2 u:1`: partitions per topic of ConsumerProtocolAssignment bytes, `-` for none
    /// (zero bytes or no partitions).
    pub fn assignment_shape(&self, bytes: &Bytes) -> String {
        if bytes.is_empty() {
            return "-".to_owned();
        }
        match decode_assignment(bytes.clone()) {
            Ok(topics) => shape(
                topics
                    .iter()
                    .map(|(t, ps)| (self.topic(t), ps.len()))
                    .filter(|(_, n)| *n > 0),
            ),
            Err(e) => format!("<not an assignment: {e}>"),
        }
    }
}

/// `t:2 u:1` from `(topic, count)`, sorted by topic; `-` for nothing.
pub fn shape(counts: impl Iterator<Item = (String, usize)>) -> String {
    let sorted: BTreeMap<String, usize> = counts.collect();
    if sorted.is_empty() {
        return "-".to_owned();
    }
    let parts: Vec<String> = sorted.iter().map(|(t, n)| format!("{t}:{n}")).collect();
    parts.join(" ")
}

/// One recorded answer (or a scenario's own note): its step, and its fields in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub step: String,
    pub api: &'static str,
    pub fields: Vec<(String, String)>,
}

/// An answer the session can record.
pub trait Observe {
    const API: &'static str;
    /// The deterministic fields, normalized.
    fn observe(&self, version: i16, names: &Names) -> Vec<(String, String)>;
    /// A member id handed to the member that sent the request, to bind to its name.
    fn member_id(&self) -> Option<String> {
        None
    }
}

/// A nullable string: `null`, or the value quoted.
pub(super) fn opt(value: &Option<StrBytes>) -> String {
    value
        .as_deref()
        .map_or("null".to_owned(), |s| format!("{s:?}"))
}

/// One recorded field.
pub(super) fn field(name: &str, value: impl ToString) -> (String, String) {
    (name.to_owned(), value.to_string())
}

impl Observe for JoinGroupResponse {
    const API: &'static str = "JoinGroup";
    fn observe(&self, version: i16, names: &Names) -> Vec<(String, String)> {
        let mut members: Vec<String> = self
            .members
            .iter()
            .map(|m| match &m.group_instance_id {
                Some(instance) => format!("{}/{instance}", names.member(&m.member_id)),
                None => names.member(&m.member_id),
            })
            .collect();
        members.sort();
        let mut fields = vec![
            field("error", self.error_code),
            field("member_id", names.member(&self.member_id)),
            field("generation", self.generation_id),
            field("protocol_type", opt(&self.protocol_type)),
            field("protocol_name", opt(&self.protocol_name)),
            field("leader", names.member(&self.leader)),
            field("members", format!("[{}]", members.join(", "))),
        ];
        if version >= 9 {
            fields.push(field("skip_assignment", self.skip_assignment));
        }
        fields
    }
    fn member_id(&self) -> Option<String> {
        let given = matches!(self.error_code, 0 | 79) && !self.member_id.is_empty();
        given.then(|| self.member_id.to_string())
    }
}

impl Observe for SyncGroupResponse {
    const API: &'static str = "SyncGroup";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        vec![
            field("error", self.error_code),
            field("protocol_type", opt(&self.protocol_type)),
            field("protocol_name", opt(&self.protocol_name)),
            field("assignment", names.assignment_shape(&self.assignment)),
        ]
    }
}

impl Observe for HeartbeatResponse {
    const API: &'static str = "Heartbeat";
    fn observe(&self, _: i16, _: &Names) -> Vec<(String, String)> {
        vec![field("error", self.error_code)]
    }
}

impl Observe for LeaveGroupResponse {
    const API: &'static str = "LeaveGroup";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        let members: Vec<String> = self
            .members
            .iter()
            .map(|m| {
                format!(
                    "{}/{}={}",
                    names.member(&m.member_id),
                    opt(&m.group_instance_id),
                    m.error_code
                )
            })
            .collect();
        vec![
            field("error", self.error_code),
            field("members", format!("[{}]", members.join(", "))),
        ]
    }
}
