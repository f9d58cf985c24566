//! Read helpers on the request: members by id, subscriptions, a topic's partitions and racks,
//! subscribers of a topic, Kafka's member order, lag and weights.
//!
//! Everything here only reads an [`AssignRequest`]. A request the SDK decoded from ABI v2
//! carries an [`crate::Index`] (each member's subscription by position, Kafka's member order),
//! so the subscriber lookups cost no name comparisons at all; a request built by hand (a test)
//! has none, and the same helpers work it out from the names on each call, in any order. The
//! host sends `members` sorted by `member_id` and `topics` sorted by `name`, so the name
//! lookups binary-search first and fall back to a scan.

use std::borrow::Cow;
use std::ops::Range;

use crate::abi::index::IndexData;
use crate::abi::order::kafka_member_order;
use crate::abi::{AssignRequest, Member, Topic, TopicPartitions};

/// The members sharing one subscription (see [`AssignRequest::subscription_groups`]): topic and
/// member positions in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionGroup<'a> {
    /// The topics subscribed to (positions in `request.topics`), ascending.
    pub topics: Cow<'a, [u32]>,
    /// The members with exactly this subscription (positions in `request.members`), in Kafka's
    /// member order.
    pub members: Cow<'a, [u32]>,
}

impl AssignRequest {
    /// The index this request came with, or one worked out from the names.
    pub(crate) fn index_data(&self) -> Cow<'_, IndexData> {
        match &self.index.0 {
            Some(data) => Cow::Borrowed(&**data),
            None => Cow::Owned(IndexData::from_names(self)),
        }
    }

    /// Whether the request came with its lookups (the SDK decoded it from ABI v2), so that
    /// [`Self::subscriber_indices`], [`Self::subscription_groups`], [`Self::topics_of`] and
    /// [`Self::kafka_order`] cost no name comparisons; without, they work from the names.
    pub fn is_indexed(&self) -> bool {
        self.index.0.is_some()
    }

    /// Whether member ids are strictly increasing (so no id repeats and ids can be binary
    /// searched): what the host sends. Free for a request decoded from ABI v2, one pass over
    /// the ids otherwise.
    pub fn member_ids_sorted(&self) -> bool {
        match &self.index.0 {
            Some(data) => data.ids_sorted,
            None => crate::abi::index::ids_sorted(&self.members),
        }
    }

    /// The member with this `member_id`, if it is in the group.
    pub fn member(&self, member_id: &str) -> Option<&Member> {
        self.member_index(member_id).map(|i| &self.members[i])
    }

    /// The position in `members` of the member with this `member_id`.
    pub fn member_index(&self, member_id: &str) -> Option<usize> {
        lookup(&self.members, member_id, |m| &m.member_id)
    }

    /// The topic with this name, if some member subscribes to it and the host knows it.
    pub fn topic(&self, name: &str) -> Option<&Topic> {
        self.topic_index(name).map(|i| &self.topics[i])
    }

    /// The position in `topics` of the topic with this name.
    pub fn topic_index(&self, name: &str) -> Option<usize> {
        lookup(&self.topics, name, |t| &t.name)
    }

    /// Every member, in Kafka's order: static members first ordered by `group_instance_id`,
    /// then dynamic members ordered by `member_id` (see [`kafka_member_order`]).
    ///
    /// This is the order Kafka's range and roundrobin assignors hand out partitions in, and
    /// the reason static members keep their partitions across restarts: their position does
    /// not depend on the member id the coordinator generates at each join.
    pub fn members_in_kafka_order(&self) -> Vec<&Member> {
        self.kafka_order()
            .iter()
            .map(|&m| &self.members[m as usize])
            .collect()
    }

    /// Positions in `members` in Kafka's member order ([`Self::members_in_kafka_order`]);
    /// borrowed from the request's index when it has one.
    pub fn kafka_order(&self) -> Cow<'_, [u32]> {
        match &self.index.0 {
            Some(data) => Cow::Borrowed(&data.kafka_order),
            None => Cow::Owned(crate::abi::index::kafka_order(&self.members)),
        }
    }

    /// The members subscribed to `topic`, in Kafka's order (see [`Self::members_in_kafka_order`]).
    pub fn subscribers(&self, topic: &str) -> Vec<&Member> {
        match self.topic_index(topic) {
            Some(t) => self
                .subscriber_indices(t)
                .iter()
                .map(|&m| &self.members[m as usize])
                .collect(),
            // Not a topic of the request: whoever names it (no partitions to give anyway).
            None => {
                let mut members: Vec<&Member> = self
                    .members
                    .iter()
                    .filter(|m| m.subscribes_to(topic))
                    .collect();
                members.sort_by(|a, b| kafka_member_order(a, b));
                members
            }
        }
    }

    /// The positions in `members` of the subscribers of the topic at position `topic` of
    /// `topics`, in Kafka's member order. Borrowed (no allocation) when the request has an
    /// index and one subscription covers the topic, as in a group whose members all subscribe
    /// to the same topics.
    pub fn subscriber_indices(&self, topic: usize) -> Cow<'_, [u32]> {
        let Some(data) = &self.index.0 else {
            return Cow::Owned(subscribers_in(&IndexData::from_names(self), topic));
        };
        match data.subscriptions_of_topic.get(topic).map(Vec::as_slice) {
            None | Some([]) => Cow::Borrowed(&[]),
            Some(&[s]) => Cow::Borrowed(&data.members_of[s as usize]),
            Some(_) => Cow::Owned(subscribers_in(data, topic)),
        }
    }

    /// For each topic of `topics` (same index), the indices into `members` of its subscribers,
    /// in Kafka's member order (see [`Self::members_in_kafka_order`]). A topic listed twice by
    /// a member counts it once; subscribed topics missing from `topics` are left out.
    ///
    /// It materialises one list per topic; [`Self::subscriber_indices`] (one topic, often
    /// borrowed) and [`Self::subscription_groups`] (one entry per distinct subscription) cost
    /// less in large groups.
    pub fn subscribers_by_topic(&self) -> Vec<Vec<usize>> {
        let data = self.index_data();
        (0..self.topics.len())
            .map(|t| {
                subscribers_in(&data, t)
                    .into_iter()
                    .map(|m| m as usize)
                    .collect()
            })
            .collect()
    }

    /// The distinct subscriptions of the group, each with its members: the shape a strategy
    /// wants to treat the members that subscribe to the same topics alike (a homogeneous group
    /// has one entry). Groups whose subscription is empty are included; groups come in the
    /// order of their first member in `members`.
    pub fn subscription_groups(&self) -> Vec<SubscriptionGroup<'_>> {
        match &self.index.0 {
            Some(data) => data
                .subscriptions
                .iter()
                .zip(&data.members_of)
                .filter(|(_, members)| !members.is_empty())
                .map(|(topics, members)| SubscriptionGroup {
                    topics: Cow::Borrowed(topics),
                    members: Cow::Borrowed(members),
                })
                .collect(),
            None => {
                let data = IndexData::from_names(self);
                data.subscriptions
                    .into_iter()
                    .zip(data.members_of)
                    .filter(|(_, members)| !members.is_empty())
                    .map(|(topics, members)| SubscriptionGroup {
                        topics: Cow::Owned(topics),
                        members: Cow::Owned(members),
                    })
                    .collect()
            }
        }
    }

    /// The positions in `topics` of the topics the member at position `member` subscribes to,
    /// ascending (borrowed from the index when there is one).
    pub fn topics_of(&self, member: usize) -> Cow<'_, [u32]> {
        match &self.index.0 {
            Some(data) => Cow::Borrowed(&data.subscriptions[data.subscription_of[member] as usize]),
            None => {
                let data = IndexData::from_names(self);
                Cow::Owned(data.subscriptions[data.subscription_of[member] as usize].clone())
            }
        }
    }

    /// The subscription of `member_id` (its topic names), or `None` if it is not in the group.
    pub fn subscription(&self, member_id: &str) -> Option<&[String]> {
        self.member(member_id).map(|m| &*m.topics)
    }

    /// The committed offset and end offset of partition `partition` of the topic at position
    /// `topic` (input `lag`, ABI v2), each `None` where unknown.
    pub fn offsets(&self, topic: usize, partition: i32) -> (Option<i64>, Option<i64>) {
        let Some(offsets) = self.lag.get(topic) else {
            return (None, None);
        };
        let at = |list: &[i64]| {
            usize::try_from(partition)
                .ok()
                .and_then(|p| list.get(p).copied())
                .filter(|&o| o >= 0)
        };
        (at(&offsets.committed), at(&offsets.end))
    }

    /// The lag of a partition (end offset minus committed offset, at least 0), when the host
    /// sent both (input `lag`; standalone the host knows no end offsets, so this is `None`).
    pub fn lag_of(&self, topic: usize, partition: i32) -> Option<i64> {
        match self.offsets(topic, partition) {
            (Some(committed), Some(end)) => Some((end - committed).max(0)),
            _ => None,
        }
    }
}

