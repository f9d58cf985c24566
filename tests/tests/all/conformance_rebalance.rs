//! Conformance with Kafka (docs/conformance.md): generations and rebalances. A member's
//! requests while another joins (REBALANCE_IN_PROGRESS, commits still taken at the old
//! generation), requests from a stale or future generation (ILLEGAL_GENERATION), and leaving
//! in both LeaveGroup layouts down to an Empty group.

use assignor_host_tests::conformance::{Difference, Session, Spec, check};
use assignor_host_tests::str;
use kafka_protocol::messages::LeaveGroupRequest;
use kafka_protocol::messages::leave_group_request::MemberIdentity;

/// `a` alone at generation 1, then `b` joins and both are at generation 2, synced.
async fn two_members(s: &mut Session) -> anyhow::Result<()> {
    let joined = s.join_group("a", "a joins", 9).await?;
    let synced = s.sync_group("a syncs", &[("a", &joined)], 5).await?;
    s.note_assignments("a alone", &synced);
    let b = s.send_join_group("b", "b joins", 9).await?;
    s.heartbeat_until("a", "a heartbeats while b joins", 27)
        .await?;

    // The old generation during the join phase: SyncGroup is told to rejoin, a commit is
    // taken (Kafka refuses commits only while CompletingRebalance).
    let sync = s.sync_request("a");
    s.call("a", "a syncs generation 1 while b joins", &sync, 5)
        .await?;
    let commit = s.commit_request("a", &[("t", 0, 10)]);
    s.call("a", "a commits at generation 1 while b joins", &commit, 9)
        .await?;

    let request = s.join_request("a");
    let a = s.send("a", &request, 9).await?;
    let a_joined = s.receive_join("a", "a rejoins", a).await?;
    let b_joined = s.receive_join("b", "b joins", b).await?;
    let synced = s
        .sync_group("both sync", &[("a", &a_joined), ("b", &b_joined)], 5)
        .await?;
    s.note_assignments("a and b", &synced);
    Ok(())
}

#[tokio::test]
async fn a_rebalance_and_requests_from_the_wrong_generation() {
    let spec = Spec::new("generations")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            two_members(s).await?;
            for (label, generation) in [("stale", 1), ("future", 3)] {
                let beat = s.heartbeat_request("a").with_generation_id(generation);
                s.call("a", &format!("heartbeat {label} v4"), &beat, 4)
                    .await?;
                s.call("a", &format!("heartbeat {label} v3"), &beat, 3)
                    .await?;
                let sync = s.sync_request("a").with_generation_id(generation);
                s.call("a", &format!("sync {label} v5"), &sync, 5).await?;
                s.call("a", &format!("sync {label} v3"), &sync, 3).await?;
                let commit = s
                    .commit_request("a", &[("t", 0, 11)])
                    .with_generation_id_or_member_epoch(generation);
                s.call("a", &format!("commit {label} v9"), &commit, 9)
                    .await?;
                s.call("a", &format!("commit {label} v7"), &commit, 7)
                    .await?;
            }
            for member in ["a", "b"] {
                let beat = s.heartbeat_request(member);
                s.call(
                    member,
                    &format!("{member} heartbeats at generation 2"),
                    &beat,
                    4,
                )
                .await?;
            }
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn leaving_one_by_one_down_to_an_empty_group() {
    let spec = Spec::new("leave")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            two_members(s).await?;
            // a leaves with the single-member layout librdkafka sends (v1).
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("g"))
                .with_member_id(str(&s.id("a")));
            s.call("a", "a leaves v1", &leave, 1).await?;
            s.call("a", "a leaves again v1", &leave, 1).await?;
            s.heartbeat_until("b", "b heartbeats after a left", 27)
                .await?;
            let joined = s.join_group("b", "b rejoins alone", 9).await?;
            s.sync_group("b syncs", &[("b", &joined)], 5).await?;

            // b leaves with the batch layout (v5, Java clients) beside an id nobody has.
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("g"))
                .with_members(vec![
                    MemberIdentity::default().with_member_id(str(&s.id("b"))),
                    MemberIdentity::default().with_member_id(str("made-up-member")),
                ]);
            s.call("b", "b leaves v5 with a made-up member", &leave, 5)
                .await?;
            let beat = s.heartbeat_request("b");
            s.call("b", "b heartbeats after leaving", &beat, 4).await?;

            // The group is Empty, its generation moved on: a new member starts after it.
            let joined = s.join_group("c", "c joins the empty group", 9).await?;
            s.sync_group("c syncs", &[("c", &joined)], 5).await?;

            // A missing group.
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("nowhere"))
                .with_members(vec![
                    MemberIdentity::default().with_member_id(str("made-up-member")),
                ]);
            s.call("x", "leave a missing group v5", &leave, 5).await?;
            let leave = LeaveGroupRequest::default()
                .with_group_id(s.group("nowhere"))
                .with_member_id(str("made-up-member"));
            s.call("x", "leave a missing group v1", &leave, 1).await?;
            Ok(())
        })
    })
    .await;
}

/// A member that is no leader rejoining a Stable group: with the same protocols it gets the
/// current generation back (it lost an answer), with a changed subscription it starts a
/// rebalance. (On the host every member is such a member.)
#[tokio::test]
async fn a_follower_rejoins_with_the_same_and_with_changed_protocols() {
    let spec = Spec::new("follower-rejoin")
        .topic("t", 4)
        .topic("u", 2)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            two_members(s).await?;
            let request = s.join_request("b");
            let same = s
                .join("b", "b rejoins with the same protocols", &request, 9)
                .await?;
            s.sync_group("b syncs again", &[("b", &same)], 5).await?;
            let beat = s.heartbeat_request("a");
            s.call("a", "a heartbeats", &beat, 4).await?;

            let topics = [s.topic("t")];
            let narrower = assignor_host_tests::subscription(&[topics[0].as_str()], 3);
            let mut request = s.join_request("b");
            request.protocols[0].metadata = narrower;
            let b = s.send("b", &request, 9).await?;
            s.heartbeat_until("a", "a heartbeats while b changes its subscription", 27)
                .await?;
            let request = s.join_request("a");
            let a = s.send("a", &request, 9).await?;
            let a_joined = s.receive_join("a", "a rejoins", a).await?;
            let b_joined = s
                .receive_join("b", "b rejoins with a changed subscription", b)
                .await?;
            let synced = s
                .sync_group("both sync", &[("a", &a_joined), ("b", &b_joined)], 5)
                .await?;
            s.note_assignments("a on t and u, b on t", &synced);
            Ok(())
        })
    })
    .await;
}
