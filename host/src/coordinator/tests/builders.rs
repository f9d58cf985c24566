//! Request builders with sane defaults (JoinGroup, SyncGroup) and Subscription bytes.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_subscription::{
    ConsumerProtocolSubscription, TopicPartition,
};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{GroupId, JoinGroupRequest, SyncGroupRequest, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};

pub const G: &str = "g";

pub fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// Subscription bytes (`int16 version` + body) for `topics`, written at `version`.
pub fn subscription(
    version: i16,
    topics: &[&str],
    owned: &[(&str, &[i32])],
    generation: i32,
) -> Bytes {
    let body = ConsumerProtocolSubscription::default()
        .with_topics(topics.iter().map(|t| s(t)).collect())
        .with_owned_partitions(
            owned
                .iter()
                .map(|(t, ps)| {
                    TopicPartition::default()
                        .with_topic(TopicName(s(t)))
                        .with_partitions(ps.to_vec())
                })
                .collect(),
        )
        .with_generation_id(generation);
    let mut out = BytesMut::new();
    out.put_i16(version);
    body.encode(&mut out, version.min(3)).expect("encodable");
    out.freeze()
}

/// A v3 Subscription to `topics`.
pub fn sub(topics: &[&str]) -> Bytes {
    subscription(3, topics, &[], -1)
}

/// JoinGroup builder. Defaults: v9, client id `client`, session 10 s, rebalance 20 s,
/// protocol type `consumer`, one protocol `range` subscribing to `t`.
#[derive(Clone)]
pub struct Join {
    pub group: String,
    pub member_id: String,
    pub instance: Option<String>,
    pub version: i16,
    pub client_id: String,
    pub session_ms: i32,
    pub rebalance_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
}

impl Join {
    pub fn new(group: &str) -> Join {
        Join {
            group: group.to_string(),
            member_id: String::new(),
            instance: None,
            version: 9,
            client_id: "client".to_string(),
            session_ms: 10_000,
            rebalance_ms: 20_000,
            protocol_type: "consumer".to_string(),
            protocols: vec![("range".to_string(), sub(&["t"]))],
        }
    }
    pub fn member(mut self, id: &str) -> Join {
        self.member_id = id.to_string();
        self
    }
    pub fn instance(mut self, id: &str) -> Join {
        self.instance = Some(id.to_string());
        self
    }
    pub fn version(mut self, v: i16) -> Join {
        self.version = v;
        self
    }
    pub fn client(mut self, id: &str) -> Join {
        self.client_id = id.to_string();
        self
    }
    pub fn session(mut self, ms: i32) -> Join {
        self.session_ms = ms;
        self
    }
    pub fn rebalance(mut self, ms: i32) -> Join {
        self.rebalance_ms = ms;
        self
    }
    pub fn protocol_type(mut self, t: &str) -> Join {
        self.protocol_type = t.to_string();
        self
    }
    pub fn protocols(mut self, list: &[(&str, Bytes)]) -> Join {
        self.protocols = list
            .iter()
            .map(|(n, b)| (n.to_string(), b.clone()))
            .collect();
        self
    }
    /// Proposes `names`, each with a Subscription to `t`.
    pub fn names(self, names: &[&str]) -> Join {
        let list: Vec<(&str, Bytes)> = names.iter().map(|n| (*n, sub(&["t"]))).collect();
        self.protocols(&list)
    }
    pub fn request(&self) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_session_timeout_ms(self.session_ms)
            .with_rebalance_timeout_ms(if self.version == 0 {
                -1
            } else {
                self.rebalance_ms
            })
            .with_member_id(s(&self.member_id))
            .with_group_instance_id(self.instance.as_deref().map(s))
            .with_protocol_type(s(&self.protocol_type))
            .with_protocols(
                self.protocols
                    .iter()
                    .map(|(n, b)| {
                        JoinGroupRequestProtocol::default()
                            .with_name(s(n))
                            .with_metadata(b.clone())
                    })
                    .collect(),
            )
    }
}

/// SyncGroup builder. Defaults: v5 with protocol type `consumer` and name `range`.
#[derive(Clone)]
pub struct Sync {
    pub group: String,
    pub member_id: String,
    pub generation: i32,
    pub instance: Option<String>,
    pub version: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

impl Sync {
    pub fn new(group: &str, member_id: &str, generation: i32) -> Sync {
        Sync {
            group: group.to_string(),
            member_id: member_id.to_string(),
            generation,
            instance: None,
            version: 5,
            protocol_type: Some("consumer".to_string()),
            protocol_name: Some("range".to_string()),
            assignments: Vec::new(),
        }
    }
    pub fn version(mut self, v: i16) -> Sync {
        self.version = v;
        self
    }
    pub fn instance(mut self, id: &str) -> Sync {
        self.instance = Some(id.to_string());
        self
    }
    pub fn protocol(mut self, protocol_type: Option<&str>, name: Option<&str>) -> Sync {
        self.protocol_type = protocol_type.map(str::to_string);
        self.protocol_name = name.map(str::to_string);
        self
    }
    pub fn assign(mut self, member: &str, bytes: Bytes) -> Sync {
        self.assignments.push((member.to_string(), bytes));
        self
    }
    pub fn request(&self) -> SyncGroupRequest {
        SyncGroupRequest::default()
            .with_group_id(GroupId(s(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(s(&self.member_id))
            .with_group_instance_id(self.instance.as_deref().map(s))
            .with_protocol_type(self.protocol_type.as_deref().map(s))
            .with_protocol_name(self.protocol_name.as_deref().map(s))
            .with_assignments(
                self.assignments
                    .iter()
                    .map(|(m, b)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(s(m))
                            .with_assignment(b.clone())
                    })
                    .collect(),
            )
    }
}
