//! Conformance with Kafka (docs/conformance.md): offsets. Simple commits (generation -1, no
//! member) to a missing, an Empty and a non-empty group, commits to a missing group with a
//! generation (GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before), unknown topics and
//! partitions, metadata too large, and OffsetFetch of what exists and what does not, in the
//! one-group (v1-7) and batched (v8+) layouts. In proxy mode the host commits to Kafka and
//! fetches from it, so this compares the upstream path too.

use assignor_host_tests::conformance::{Difference, Session, Spec, check};
use assignor_host_tests::{str, topic_name};
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    LeaveGroupRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
};

/// Partitions of topics, by the scenario's topic names.
type Partitions<'a> = &'a [(&'a str, &'a [i32])];

/// A commit as a tool sends it (kcat, an admin client): generation -1, no member.
fn simple_commit(s: &Session, group: &str, offsets: &[(&str, i32, i64)]) -> OffsetCommitRequest {
    s.commit_request("tool", offsets)
        .with_group_id(s.group(group))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(str(""))
}

/// OffsetFetch v1-7 of `group`: `partitions` of each topic, or every committed one.
fn fetch(s: &Session, group: &str, topics: Option<Partitions<'_>>) -> OffsetFetchRequest {
    OffsetFetchRequest::default()
        .with_group_id(s.group(group))
        .with_topics(topics.map(|topics| {
            topics
                .iter()
                .map(|(t, ps)| {
                    OffsetFetchRequestTopic::default()
                        .with_name(topic_name(&s.topic(t)))
                        .with_partition_indexes(ps.to_vec())
                })
                .collect()
        }))
}