/// The subscribers of topic `t`, merged from every subscription covering it in Kafka's order.
fn subscribers_in(data: &IndexData, t: usize) -> Vec<u32> {
    let Some(subscriptions) = data.subscriptions_of_topic.get(t) else {
        return Vec::new();
    };
    if let [s] = subscriptions.as_slice() {
        return data.members_of[*s as usize].clone();
    }
    let rank = data.rank();
    let mut out: Vec<u32> = subscriptions
        .iter()
        .flat_map(|&s| data.members_of[s as usize].iter().copied())
        .collect();
    out.sort_unstable_by_key(|&m| rank[m as usize]);
    out
}

impl Member {
    /// The member's weight (input `weights`, ABI v2): what the host sent, else 1.
    pub fn weight(&self) -> u32 {
        self.weight.unwrap_or(1)
    }

    /// Whether this member subscribes to `topic`.
    pub fn subscribes_to(&self, topic: &str) -> bool {
        self.topics.iter().any(|t| t == topic)
    }

    /// Whether this member is static (has a `group.instance.id`).
    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    /// The member's rack, if it configured a non-empty `client.rack` (Kafka treats an empty
    /// rack as none).
    pub fn rack(&self) -> Option<&str> {
        self.rack_id.as_deref().filter(|r| !r.is_empty())
    }

