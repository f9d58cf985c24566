//! Conformance with Kafka (docs/conformance.md): the group as an administrator sees it.
//! DescribeGroups through a group's states (missing: Dead; Stable; PreparingRebalance;
//! Empty), ListGroups with filters, DeleteGroups of a group with members (NON_EMPTY_GROUP), of
//! an Empty one and of a missing one; and where the host's state differs on purpose: between
//! JoinGroup and SyncGroup, and when the member Kafka made leader rejoins.

use assignor_host_tests::conformance::{Difference, Spec, check};
use assignor_host_tests::str;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, LeaveGroupRequest, ListGroupsRequest,
};

#[tokio::test]
async fn describe_list_and_delete_through_a_groups_life() {
    let spec = Spec::new("admin")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            let describe = |s: &assignor_host_tests::conformance::Session| {
                DescribeGroupsRequest::default().with_groups(vec![s.group("g"), s.group("missing")])
            };
            let list = |states: &[&str]| {
                ListGroupsRequest::default()
                    .with_states_filter(states.iter().map(|st| str(st)).collect())
            };
            let request = describe(s);
            s.call("admin", "describe before anyone joined v5", &request, 5)
                .await?;

            let joined = s.join_group("a", "a joins", 9).await?;
            s.sync_group("a syncs", &[("a", &joined)], 5).await?;
            let request = describe(s);
            s.call("admin", "describe Stable v5", &request, 5).await?;
            s.call("admin", "describe Stable v0", &request, 0).await?;
            let request = describe(s).with_include_authorized_operations(true);
            s.call("admin", "describe Stable with operations v5", &request, 5)
                .await?;
            s.call("admin", "list v4 stable", &list(&["Stable"]), 4)
                .await?;
            s.call(
                "admin",
                "list v4 stable in lower case",
                &list(&["stable"]),
                4,
            )
            .await?;
            s.call("admin", "list v4 empty", &list(&["Empty"]), 4)
                .await?;
            s.call("admin", "list v5", &list(&[]), 5).await?;
            s.call("admin", "list v2", &list(&[]), 2).await?;
            let delete = DeleteGroupsRequest::default()
                .with_groups_names(vec![s.group("g"), s.group("missing")]);
            s.call("admin", "delete with a member v2", &delete, 2)
                .await?;

            // b joins: the group prepares a rebalance while a has not rejoined.
            let b = s.send_join_group("b", "b joins", 9).await?;
            s.heartbeat_until("a", "a heartbeats while b joins", 27)
                .await?;
            let request = describe(s);
            s.call("admin", "describe PreparingRebalance v5", &request, 5)
                .await?;
            s.call(
                "admin",
                "list v4 preparing",
                &list(&["PreparingRebalance"]),
                4,
            )
            .await?;
            let request = s.join_request("a");
            let a = s.send("a", &request, 9).await?;
            let a_joined = s.receive_join("a", "a rejoins", a).await?;
            let b_joined = s.receive_join("b", "b joins", b).await?;
            s.sync_group("both sync", &[("a", &a_joined), ("b", &b_joined)], 5)
                .await?;

            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("g"))
                .with_members(vec![
                    MemberIdentity::default().with_member_id(str(&s.id("a"))),
                    MemberIdentity::default().with_member_id(str(&s.id("b"))),
                ]);
            s.call("a", "both leave", &leave, 5).await?;
            let request = describe(s);
            s.call("admin", "describe Empty v5", &request, 5).await?;
            s.call("admin", "list v4 empty after leaving", &list(&["Empty"]), 4)
                .await?;
            s.call("admin", "delete Empty v2", &delete, 2).await?;
            s.call("admin", "delete again v0", &delete, 0).await?;
            let request = describe(s);
            s.call("admin", "describe deleted v5", &request, 5).await?;
            Ok(())
        })
    })
    .await;
}

/// Kafka's group waits in CompletingRebalance for its leader's SyncGroup; the host leads, so
/// its group is Stable once the assignment is computed, before any SyncGroup. And the member
/// Kafka made leader rejoining with the same protocols is how a Kafka leader asks for a
/// rebalance; to the host it is a follower that lost an answer, given the current generation.
#[tokio::test]
async fn between_join_and_sync_and_when_kafkas_leader_rejoins() {
    let spec = Spec::new("host-leads")
        .topic("t", 4)
        .differs(Difference::HostLeads)
        .differs(Difference::StableBeforeSync)
        .differs(Difference::LeaderRejoinKeepsGeneration);
    check(spec, |s| {
        Box::pin(async move {
            let describe = |s: &assignor_host_tests::conformance::Session| {
                DescribeGroupsRequest::default().with_groups(vec![s.group("g")])
            };
            let joined = s.join_group("a", "a joins", 9).await?;
            if s.target.is_host() {
                // The host installs the assignment as soon as its module answers.
                s.describe_until_stable("g").await?;
            }
            let request = describe(s);
            s.call("admin", "describe before any SyncGroup", &request, 5)
                .await?;
            let commit = s.commit_request("a", &[("t", 0, 1)]);
            s.call("a", "a commits before its SyncGroup", &commit, 9)
                .await?;
            let beat = s.heartbeat_request("a");
            s.call("a", "a heartbeats before its SyncGroup", &beat, 4)
                .await?;
            s.sync_group("a syncs", &[("a", &joined)], 5).await?;
            let request = describe(s);
            s.call("admin", "describe after SyncGroup", &request, 5)
                .await?;

            let request = s.join_request("a");
            let rejoined = s
                .join("a", "a rejoins with the same protocols", &request, 9)
                .await?;
            s.sync_group("a syncs again", &[("a", &rejoined)], 5)
                .await?;
            let beat = s.heartbeat_request("a");
            s.call("a", "a heartbeats", &beat, 4).await?;
            Ok(())
        })
    })
    .await;
}
