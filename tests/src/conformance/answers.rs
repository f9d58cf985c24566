//! What a scenario records of the answers of the offset APIs (OffsetCommit, OffsetFetch,
//! OffsetDelete), the administration APIs (DescribeGroups, ListGroups, DeleteGroups) and the
//! consumer protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe), normalized as
//! [`super::observe`] says.

use kafka_protocol::messages::{
    ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse, DeleteGroupsResponse,
    DescribeGroupsResponse, ListGroupsResponse, OffsetCommitResponse, OffsetDeleteResponse,
    OffsetFetchResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::leader::subscribed_topics;
use super::observe::{Names, Observe, field, opt, shape};

impl Observe for OffsetCommitResponse {
    const API: &'static str = "OffsetCommit";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        self.topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    let at = format!("{}/{}", names.topic(&t.name), p.partition_index);
                    field(&at, p.error_code)
                })
            })
            .collect()
    }
}

impl Observe for OffsetFetchResponse {
    const API: &'static str = "OffsetFetch";
    fn observe(&self, version: i16, names: &Names) -> Vec<(String, String)> {
        let partition =
            |topic: &str, p: i32, offset: i64, epoch: i32, meta: &Option<StrBytes>, error: i16| {
                let at = format!("{}/{p}", names.topic(topic));
                field(
                    &at,
                    format!(
                        "offset {offset} epoch {epoch} metadata {} error {error}",
                        opt(meta)
                    ),
                )
            };
        if version < 8 {
            let mut fields = vec![field("error", self.error_code)];
            for t in &self.topics {
                for p in &t.partitions {
                    let (offset, epoch) = (p.committed_offset, p.committed_leader_epoch);
                    fields.push(partition(
                        &t.name,
                        p.partition_index,
                        offset,
                        epoch,
                        &p.metadata,
                        p.error_code,
                    ));
                }
            }
            return fields;
        }
        let mut fields = Vec::new();
        for g in &self.groups {
            let group = names.group(&g.group_id);
            fields.push(field(&format!("{group} error"), g.error_code));
            for t in &g.topics {
                for p in &t.partitions {
                    let (offset, epoch) = (p.committed_offset, p.committed_leader_epoch);
                    let (at, value) = partition(
                        &t.name,
                        p.partition_index,
                        offset,
                        epoch,
                        &p.metadata,
                        p.error_code,
                    );
                    fields.push((format!("{group} {at}"), value));
                }
            }
        }
        fields
    }
}

impl Observe for DescribeGroupsResponse {
    const API: &'static str = "DescribeGroups";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        for g in &self.groups {
            let group = names.group(&g.group_id);
            let mut members: Vec<String> = g
                .members
                .iter()
                .map(|m| {
                    let metadata = subscribed_topics(&m.member_metadata, names);
                    format!(
                        "{} instance {} client {} {} metadata {metadata} assignment {}",
                        names.member(&m.member_id),
                        opt(&m.group_instance_id),
                        m.client_id.as_str(),
                        m.client_host.as_str(),
                        names.assignment_shape(&m.member_assignment),
                    )
                })
                .collect();
            members.sort();
            fields.push(field(&format!("{group} error"), g.error_code));
            fields.push(field(&format!("{group} state"), g.group_state.as_str()));
            fields.push(field(
                &format!("{group} protocol_type"),
                format!("{:?}", g.protocol_type.as_str()),
            ));
            fields.push(field(
                &format!("{group} protocol_data"),
                format!("{:?}", g.protocol_data.as_str()),
            ));
            fields.push(field(
                &format!("{group} members"),
                format!("[{}]", members.join("; ")),
            ));
            fields.push(field(
                &format!("{group} authorized_operations"),
                g.authorized_operations,
            ));
        }
        fields
    }
}

impl Observe for OffsetDeleteResponse {
    const API: &'static str = "OffsetDelete";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        let mut fields = vec![field("error", self.error_code)];
        for t in &self.topics {
            for p in &t.partitions {
                let at = format!("{}/{}", names.topic(&t.name), p.partition_index);
                fields.push(field(&at, p.error_code));
            }
        }
        fields
    }
}

impl Observe for DeleteGroupsResponse {
    const API: &'static str = "DeleteGroups";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        self.results
            .iter()
            .map(|r| field(&names.group(&r.group_id), r.error_code))
            .collect()
    }
}

impl Observe for ListGroupsResponse {
    const API: &'static str = "ListGroups";
    /// Only this run's groups: the shared Kafka holds every other test's too.
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        let mut groups: Vec<String> = self
            .groups
            .iter()
            .filter(|g| g.group_id.starts_with(names.group_prefix.as_str()))
            .map(|g| {
                format!(
                    "{} protocol_type {:?} state {:?} type {:?}",
                    names.group(&g.group_id),
                    g.protocol_type.as_str(),
                    g.group_state.as_str(),
                    g.group_type.as_str()
                )
            })
            .collect();
        groups.sort();
        vec![
            field("error", self.error_code),
            field("groups", format!("[{}]", groups.join("; "))),
        ]
    }
}

impl Observe for ConsumerGroupHeartbeatResponse {
    const API: &'static str = "ConsumerGroupHeartbeat";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        let assignment = match &self.assignment {
            None => "null".to_owned(),
            Some(a) => shape(
                a.topic_partitions
                    .iter()
                    .map(|tp| (names.topic_id(tp.topic_id), tp.partitions.len()))
                    .filter(|(_, n)| *n > 0),
            ),
        };
        let member = self
            .member_id
            .as_deref()
            .map_or("null".to_owned(), |id| names.member(id));
        vec![
            field("error", self.error_code),
            field("member_id", member),
            field("member_epoch", self.member_epoch),
            field("heartbeat_interval_ms", self.heartbeat_interval_ms),
            field("assignment", assignment),
        ]
    }
    fn member_id(&self) -> Option<String> {
        let id = self.member_id.as_deref().filter(|id| !id.is_empty())?;
        (self.error_code == 0).then(|| id.to_owned())
    }
}

impl Observe for ConsumerGroupDescribeResponse {
    const API: &'static str = "ConsumerGroupDescribe";
    fn observe(&self, _: i16, names: &Names) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        for g in &self.groups {
            let group = names.group(&g.group_id);
            let mut members: Vec<String> = g
                .members
                .iter()
                .map(|m| {
                    let owned = |tps: &[kafka_protocol::messages::consumer_group_describe_response::TopicPartitions]| {
                        shape(tps.iter().map(|tp| (names.topic(&tp.topic_name), tp.partitions.len())).filter(|(_, n)| *n > 0))
                    };
                    format!(
                        "{} epoch {} instance {} assigned {} target {}",
                        names.member(&m.member_id),
                        m.member_epoch,
                        opt(&m.instance_id),
                        owned(&m.assignment.topic_partitions),
                        owned(&m.target_assignment.topic_partitions),
                    )
                })
                .collect();
            members.sort();
            fields.push(field(&format!("{group} error"), g.error_code));
            if g.error_code != 0 {
                continue;
            }
            fields.push(field(&format!("{group} state"), g.group_state.as_str()));
            fields.push(field(&format!("{group} group_epoch"), g.group_epoch));
            fields.push(field(
                &format!("{group} assignment_epoch"),
                g.assignment_epoch,
            ));
            fields.push(field(
                &format!("{group} assignor"),
                g.assignor_name.as_str(),
            ));
            fields.push(field(
                &format!("{group} authorized_operations"),
                g.authorized_operations,
            ));
            fields.push(field(
                &format!("{group} members"),
                format!("[{}]", members.join("; ")),
            ));
        }
        fields
    }
}
