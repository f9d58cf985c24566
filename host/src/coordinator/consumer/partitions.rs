//! [`Partitions`]: a set of partitions by topic name, the shape every assignment of a
//! consumer group takes inside the coordinator (a member's assigned partitions, those pending
//! revocation, its target). Topics are named by name, as the ABI and the catalog name them;
//! the wire's topic ids are mapped at the edges ([`Partitions::from_wire`],
//! [`Partitions::to_wire`]) through the catalog's [`Topics`].

use std::collections::{BTreeMap, BTreeSet};

use assignor_sdk::TopicPartitions;
use uuid::Uuid;

use crate::coordinator::view::Topics;

/// Partitions by topic name. No topic maps to an empty set (the methods keep it so), so two
/// equal sets compare equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partitions(BTreeMap<String, BTreeSet<i32>>);

impl Partitions {
    pub fn new() -> Partitions {
        Partitions::default()
    }

    /// From `(topic, partitions)` pairs; a topic may come more than once.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a [i32])>) -> Partitions {
        let mut set = Partitions::new();
        for (topic, partitions) in pairs {
            for p in partitions {
                set.insert(topic, *p);
            }
        }
        set
    }

    /// From the ABI's shape.
    pub fn from_abi(list: &[TopicPartitions]) -> Partitions {
        Partitions::from_pairs(
            list.iter()
                .map(|tp| (tp.topic.as_str(), tp.partitions.as_slice())),
        )
    }

    /// From the wire's `(topic id, partitions)`: ids the catalog does not know (a deleted
    /// topic, the zero id) are left out, as Kafka leaves out ids its metadata lacks.
    pub fn from_wire<'a>(
        topics: &Topics,
        list: impl IntoIterator<Item = (&'a Uuid, &'a [i32])>,
    ) -> Partitions {
        let mut set = Partitions::new();
        for (id, partitions) in list {
            if let Some(name) = topics.name_of(id) {
                for p in partitions {
                    set.insert(name, *p);
                }
            }
        }
        set
    }

    /// To the wire's `(topic id, partitions)`, by topic name; topics the catalog has no id
    /// for are left out (no client could resolve them).
    pub fn to_wire(&self, topics: &Topics) -> Vec<(Uuid, Vec<i32>)> {
        self.0
            .iter()
            .filter_map(|(name, ps)| {
                let id = topics.id(name).filter(|id| !id.is_nil())?;
                Some((id, ps.iter().copied().collect()))
            })
            .collect()
    }

    /// To the ABI's shape, sorted by topic, partitions ascending.
    pub fn to_abi(&self) -> Vec<TopicPartitions> {
        self.0
            .iter()
            .map(|(topic, ps)| TopicPartitions {
                topic: topic.clone(),
                partitions: ps.iter().copied().collect(),
            })
            .collect()
    }

    pub fn insert(&mut self, topic: &str, partition: i32) {
        match self.0.get_mut(topic) {
            Some(set) => {
                set.insert(partition);
            }
            None => {
                self.0.insert(topic.to_owned(), BTreeSet::from([partition]));
            }
        }
    }

    pub fn contains(&self, topic: &str, partition: i32) -> bool {
        self.0.get(topic).is_some_and(|s| s.contains(&partition))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.0.values().map(BTreeSet::len).sum()
    }

    /// The topics, sorted.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The partitions of `topic`, if any.
    pub fn of(&self, topic: &str) -> Option<&BTreeSet<i32>> {
        self.0.get(topic)
    }

    /// Every `(topic, partition)`, sorted.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i32)> {
        self.0
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.as_str(), *p)))
    }

    /// Whether some partition is in both sets.
    pub fn intersects(&self, other: &Partitions) -> bool {
        self.0.iter().any(|(t, ps)| {
            other
                .0
                .get(t)
                .is_some_and(|os| ps.iter().any(|p| os.contains(p)))
        })
    }

    /// Whether every partition of `self` is in `other`.
    pub fn is_subset(&self, other: &Partitions) -> bool {
        self.0.iter().all(|(t, ps)| {
            other
                .0
                .get(t)
                .is_some_and(|os| ps.iter().all(|p| os.contains(p)))
        })
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &Partitions) -> Partitions {
        let mut out = self.clone();
        for (t, p) in other.iter() {
            out.insert(t, p);
        }
        out
    }

    /// Removes every partition of `topic`, returning them.
    pub fn remove_topic(&mut self, topic: &str) -> Option<BTreeSet<i32>> {
        self.0.remove(topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn p(pairs: &[(&str, &[i32])]) -> Partitions {
        Partitions::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn set_operations_keep_no_empty_topic() {
        let a = p(&[("t", &[0, 1]), ("u", &[2])]);
        let b = p(&[("t", &[1]), ("v", &[0])]);
        assert!(a.intersects(&b));
        assert!(!a.is_subset(&b));
        assert!(p(&[("t", &[1])]).is_subset(&a));
        assert!(Partitions::new().is_subset(&a));
        assert_eq!(a.union(&b).len(), 4);
        assert_eq!(p(&[("t", &[])]), Partitions::new());
    }

    #[test]
    fn the_wire_names_topics_by_the_catalogs_ids_and_unknown_ids_are_dropped() {
        let topics = Arc::new(crate::coordinator::view::Topics::with_derived_ids(
            [("t", 2)]
                .into_iter()
                .map(|(n, c)| {
                    (
                        n.to_string(),
                        assignor_sdk::Topic {
                            name: n.to_string(),
                            partition_count: c,
                            partition_racks: Vec::new(),
                        },
                    )
                })
                .collect(),
        ));
        let id = topics.id("t").unwrap();
        let set = p(&[("t", &[1, 0]), ("gone", &[3])]);
        assert_eq!(set.to_wire(&topics), vec![(id, vec![0, 1])]);
        let unknown = Uuid::from_u128(9);
        let back =
            Partitions::from_wire(&topics, [(&id, [0].as_slice()), (&unknown, [5].as_slice())]);
        assert_eq!(back, p(&[("t", &[0])]));
    }
}
