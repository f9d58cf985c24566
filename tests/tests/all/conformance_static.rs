//! Conformance with Kafka (docs/conformance.md): static membership (KIP-345). A second
//! JoinGroup with a known `group.instance.id` replaces the member without a rebalance, the old
//! member id is fenced everywhere (FENCED_INSTANCE_ID), and a static member is removed by its
//! instance id alone.

use assignor_host_tests::conformance::{Difference, Spec, check};
use assignor_host_tests::str;
use kafka_protocol::messages::LeaveGroupRequest;
use kafka_protocol::messages::leave_group_request::MemberIdentity;

#[tokio::test]
async fn a_second_join_with_the_same_instance_id_fences_the_first() {
    let spec = Spec::new("static")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            for member in ["a", "a2", "a3"] {
                s.static_member(member, "instance-1");
            }
            // A static member joins in one step (no MEMBER_ID_REQUIRED), alone.
            let joined = s.join_group("a", "a joins v9", 9).await?;
            s.sync_group("a syncs", &[("a", &joined)], 5).await?;

            // The same instance restarts (v9): replaced in place, generation unchanged.
            let rejoined = s.join_group("a2", "a2 replaces a v9", 9).await?;
            let sync = s.sync_request("a2");
            s.call("a2", "a2 syncs the kept assignment", &sync, 5)
                .await?;
            anyhow::ensure!(
                rejoined.generation_id == joined.generation_id,
                "{}: the replacement rebalanced",
                s.target
            );

            // Everything from the old member id is fenced.
            let beat = s.heartbeat_request("a");
            s.call("a", "a heartbeats", &beat, 4).await?;
            let sync = s.sync_request("a");
            s.call("a", "a syncs", &sync, 5).await?;
            let commit = s.commit_request("a", &[("t", 0, 3)]);
            s.call("a", "a commits v9", &commit, 9).await?;
            let join = s.join_request("a");
            s.call("a", "a rejoins with its old id", &join, 9).await?;
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("g"))
                .with_members(vec![
                    MemberIdentity::default()
                        .with_member_id(str(&s.id("a")))
                        .with_group_instance_id(s.instance("a")),
                ]);
            s.call("a", "a leaves", &leave, 5).await?;
            let beat = s.heartbeat_request("a2");
            s.call("a2", "a2 heartbeats", &beat, 4).await?;

            // The same instance again, at v8 (librdkafka's static join is v5): the answer names
            // the previous leader, so a returning client does not believe it leads.
            s.join_group("a3", "a3 replaces a2 v8", 8).await?;
            let beat = s.heartbeat_request("a2");
            s.call("a2", "a2 heartbeats after a3 replaced it", &beat, 4)
                .await?;

            // Removed by instance id alone; an instance nobody has is unknown.
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("g"))
                .with_members(vec![
                    MemberIdentity::default().with_group_instance_id(Some(str("instance-9"))),
                    MemberIdentity::default().with_group_instance_id(s.instance("a3")),
                ]);
            s.call("admin", "remove instance-9 and instance-1", &leave, 5)
                .await?;
            let beat = s.heartbeat_request("a3");
            s.call("a3", "a3 heartbeats after its removal", &beat, 4)
                .await?;
            Ok(())
        })
    })
    .await;
}
