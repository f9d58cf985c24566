//! Produce and ListOffsets, answered only by each partition's leader, and the KIP-951 leader
//! hints a non-leader gives instead.
//!
//! A Produce appends to the leader's log (every broker is in the ISR, so what the leader has
//! is committed at once, whatever `acks`); acks=0 is answered by nothing. A partition sent to
//! the wrong broker gets NOT_LEADER_OR_FOLLOWER and, from Produce v10, `current_leader` (id and
//! epoch) with the leader's host, port and rack in the response's `node_endpoints`.

use std::collections::BTreeSet;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::produce_response::{
    LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{
    BrokerId, ListOffsetsRequest, ListOffsetsResponse, ProduceRequest, ProduceResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::answer::Answer;
use super::state::{Partition, Shared, State, error};

/// Where a partition's requests must go, seen from `broker`.
pub enum Route<'a> {
    Here(&'a Partition),
    /// Another broker leads it: `(leader, leader epoch)`.
    Elsewhere(i32, i32),
    Unknown,
}

pub fn route<'a>(state: &'a State, broker: i32, topic: &str, partition: i32) -> Route<'a> {
    match state.partition(topic, partition) {
        None => Route::Unknown,
        Some(p) if p.leader == broker => Route::Here(p),
        Some(p) => Route::Elsewhere(p.leader, p.leader_epoch),
    }
}

/// `(node id, host, port, rack)` of each broker in `leaders`, for `node_endpoints`.
pub fn endpoints(state: &State, leaders: &BTreeSet<i32>) -> Vec<(i32, StrBytes, i32, StrBytes)> {
    leaders
        .iter()
        .map(|&id| {
            let (host, port, rack) = state.endpoint(id);
            (
                id,
                StrBytes::from_static_str(host),
                port,
                StrBytes::from_string(rack),
            )
        })
        .collect()
}

/// Produce v3-v11: appends each partition's batches on its leader (module docs).
pub fn produce(shared: &Shared, broker: i32, request: &ProduceRequest, version: i16) -> Answer {
    let acks_valid = matches!(request.acks, -1..=1);
    let mut appended = false;
    let mut hinted = BTreeSet::new();
    let mut state = shared.lock();
    let mut responses = Vec::new();
    for topic in &request.topic_data {
        let mut partitions = Vec::new();
        for data in &topic.partition_data {
            let mut answer = PartitionProduceResponse::default()
                .with_index(data.index)
                .with_base_offset(-1);
            let route = route(&state, broker, &topic.name, data.index);
            match route {
                _ if !acks_valid => answer.error_code = error::INVALID_REQUIRED_ACKS,
                Route::Unknown => answer.error_code = error::UNKNOWN_TOPIC_OR_PARTITION,
                Route::Elsewhere(leader, epoch) => {
                    answer.error_code = error::NOT_LEADER_OR_FOLLOWER;
                    if version >= 10 {
                        answer.current_leader = LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(leader))
                            .with_leader_epoch(epoch);
                        hinted.insert(leader);
                    }
                }
                Route::Here(_) => {
                    let log = &mut state
                        .partition_mut(&topic.name, data.index)
                        .expect("routed here")
                        .log;
                    let records = data.records.as_deref().unwrap_or_default();
                    match log.append(records) {
                        Ok(base) => {
                            appended = true;
                            answer.base_offset = base;
                            if version >= 5 {
                                answer.log_start_offset = 0;
                            }
                        }
                        Err(reason) => {
                            answer.error_code = error::CORRUPT_MESSAGE;
                            if version >= 8 {
                                answer.error_message = Some(StrBytes::from_string(reason));
                            }
                        }
                    }
                }
            }
            partitions.push(answer);
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(topic.name.clone())
                .with_partition_responses(partitions),
        );
    }
    let node_endpoints = endpoints(&state, &hinted)
        .into_iter()
        .map(|(id, host, port, rack)| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(id))
                .with_host(host)
                .with_port(port)
                .with_rack(Some(rack))
        })
        .collect();
    drop(state);
    if appended {
        shared.appended.notify_waiters();
    }
    if request.acks == 0 {
        return Answer::Silent;
    }
    Answer::reply(
        version,
        ProduceResponse::default()
            .with_responses(responses)
            .with_node_endpoints(node_endpoints),
    )
}

/// ListOffsets v1-v7 on the leader: latest (-1) is the log end offset, earliest (-2) is 0, a
/// timestamp finds the first batch reaching it; other negative timestamps answer offset -1.
pub fn list_offsets(
    state: &State,
    broker: i32,
    request: &ListOffsetsRequest,
    version: i16,
) -> Answer {
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|asked| {
                    let answer = ListOffsetsPartitionResponse::default()
                        .with_partition_index(asked.partition_index);
                    match route(state, broker, &topic.name, asked.partition_index) {
                        Route::Unknown => answer.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION),
                        Route::Elsewhere(..) => {
                            answer.with_error_code(error::NOT_LEADER_OR_FOLLOWER)
                        }
                        Route::Here(partition) => {
                            let (offset, timestamp) = match asked.timestamp {
                                -1 => (partition.log.end_offset(), -1),
                                -2 => (0, -1),
                                ts if ts >= 0 => {
                                    partition.log.offset_for_timestamp(ts).unwrap_or((-1, -1))
                                }
                                _ => (-1, -1),
                            };
                            let epoch = if version >= 4 {
                                partition.leader_epoch
                            } else {
                                -1
                            };
                            answer
                                .with_offset(offset)
                                .with_timestamp(timestamp)
                                .with_leader_epoch(epoch)
                        }
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    Answer::reply(version, ListOffsetsResponse::default().with_topics(topics))
}
