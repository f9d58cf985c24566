//! [`Index`]: the lookups an ABI v2 request comes with, so that no strategy rebuilds them.
//!
//! A v2 request names each member's subscription by its position in a table of distinct
//! subscriptions (as topic indices), so when the SDK decodes one it knows, for free, which
//! members share a subscription and which topics each covers. From that it derives, in one
//! pass over the members, Kafka's member order and the members of each subscription in that
//! order, and so the subscribers of every topic without looking at a single name.
//!
//! A request built by hand (a unit test) or by the host has no index; the helpers on
//! [`crate::AssignRequest`] then compute what they need from the names, as ABI v1 did.

use std::sync::Arc;

use super::Member;
use super::order::kafka_member_order;

/// The lookups of a decoded ABI v2 request; empty otherwise. Opaque: read it through the
/// helpers on [`crate::AssignRequest`]. Cloning gives an empty index (a clone may be changed,
/// and an index must never describe another request), and two indexes always compare equal.
#[derive(Default)]
pub struct Index(pub(crate) Option<Arc<IndexData>>);

impl Clone for Index {
    fn clone(&self) -> Index {
        Index(None)
    }
}

impl PartialEq for Index {
    fn eq(&self, _: &Index) -> bool {
        true
    }
}

impl Eq for Index {}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(data) => write!(f, "Index({} subscriptions)", data.subscriptions.len()),
            None => f.write_str("Index(none)"),
        }
    }
}

/// What the index knows. Member positions are indices into `request.members`, topic ids into
/// `request.topics`.
#[derive(Debug, Clone)]
pub(crate) struct IndexData {
    /// Per member, its subscription's position in `subscriptions`.
    pub(crate) subscription_of: Vec<u32>,
    /// Distinct subscriptions as sorted, de-duplicated topic indices.
    pub(crate) subscriptions: Vec<Vec<u32>>,
    /// Member positions in Kafka's member order.
    pub(crate) kafka_order: Vec<u32>,
    /// Per subscription, its members in Kafka's member order.
    pub(crate) members_of: Vec<Vec<u32>>,
    /// Per topic, the subscriptions that include it, ascending.
    pub(crate) subscriptions_of_topic: Vec<Vec<u32>>,
    /// Whether member ids are strictly increasing (so unique, and binary-searchable).
    pub(crate) ids_sorted: bool,
}

impl IndexData {
    /// Builds the index from each member's subscription position. `subscriptions` holds sorted,
    /// de-duplicated topic indices below `topics`.
    pub(crate) fn new(
        members: &[Member],
        topics: usize,
        subscriptions: Vec<Vec<u32>>,
        subscription_of: Vec<u32>,
    ) -> IndexData {
        let ids_sorted = ids_sorted(members);
        let as_sent = ids_sorted && members.iter().all(plain);
        IndexData::with_order(
            members,
            topics,
            subscriptions,
            subscription_of,
            ids_sorted,
            as_sent,
        )
    }

    /// [`IndexData::new`] for a reader that already knows whether the ids are strictly
    /// increasing and whether, on top of that, every member is [`plain`] (so Kafka's order is
    /// the order sent): both are then not worked out again from the ids.
    pub(crate) fn with_order(
        members: &[Member],
        topics: usize,
        subscriptions: Vec<Vec<u32>>,
        subscription_of: Vec<u32>,
        ids_sorted: bool,
        as_sent: bool,
    ) -> IndexData {
        let kafka_order = kafka_order_of(members, as_sent);
        let mut members_of = vec![Vec::new(); subscriptions.len()];
        for &m in &kafka_order {
            members_of[subscription_of[m as usize] as usize].push(m);
        }
        let mut subscriptions_of_topic = vec![Vec::new(); topics];
        for (s, list) in subscriptions.iter().enumerate() {
            if members_of[s].is_empty() {
                continue;
            }
            for &t in list {
                subscriptions_of_topic[t as usize].push(s as u32);
            }
        }
        IndexData {
            subscription_of,
            subscriptions,
            kafka_order,
            members_of,
            subscriptions_of_topic,
            ids_sorted,
        }
    }

