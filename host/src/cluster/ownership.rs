//! What this node holds of the cluster's shards, how long it may serve them, and what it knows
//! of the other nodes: the state the membership thread writes, the wire reads (FindCoordinator,
//! Metadata) and the driver's gate asks.
//!
//! **The lease.** Holding a shard (the upstream group assigned its partition here) is not
//! enough to serve its groups: this node serves them only while its lease lasts. The lease is
//! renewed by each generation-checked offset commit of the node's group that the upstream
//! coordinator accepts (or answers REBALANCE_IN_PROGRESS, which also says this member is
//! known), and it lasts `session_timeout - heartbeat_interval - fence_margin` from the moment
//! that commit was *sent*. The upstream removes a member no earlier than `session_timeout`
//! after the last heartbeat it received, and librdkafka sends one every `heartbeat_interval`,
//! so a node cut off from the upstream stops serving at least `fence_margin` before the
//! upstream can give its shards to another node. A commit refused as UNKNOWN_MEMBER_ID,
//! or FENCED_INSTANCE_ID ends the lease at once.
//!
//! **A gained shard waits one lease.** A shard assigned here is served only a lease's length
//! after the assignment. A shard handed over by a live node was released before the upstream
//! reassigned it, so the wait costs only time; but a shard whose holder was dropped from the
//! node group (removed as dead by a peer, or evicted) may still be served by it until its
//! lease runs out, and its lease was last renewed before it was dropped, so before this
//! assignment: waiting one lease means the two never serve a group at the same moment.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use serde::Serialize;

use super::shards::shard_of;
use crate::driver::{Admission, Gate};

/// A host node as clients reach it: its coordinator node id and advertised address, and the
/// port of its admin API (at the same host), where another node forwards an admin call about a
/// group this node coordinates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Peer {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_port: Option<u16>,
}

impl Peer {
    /// How a node names itself in the client id of its member of the node group:
    /// `assignor-host/<node id>/<host>:<port>[/<admin port>]`.
    pub fn client_id(&self) -> String {
        let admin = self.admin_port.map(|p| format!("/{p}")).unwrap_or_default();
        format!(
            "assignor-host/{}/{}:{}{admin}",
            self.node_id, self.host, self.port
        )
    }

    /// The peer a node group member's client id names (see [`Peer::client_id`]).
    pub fn from_client_id(client_id: &str) -> Option<Peer> {
        let rest = client_id.strip_prefix("assignor-host/")?;
        let (node_id, rest) = rest.split_once('/')?;
        let (address, admin_port) = match rest.rsplit_once('/') {
            Some((address, admin)) => (address, Some(admin.parse().ok()?)),
            None => (rest, None),
        };
        let (host, port) = address.rsplit_once(':')?;
        Some(Peer {
            node_id: node_id.parse().ok()?,
            host: host.to_owned(),
            port: port.parse().ok()?,
            admin_port,
        })
    }
}

/// The other nodes, as the last read of the node group found them.
#[derive(Debug, Clone, Default)]
struct View {
    /// Owner of each shard (an index into `nodes`), by the upstream group's assignments.
    owners: Vec<Option<usize>>,
    /// Every member of the node group that names a node, this one included.
    nodes: Vec<Peer>,
    /// Node ids whose coordinator endpoint did not accept a connection at the last probe.
    unreachable: Vec<i32>,
}

/// The shards held here, the lease, and the view of the other nodes.
pub struct Ownership {
    /// The cluster's name (`cluster.name`), for the status and the metrics.
    cluster: String,
    count: u32,
    held: Vec<AtomicBool>,
    base: Instant,
    /// Milliseconds since `base` until which the lease lasts; 0: no lease.
    lease_until: AtomicU64,
    /// Per shard, milliseconds since `base` from which it may be served (a lease after it was
    /// gained).
    servable_from: Vec<AtomicU64>,
    lease: Duration,
    me: Peer,
    /// This node's member id in the node group now (librdkafka's), empty before it joined.
    member_id: RwLock<String>,
    view: RwLock<View>,
    /// The peer watch found this node left out of a stable node group: the membership thread
    /// joins it again ([`Self::ask_rejoin`]).
    rejoin: AtomicBool,
}

/// What `GET /v1/cluster` shows of this node.
#[derive(Debug, Clone, Serialize)]
pub struct OwnershipStatus {
    /// The cluster's name.
    pub cluster: String,
    pub node: Peer,
    pub shards: u32,
    /// The shards the upstream group assigned here.
    pub held: Vec<u32>,
    /// The held shards whose groups are served now (past their wait, under the lease).
    pub serving: Vec<u32>,
    /// Whether the lease lasts now (the held shards' groups are served only then).
    pub leased: bool,
    /// Milliseconds the lease has left (0: none).
    pub lease_left_ms: u64,
    /// Every node of the cluster with the shards the upstream group assigned it, as read last.
    pub nodes: Vec<NodeStatus>,
}