    /// Every partition the member says it owns (Subscription v1-v3), as `(topic, partition)`.
    /// A cooperative strategy must not move these in the same generation.
    pub fn owned(&self) -> impl Iterator<Item = (&str, i32)> {
        flatten(&self.owned_partitions)
    }

    /// Whether the member says it owns `topic`-`partition`.
    pub fn owns(&self, topic: &str, partition: i32) -> bool {
        contains(&self.owned_partitions, topic, partition)
    }

    /// Every partition the host gave this member in the last generation, as `(topic, partition)`.
    /// Empty for a new member. Unlike [`Self::owned`] this does not depend on the client.
    pub fn previously_assigned(&self) -> impl Iterator<Item = (&str, i32)> {
        flatten(&self.previous_assignment)
    }

    /// Whether the host gave this member `topic`-`partition` in the last generation.
    pub fn was_assigned(&self, topic: &str, partition: i32) -> bool {
        contains(&self.previous_assignment, topic, partition)
    }
}

impl Topic {
    /// The partition numbers of this topic, `0..partition_count` (empty if the count is not
    /// positive, e.g. for a topic the host does not know).
    pub fn partitions(&self) -> Range<i32> {
        0..self.partition_count.max(0)
    }

    /// The racks holding replicas of `partition`, empty when unknown.
    pub fn racks_of(&self, partition: i32) -> &[String] {
        usize::try_from(partition)
            .ok()
            .and_then(|p| self.partition_racks.get(p))
            .map_or(&[], Vec::as_slice)
    }
}

fn lookup<T>(items: &[T], key: &str, key_of: impl Fn(&T) -> &String) -> Option<usize> {
    match items.binary_search_by(|item| key_of(item).as_str().cmp(key)) {
        Ok(i) => Some(i),
        Err(_) => items.iter().position(|item| key_of(item) == key),
    }
}

fn flatten(list: &[TopicPartitions]) -> impl Iterator<Item = (&str, i32)> {
    list.iter()
        .flat_map(|tp| tp.partitions.iter().map(move |&p| (tp.topic.as_str(), p)))
}