    /// Position of each member in Kafka's order.
    pub(crate) fn rank(&self) -> Vec<u32> {
        let mut rank = vec![0u32; self.kafka_order.len()];
        for (r, &m) in self.kafka_order.iter().enumerate() {
            rank[m as usize] = r as u32;
        }
        rank
    }
}

/// Whether member ids are strictly increasing, byte by byte.
pub(crate) fn ids_sorted(members: &[Member]) -> bool {
    members.windows(2).all(|w| w[0].member_id < w[1].member_id)
}

/// Member positions in Kafka's member order.
pub(crate) fn kafka_order(members: &[Member]) -> Vec<u32> {
    kafka_order_of(members, ids_sorted(members) && members.iter().all(plain))
}

/// Whether a member's place in Kafka's order is its place by member id: a dynamic member whose
/// id compares the same in Java as in bytes (always for an ASCII id).
pub(crate) fn plain(member: &Member) -> bool {
    member.group_instance_id.is_none() && member.member_id.is_ascii()
}

/// [`kafka_order`] knowing whether the members are sent in Kafka's order already (ids sorted
/// and every member [`plain`]; the host sends members sorted by member id): then nothing is
/// compared again, and nothing sorted.
fn kafka_order_of(members: &[Member], as_sent: bool) -> Vec<u32> {
    let mut order: Vec<u32> = (0..members.len() as u32).collect();
    let sorted = as_sent
        || members
            .windows(2)
            .all(|w| kafka_member_order(&w[0], &w[1]) != std::cmp::Ordering::Greater);
    if !sorted {
        order.sort_by(|&a, &b| kafka_member_order(&members[a as usize], &members[b as usize]));
    }
    order
}

impl IndexData {
    /// The index of a request without one (built by hand, in any order), from the names: what
    /// a decoded v2 request brings with it. Subscribed names that are not topics of the request
    /// are left out of the topic indices; members with the same set of names share a
    /// subscription.
    pub(crate) fn from_names(request: &crate::AssignRequest) -> IndexData {
        let position: crate::hash::FxHashMap<&str, u32> = request
            .topics
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| (t.name.as_str(), i as u32))
            .collect();
        // Subscriptions are told apart by their sets of names, as Kafka does and as
        // `v2::Layout` does (unknown names count, though they have no index).
        let mut distinct: crate::hash::FxHashMap<Vec<&str>, u32> = Default::default();
        let mut subscriptions = Vec::new();
        let mut subscription_of = Vec::with_capacity(request.members.len());
        let mut last: Option<(&Arc<[String]>, u32)> = None;
        for member in &request.members {
            let id = match last {
                Some((topics, id)) if Arc::ptr_eq(topics, &member.topics) => id,
                _ => *distinct.entry(name_set(&member.topics)).or_insert_with(|| {
                    let mut ids: Vec<u32> = member
                        .topics
                        .iter()
                        .filter_map(|t| position.get(t.as_str()).copied())
                        .collect();
                    ids.sort_unstable();
                    ids.dedup();
                    subscriptions.push(ids);
                    subscriptions.len() as u32 - 1
                }),
            };
            subscription_of.push(id);
            last = Some((&member.topics, id));
        }
        IndexData::new(
            &request.members,
            request.topics.len(),
            subscriptions,
            subscription_of,
        )
    }
}

/// The set of `names`, sorted without duplicates: what tells two subscriptions apart.
pub(crate) fn name_set(names: &[String]) -> Vec<&str> {
    let mut set: Vec<&str> = names.iter().map(String::as_str).collect();
    if !set.is_sorted_by(|a, b| a < b) {
        set.sort_unstable();
        set.dedup();
    }
    set
}