/// One node in [`OwnershipStatus`].
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    #[serde(flatten)]
    pub node: Peer,
    pub shards: Vec<u32>,
    /// False when its coordinator endpoint refused the last probe.
    pub reachable: bool,
}

impl Ownership {
    /// `count` shards, none held, no lease; a lease lasts `lease` from its commit's sending.
    pub fn new(count: u32, me: Peer, lease: Duration) -> Ownership {
        Ownership {
            cluster: String::new(),
            count: count.max(1),
            held: (0..count.max(1)).map(|_| AtomicBool::new(false)).collect(),
            base: Instant::now(),
            lease_until: AtomicU64::new(0),
            servable_from: (0..count.max(1)).map(|_| AtomicU64::new(0)).collect(),
            lease,
            me,
            member_id: RwLock::new(String::new()),
            view: RwLock::new(View::default()),
            rejoin: AtomicBool::new(false),
        }
    }

    /// The same, in the cluster named `cluster`.
    pub fn named(self, cluster: &str) -> Ownership {
        Ownership {
            cluster: cluster.to_owned(),
            ..self
        }
    }

    /// This node.
    pub fn me(&self) -> &Peer {
        &self.me
    }

    /// This node's member id in the node group now.
    pub fn member_id(&self) -> String {
        self.member_id.read().clone()
    }

    /// The membership thread read its member id.
    pub fn set_member_id(&self, id: String) {
        if *self.member_id.read() != id {
            *self.member_id.write() = id;
        }
    }

    /// Asks the membership thread to leave the node group and join it again.
    pub fn ask_rejoin(&self) {
        self.rejoin.store(true, Ordering::Release);
    }

    /// Whether a rejoin was asked since the last call.
    pub fn take_rejoin(&self) -> bool {
        self.rejoin.swap(false, Ordering::AcqRel)
    }

    /// The number of shards.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The shard of a group.
    pub fn shard_of(&self, group_id: &str) -> u32 {
        shard_of(group_id, self.count)
    }

    /// The upstream group assigned these shards here: they are served from a lease's length
    /// from now (see the module docs), while the lease lasts.
    pub fn gain(&self, shards: &[u32]) {
        let from = self.millis(self.base.elapsed() + self.lease);
        for &shard in shards {
            if let (Some(held), Some(servable)) = (
                self.held.get(shard as usize),
                self.servable_from.get(shard as usize),
            ) {
                servable.store(from, Ordering::Release);
                held.store(true, Ordering::Release);
            }
        }
    }

    /// How long a lease lasts (and a gained shard waits).
    pub fn lease(&self) -> Duration {
        self.lease
    }

