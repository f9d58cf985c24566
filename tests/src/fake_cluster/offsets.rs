//! OffsetCommit, OffsetFetch and DeleteGroups: a small committed-offset store per group,
//! answered only by the coordinator (the first broker); any other broker says NOT_COORDINATOR.
//!
//! The fake has no group members (it never serves JoinGroup), so it judges a commit as Kafka
//! judges one for a group without members: generation -1 with an empty member id (an "admin"
//! or simple commit, what the proxy sends) is accepted; a generation of 0 or more gets
//! ILLEGAL_GENERATION and a member id UNKNOWN_MEMBER_ID. A group the test marked as occupied
//! (`FakeCluster::occupy_group`: someone joined it on the cluster directly) refuses every
//! commit with UNKNOWN_MEMBER_ID and cannot be deleted (NON_EMPTY_GROUP).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::answer::Answer;
use super::state::{Committed, State, error};

/// NOT_COORDINATOR unless `broker` is the coordinator, else 0.
fn coordinator_error(state: &State, broker: i32) -> i16 {
    if broker == state.first_broker() {
        0
    } else {
        error::NOT_COORDINATOR
    }
}

/// OffsetCommit v2-v8 (module docs for what is accepted).
pub fn offset_commit(
    state: &mut State,
    broker: i32,
    request: &OffsetCommitRequest,
    version: i16,
) -> Answer {
    let group = request.group_id.to_string();
    let group_error = match coordinator_error(state, broker) {
        0 if state.occupied_groups.contains(&group) => error::UNKNOWN_MEMBER_ID,
        0 if request.generation_id_or_member_epoch >= 0 => error::ILLEGAL_GENERATION,
        0 if !request.member_id.is_empty() => error::UNKNOWN_MEMBER_ID,
        code => code,
    };
    let mut topics = Vec::new();
    for topic in &request.topics {
        let mut partitions = Vec::new();
        for p in &topic.partitions {
            let code = match group_error {
                0 if state.partition(&topic.name, p.partition_index).is_none() => {
                    error::UNKNOWN_TOPIC_OR_PARTITION
                }
                code => code,
            };
            if code == 0 {
                let committed = Committed {
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                };
                state
                    .offsets
                    .entry(group.clone())
                    .or_default()
                    .insert((topic.name.to_string(), p.partition_index), committed);
            }
            partitions.push(
                OffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code),
            );
        }
        topics.push(
            OffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    Answer::reply(version, OffsetCommitResponse::default().with_topics(topics))
}

/// One group's committed offsets for `topics` (`None`: every committed partition), as
/// `(topic, [(partition, committed)])`; a partition never committed has `None`.
type Found = Vec<(TopicName, Vec<(i32, Option<Committed>)>)>;

fn lookup(state: &State, group: &str, topics: Option<Vec<(TopicName, Vec<i32>)>>) -> Found {
    let committed = state.offsets.get(group);
    let topics = topics.unwrap_or_else(|| {
        let mut all: Vec<(TopicName, Vec<i32>)> = Vec::new();
        for (topic, partition) in committed.into_iter().flat_map(|c| c.keys()) {
            match all.last_mut() {
                Some((name, partitions)) if name.as_str() == topic => partitions.push(*partition),
                _ => all.push((
                    TopicName(StrBytes::from_string(topic.clone())),
                    vec![*partition],
                )),
            }
        }
        all
    });
    topics
        .into_iter()
        .map(|(name, partitions)| {
            let found = partitions
                .into_iter()
                .map(|p| {
                    let c = committed.and_then(|c| c.get(&(name.to_string(), p)));
                    (p, c.cloned())
                })
                .collect();
            (name, found)
        })
        .collect()
}

/// OffsetFetch v1-v7 (one group) and v8 (a batch of groups). Never-committed partitions get
/// offset -1 and empty metadata.
pub fn offset_fetch(
    state: &State,
    broker: i32,
    request: &OffsetFetchRequest,
    version: i16,
) -> Answer {
    let code = coordinator_error(state, broker);
    let offset = |c: &Option<Committed>| c.as_ref().map_or(-1, |c| c.offset);
    let epoch = |c: &Option<Committed>| c.as_ref().map_or(-1, |c| c.leader_epoch);
    let metadata = |c: &Option<Committed>| {
        let m = c
            .as_ref()
            .and_then(|c| c.metadata.clone())
            .unwrap_or_default();
        Some(StrBytes::from_string(m))
    };
    let mut response = OffsetFetchResponse::default();
    if version >= 8 {
        response.groups = request
            .groups
            .iter()
            .map(|group| {
                let asked = group.topics.as_ref().map(|topics| {
                    topics
                        .iter()
                        .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                        .collect()
                });
                let found = if code == 0 {
                    lookup(state, &group.group_id, asked)
                } else {
                    Vec::new()
                };
                let topics = found
                    .into_iter()
                    .map(|(name, partitions)| {
                        let partitions = partitions
                            .iter()
                            .map(|(p, c)| {
                                OffsetFetchResponsePartitions::default()
                                    .with_partition_index(*p)
                                    .with_committed_offset(offset(c))
                                    .with_committed_leader_epoch(epoch(c))
                                    .with_metadata(metadata(c))
                            })
                            .collect();
                        OffsetFetchResponseTopics::default()
                            .with_name(name)
                            .with_partitions(partitions)
                    })
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id.clone())
                    .with_topics(topics)
                    .with_error_code(code)
            })
            .collect();
        return Answer::reply(version, response);
    }
    let asked = request.topics.as_ref().map(|topics| {
        topics
            .iter()
            .map(|t| (t.name.clone(), t.partition_indexes.clone()))
            .collect()
    });
    // v1 has no top-level error: NOT_COORDINATOR goes on every partition asked for.
    let found = if code == 0 || version == 1 {
        lookup(state, &request.group_id, asked)
    } else {
        Vec::new()
    };
    response.topics = found
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .iter()
                .map(|(p, c)| {
                    let c = if code == 0 { c } else { &None };
                    OffsetFetchResponsePartition::default()
                        .with_partition_index(*p)
                        .with_committed_offset(offset(c))
                        .with_committed_leader_epoch(if version >= 5 { epoch(c) } else { -1 })
                        .with_metadata(metadata(c))
                        .with_error_code(code)
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    if version >= 2 {
        response.error_code = code;
    }
    Answer::reply(version, response)
}

/// DeleteGroups v0-v2: drops a group's committed offsets. A group with none gets
/// GROUP_ID_NOT_FOUND, an occupied one NON_EMPTY_GROUP.
pub fn delete_groups(
    state: &mut State,
    broker: i32,
    request: &DeleteGroupsRequest,
    version: i16,
) -> Answer {
    let results = request
        .groups_names
        .iter()
        .map(|group| {
            let code = match coordinator_error(state, broker) {
                0 if state.occupied_groups.contains(group.as_str()) => error::NON_EMPTY_GROUP,
                0 if state.offsets.remove(group.as_str()).is_none() => error::GROUP_ID_NOT_FOUND,
                code => code,
            };
            DeletableGroupResult::default()
                .with_group_id(group.clone())
                .with_error_code(code)
        })
        .collect();
    Answer::reply(
        version,
        DeleteGroupsResponse::default().with_results(results),
    )
}