fn contains(list: &[TopicPartitions], topic: &str, partition: i32) -> bool {
    list.iter()
        .any(|tp| tp.topic == topic && tp.partitions.contains(&partition))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, instance: Option<&str>, topics: &[&str]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: instance.map(Into::into),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned_generation: -1,
            ..Member::default()
        }
    }

    fn request(members: Vec<Member>) -> AssignRequest {
        AssignRequest {
            abi_version: crate::ABI_VERSION,
            members,
            topics: vec![
                Topic {
                    name: "a".into(),
                    partition_count: 2,
                    partition_racks: vec![],
                },
                Topic {
                    name: "b".into(),
                    partition_count: 0,
                    partition_racks: vec![],
                },
            ],
            ..AssignRequest::default()
        }
    }

    fn ids<'a>(members: &[&'a Member]) -> Vec<&'a str> {
        members.iter().map(|m| m.member_id.as_str()).collect()
    }

    #[test]
    fn member_lookup_finds_members_in_sorted_and_unsorted_requests() {
        let sorted = request(vec![member("m1", None, &[]), member("m2", None, &[])]);
        assert_eq!(sorted.member("m2").unwrap().member_id, "m2");
        assert!(sorted.member("m3").is_none());
        let unsorted = request(vec![member("z", None, &[]), member("a", None, &[])]);
        assert_eq!(unsorted.member("a").unwrap().member_id, "a");
        assert_eq!(unsorted.member("z").unwrap().member_id, "z");
    }

    #[test]
    fn kafka_order_puts_static_members_first_by_instance_id_then_dynamic_by_member_id() {
        // AbstractPartitionAssignorTest.testMemberInfoSortingSomeGroupInstanceId, plus one more.
        let req = request(vec![
            member("a", None, &[]),
            member("b", Some("y"), &[]),
            member("c", Some("x"), &[]),
            member("0", None, &[]),
        ]);
        assert_eq!(ids(&req.members_in_kafka_order()), ["c", "b", "0", "a"]);
    }

    #[test]
    fn subscribers_are_the_subscribed_members_in_kafka_order() {
        let req = request(vec![
            member("m1", None, &["a"]),
            member("m2", Some("i2"), &["a", "b"]),
            member("m3", None, &["b"]),
            member("m4", Some("i1"), &["a"]),
        ]);
        assert_eq!(ids(&req.subscribers("a")), ["m4", "m2", "m1"]);
        assert_eq!(ids(&req.subscribers("b")), ["m2", "m3"]);
        assert!(req.subscribers("c").is_empty());
        assert_eq!(req.subscription("m2").unwrap(), ["a", "b"]);
        assert!(req.subscription("nobody").is_none());
    }

    #[test]
    fn subscribers_by_topic_lists_member_indices_per_topic_in_kafka_order() {
        let mut req = request(vec![
            member("m1", None, &["a"]),
            member("m2", Some("i2"), &["a", "b", "a"]),
            member("m3", None, &["b", "ghost"]),
            member("m4", Some("i1"), &["a"]),
            member("m5", None, &["b", "ghost"]),
        ]);
        req.topics.push(Topic {
            name: "c".into(),
            partition_count: 1,
            partition_racks: vec![],
        });
        // Topics a, b, c; members by index: m1=0, m2=1, m3=2, m4=3, m5=4.
        assert_eq!(
            req.subscribers_by_topic(),
            [vec![3, 1, 0], vec![1, 2, 4], vec![]]
        );
        let by_helper: Vec<Vec<&str>> = ["a", "b", "c"]
            .map(|t| ids(&req.subscribers(t)))
            .into_iter()
            .collect();
        assert_eq!(
            by_helper,
            [vec!["m4", "m2", "m1"], vec!["m2", "m3", "m5"], vec![]]
        );
    }

    #[test]
    fn topic_partitions_are_zero_to_count_and_empty_for_unknown_counts() {
        let req = request(vec![]);
        assert_eq!(req.topic("a").unwrap().partitions(), 0..2);
        assert!(req.topic("b").unwrap().partitions().is_empty());
        let negative = Topic {
            name: "n".into(),
            partition_count: -1,
            partition_racks: vec![],
        };
        assert!(negative.partitions().is_empty());
    }

    #[test]
    fn racks_of_reads_known_racks_and_is_empty_otherwise() {
        let topic = Topic {
            name: "t".into(),
            partition_count: 2,
            partition_racks: vec![vec!["r1".into(), "r2".into()], vec![]],
        };
        assert_eq!(topic.racks_of(0), ["r1", "r2"]);
        assert!(topic.racks_of(1).is_empty());
        assert!(topic.racks_of(2).is_empty());
        assert!(topic.racks_of(-1).is_empty());
    }

    #[test]
    fn owned_and_previous_partitions_flatten_by_topic() {
        let mut m = member("m", None, &["a", "b"]);
        m.owned_partitions = vec![
            TopicPartitions {
                topic: "a".into(),
                partitions: vec![0, 2],
            },
            TopicPartitions {
                topic: "b".into(),
                partitions: vec![1],
            },
        ];
        m.previous_assignment = vec![TopicPartitions {
            topic: "b".into(),
            partitions: vec![3],
        }];
        assert_eq!(
            m.owned().collect::<Vec<_>>(),
            [("a", 0), ("a", 2), ("b", 1)]
        );
        assert!(m.owns("a", 2) && !m.owns("a", 1) && !m.owns("c", 0));
        assert_eq!(m.previously_assigned().collect::<Vec<_>>(), [("b", 3)]);
        assert!(m.was_assigned("b", 3) && !m.was_assigned("a", 0));
    }

    #[test]
    fn empty_rack_reads_as_no_rack() {
        let mut m = member("m", None, &[]);
        assert_eq!(m.rack(), None);
        m.rack_id = Some(String::new());
        assert_eq!(m.rack(), None);
        m.rack_id = Some("r".into());
        assert_eq!(m.rack(), Some("r"));
        assert!(!m.is_static());
    }
}
