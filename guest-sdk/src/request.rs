//! Read helpers on the request: members by id, subscriptions, a topic's partitions and racks,
//! subscribers of a topic, and Kafka's member order.
//!
//! Everything here only reads an [`AssignRequest`]; nothing allocates more than the answer it
//! returns. The host sends `members` sorted by `member_id` and `topics` sorted by `name`, so the
//! lookups binary-search first; they fall back to a scan so that a request an author builds by
//! hand in a test (in any order) still answers correctly.

use std::cmp::Ordering;
use std::ops::Range;

use crate::abi::{AssignRequest, Member, Topic, TopicPartitions};
use crate::hash::FxHashMap;

impl AssignRequest {
    /// The member with this `member_id`, if it is in the group.
    pub fn member(&self, member_id: &str) -> Option<&Member> {
        lookup(&self.members, member_id, |m| &m.member_id)
    }

    /// The topic with this name, if some member subscribes to it and the host knows it.
    pub fn topic(&self, name: &str) -> Option<&Topic> {
        lookup(&self.topics, name, |t| &t.name)
    }

    /// Every member, in Kafka's order: static members first ordered by `group_instance_id`,
    /// then dynamic members ordered by `member_id` (see [`kafka_member_order`]).
    ///
    /// This is the order Kafka's range and roundrobin assignors hand out partitions in, and
    /// the reason static members keep their partitions across restarts: their position does
    /// not depend on the member id the coordinator generates at each join.
    pub fn members_in_kafka_order(&self) -> Vec<&Member> {
        let mut members: Vec<&Member> = self.members.iter().collect();
        members.sort_by(|a, b| kafka_member_order(a, b));
        members
    }

    /// The members subscribed to `topic`, in Kafka's order (see [`Self::members_in_kafka_order`]).
    pub fn subscribers(&self, topic: &str) -> Vec<&Member> {
        let mut members: Vec<&Member> = self
            .members
            .iter()
            .filter(|m| m.subscribes_to(topic))
            .collect();
        members.sort_by(|a, b| kafka_member_order(a, b));
        members
    }

    /// For each topic of `topics` (same index), the indices into `members` of its subscribers,
    /// in Kafka's member order (see [`Self::members_in_kafka_order`]).
    ///
    /// One pass over every subscription with hashed topic lookups (and none at all for a
    /// member whose subscription equals the previous one's, the usual case): the way to learn
    /// who subscribes to what in a large group, where calling [`Self::subscribers`] per topic
    /// would scan the whole group for every topic. A topic listed twice by a member counts it
    /// once; subscribed topics missing from `topics` are left out.
    pub fn subscribers_by_topic(&self) -> Vec<Vec<usize>> {
        let index: FxHashMap<&str, usize> = self
            .topics
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        let mut order: Vec<usize> = (0..self.members.len()).collect();
        order.sort_by(|&a, &b| kafka_member_order(&self.members[a], &self.members[b]));
        let mut out = vec![Vec::new(); self.topics.len()];
        let mut previous: Option<(&[String], Vec<usize>)> = None;
        for m in order {
            let subscription = self.members[m].topics.as_slice();
            let resolved = match previous.take() {
                Some((topics, resolved)) if topics == subscription => resolved,
                _ => subscription
                    .iter()
                    .filter_map(|t| index.get(t.as_str()).copied())
                    .collect(),
            };
            for &t in &resolved {
                if out[t].last() != Some(&m) {
                    out[t].push(m);
                }
            }
            previous = Some((subscription, resolved));
        }
        out
    }

    /// The subscription of `member_id` (its topic names), or `None` if it is not in the group.
    pub fn subscription(&self, member_id: &str) -> Option<&[String]> {
        self.member(member_id).map(|m| m.topics.as_slice())
    }
}

impl Member {
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

/// Kafka's member order (`AbstractPartitionAssignor.MemberInfo.compareTo`): static members
/// first, ordered by `group_instance_id`; then dynamic members, ordered by `member_id`.
///
/// Strings compare as Java's `String.compareTo` does (by UTF-16 code unit), so the order is
/// Kafka's for every string, not just ASCII ones.
pub fn kafka_member_order(a: &Member, b: &Member) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_string_order(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_string_order(&a.member_id, &b.member_id),
    }
}

/// Java's `String.compareTo`: lexicographic by UTF-16 code unit. It differs from Rust's `str`
/// order only between characters above U+FFFF and those in U+E000..=U+FFFF.
pub fn java_string_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn lookup<'a, T>(items: &'a [T], key: &str, key_of: impl Fn(&T) -> &String) -> Option<&'a T> {
    match items.binary_search_by(|item| key_of(item).as_str().cmp(key)) {
        Ok(i) => Some(&items[i]),
        Err(_) => items.iter().find(|item| key_of(item) == key),
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
    fn kafka_order_compares_like_java_strings() {
        // U+FF5E sorts before U+1F600 in Rust (code points) but after it in Java (UTF-16).
        let (bmp, astral) = ("\u{FF5E}", "\u{1F600}");
        assert_eq!(bmp.cmp(astral), Ordering::Less);
        assert_eq!(java_string_order(bmp, astral), Ordering::Greater);
        assert_eq!(
            java_string_order("consumer-a", "consumer-b"),
            Ordering::Less
        );
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
