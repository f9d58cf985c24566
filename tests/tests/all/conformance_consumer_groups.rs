//! Conformance with Kafka (docs/conformance.md): a consumer group (KIP-848) beside the other
//! group APIs. Offsets committed and fetched by its members (member epochs checked), the
//! classic APIs pointed at it (DescribeGroups, ListGroups by type, DeleteGroups), a classic
//! member joining it (the mixed path: JoinGroup answered with the member epoch and no leader),
//! and what is left when its last consumer-protocol member leaves.

use assignor_host_tests::conformance::{Difference, Session, Spec, check};
use assignor_host_tests::{str, topic_name};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest,
    OffsetCommitRequest, OffsetFetchRequest,
};

/// a's commit of partitions 0 and 1 at `epoch`.
fn commit(s: &Session, epoch: i32) -> OffsetCommitRequest {
    s.commit_request("a", &[("t", 0, 10), ("t", 1, 11)])
        .with_member_id(str(&s.id("a")))
        .with_generation_id_or_member_epoch(epoch)
}

/// OffsetFetch v8+ of partitions 0-2 as `member` at `epoch` (a tool: no member, -1).
fn fetch(s: &Session, member: Option<&str>, epoch: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(s.group("g"))
            .with_member_id(member.map(str))
            .with_member_epoch(epoch)
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(topic_name(&s.topic("t")))
                    .with_partition_indexes(vec![0, 1, 2]),
            ])),
    ])
}

#[tokio::test]
async fn offsets_of_a_consumer_group_and_the_classic_apis_pointed_at_it() {
    let spec = Spec::new("consumer-offsets")
        .topic("t", 4)
        .differs(Difference::GroupEpochStartsAtZero)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            let join = s.cgh_join_request("a", &["t"]);
            s.cgh("a", "a joins", &join).await?;
            s.cgh_until("a", "a owns everything", |s, _| s.owned_count("a") == 4)
                .await?;
            let epoch = s.epoch("a");
            let (now, before, after) =
                (commit(s, epoch), commit(s, epoch - 1), commit(s, epoch + 1));
            s.call("a", "a commits at its epoch v9", &now, 9).await?;
            s.call("a", "a commits at its epoch v8", &now, 8).await?;
            s.call("a", "a commits at an older epoch v9", &before, 9)
                .await?;
            s.call("a", "a commits at a newer epoch v9", &after, 9)
                .await?;
            let stranger = commit(s, epoch).with_member_id(str("made-up-member"));
            s.call("x", "an unknown member commits", &stranger, 9)
                .await?;
            let tool = commit(s, -1).with_member_id(str(""));
            s.call("x", "a simple commit to the busy group", &tool, 9)
                .await?;

            let a_id = s.id("a");
            s.call(
                "a",
                "a fetches at its epoch v9",
                &fetch(s, Some(&a_id), epoch),
                9,
            )
            .await?;
            s.call(
                "a",
                "a fetches at an older epoch v9",
                &fetch(s, Some(&a_id), epoch - 1),
                9,
            )
            .await?;
            s.call(
                "x",
                "an unknown member fetches",
                &fetch(s, Some("made-up-member"), epoch),
                9,
            )
            .await?;
            s.call("x", "a tool fetches", &fetch(s, None, -1), 9)
                .await?;

            // The classic APIs on a consumer group.
            let describe = DescribeGroupsRequest::default().with_groups(vec![s.group("g")]);
            s.call(
                "admin",
                "DescribeGroups of a consumer group v5",
                &describe,
                5,
            )
            .await?;
            // And the other way round: a classic group through ConsumerGroupDescribe.
            s.in_group("c", "classic");
            let joined = s.join_group("c", "c joins a classic group", 9).await?;
            s.sync_group("c syncs", &[("c", &joined)], 5).await?;
            let describe =
                ConsumerGroupDescribeRequest::default().with_group_ids(vec![s.group("classic")]);
            s.call(
                "admin",
                "ConsumerGroupDescribe of a classic group",
                &describe,
                1,
            )
            .await?;
            for types in [&["consumer"][..], &["classic"][..], &[][..]] {
                let list = ListGroupsRequest::default()
                    .with_types_filter(types.iter().map(|t| str(t)).collect());
                s.call("admin", &format!("list v5 types {types:?}"), &list, 5)
                    .await?;
            }
            let delete = DeleteGroupsRequest::default().with_groups_names(vec![s.group("g")]);
            s.call("admin", "delete the busy group", &delete, 2).await?;

            let leave = s.cgh_request("a").with_member_epoch(-1);
            s.cgh("a", "a leaves", &leave).await?;
            let describe =
                ConsumerGroupDescribeRequest::default().with_group_ids(vec![s.group("g")]);
            s.call("admin", "describe the empty group", &describe, 1)
                .await?;
            s.call(
                "x",
                "a tool fetches from the empty group",
                &fetch(s, None, -1),
                9,
            )
            .await?;
            s.call("x", "a simple commit to the empty group", &tool, 9)
                .await?;
            s.call("admin", "delete the empty group", &delete, 2)
                .await?;
            Ok(())
        })
    })
    .await;
}

