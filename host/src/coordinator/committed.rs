//! Committed offsets as a table: what standalone mode keeps (the driver's shards hold one and
//! persist it) and what an OffsetFetch answers from it. Offsets are not the coordinator's
//! state: it only decides whether a commit is valid and emits the write, so the same
//! decisions serve the host's own store and the upstream cluster of proxy mode.

use std::collections::{BTreeMap, HashMap};

use super::api::{OffsetFetchQuery, OffsetFetchResult, PartitionOffset};
use super::responses::no_offset;
use super::saved::OffsetRecord;

/// One committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// The committed offsets of many groups; per group sorted by `(topic, partition)`, the order
/// OffsetFetch answers in.
#[derive(Debug, Clone, Default)]
pub struct OffsetTable {
    groups: HashMap<String, BTreeMap<(String, i32), Committed>>,
}

impl OffsetTable {
    /// Records `offsets` for `group`, replacing earlier commits of the same partitions.
    pub fn commit(&mut self, group: &str, offsets: &[OffsetRecord]) {
        self.commit_owned(group, offsets.to_vec());
    }

    /// [`OffsetTable::commit`] of records the caller no longer needs: their topic names and
    /// metadata move into the table.
    pub fn commit_owned(&mut self, group: &str, offsets: Vec<OffsetRecord>) {
        if !self.groups.contains_key(group) {
            self.groups.insert(group.to_owned(), BTreeMap::new());
        }
        let table = self.groups.get_mut(group).expect("inserted above");
        for r in offsets {
            table.insert(
                (r.topic, r.partition),
                Committed {
                    offset: r.offset,
                    leader_epoch: r.leader_epoch,
                    metadata: r.metadata,
                },
            );
        }
    }

    /// The OffsetFetch answer for `group`: the partitions asked (-1 where nothing was
    /// committed), or every committed one when `query.topics` is `None`.
    pub fn fetch(&self, group: &str, query: &OffsetFetchQuery) -> OffsetFetchResult {
        let empty = BTreeMap::new();
        let offsets = self.groups.get(group).unwrap_or(&empty);
        let topics = match &query.topics {
            Some(requested) => requested
                .iter()
                .map(|(topic, partitions)| {
                    let found = partitions
                        .iter()
                        .map(|p| match offsets.get(&(topic.clone(), *p)) {
                            Some(c) => committed(*p, c),
                            None => no_offset(*p, 0),
                        })
                        .collect();
                    (topic.clone(), found)
                })
                .collect(),
            None => {
                let mut by_topic: BTreeMap<&str, Vec<PartitionOffset>> = BTreeMap::new();
                for ((topic, partition), c) in offsets {
                    by_topic
                        .entry(topic.as_str())
                        .or_default()
                        .push(committed(*partition, c));
                }
                by_topic
                    .into_iter()
                    .map(|(t, ps)| (t.to_string(), ps))
                    .collect()
            }
        };
        OffsetFetchResult {
            error_code: 0,
            topics,
        }
    }

    /// Forgets `partitions` of `group` (OffsetDelete).
    pub fn delete(&mut self, group: &str, partitions: &[(String, i32)]) {
        if let Some(table) = self.groups.get_mut(group) {
            for key in partitions {
                table.remove(key);
            }
        }
    }

    /// Forgets every offset of `group` (DeleteGroups).
    pub fn delete_group(&mut self, group: &str) {
        self.groups.remove(group);
    }
}

fn committed(partition_index: i32, c: &Committed) -> PartitionOffset {
    PartitionOffset {
        partition_index,
        committed_offset: c.offset,
        committed_leader_epoch: c.leader_epoch,
        metadata: c.metadata.clone(),
        error_code: 0,
    }
}