/// OffsetFetch v8+ of several groups.
fn fetch_groups(s: &Session, groups: &[(&str, Option<Partitions<'_>>)]) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(
        groups
            .iter()
            .map(|(group, topics)| {
                OffsetFetchRequestGroup::default()
                    .with_group_id(s.group(group))
                    .with_topics(topics.map(|topics| {
                        topics
                            .iter()
                            .map(|(t, ps)| {
                                OffsetFetchRequestTopics::default()
                                    .with_name(topic_name(&s.topic(t)))
                                    .with_partition_indexes(ps.to_vec())
                            })
                            .collect()
                    }))
            })
            .collect(),
    )
}

/// OffsetDelete of `partitions` of each topic of `group`.
fn offset_delete(s: &Session, group: &str, topics: &[(&str, &[i32])]) -> OffsetDeleteRequest {
    OffsetDeleteRequest::default()
        .with_group_id(s.group(group))
        .with_topics(
            topics
                .iter()
                .map(|(t, ps)| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(topic_name(&s.topic(t)))
                        .with_partitions(
                            ps.iter()
                                .map(|&p| {
                                    OffsetDeleteRequestPartition::default().with_partition_index(p)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

#[tokio::test]
async fn simple_commits_and_fetches_of_what_exists_and_what_does_not() {
    let spec = Spec::new("offsets").topic("t", 4).topic("u", 2);
    check(spec, |s| {
        Box::pin(async move {
            // A simple commit creates the group; unknown topics and partitions are refused
            // per partition; metadata over offset.metadata.max.bytes (4096) too.
            let commit = simple_commit(
                s,
                "simple",
                &[("t", 0, 5), ("t", 1, 6), ("t", 9, 1), ("nope", 0, 1)],
            );
            s.call("tool", "simple commit to a missing group v9", &commit, 9)
                .await?;
            let mut commit = simple_commit(s, "simple", &[("u", 0, 7), ("u", 1, 8)]);
            commit.topics[0].partitions[1].committed_metadata = Some(str(&"x".repeat(4097)));
            s.call(
                "tool",
                "simple commit v8, one metadata too large",
                &commit,
                8,
            )
            .await?;
            let commit = simple_commit(s, "simple", &[("t", 0, 15)]);
            s.call("tool", "simple commit to an Empty group v2", &commit, 2)
                .await?;

            let request = fetch(
                s,
                "simple",
                Some(&[("t", &[0, 1, 2, 9]), ("u", &[0, 1]), ("nope", &[0])]),
            );
            s.call("tool", "fetch partitions v7", &request, 7).await?;
            s.call("tool", "fetch partitions v1", &request, 1).await?;
            let request = fetch(s, "simple", None);
            s.call("tool", "fetch everything v7", &request, 7).await?;
            let request = fetch(s, "missing", Some(&[("t", &[0])]));
            s.call("tool", "fetch a missing group v7", &request, 7)
                .await?;
            s.call("tool", "fetch a missing group v1", &request, 1)
                .await?;
            let request = fetch(s, "missing", None);
            s.call(
                "tool",
                "fetch everything of a missing group v7",
                &request,
                7,
            )
            .await?;
            let request = fetch_groups(
                s,
                &[
                    ("simple", Some(&[("t", &[0, 3])])),
                    ("missing", None),
                    ("simple", None),
                ],
            );
            s.call("tool", "fetch groups v9", &request, 9).await?;
            s.call("tool", "fetch groups v8", &request, 8).await?;

            // A generation for a group that does not exist.
            let commit = simple_commit(s, "nothing", &[("t", 0, 1)])
                .with_generation_id_or_member_epoch(5)
                .with_member_id(str("made-up-member"));
            s.call(
                "tool",
                "commit generation 5 to a missing group v9",
                &commit,
                9,
            )
            .await?;
            s.call(
                "tool",
                "commit generation 5 to a missing group v8",
                &commit,
                8,
            )
            .await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn commits_to_a_group_with_members() {
    let spec = Spec::new("member-offsets")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            let joined = s.join_group("a", "a joins", 9).await?;
            s.sync_group("a syncs", &[("a", &joined)], 5).await?;
            let commit = s.commit_request("a", &[("t", 0, 100), ("t", 3, 103)]);
            s.call("a", "a commits v9", &commit, 9).await?;
            s.call("a", "a commits v7", &commit, 7).await?;
            let commit = s
                .commit_request("a", &[("t", 1, 101)])
                .with_group_instance_id(Some(str("instance-9")));
            s.call("a", "a commits naming an instance it is not", &commit, 9)
                .await?;

            // A tool's commit to a group with members: no generation, no member.
            let commit = simple_commit(s, "g", &[("t", 2, 1)]);
            s.call("tool", "simple commit to a non-empty group v9", &commit, 9)
                .await?;
            s.call("tool", "simple commit to a non-empty group v2", &commit, 2)
                .await?;
            let commit = simple_commit(s, "g", &[("t", 2, 1)]).with_member_id(str(&s.id("a")));
            s.call("tool", "commit generation -1 with a's id", &commit, 9)
                .await?;

            let request = fetch(s, "g", None);
            s.call("a", "fetch everything v7", &request, 7).await?;
            let request = fetch_groups(s, &[("g", Some(&[("t", &[0, 1, 2, 3])]))]);
            s.call("a", "fetch v9", &request, 9).await?;

            // OffsetDelete: refused for a topic the group consumes, done once it is empty.
            let delete = offset_delete(s, "g", &[("t", &[0, 3]), ("nope", &[0])]);
            s.call("admin", "delete offsets of a consumed topic", &delete, 0)
                .await?;
            let request = s.heartbeat_request("a");
            s.call("a", "a heartbeats", &request, 4).await?;
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("g"))
                .with_members(vec![
                    MemberIdentity::default().with_member_id(str(&s.id("a"))),
                ]);
            s.call("a", "a leaves", &leave, 5).await?;
            s.call("admin", "delete offsets of the empty group", &delete, 0)
                .await?;
            let request = fetch(s, "g", None);
            s.call("a", "fetch everything after the delete", &request, 7)
                .await?;
            let delete = offset_delete(s, "missing", &[("t", &[0])]);
            s.call("admin", "delete offsets of a missing group", &delete, 0)
                .await?;
            Ok(())
        })
    })
    .await;
}