/// Kafka 4.3+ (KIP-1251) takes a commit at a member's previous epoch for the partitions it
/// has held since then; the host wants the member's current epoch.
#[tokio::test]
async fn a_commit_at_the_previous_epoch_of_partitions_still_held() {
    let spec = Spec::new("commit-epochs")
        .topic("t", 4)
        .differs(Difference::GroupEpochStartsAtZero)
        .differs(Difference::CommitAtCurrentEpochOnly);
    check(spec, |s| {
        Box::pin(async move {
            let join = s.cgh_join_request("a", &["t"]);
            s.cgh("a", "a joins", &join).await?;
            s.cgh_until("a", "a owns everything", |s, _| s.owned_count("a") == 4)
                .await?;
            let epoch = s.epoch("a");
            let before: Vec<i32> = s.owned("a").into_iter().flat_map(|(_, ps)| ps).collect();
            let join = s.cgh_join_request("b", &["t"]);
            s.cgh("b", "b joins", &join).await?;
            s.cgh_until("a", "a gave half up", |s, r| {
                s.owned_count("a") == 2 && r.member_epoch > epoch
            })
            .await?;
            // Which partitions a keeps is the assignor's choice: noted by outcome only.
            let kept: Vec<i32> = s.owned("a").into_iter().flat_map(|(_, ps)| ps).collect();
            let given: Vec<i32> = before.into_iter().filter(|p| !kept.contains(p)).collect();
            for (what, partitions) in [("kept", kept), ("given to b", given)] {
                let offsets: Vec<(&str, i32, i64)> =
                    partitions.iter().map(|&p| ("t", p, 20)).collect();
                let request = s
                    .commit_request("a", &offsets)
                    .with_member_id(str(&s.id("a")))
                    .with_generation_id_or_member_epoch(epoch);
                let answer = s.call_quietly("a", &request, 9).await?;
                let codes: Vec<i16> = answer
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                    .collect();
                let step = format!("a commits what it {what} at its previous epoch");
                s.note(&step, vec![("errors".into(), format!("{codes:?}"))]);
            }
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn a_classic_member_joins_a_consumer_group() {
    let spec = Spec::new("mixed")
        .topic("t", 4)
        .differs(Difference::GroupEpochStartsAtZero);
    check(spec, |s| {
        Box::pin(async move {
            let join = s.cgh_join_request("a", &["t"]);
            s.cgh("a", "a joins with the consumer protocol", &join)
                .await?;
            s.cgh_until("a", "a owns everything", |s, _| s.owned_count("a") == 4)
                .await?;

            // c speaks the classic protocol (JoinGroup v9 as the Java client, Heartbeat v4).
            let a_epoch = s.epoch("a");
            let joined = s.join_group("c", "c joins with JoinGroup", 9).await?;
            s.sync_group("c syncs", &[("c", &joined)], 5).await?;
            s.cgh_until("a", "a gave half up", |s, r| {
                s.owned_count("a") == 2 && r.member_epoch > a_epoch
            })
            .await?;
            // What c waits for is free: its heartbeat tells it to rejoin for it.
            let beat = s.heartbeat_request("c");
            s.call("c", "c heartbeats", &beat, 4).await?;
            let joined = s.join_group("c", "c rejoins", 9).await?;
            let synced = s.sync_group("c syncs again", &[("c", &joined)], 5).await?;
            s.note_assignments("c's share", &synced);
            let beat = s.heartbeat_request("c");
            s.call("c", "c heartbeats again", &beat, 4).await?;
            let describe =
                ConsumerGroupDescribeRequest::default().with_group_ids(vec![s.group("g")]);
            s.call("admin", "describe the mixed group", &describe, 1)
                .await?;
            Ok(())
        })
    })
    .await;
}
