//! Conformance with Kafka (docs/conformance.md): joining. The two-step join of KIP-394 at the
//! versions clients send (Java 4.x: v9, librdkafka: v5) and before it (v3: no
//! MEMBER_ID_REQUIRED), member ids the coordinator never handed out, protocol checks, and the
//! session timeout bounds.

use assignor_host_tests::conformance::{Difference, Spec, check};
use assignor_host_tests::str;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;

#[tokio::test]
async fn the_two_step_join_at_v9_v5_and_the_single_step_at_v3() {
    let spec = Spec::new("two-step")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            for (member, group, version, sync_version) in [
                ("java", "g", 9, 5),
                ("rdkafka", "librdkafka", 5, 3),
                ("old", "old", 3, 3),
            ] {
                s.in_group(member, group);
                let joined = s
                    .join_group(member, &format!("{member} joins v{version}"), version)
                    .await?;
                let synced = s
                    .sync_group(
                        &format!("{member} syncs v{sync_version}"),
                        &[(member, &joined)],
                        sync_version,
                    )
                    .await?;
                s.note_assignments(&format!("{member} alone"), &synced);
                let beat = s.heartbeat_request(member);
                s.call(member, &format!("{member} heartbeats"), &beat, 4)
                    .await?;
            }
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn member_ids_the_coordinator_never_handed_out() {
    let spec = Spec::new("unknown-member")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            // A made-up id for a group that does not exist.
            s.in_group("x", "nowhere");
            let join = s.join_request("x").with_member_id(str("made-up-member"));
            s.call("x", "join a missing group v9", &join, 9).await?;
            let beat = s
                .heartbeat_request("x")
                .with_member_id(str("made-up-member"))
                .with_generation_id(1);
            s.call("x", "heartbeat a missing group", &beat, 4).await?;
            let sync = s
                .sync_request("x")
                .with_member_id(str("made-up-member"))
                .with_generation_id(1);
            s.call("x", "sync a missing group", &sync, 5).await?;

            // The same against a Stable group of one.
            let joined = s.join_group("a", "a joins", 9).await?;
            s.sync_group("a syncs", &[("a", &joined)], 5).await?;
            s.in_group("x", "g");
            let join = s.join_request("x").with_member_id(str("made-up-member"));
            s.call("x", "join v9", &join, 9).await?;
            s.call("x", "join v5", &join, 5).await?;
            s.call("x", "join v3", &join, 3).await?;
            let beat = s
                .heartbeat_request("x")
                .with_member_id(str("made-up-member"))
                .with_generation_id(1);
            s.call("x", "heartbeat", &beat, 4).await?;
            let sync = s
                .sync_request("x")
                .with_member_id(str("made-up-member"))
                .with_generation_id(1);
            s.call("x", "sync", &sync, 5).await?;
            s.call("x", "sync v3", &sync, 3).await?;
            let commit = s
                .commit_request("x", &[("t", 0, 5)])
                .with_member_id(str("made-up-member"))
                .with_generation_id_or_member_epoch(1);
            s.call("x", "commit v9", &commit, 9).await?;
            s.call("x", "commit v7", &commit, 7).await?;
            // The group is undisturbed.
            let beat = s.heartbeat_request("a");
            s.call("a", "a heartbeats", &beat, 4).await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn protocols_a_group_cannot_take() {
    let spec = Spec::new("protocols")
        .topic("t", 4)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            // To an empty group: no protocol type, then no protocols.
            s.in_group("x", "empty");
            let join = s.join_request("x").with_protocol_type(str(""));
            s.call("x", "no protocol type v9", &join, 9).await?;
            let join = s.join_request("x").with_protocols(Vec::new());
            s.call("x", "no protocols v9", &join, 9).await?;
            s.call("x", "no protocols v6", &join, 6).await?;

            let joined = s.join_group("a", "a joins", 9).await?;
            s.sync_group("a syncs", &[("a", &joined)], 5).await?;
            // Another protocol type, then no protocol in common with a's.
            s.in_group("x", "g");
            let join = s.join_request("x").with_protocol_type(str("connect"));
            s.call("x", "protocol type connect v9", &join, 9).await?;
            let join = s.join_request("x").with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(str("roundrobin"))
                    .with_metadata(s.join_request("a").protocols[0].metadata.clone()),
            ]);
            s.call("x", "no common protocol v9", &join, 9).await?;
            s.call("x", "no common protocol v6", &join, 6).await?;
            let beat = s.heartbeat_request("a");
            s.call("a", "a heartbeats", &beat, 4).await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn session_timeouts_outside_the_bounds() {
    let spec = Spec::new("session-timeout").topic("t", 4);
    check(spec, |s| {
        Box::pin(async move {
            for (timeout, version) in [(5_999, 9), (1_800_001, 9), (5_999, 5), (0, 3)] {
                let join = s.join_request("x").with_session_timeout_ms(timeout);
                s.call(
                    "x",
                    &format!("session timeout {timeout} v{version}"),
                    &join,
                    version,
                )
                .await?;
                let join = join.with_member_id(str("made-up-member"));
                s.call(
                    "x",
                    &format!("session timeout {timeout} with an id v{version}"),
                    &join,
                    version,
                )
                .await?;
            }
            Ok(())
        })
    })
    .await;
}
