//! What this node knows of the others: every `probe_interval` it describes the node group on
//! the upstream (DescribeGroups: each member's client id names its node, its assignment the
//! shards it holds), tries a TCP connection to each other node's coordinator endpoint, and
//! writes both into [`Ownership`] (FindCoordinator names owners from it, Metadata lists the
//! reachable nodes).
//!
//! **A dead node on an upstream that never evicts.** Kafka drops a member whose heartbeats
//! stop after its session timeout and rebalances; `noida-db` never does (it drops a member
//! only when a rebalance ends without it, and every rebalance then waits the dead member's
//! rebalance timeout, longer than any lease, with the living members' requests parked behind
//! their JoinGroup). So a node whose endpoint has refused connections for `dead_after`
//! removes that member from the node group (LeaveGroup on its behalf, as Kafka's admin client
//! removes members): the upstream rebalances at once among the living, who take its shards.
//! On Kafka this only comes before the session timeout. Removing a node that is alive but
//! unreachable from its peers is safe too: a gained shard is served only once the previous
//! holder's lease must have run out (`ownership.rs`), and that node's next renewal is refused.
//!
//! **A node's own stale members.** A node whose membership was lost rejoins with a new member
//! id; on noida-db its old member stays in the group, and every rebalance then waits for it
//! (its rebalance timeout, longer than any lease). So a node removes every member that names it
//! in its client id but is not its current member at two reads in a row (the current id is
//! read from librdkafka at every turn of the member's loop, so a membership that began between
//! a read of the group and a read of the id is never removed).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::ConsumerProtocolAssignment;
use kafka_protocol::protocol::Decodable;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ownership::{Ownership, Peer};
use crate::upstream::client::UpstreamClient;

/// How the peers are watched.
pub(super) struct Watch {
    pub client: UpstreamClient,
    pub group: String,
    pub topic: String,
    pub ownership: Arc<Ownership>,
    pub probe_interval: Duration,
    /// How long a peer's endpoint refuses before its member is removed from the node group.
    pub dead_after: Duration,
}

/// The shards of `topic` in a member's assignment (ConsumerProtocolAssignment: a version, then
/// the body at that version); nothing for bytes that do not decode.
pub(super) fn assigned_shards(assignment: &Bytes, topic: &str) -> Vec<u32> {
    let mut bytes = assignment.clone();
    if bytes.remaining() < 2 {
        return Vec::new();
    }
    let version = bytes.get_i16();
    let Ok(decoded) = ConsumerProtocolAssignment::decode(&mut bytes, version.clamp(0, 3)) else {
        return Vec::new();
    };
    let mut shards: Vec<u32> = decoded
        .assigned_partitions
        .iter()
        .filter(|t| t.topic.as_str() == topic)
        .flat_map(|t| t.partitions.iter().filter_map(|&p| u32::try_from(p).ok()))
        .collect();
    shards.sort_unstable();
    shards
}

/// Runs until `stop`.
pub(super) async fn run(watch: Watch, stop: CancellationToken) {
    // Since when each peer's endpoint has refused.
    let mut down_since: HashMap<i32, Instant> = HashMap::new();
    let me = watch.ownership.me().node_id;
    // This node's member ids that were not its current one at the last read.
    let mut stale_before: HashSet<String> = HashSet::new();
    // Since when this node has been left out of a stable node group.
    let mut left_out_since: Option<Instant> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(watch.probe_interval) => {}
        }
        let described = match watch.client.describe_group(&watch.group).await {
            Ok(described) => described,
            Err(error) => {
                tracing::debug!(%error, "cannot describe the node group");
                continue;
            }
        };
        let mut members: Vec<(Peer, Vec<u32>)> = Vec::new();
        let mut stale_now = HashSet::new();
        let mut unreachable = Vec::new();
        for member in &described.members {
            let Some(peer) = Peer::from_client_id(member.client_id.as_str()) else {
                continue;
            };
            let shards = assigned_shards(&member.member_assignment, &watch.topic);
            let member_id = member.member_id.as_str();
            if peer.node_id == me {
                let current = watch.ownership.member_id();
                // Stale at two reads in a row: a membership that began between the read of
                // the group and the read of the current id is never taken for an old one.
                let stale = !current.is_empty() && member_id != current;
                if stale && !stale_before.contains(member_id) {
                    stale_now.insert(member_id.to_owned());
                    continue;
                }
                if stale {
                    let removed = watch.client.remove_member(&watch.group, member_id).await;
                    tracing::info!(
                        member = member_id,
                        current = %current,
                        answer = ?removed,
                        "removed a stale member of this node from the node group"
                    );
                    continue;
                }
            }
            if peer.node_id == me || probe(&peer, watch.probe_interval).await {
                down_since.remove(&peer.node_id);
                members.push((peer, shards));
                continue;
            }
            unreachable.push(peer.node_id);
            let since = *down_since.entry(peer.node_id).or_insert_with(Instant::now);
            if since.elapsed() >= watch.dead_after {
                let removed = watch.client.remove_member(&watch.group, member_id).await;
                tracing::warn!(
                    node = peer.node_id,
                    endpoint = %format!("{}:{}", peer.host, peer.port),
                    down_for = ?since.elapsed(),
                    member = member_id,
                    answer = ?removed,
                    "a node's coordinator endpoint refuses connections: removed its member from the node group"
                );
            }
            members.push((peer, shards));
        }
        down_since.retain(|id, _| members.iter().any(|(p, _)| p.node_id == *id));
        stale_before = stale_now;
        let stable = described.group_state.as_str() == "Stable";
        if stable
            && left_out(
                &members,
                me,
                watch.ownership.count(),
                &watch.ownership.held(),
            )
        {
            let since = *left_out_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= watch.dead_after {
                tracing::warn!(
                    left_out_for = ?since.elapsed(),
                    "this node holds no shard of a stable node group whose other members hold \
                     them all: joining it again"
                );
                watch.ownership.ask_rejoin();
                left_out_since = None;
            }
        } else {
            left_out_since = None;
        }
        watch.ownership.set_view(members, unreachable);
    }
}

