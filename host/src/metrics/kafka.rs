//! Which Kafka error codes a response carries, counted as Kafka's own `errorCounts()` does
//! (`AbstractResponse.errorCounts` in apache/kafka `clients/`): every error code in the
//! response, top-level and per item, `NONE` included, so `kafka_errors_total` can be read
//! side by side with a broker's `RequestMetrics ErrorsPerSec{request, error}`.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ResponseKind;

/// Error code -> how many times it appears in `response`. Responses of APIs the host does not
/// serve count nothing.
pub fn error_counts(response: &ResponseKind) -> BTreeMap<i16, u64> {
    let mut counts = BTreeMap::new();
    let mut add = |code: i16| *counts.entry(code).or_insert(0) += 1;
    match response {
        ResponseKind::ApiVersions(r) => add(r.error_code),
        ResponseKind::Metadata(r) => {
            for topic in &r.topics {
                add(topic.error_code);
                topic.partitions.iter().for_each(|p| add(p.error_code));
            }
        }
        ResponseKind::FindCoordinator(r) if r.coordinators.is_empty() => add(r.error_code),
        ResponseKind::FindCoordinator(r) => r.coordinators.iter().for_each(|c| add(c.error_code)),
        ResponseKind::CreateTopics(r) => r.topics.iter().for_each(|t| add(t.error_code)),
        ResponseKind::DeleteTopics(r) => r.responses.iter().for_each(|t| add(t.error_code)),
        ResponseKind::CreatePartitions(r) => r.results.iter().for_each(|t| add(t.error_code)),
        ResponseKind::ListOffsets(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| add(p.error_code)),
        ResponseKind::Fetch(r) => {
            add(r.error_code);
            r.responses
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| add(p.error_code));
        }
        ResponseKind::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .for_each(|p| add(p.error_code)),
        ResponseKind::JoinGroup(r) => add(r.error_code),
        ResponseKind::SyncGroup(r) => add(r.error_code),
        ResponseKind::Heartbeat(r) => add(r.error_code),
        ResponseKind::LeaveGroup(r) => {
            add(r.error_code);
            r.members.iter().for_each(|m| add(m.error_code));
        }
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| add(p.error_code)),
        ResponseKind::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| add(p.error_code)),
        ResponseKind::OffsetFetch(r) if r.groups.is_empty() => {
            add(r.error_code);
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .for_each(|p| add(p.error_code));
        }
        ResponseKind::OffsetFetch(r) => {
            for group in &r.groups {
                add(group.error_code);
                group
                    .topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .for_each(|p| add(p.error_code));
            }
        }
        ResponseKind::DescribeGroups(r) => r.groups.iter().for_each(|g| add(g.error_code)),
        ResponseKind::ListGroups(r) => add(r.error_code),
        ResponseKind::DeleteGroups(r) => r.results.iter().for_each(|g| add(g.error_code)),
        ResponseKind::OffsetDelete(r) if r.error_code != 0 => add(r.error_code),
        ResponseKind::OffsetDelete(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .for_each(|p| add(p.error_code)),
        _ => {}
    }
    counts
}

/// Kafka's name for an error code (`Errors.name()`): `NONE`, `UNKNOWN_MEMBER_ID`,
/// `REBALANCE_IN_PROGRESS`, ...; a code this version of `kafka-protocol` does not know is
/// `CODE_<n>`.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_owned(),
        Some(ResponseError::Unknown(code)) => format!("CODE_{code}"),
        Some(error) => screaming_snake(&format!("{error:?}")),
    }
}

/// `UnknownMemberId` -> `UNKNOWN_MEMBER_ID`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::leave_group_response::MemberResponse;
    use kafka_protocol::messages::{HeartbeatResponse, LeaveGroupResponse};

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(25), "UNKNOWN_MEMBER_ID");
        assert_eq!(error_name(27), "REBALANCE_IN_PROGRESS");
        assert_eq!(error_name(79), "MEMBER_ID_REQUIRED");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(9999), "CODE_9999");
    }

    #[test]
    fn counts_top_level_and_per_item_codes() {
        let heartbeat = ResponseKind::Heartbeat(HeartbeatResponse::default().with_error_code(27));
        assert_eq!(error_counts(&heartbeat), BTreeMap::from([(27, 1)]));
        let leave = ResponseKind::LeaveGroup(LeaveGroupResponse::default().with_members(vec![
            MemberResponse::default(),
            MemberResponse::default().with_error_code(25),
        ]));
        assert_eq!(error_counts(&leave), BTreeMap::from([(0, 2), (25, 1)]));
    }
}
