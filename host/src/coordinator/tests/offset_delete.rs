//! OffsetDelete (Kafka's `validateDeleteOffsets` / `deleteOffsets`): no group, a non-empty
//! group of another protocol type, a subscribed topic of a live consumer group, and the
//! deletions that go through.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetDeleteRequest, OffsetDeleteResponse, TopicName};

use super::context::*;
use crate::coordinator::{Effect, GroupRequest, GroupResponse, OffsetFetchQuery};

fn delete(ctx: &mut TestContext, group: &str, partitions: &[(&str, i32)]) -> OffsetDeleteResponse {
    let mut topics: Vec<OffsetDeleteRequestTopic> = Vec::new();
    for (topic, partition) in partitions {
        let p = OffsetDeleteRequestPartition::default().with_partition_index(*partition);
        match topics.iter_mut().find(|t| t.name.as_str() == *topic) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(s(topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(topics);
    let reply = ctx.send(group, 0, "admin", GroupRequest::OffsetDelete(request));
    match ctx.responses.get(&reply) {
        Some(GroupResponse::OffsetDelete(r)) => r.clone(),
        other => panic!("expected an OffsetDelete answer, got {other:?}"),
    }
}

fn codes(r: &OffsetDeleteResponse) -> Vec<(String, i32, i16)> {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.error_code))
        })
        .collect()
}

fn committed(ctx: &mut TestContext, group: &str) -> Vec<(String, i32, i64)> {
    let query = OffsetFetchQuery {
        topics: None,
        require_stable: false,
        member_id: None,
        member_epoch: -1,
    };
    let reply = ctx.send(group, 8, "admin", GroupRequest::OffsetFetch(query));
    let Some(GroupResponse::OffsetFetch(f)) = ctx.responses.get(&reply) else {
        panic!("no OffsetFetch answer")
    };
    f.topics
        .iter()
        .flat_map(|(t, ps)| {
            ps.iter()
                .map(|p| (t.clone(), p.partition_index, p.committed_offset))
        })
        .collect()
}

#[test]
fn offset_delete_of_a_missing_group_is_group_id_not_found() {
    let mut ctx = TestContext::new();
    let r = delete(&mut ctx, "nope", &[("t", 0)]);
    assert_eq!(r.error_code, ResponseError::GroupIdNotFound.code());
    assert!(r.topics.is_empty());
}

#[test]
fn offset_delete_of_an_empty_group_forgets_only_the_named_partitions() {
    let mut ctx = TestContext::new();
    ctx.commit(
        "simple",
        8,
        "",
        -1,
        &[("t", 0, 10, None), ("t", 1, 11, None), ("u", 0, 12, None)],
    );
    let r = delete(&mut ctx, "simple", &[("t", 1), ("u", 0)]);
    assert_eq!(r.error_code, 0);
    assert_eq!(codes(&r), vec![("t".into(), 1, 0), ("u".into(), 0, 0)]);
    assert!(ctx.persisted.iter().any(|e| matches!(e,
        Effect::DeleteOffsets { partitions, .. } if partitions.len() == 2)));
    assert_eq!(committed(&mut ctx, "simple"), vec![("t".into(), 0, 10)]);
}

#[test]
fn offset_delete_keeps_the_topics_a_live_consumer_group_subscribes_to() {
    let mut ctx = TestContext::new();
    // Members subscribe to `t` (the default Join); `u` was committed earlier but is not read.
    let (ids, generation) = ctx.stable_group(Join::new(G), 2);
    ctx.commit(
        G,
        8,
        &ids[0],
        generation,
        &[("t", 0, 5, None), ("u", 1, 6, None)],
    );
    let r = delete(&mut ctx, G, &[("t", 0), ("u", 1)]);
    assert_eq!(r.error_code, 0);
    assert_eq!(
        codes(&r),
        vec![
            ("t".into(), 0, ResponseError::GroupSubscribedToTopic.code()),
            ("u".into(), 1, 0)
        ]
    );
    assert_eq!(committed(&mut ctx, G), vec![("t".into(), 0, 5)]);
}

#[test]
fn offset_delete_of_a_non_empty_group_of_another_protocol_type_is_refused_whole() {
    let mut ctx = TestContext::new();
    let join = Join::new(G).protocol_type("connect");
    let (_, _) = ctx.stable_group(join, 1);
    let r = delete(&mut ctx, G, &[("t", 0)]);
    assert_eq!(r.error_code, ResponseError::NonEmptyGroup.code());
}
