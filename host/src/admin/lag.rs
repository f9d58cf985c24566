//! A group's offsets as `kafka-consumer-groups --describe` shows them: for every partition a
//! member holds or the group committed, the committed offset, the partition's end and the lag
//! between them, and who holds it. Committed offsets come through the coordinator (where the
//! group's offsets live: the host's store, or the upstream cluster in proxy mode); end offsets
//! come from the upstream cluster in proxy mode. Standalone the host stores no records, so no
//! end (and no lag) is known and both read `null`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::error::ApiError;
use super::state::AdminState;
use crate::coordinator::{GroupDetail, OffsetFetchQuery, RequestContext};

/// One partition's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionLag {
    pub topic: String,
    pub partition: i32,
    /// The member holding it now, if any.
    pub member: Option<String>,
    /// `None`: never committed.
    pub committed: Option<i64>,
    /// The offset the next record will get; `None` when unknown (standalone).
    pub end: Option<i64>,
    /// `end - committed`, when both are known.
    pub lag: Option<i64>,
}

/// The lines of `detail`'s group, sorted by topic and partition.
pub async fn offsets(
    state: &AdminState,
    detail: &GroupDetail,
) -> Result<Vec<PartitionLag>, ApiError> {
    let mut lines: BTreeMap<(String, i32), PartitionLag> = BTreeMap::new();
    let line = |topic: &str, partition: i32| PartitionLag {
        topic: topic.to_owned(),
        partition,
        member: None,
        committed: None,
        end: None,
        lag: None,
    };
    for member in &detail.members {
        for (topic, partitions) in &member.assignment {
            for p in partitions {
                lines
                    .entry((topic.clone(), *p))
                    .or_insert_with(|| line(topic, *p))
                    .member = Some(member.member_id.clone());
            }
        }
    }
    let query = OffsetFetchQuery {
        topics: None,
        require_stable: false,
        member_id: None,
        member_epoch: -1,
    };
    let admin = RequestContext {
        api_version: 8,
        client_id: "assignor-host-admin".into(),
        client_host: "/admin".into(),
    };
    let committed = state.driver.call(&detail.group_id, admin, query).await;
    if committed.error_code != 0 {
        return Err(ApiError::new(
            axum::http::StatusCode::BAD_GATEWAY,
            "offsets_unavailable",
            format!(
                "the committed offsets of {} could not be read (Kafka error {})",
                detail.group_id,
                crate::metrics::error_name(committed.error_code)
            ),
        ));
    }
    for (topic, partitions) in &committed.topics {
        for p in partitions.iter().filter(|p| p.committed_offset >= 0) {
            lines
                .entry((topic.clone(), p.partition_index))
                .or_insert_with(|| line(topic, p.partition_index))
                .committed = Some(p.committed_offset);
        }
    }
    if let Some(upstream) = state.mode.upstream() {
        let partitions: Vec<(String, i32)> = lines.keys().cloned().collect();
        let ends = upstream
            .client
            .end_offsets(&partitions)
            .await
            .map_err(|e| {
                ApiError::new(
                    axum::http::StatusCode::BAD_GATEWAY,
                    "upstream_unavailable",
                    format!("the upstream cluster's end offsets could not be read: {e}"),
                )
            })?;
        for end in ends.into_iter().filter(|e| e.error == 0) {
            if let Some(line) = lines.get_mut(&(end.topic.clone(), end.partition)) {
                line.end = Some(end.offset);
                line.lag = line.committed.map(|c| (end.offset - c).max(0));
            }
        }
    }
    Ok(lines.into_values().collect())
}