/// Whether this node (`me`, holding `held`) is left out: in the group, holding no shard, while
/// the others hold all `count` between them.
///
/// A stable group of at most `count` members gives each member some shards, so this is not a
/// state the cooperative-sticky assignor ends in. It is noida-db's: when a node joins a stable
/// node group and the others rejoin at once, it sometimes completes the generation, answers
/// the leader's JoinGroup with a member list that lacks the joiner, and never answers the
/// joiner's JoinGroup of that generation; the joiner's request times out at the rebalance
/// timeout, the next generation again hands the leader a list without it, and the group then
/// stays stable with the joiner holding nothing (seen with librdkafka's `cgrp` debug log in
/// `cluster::tests::two_nodes_...`). Joining again (a new JoinGroup into a stable group) makes
/// the upstream rebalance once more.
fn left_out(members: &[(Peer, Vec<u32>)], me: i32, count: u32, held: &[u32]) -> bool {
    let mine = members.iter().any(|(p, _)| p.node_id == me);
    let others: usize = members
        .iter()
        .filter(|(p, _)| p.node_id != me)
        .map(|(_, shards)| shards.len())
        .sum();
    mine && held.is_empty()
        && members.len() > 1
        && members.len() <= count as usize
        && others == count as usize
}

/// Whether `peer`'s coordinator endpoint accepts a TCP connection within `timeout`.
async fn probe(peer: &Peer, timeout: Duration) -> bool {
    let address = format!("{}:{}", peer.host, peer.port);
    matches!(
        tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address)).await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn encoded(version: i16, topics: &[(&str, &[i32])]) -> Bytes {
        let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
            topics
                .iter()
                .map(|(name, partitions)| {
                    TopicPartition::default()
                        .with_topic(TopicName(StrBytes::from_string((*name).to_owned())))
                        .with_partitions(partitions.to_vec())
                })
                .collect(),
        );
        let mut bytes = bytes::BytesMut::new();
        bytes.extend_from_slice(&version.to_be_bytes());
        assignment.encode(&mut bytes, version).unwrap();
        bytes.freeze()
    }

    fn peer(node_id: i32) -> Peer {
        Peer {
            node_id,
            host: "127.0.0.1".into(),
            port: 9092,
            admin_port: None,
        }
    }

    #[test]
    fn a_node_is_left_out_only_when_the_others_hold_every_shard_and_it_none() {
        let held_by = |a: Vec<u32>, b: Vec<u32>| vec![(peer(1), a), (peer(2), b)];
        let all: Vec<u32> = (0..4).collect();
        // Node 2 in the group with nothing, node 1 with all four: left out.
        assert!(left_out(&held_by(all.clone(), vec![]), 2, 4, &[]));
        // The second round of a cooperative rebalance: revoked shards held by nobody yet.
        assert!(!left_out(&held_by(vec![2, 3], vec![]), 2, 4, &[]));
        // Node 2 holds some (by its own count), or is not in the group, or is alone.
        assert!(!left_out(&held_by(all.clone(), vec![]), 2, 4, &[1]));
        assert!(!left_out(&[(peer(1), all.clone())], 2, 4, &[]));
        assert!(!left_out(&[(peer(2), vec![])], 2, 4, &[]));
        // More nodes than shards: some must hold none.
        assert!(!left_out(&held_by(vec![0], vec![]), 2, 1, &[]));
    }

    #[test]
    fn a_members_shards_are_its_partitions_of_the_shard_topic() {
        let shards = "__assignor_host.c.shards";
        for version in [0, 1, 3] {
            let bytes = encoded(version, &[(shards, &[7, 2, 40]), ("other", &[1])]);
            assert_eq!(
                assigned_shards(&bytes, shards),
                vec![2, 7, 40],
                "v{version}"
            );
        }
        assert!(assigned_shards(&Bytes::new(), shards).is_empty());
        assert!(assigned_shards(&Bytes::from_static(&[0, 1, 0xff]), shards).is_empty());
    }
}
