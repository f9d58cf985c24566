//! Conformance with Kafka (docs/conformance.md): choosing the protocol. Kafka's vote among
//! the protocols every member proposes, and a protocol no module of the host serves, which
//! the host relays as Kafka does: a member is elected leader, gets the member list and sends
//! the assignment (compared with Kafka field by field, leader included).

use assignor_host_tests::conformance::{Difference, Session, Spec, check};
use assignor_host_tests::str;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{DescribeGroupsRequest, JoinGroupRequest};

/// `member`'s JoinGroup proposing `protocols` in order, each with the same subscription.
fn proposing(s: &Session, member: &str, protocols: &[&str]) -> JoinGroupRequest {
    let request = s.join_request(member);
    let metadata = request.protocols[0].metadata.clone();
    request.with_protocols(
        protocols
            .iter()
            .map(|name| {
                JoinGroupRequestProtocol::default()
                    .with_name(str(name))
                    .with_metadata(metadata.clone())
            })
            .collect(),
    )
}

/// `members` join in turn with their protocols, each rejoining as the next arrives, so all
/// end in one generation; then all sync.
async fn join_in_turn(s: &mut Session, members: &[(&str, &[&str])]) -> anyhow::Result<()> {
    let mut joined = Vec::new();
    for (i, (member, protocols)) in members.iter().enumerate() {
        let mut request = proposing(s, member, protocols);
        let first = s
            .join(member, &format!("{member} joins (id)"), &request, 9)
            .await?;
        request.member_id = first.member_id;
        let pending = s.send(member, &request, 9).await?;
        for (earlier, earlier_protocols) in &members[..i] {
            s.heartbeat_until(
                earlier,
                &format!("{earlier} heartbeats while {member} joins"),
                27,
            )
            .await?;
            let request = proposing(s, earlier, earlier_protocols);
            let rejoin = s.send(earlier, &request, 9).await?;
            joined.push((*earlier, rejoin));
        }
        let mut answers = Vec::new();
        for (earlier, rejoin) in joined.drain(..) {
            answers.push((
                earlier,
                s.receive_join(earlier, &format!("{earlier} rejoins"), rejoin)
                    .await?,
            ));
        }
        answers.push((
            *member,
            s.receive_join(member, &format!("{member} joins"), pending)
                .await?,
        ));
        let refs: Vec<(&str, &_)> = answers.iter().map(|(m, a)| (*m, a)).collect();
        let synced = s
            .sync_group(&format!("all sync after {member}"), &refs, 5)
            .await?;
        s.note_assignments(&format!("assignments after {member}"), &synced);
    }
    Ok(())
}

#[tokio::test]
async fn the_vote_picks_what_most_members_prefer_among_what_all_support() {
    let spec = Spec::new("vote")
        .topic("t", 6)
        .differs(Difference::HostLeads);
    check(spec, |s| {
        Box::pin(async move {
            join_in_turn(
                s,
                &[
                    ("a", &["range", "roundrobin"]),
                    ("b", &["roundrobin", "range"]),
                    ("c", &["roundrobin", "range", "cooperative-sticky"]),
                ],
            )
            .await?;
            let describe = DescribeGroupsRequest::default().with_groups(vec![s.group("g")]);
            s.call("admin", "describe", &describe, 5).await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn a_protocol_without_a_module_is_relayed_with_a_member_as_leader() {
    let spec = Spec::new("relay").topic("t", 4);
    check(spec, |s| {
        Box::pin(async move {
            join_in_turn(s, &[("a", &["client-side"]), ("b", &["client-side"])]).await?;
            let describe = DescribeGroupsRequest::default().with_groups(vec![s.group("g")]);
            s.call("admin", "describe", &describe, 5).await?;
            // The leader rejoining is how a client leader asks for a rebalance.
            let request = proposing(s, "a", &["client-side"]);
            let pending_a = s.send("a", &request, 9).await?;
            s.heartbeat_until("b", "b heartbeats while a rejoins", 27)
                .await?;
            let request = proposing(s, "b", &["client-side"]);
            let pending_b = s.send("b", &request, 9).await?;
            let a = s.receive_join("a", "a rejoins", pending_a).await?;
            let b = s.receive_join("b", "b rejoins", pending_b).await?;
            s.sync_group("both sync", &[("a", &a), ("b", &b)], 5)
                .await?;
            Ok(())
        })
    })
    .await;
}
