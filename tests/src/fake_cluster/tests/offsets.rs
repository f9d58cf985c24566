//! The committed-offset store: admin commits on the coordinator, NOT_COORDINATOR elsewhere,
//! refusals for generations and occupied groups, OffsetFetch in both shapes, DeleteGroups.

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteGroupsRequest, GroupId, OffsetCommitRequest, OffsetFetchRequest,
};

use super::{connect, three_brokers};
use crate::{str, topic_name};

fn commit(group: &str, generation: i32, offsets: &[(&str, i32, i64)]) -> OffsetCommitRequest {
    let topics = offsets
        .iter()
        .map(|&(topic, partition, offset)| {
            OffsetCommitRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset)
                        .with_committed_metadata(Some(str("m"))),
                ])
        })
        .collect();
    OffsetCommitRequest::default()
        .with_group_id(GroupId(str(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_topics(topics)
}

fn codes(response: &kafka_protocol::messages::OffsetCommitResponse) -> Vec<i16> {
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

#[tokio::test]
async fn admin_commits_are_kept_by_the_coordinator_only() {
    let cluster = three_brokers().await;
    let mut coordinator = connect(&cluster, 1).await;
    let offsets = [("orders", 0, 10), ("orders", 3, 30), ("nope", 0, 1)];
    for version in [2, 5, 8] {
        let response = coordinator
            .call(&commit("g", -1, &offsets), version)
            .await
            .unwrap();
        assert_eq!(codes(&response), [0, 0, 3], "v{version}");
    }
    assert_eq!(cluster.committed("g", "orders", 3), Some(30));
    let mut other = connect(&cluster, 2).await;
    let refused = other
        .call(&commit("g", -1, &[("orders", 0, 99)]), 8)
        .await
        .unwrap();
    assert_eq!(codes(&refused), [16], "NOT_COORDINATOR");
    let generation = coordinator
        .call(&commit("g", 3, &[("orders", 0, 99)]), 8)
        .await
        .unwrap();
    assert_eq!(
        codes(&generation),
        [22],
        "ILLEGAL_GENERATION: the fake has no members"
    );
    cluster.occupy_group("taken");
    let taken = coordinator
        .call(&commit("taken", -1, &[("orders", 0, 1)]), 8)
        .await
        .unwrap();
    assert_eq!(codes(&taken), [25], "UNKNOWN_MEMBER_ID");
    assert_eq!(cluster.committed("g", "orders", 0), Some(10));
    assert_eq!(cluster.committed("taken", "orders", 0), None);
}

#[tokio::test]
async fn offset_fetch_reads_one_group_or_a_batch() {
    let cluster = three_brokers().await;
    let mut coordinator = connect(&cluster, 1).await;
    let offsets = [("orders", 0, 10), ("orders", 3, 30), ("audit", 1, 5)];
    coordinator
        .call(&commit("g", -1, &offsets), 8)
        .await
        .unwrap();
    let asked = OffsetFetchRequest::default()
        .with_group_id(GroupId(str("g")))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name("orders"))
                .with_partition_indexes(vec![0, 1]),
        ]));
    for version in [1, 3, 7] {
        let response = coordinator.call(&asked, version).await.unwrap();
        let got: Vec<(i32, i64, i16)> = response.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.committed_offset, p.error_code))
            .collect();
        assert_eq!(got, [(0, 10, 0), (1, -1, 0)], "v{version}");
    }
    let all = OffsetFetchRequest::default()
        .with_group_id(GroupId(str("g")))
        .with_topics(None);
    let response = coordinator.call(&all, 7).await.unwrap();
    let got: Vec<(String, i32, i64)> = response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    assert_eq!(
        got,
        [
            ("audit".into(), 1, 5),
            ("orders".into(), 0, 10),
            ("orders".into(), 3, 30)
        ]
    );
    let batch = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("g")))
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(topic_name("audit"))
                    .with_partition_indexes(vec![1]),
            ])),
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(str("empty")))
            .with_topics(None),
    ]);
    let response = coordinator.call(&batch, 8).await.unwrap();
    assert_eq!(
        response.groups[0].topics[0].partitions[0].committed_offset,
        5
    );
    assert!(response.groups[1].topics.is_empty());
    let mut other = connect(&cluster, 3).await;
    assert_eq!(other.call(&all, 7).await.unwrap().error_code, 16);
    assert_eq!(
        other.call(&batch, 8).await.unwrap().groups[0].error_code,
        16
    );
}

#[tokio::test]
async fn delete_groups_drops_offsets_and_create_topics_adds_a_spread_topic() {
    let cluster = three_brokers().await;
    let mut coordinator = connect(&cluster, 1).await;
    coordinator
        .call(&commit("g", -1, &[("orders", 0, 10)]), 8)
        .await
        .unwrap();
    cluster.occupy_group("taken");
    let names = ["g", "taken", "never"].map(|g| GroupId(str(g))).to_vec();
    let response = coordinator
        .call(&DeleteGroupsRequest::default().with_groups_names(names), 2)
        .await
        .unwrap();
    let codes: Vec<i16> = response.results.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, [0, 68, 69]);
    assert_eq!(cluster.committed("g", "orders", 0), None);
    let create = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(topic_name("fresh"))
            .with_num_partitions(4)
            .with_replication_factor(-1),
        CreatableTopic::default()
            .with_name(topic_name("orders"))
            .with_num_partitions(1)
            .with_replication_factor(-1),
    ]);
    let response = coordinator.call(&create, 7).await.unwrap();
    let results: Vec<(i16, i32)> = response
        .topics
        .iter()
        .map(|t| (t.error_code, t.num_partitions))
        .collect();
    assert_eq!(results, [(0, 4), (36, -1)]);
    assert_eq!(
        response.topics[0].topic_id,
        crate::fake_cluster::topic_id("fresh")
    );
    let leaders: Vec<i32> = (0..4).map(|p| cluster.leader("fresh", p)).collect();
    assert_eq!(leaders, [1, 2, 3, 1]);
    cluster.set_partitions("fresh", 6);
    assert_eq!(
        (cluster.leader("fresh", 4), cluster.leader("fresh", 5)),
        (2, 3)
    );
}
