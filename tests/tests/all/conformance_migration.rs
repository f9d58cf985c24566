//! Conformance with Kafka (docs/conformance.md): moving a group between the protocols. A
//! Stable classic group is upgraded online when a consumer-protocol member joins it (Kafka's
//! `group.consumer.migration.policy` is `bidirectional` by default), its classic member keeps
//! consuming and gives up what the new member gets at its next rejoin; when the last
//! consumer-protocol member leaves, Kafka turns the group back into a classic one, the host
//! does not (documented as not yet done).

use std::time::Instant;

use assignor_host_tests::DEADLINE;
use assignor_host_tests::conformance::{Difference, Session, Spec, check};
use kafka_protocol::messages::{DescribeGroupsRequest, ListGroupsRequest};

/// Heartbeats every member (`classic` with the classic protocol, rejoining when told to;
/// `modern` with ConsumerGroupHeartbeat, reporting what it owns) until `done`, then notes what
/// each holds as `step`.
async fn settle(
    s: &mut Session,
    step: &str,
    classic: &[&str],
    modern: &[&str],
    done: impl Fn(&Session) -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    while !done(s) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{}: {step}: never settled",
            s.target
        );
        for member in classic {
            s.classic_round(member).await?;
        }
        for member in modern {
            let beat = s.cgh_request(member);
            let answer = s.call_quietly(member, &beat, 1).await?;
            s.adopt(member, &answer);
        }
    }
    let mut fields = Vec::new();
    for member in classic {
        let bytes = s
            .member_state(member)
            .map(|m| m.assignment.clone())
            .unwrap_or_default();
        fields.push((format!("{member} holds"), s.names.assignment_shape(&bytes)));
    }
    for member in modern {
        fields.push((format!("{member} holds"), s.owned_shape(member)));
    }
    s.note(step, fields);
    Ok(())
}

/// Partitions a classic member's last SyncGroup gave it.
fn classic_count(s: &Session, member: &str) -> usize {
    let bytes = s
        .member_state(member)
        .map(|m| m.assignment.clone())
        .unwrap_or_default();
    let topics = assignor_host_tests::decode_assignment(bytes).unwrap_or_default();
    topics.iter().map(|(_, ps)| ps.len()).sum()
}

#[tokio::test]
async fn a_classic_group_upgraded_online_and_left_by_its_consumer_protocol_member() {
    let spec = Spec::new("migration")
        .topic("t", 4)
        .differs(Difference::HostLeads)
        .differs(Difference::NoDowngrade);
    check(spec, |s| {
        Box::pin(async move {
            let list = ListGroupsRequest::default();
            let describe = DescribeGroupsRequest::default().with_groups(vec![s.group("g")]);
            let joined = s.join_group("c", "c joins with JoinGroup", 9).await?;
            s.sync_group("c syncs", &[("c", &joined)], 5).await?;
            s.call("admin", "list the classic group", &list, 5).await?;

            let join = s.cgh_join_request("a", &["t"]);
            s.cgh("a", "a joins with the consumer protocol", &join)
                .await?;
            s.call("admin", "list the upgraded group", &list, 5).await?;
            let shared = |s: &Session| s.owned_count("a") == 2 && classic_count(s, "c") == 2;
            settle(s, "c and a share", &["c"], &["a"], shared).await?;

            let leave = s.cgh_request("a").with_member_epoch(-1);
            s.cgh("a", "a leaves", &leave).await?;
            let alone = |s: &Session| classic_count(s, "c") == 4;
            settle(s, "c alone again", &["c"], &[], alone).await?;
            s.call(
                "admin",
                "list after the last consumer-protocol member left",
                &list,
                5,
            )
            .await?;
            s.call("admin", "describe after it left", &describe, 5)
                .await?;
            Ok(())
        })
    })
    .await;
}
