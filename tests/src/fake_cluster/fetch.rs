//! Fetch v4-v16, answered only by each partition's leader, held briefly when nothing is there.
//!
//! Topics are named (v4-v12) or identified (v13+) as the version says. The leader returns the
//! stored batches from the one holding `fetch_offset`, within `partition_max_bytes` and
//! `max_bytes` (the first batch always whole); an offset past the log end gets
//! OFFSET_OUT_OF_RANGE. A partition sent to the wrong broker gets NOT_LEADER_OR_FOLLOWER and,
//! from v16 (KIP-951), `current_leader` in the partition and the leader in the response's
//! `node_endpoints`. When fewer than `min_bytes` are there and no partition has an error, the
//! answer waits for an append, at most `min(max_wait_ms, MAX_WAIT)`. There are no fetch
//! sessions: every answer has session id 0, so clients keep sending full fetches.

use std::collections::BTreeSet;
use std::time::Duration;

use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse};
use tokio::time::Instant;

use super::answer::Answer;
use super::data::{Route, endpoints, route};
use super::state::{Shared, State, error};

/// The longest a Fetch with nothing to return is held, whatever its `max_wait_ms`.
pub const MAX_WAIT: Duration = Duration::from_millis(100);

pub async fn fetch(shared: &Shared, broker: i32, request: &FetchRequest, version: i16) -> Answer {
    let wait = Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0));
    let deadline = Instant::now() + wait.min(MAX_WAIT);
    loop {
        // Registered before the state is read, so an append in between still wakes us.
        let appended = shared.appended.notified();
        tokio::pin!(appended);
        appended.as_mut().enable();
        let (response, complete) = answer(&shared.lock(), broker, request, version);
        if complete || Instant::now() >= deadline {
            return Answer::reply(version, response);
        }
        let _ = tokio::time::timeout_at(deadline, appended).await;
    }
}

/// The answer from the state now, and whether it is complete (an error, or `min_bytes`).
fn answer(
    state: &State,
    broker: i32,
    request: &FetchRequest,
    version: i16,
) -> (FetchResponse, bool) {
    let mut remaining = usize::try_from(request.max_bytes).unwrap_or(0);
    let mut total = 0usize;
    let mut any_error = false;
    let mut hinted = BTreeSet::new();
    let mut responses = Vec::new();
    for topic in &request.topics {
        let name = if version >= 13 {
            state
                .topic_by_id(topic.topic_id)
                .map(|(name, _)| name.clone())
        } else {
            Some(topic.topic.to_string())
        };
        let mut partitions = Vec::new();
        for asked in &topic.partitions {
            let mut data = PartitionData::default().with_partition_index(asked.partition);
            let route = match &name {
                Some(name) => route(state, broker, name, asked.partition),
                None => Route::Unknown,
            };
            match route {
                Route::Unknown => {
                    data.error_code = if name.is_none() {
                        error::UNKNOWN_TOPIC_ID
                    } else {
                        error::UNKNOWN_TOPIC_OR_PARTITION
                    };
                }
                Route::Elsewhere(leader, epoch) => {
                    data.error_code = error::NOT_LEADER_OR_FOLLOWER;
                    if version >= 16 {
                        data.current_leader = LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(leader))
                            .with_leader_epoch(epoch);
                        hinted.insert(leader);
                    }
                }
                Route::Here(partition) => {
                    let end = partition.log.end_offset();
                    data.high_watermark = end;
                    data.last_stable_offset = end;
                    if version >= 5 {
                        data.log_start_offset = 0;
                    }
                    if !(0..=end).contains(&asked.fetch_offset) {
                        data.error_code = error::OFFSET_OUT_OF_RANGE;
                    } else {
                        let cap = usize::try_from(asked.partition_max_bytes)
                            .unwrap_or(0)
                            .min(remaining);
                        let records = partition.log.read(asked.fetch_offset, cap);
                        if total == 0 || records.len() <= cap {
                            total += records.len();
                            remaining = remaining.saturating_sub(records.len());
                            data.records = Some(records);
                        }
                    }
                }
            }
            if data.error_code != 0 {
                any_error = true;
                data.high_watermark = -1;
                data.last_stable_offset = -1;
                data.log_start_offset = -1;
            }
            partitions.push(data);
        }
        let mut response = FetchableTopicResponse::default().with_partitions(partitions);
        if version >= 13 {
            response.topic_id = topic.topic_id;
        } else {
            response.topic = topic.topic.clone();
        }
        responses.push(response);
    }
    let mut response = FetchResponse::default().with_responses(responses);
    if version >= 16 {
        response.node_endpoints = endpoints(state, &hinted)
            .into_iter()
            .map(|(id, host, port, rack)| {
                NodeEndpoint::default()
                    .with_node_id(BrokerId(id))
                    .with_host(host)
                    .with_port(port)
                    .with_rack(Some(rack))
            })
            .collect();
    }
    let min_bytes = usize::try_from(request.min_bytes).unwrap_or(0);
    (response, any_error || total >= min_bytes)
}