    fn millis(&self, since_base: Duration) -> u64 {
        u64::try_from(since_base.as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether `shard` is held, past its wait, and the lease lasts: its groups are served.
    pub fn serving(&self, shard: u32) -> bool {
        let past_wait = self
            .servable_from
            .get(shard as usize)
            .is_some_and(|from| self.millis(self.base.elapsed()) >= from.load(Ordering::Acquire));
        self.holds(shard) && past_wait && self.leased()
    }

    /// These shards are no longer held here.
    pub fn lose(&self, shards: &[u32]) {
        for &shard in shards {
            if let Some(held) = self.held.get(shard as usize) {
                held.store(false, Ordering::Release);
            }
        }
    }

    /// Whether `shard` is held here (lease or not).
    pub fn holds(&self, shard: u32) -> bool {
        self.held
            .get(shard as usize)
            .is_some_and(|h| h.load(Ordering::Acquire))
    }

    /// The shards held here.
    pub fn held(&self) -> Vec<u32> {
        (0..self.count).filter(|&s| self.holds(s)).collect()
    }

    /// A commit sent at `sent` was accepted: the lease lasts until `sent + lease` (never
    /// shortened by an older commit answered late).
    pub fn renew(&self, sent: Instant) {
        let until = self
            .millis(sent.saturating_duration_since(self.base) + self.lease)
            .max(1);
        self.lease_until.fetch_max(until, Ordering::AcqRel);
    }

    /// The upstream no longer counts this node a member: the lease ends now.
    pub fn fence(&self) {
        self.lease_until.store(0, Ordering::Release);
    }

    /// What the lease has left.
    pub fn lease_left(&self) -> Duration {
        let until = Duration::from_millis(self.lease_until.load(Ordering::Acquire));
        until.saturating_sub(self.base.elapsed())
    }

    /// Whether the lease lasts now.
    pub fn leased(&self) -> bool {
        !self.lease_left().is_zero()
    }

    /// The node FindCoordinator names for `group_id`: this one while it holds the shard (it
    /// may still be waiting to serve it: its requests then get COORDINATOR_LOAD_IN_PROGRESS),
    /// else the reachable node the upstream group assigned the shard to, and when there is none
    /// (the holder died and the node group has not given the shard out again) this one too, so
    /// clients keep retrying instead of giving up on FindCoordinator (kafkajs stops a consumer
    /// for good when FindCoordinator keeps failing).
    pub fn coordinator_of(&self, group_id: &str) -> Peer {
        let shard = self.shard_of(group_id);
        if self.holds(shard) {
            return self.me.clone();
        }
        self.live_owner(shard).unwrap_or_else(|| self.me.clone())
    }

    /// The other node that holds `shard` by the last read, if its endpoint answers.
    fn live_owner(&self, shard: u32) -> Option<Peer> {
        let view = self.view.read();
        let owner = view.owners.get(shard as usize).copied().flatten()?;
        let peer = view.nodes.get(owner)?;
        let live = peer.node_id != self.me.node_id && !view.unreachable.contains(&peer.node_id);
        live.then(|| peer.clone())
    }

    /// Every other node whose coordinator endpoint answered the last probe (Metadata lists
    /// them, so a client whose node dies can still reach the rest).
    pub fn live_peers(&self) -> Vec<Peer> {
        let view = self.view.read();
        view.nodes
            .iter()
            .filter(|p| p.node_id != self.me.node_id && !view.unreachable.contains(&p.node_id))
            .cloned()
            .collect()
    }

    /// The node group as just read: each member's node and the shards assigned to it.
    pub fn set_view(&self, members: Vec<(Peer, Vec<u32>)>, unreachable: Vec<i32>) {
        let mut owners = vec![None; self.count as usize];
        let mut nodes = Vec::with_capacity(members.len());
        for (index, (peer, shards)) in members.into_iter().enumerate() {
            for shard in shards {
                if let Some(owner) = owners.get_mut(shard as usize) {
                    *owner = Some(index);
                }
            }
            nodes.push(peer);
        }
        *self.view.write() = View {
            owners,
            nodes,
            unreachable,
        };
    }

    /// This node, its shards and lease, and every node as read last.
    pub fn status(&self) -> OwnershipStatus {
        let view = self.view.read().clone();
        let nodes = view
            .nodes
            .iter()
            .enumerate()
            .map(|(index, peer)| NodeStatus {
                node: peer.clone(),
                shards: (0..self.count)
                    .filter(|&s| view.owners.get(s as usize) == Some(&Some(index)))
                    .collect(),
                reachable: !view.unreachable.contains(&peer.node_id),
            })
            .collect();
        OwnershipStatus {
            cluster: self.cluster.clone(),
            node: self.me.clone(),
            shards: self.count,
            held: self.held(),
            serving: (0..self.count).filter(|&s| self.serving(s)).collect(),
            leased: self.leased(),
            lease_left_ms: u64::try_from(self.lease_left().as_millis()).unwrap_or(u64::MAX),
            nodes,
        }
    }
}

impl Gate for Ownership {
    fn admit(&self, group_id: &str) -> Admission {
        let shard = self.shard_of(group_id);
        if self.serving(shard) {
            Admission::Serve
        } else if !self.holds(shard) && self.live_owner(shard).is_some() {
            Admission::Elsewhere
        } else {
            Admission::Loading
        }
    }
}

#[cfg(test)]
impl Ownership {
    /// Whether requests for `group_id` are served here now.
    pub fn serves(&self, group_id: &str) -> bool {
        self.admit(group_id) == Admission::Serve
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(id: i32, port: i32) -> Peer {
        Peer {
            node_id: id,
            host: "127.0.0.1".into(),
            port,
            admin_port: None,
        }
    }

    #[test]
    fn a_client_id_names_its_node_and_nothing_else_does() {
        let me = peer(7, 19092);
        assert_eq!(Peer::from_client_id(&me.client_id()), Some(me));
        let v6 = Peer {
            node_id: 3,
            host: "::1".into(),
            port: 9,
            admin_port: Some(9644),
        };
        assert_eq!(v6.client_id(), "assignor-host/3/::1:9/9644");
        assert_eq!(Peer::from_client_id(&v6.client_id()), Some(v6));
        for other in [
            "rdkafka",
            "assignor-host",
            "assignor-host/x/h:1",
            "assignor-host/1/h",
            "assignor-host/1/h:1/admin",
        ] {
            assert_eq!(Peer::from_client_id(other), None, "{other}");
        }
    }

    /// An ownership whose shards in `held` were gained long enough ago to be served.
    fn past_the_wait(count: u32, me: Peer, lease: Duration, held: &[u32]) -> Ownership {
        let ownership = Ownership::new(count, me, lease);
        ownership.gain(held);
        for &shard in held {
            ownership.servable_from[shard as usize].store(0, Ordering::Release);
        }
        ownership
    }

    #[test]
    fn a_gained_shard_waits_one_lease_before_it_is_served() {
        let ownership = Ownership::new(50, peer(1, 1), Duration::from_secs(1));
        ownership.gain(&[22]);
        ownership.renew(Instant::now());
        assert!(
            !ownership.serves("hello"),
            "just gained: the old holder may still serve"
        );
        assert_eq!(ownership.status().serving, Vec::<u32>::new());
        std::thread::sleep(Duration::from_millis(1100));
        ownership.renew(Instant::now());
        assert!(
            ownership.serves("hello"),
            "a lease later, under a fresh lease"
        );
        assert_eq!(ownership.status().serving, vec![22]);
    }

    #[test]
    fn a_held_shard_is_served_only_under_a_lease() {
        let ownership = past_the_wait(50, peer(1, 1), Duration::from_secs(60), &[22]);
        let group = "hello"; // shard 22 of 50
        assert_eq!(ownership.shard_of(group), 22);
        assert!(!ownership.serves(group), "held, no lease yet");
        ownership.renew(Instant::now());
        assert!(ownership.serves(group));
        assert!(!ownership.serves("orders-app"), "shard 5 is not held");
        ownership.fence();
        assert!(!ownership.serves(group), "fenced");
        ownership.renew(Instant::now());
        assert!(ownership.serves(group));
        ownership.lose(&[22]);
        assert!(!ownership.serves(group), "lost");
    }

    #[test]
    fn a_lease_runs_from_the_commits_sending_and_an_old_answer_never_shortens_it() {
        let ownership = Ownership::new(4, peer(1, 1), Duration::from_secs(10));
        ownership.renew(Instant::now());
        let left = ownership.lease_left();
        assert!(left > Duration::from_secs(9) && left <= Duration::from_secs(10));
        // A commit sent long ago and answered only now: its lease has run out already.
        let fresh = Ownership::new(4, peer(1, 1), Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(30));
        fresh.renew(fresh.base);
        assert!(fresh.lease_left() < Duration::from_secs(10));
        // The older answer does not pull the newer lease back.
        ownership.renew(ownership.base);
        assert!(ownership.lease_left() > Duration::from_secs(9));
    }

    #[test]
    fn the_coordinator_of_a_group_is_its_shards_live_holder_else_this_node() {
        let ownership = past_the_wait(50, peer(1, 100), Duration::from_secs(60), &[]);
        ownership.set_view(
            vec![(peer(1, 100), vec![22]), (peer(2, 200), vec![5])],
            vec![],
        );
        // Shard 5 is node 2's: named there, refused here.
        assert_eq!(ownership.coordinator_of("orders-app"), peer(2, 200));
        assert_eq!(ownership.admit("orders-app"), Admission::Elsewhere);
        // Shard 22 is held here, no lease yet: named here, "loading" until the lease.
        ownership.gain(&[22]);
        ownership.servable_from[22].store(0, Ordering::Release);
        assert_eq!(ownership.coordinator_of("hello"), peer(1, 100));
        assert_eq!(ownership.admit("hello"), Admission::Loading);
        ownership.renew(Instant::now());
        assert_eq!(ownership.admit("hello"), Admission::Serve);
        // Shard 6 has no holder in the view: named here, "loading", so clients retry.
        assert_eq!(
            ownership.coordinator_of("console-consumer-12345"),
            peer(1, 100)
        );
        assert_eq!(
            ownership.admit("console-consumer-12345"),
            Admission::Loading
        );
        assert_eq!(ownership.live_peers(), vec![peer(2, 200)]);
        // Node 2's endpoint is dead: its shard is nobody's until the node group moves it.
        ownership.set_view(
            vec![(peer(1, 100), vec![]), (peer(2, 200), vec![5])],
            vec![2],
        );
        assert!(
            ownership.live_peers().is_empty(),
            "unreachable peers are not listed"
        );
        assert_eq!(ownership.coordinator_of("orders-app"), peer(1, 100));
        assert_eq!(ownership.admit("orders-app"), Admission::Loading);
        let status = ownership.status();
        assert_eq!(status.held, vec![22]);
        assert_eq!(status.nodes[1].shards, vec![5]);
        assert!(!status.nodes[1].reachable);
    }
}
