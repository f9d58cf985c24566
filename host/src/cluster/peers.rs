//! What this node knows of the others: every `probe_interval` it describes the node group on
//! the upstream (DescribeGroups: each member's client id names its node, its assignment the
//! shards it holds), tries a TCP connection to each other node's coordinator endpoint, and
//! writes both into [`Ownership`] (FindCoordinator names owners from it, Metadata lists the
//! reachable nodes).
//!
//! **A node that is gone.** A connection to a node's coordinator endpoint that is *refused*
//! means no process listens there: the node died on a living machine (a node binds its listener
//! before it joins the node group, and leaves the group before it closes it). Such a node is
//! removed from the node group once its endpoint has refused at every probe for `gone_after`
//! (500 ms by default; probes come every quarter of it meanwhile), with LeaveGroup on its
//! behalf as Kafka's admin client removes members: the upstream rebalances at once among the
//! living, who take its shards, where Kafka alone would wait out the node's session timeout
//! (10 s by default). A node whose endpoint does not answer at all (a machine or a network
//! gone) may be alive and serving, so it is removed only after `dead_after` (the session
//! timeout): Kafka has evicted it by then, and `noida-db`, which never evicts (it drops a
//! member only when a rebalance ends without it, and every rebalance then waits the dead
//! member's rebalance timeout, longer than any lease, with the living members' requests parked
//! behind their JoinGroup), needs the removal. Removing a node that is alive is safe either way:
//! a gained shard is served only once the previous holder's lease must have run out
//! (`ownership.rs`), and that node's next renewal is refused.
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
    /// How long a peer's endpoint refuses connections, at every probe, before its member is
    /// removed from the node group (`cluster.gone_after`).
    pub gone_after: Duration,
    /// How long a peer's endpoint fails probes in any way (refused or silent) before its
    /// member is removed from the node group.
    pub dead_after: Duration,
}

impl Watch {
    /// The wait before the next probe: a quarter of `gone_after` while a peer refuses, so a
    /// gone node is confirmed within about `gone_after`, else `probe_interval`.
    fn next_probe(&self, refusing: bool) -> Duration {
        if refusing {
            self.probe_interval.min(self.gone_after / 4)
        } else {
            self.probe_interval
        }
    }
}

/// What a TCP connection to a peer's coordinator endpoint found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// It connected.
    Accepts,
    /// The connection was refused: nothing listens there.
    Refuses,
    /// No answer within the probe's timeout, or another error: the machine or the network.
    Silent,
}

/// Since when a peer's probes have failed, and since when they have all been refusals.
#[derive(Debug, Clone, Copy)]
struct Down {
    since: Instant,
    refusing_since: Option<Instant>,
}

impl Down {
    /// Records a failed probe at `now`.
    fn failed(down: Option<Down>, probe: Probe, now: Instant) -> Down {
        let since = down.map_or(now, |d| d.since);
        let refusing_since = match probe {
            Probe::Refuses => Some(down.and_then(|d| d.refusing_since).unwrap_or(now)),
            Probe::Accepts | Probe::Silent => None,
        };
        Down {
            since,
            refusing_since,
        }
    }

    /// Whether the peer is to be removed from the node group at `now`, and why: it has
    /// refused for `gone_after`, or failed for `dead_after` (`Watch`).
    fn verdict(
        &self,
        gone_after: Duration,
        dead_after: Duration,
        now: Instant,
    ) -> Option<&'static str> {
        if self
            .refusing_since
            .is_some_and(|since| now - since >= gone_after)
        {
            Some("a node's coordinator endpoint refuses connections: the node is gone")
        } else if now - self.since >= dead_after {
            Some("a node's coordinator endpoint has not answered for a session timeout")
        } else {
            None
        }
    }
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
    // Each peer whose endpoint failed its last probe.
    let mut down: HashMap<i32, Down> = HashMap::new();
    let me = watch.ownership.me().node_id;
    // This node's member ids that were not its current one at the last read.
    let mut stale_before: HashSet<String> = HashSet::new();
    // Since when this node has been left out of a stable node group.
    let mut left_out_since: Option<Instant> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(watch.next_probe(
                down.values().any(|d| d.refusing_since.is_some()),
            )) => {}
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
            let found = if peer.node_id == me {
                Probe::Accepts
            } else {
                probe(&peer, watch.probe_interval).await
            };
            if found == Probe::Accepts {
                down.remove(&peer.node_id);
                members.push((peer, shards));
                continue;
            }
            unreachable.push(peer.node_id);
            let now = Instant::now();
            let state = Down::failed(down.get(&peer.node_id).copied(), found, now);
            down.insert(peer.node_id, state);
            if let Some(why) = state.verdict(watch.gone_after, watch.dead_after, now) {
                let removed = watch.client.remove_member(&watch.group, member_id).await;
                tracing::warn!(
                    node = peer.node_id,
                    endpoint = %format!("{}:{}", peer.host, peer.port),
                    down_for = ?now - state.since,
                    probe = ?found,
                    member = member_id,
                    answer = ?removed,
                    "{why}: removed its member from the node group"
                );
            }
            members.push((peer, shards));
        }
        down.retain(|id, _| members.iter().any(|(p, _)| p.node_id == *id));
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

/// Whether `peer`'s coordinator endpoint accepts a TCP connection within `timeout`, refuses
/// it, or says nothing.
async fn probe(peer: &Peer, timeout: Duration) -> Probe {
    let address = format!("{}:{}", peer.host, peer.port);
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address)).await {
        Ok(Ok(_)) => Probe::Accepts,
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::ConnectionRefused => Probe::Refuses,
        Ok(Err(_)) | Err(_) => Probe::Silent,
    }
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
    fn a_node_whose_endpoint_refuses_is_gone_after_gone_after_and_a_silent_one_after_dead_after() {
        let (gone_after, dead_after) = (Duration::from_millis(500), Duration::from_secs(10));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let verdict = |d: Down, ms| d.verdict(gone_after, dead_after, at(ms));

        // Refused at every probe: gone once the refusals span gone_after, not before.
        let mut d = Down::failed(None, Probe::Refuses, at(0));
        assert_eq!(verdict(d, 0), None);
        d = Down::failed(Some(d), Probe::Refuses, at(250));
        assert_eq!(verdict(d, 250), None);
        d = Down::failed(Some(d), Probe::Refuses, at(500));
        assert_eq!(
            verdict(d, 500),
            Some("a node's coordinator endpoint refuses connections: the node is gone")
        );

        // Silent: maybe alive behind a network; only after dead_after.
        let mut s = Down::failed(None, Probe::Silent, at(0));
        s = Down::failed(Some(s), Probe::Silent, at(9_000));
        assert_eq!(verdict(s, 9_000), None);
        assert_eq!(
            verdict(s, 10_000),
            Some("a node's coordinator endpoint has not answered for a session timeout")
        );

        // A silent probe between refusals starts the refusals' count again, and the failures'
        // count stays from the first.
        let mut m = Down::failed(None, Probe::Refuses, at(0));
        m = Down::failed(Some(m), Probe::Silent, at(300));
        m = Down::failed(Some(m), Probe::Refuses, at(600));
        assert_eq!(verdict(m, 1_000), None, "refusing only since 600 ms");
        assert_eq!(verdict(m, 1_100).map(|w| w.contains("refuses")), Some(true));
        assert_eq!(m.since, at(0));
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
