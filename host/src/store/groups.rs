//! The group tables: each group's metadata at its last generation (so a restart resumes stable
//! groups without a rebalance), committed offsets (one row per partition, written before the
//! OffsetCommit is answered), and the operator's per-group configuration. Metadata and offsets
//! are MessagePack (compact, written often); configuration is JSON (rare, readable).

use std::collections::BTreeMap;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, storage};
use crate::coordinator::{GroupConfig, OffsetRecord, RestoredGroup, SavedGroup};

/// Group id -> a [`SavedGroup`]'s bytes (MessagePack, versioned: `SavedGroup::encode`).
pub(super) const GROUPS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("groups");
/// (group id, topic, partition) -> MessagePack of [`StoredOffset`].
pub(super) const OFFSETS: TableDefinition<'static, (&str, &str, i32), &[u8]> =
    TableDefinition::new("group_offsets");
/// Group id -> JSON of [`GroupConfig`].
pub(super) const CONFIGS: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("group_configs");

#[derive(Deserialize)]
struct StoredOffset {
    offset: i64,
    leader_epoch: i32,
    metadata: Option<String>,
}

/// [`StoredOffset`] as written, borrowing the record's metadata (the same bytes).
#[derive(Serialize)]
struct StoredOffsetRef<'a> {
    offset: i64,
    leader_epoch: i32,
    metadata: Option<&'a str>,
}

fn corrupt(what: &str, key: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Storage(format!("{what} row {key:?} is corrupt: {e}"))
}

impl Store {
    /// Replaces the stored metadata of a group, durably.
    pub fn save_group(&self, snapshot: &SavedGroup) -> Result<(), StoreError> {
        let value = snapshot.encode().map_err(storage)?;
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(GROUPS).map_err(storage)?;
            table
                .insert(snapshot.group_id(), value.as_slice())
                .map_err(storage)?;
        }
        tx.commit().map_err(storage)
    }

    /// Stores committed offsets of one group in one transaction, durably.
    pub fn save_offsets(&self, group_id: &str, offsets: &[OffsetRecord]) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(OFFSETS).map_err(storage)?;
            for o in offsets {
                let value = rmp_serde::to_vec_named(&StoredOffsetRef {
                    offset: o.offset,
                    leader_epoch: o.leader_epoch,
                    metadata: o.metadata.as_deref(),
                })
                .map_err(storage)?;
                table
                    .insert((group_id, o.topic.as_str(), o.partition), value.as_slice())
                    .map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)
    }

    /// Stores the operator's configuration of a group, durably.
    pub fn save_group_config(
        &self,
        group_id: &str,
        config: &GroupConfig,
    ) -> Result<(), StoreError> {
        let value = serde_json::to_vec(config).map_err(storage)?;
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(CONFIGS).map_err(storage)?;
            table.insert(group_id, value.as_slice()).map_err(storage)?;
        }
        tx.commit().map_err(storage)
    }

    /// Forgets some partitions' committed offsets of a group (OffsetDelete), durably.
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(OFFSETS).map_err(storage)?;
            for (topic, partition) in partitions {
                table
                    .remove((group_id, topic.as_str(), *partition))
                    .map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)
    }

    /// Forgets a deleted group's metadata and offsets (its configuration stays: it is the
    /// operator's, not the group's).
    pub fn delete_group(&self, group_id: &str) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut groups = tx.open_table(GROUPS).map_err(storage)?;
            groups.remove(group_id).map_err(storage)?;
            let mut offsets = tx.open_table(OFFSETS).map_err(storage)?;
            offsets
                .retain(|(group, _, _), _| group != group_id)
                .map_err(storage)?;
        }
        tx.commit().map_err(storage)
    }

    /// Everything stored about groups, one [`RestoredGroup`] per group id, sorted by id. A row
    /// that does not parse is an error naming it, rather than a group silently lost.
    /// The committed offset of every partition of `topic` the group committed, as
    /// `(partition, offset)` ascending (one range read of the offsets table).
    pub fn committed_offsets(
        &self,
        group_id: &str,
        topic: &str,
    ) -> Result<Vec<(i32, i64)>, StoreError> {
        let tx = self.db().begin_read().map_err(storage)?;
        let table = match tx.open_table(OFFSETS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(storage(e)),
        };
        let mut out = Vec::new();
        for row in table
            .range((group_id, topic, i32::MIN)..=(group_id, topic, i32::MAX))
            .map_err(storage)?
        {
            let (key, value) = row.map_err(storage)?;
            let (_, _, partition) = key.value();
            let stored: StoredOffset = rmp_serde::from_slice(value.value())
                .map_err(|e| corrupt("offset", &format!("{group_id}/{topic}/{partition}"), e))?;
            out.push((partition, stored.offset));
        }
        Ok(out)
    }

    pub fn load_groups(&self) -> Result<Vec<RestoredGroup>, StoreError> {
        let tx = self.db().begin_read().map_err(storage)?;
        let mut groups: BTreeMap<String, RestoredGroup> = BTreeMap::new();
        match tx.open_table(GROUPS) {
            Ok(table) => {
                for row in table.iter().map_err(storage)? {
                    let (id, value) = row.map_err(storage)?;
                    let snapshot = SavedGroup::decode(value.value())
                        .map_err(|e| corrupt("group", id.value(), e))?;
                    slot(&mut groups, id.value()).snapshot = Some(snapshot);
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(storage(e)),
        }
        match tx.open_table(OFFSETS) {
            Ok(table) => {
                for row in table.iter().map_err(storage)? {
                    let (key, value) = row.map_err(storage)?;
                    let (group, topic, partition) = key.value();
                    let stored: StoredOffset =
                        rmp_serde::from_slice(value.value()).map_err(|e| {
                            corrupt("offset", &format!("{group}/{topic}/{partition}"), e)
                        })?;
                    slot(&mut groups, group).offsets.push(OffsetRecord {
                        topic: topic.to_string(),
                        partition,
                        offset: stored.offset,
                        leader_epoch: stored.leader_epoch,
                        metadata: stored.metadata,
                    });
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(storage(e)),
        }
        match tx.open_table(CONFIGS) {
            Ok(table) => {
                for row in table.iter().map_err(storage)? {
                    let (id, value) = row.map_err(storage)?;
                    let config: GroupConfig = serde_json::from_slice(value.value())
                        .map_err(|e| corrupt("group config", id.value(), e))?;
                    slot(&mut groups, id.value()).config = Some(config);
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(storage(e)),
        }
        Ok(groups.into_values().collect())
    }
}

fn slot<'a>(groups: &'a mut BTreeMap<String, RestoredGroup>, id: &str) -> &'a mut RestoredGroup {
    groups
        .entry(id.to_string())
        .or_insert_with(|| RestoredGroup {
            group_id: id.to_string(),
            ..RestoredGroup::default()
        })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::coordinator::{
        AssignorRecord, ClassicGroupRecord, ClassicMemberRecord, ModuleState,
    };

    pub(crate) fn snapshot(id: &str, generation: i32) -> SavedGroup {
        SavedGroup::Classic(ClassicGroupRecord {
            group_id: id.into(),
            generation_id: generation,
            protocol_type: Some("consumer".into()),
            protocol_key: Some("range".into()),
            strategy: Some("range".into()),
            pinned_version: None,
            cooperative: false,
            leader_id: None,
            topic_counts: vec![("t".into(), 3)],
            members: vec![ClassicMemberRecord {
                member_id: "c-1".into(),
                group_instance_id: None,
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 30_000,
                session_timeout_ms: 10_000,
                protocol_type: "consumer".into(),
                protocols: vec![("range".into(), serde_bytes::ByteBuf::from(vec![0, 1, 2]))],
                protocol_name: Some("range".into()),
                assignment: serde_bytes::ByteBuf::from(vec![0, 0, 0, 0, 0, 0, 255, 255, 255, 255]),
                given: vec![("t".into(), vec![0, 1, 2])],
            }],
            deferred: None,
            assignor: AssignorRecord {
                last_run: None,
                history: Vec::new(),
                module_state: Some(ModuleState {
                    strategy: "range".into(),
                    bytes: serde_bytes::ByteBuf::from(vec![9, 8, 7]),
                }),
                held: vec![crate::coordinator::Held {
                    member_id: "c-2".into(),
                    group_instance_id: None,
                    client_id: "c".into(),
                    client_host: "/127.0.0.2".into(),
                    partitions: vec![assignor_sdk::TopicPartitions {
                        topic: "t".into(),
                        partitions: vec![1],
                    }],
                    since_ms: 1_796_000_000_000,
                }],
            },
        })
    }

    pub(crate) fn offset(topic: &str, partition: i32, offset: i64) -> OffsetRecord {
        OffsetRecord {
            topic: topic.into(),
            partition,
            offset,
            leader_epoch: -1,
            metadata: Some(format!("at {offset}")),
        }
    }

    #[test]
    fn groups_offsets_and_configs_survive_reopening_the_store() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            assert!(store.load_groups().unwrap().is_empty());
            store.save_group(&snapshot("g", 1)).unwrap();
            store.save_group(&snapshot("g", 2)).unwrap();
            store
                .save_offsets("g", &[offset("t", 0, 5), offset("t", 1, 7)])
                .unwrap();
            store.save_offsets("g", &[offset("t", 0, 9)]).unwrap();
            store.save_offsets("simple", &[offset("u", 0, 1)]).unwrap();
            let config = GroupConfig {
                strategy: Some("roundrobin".into()),
                ..Default::default()
            };
            store.save_group_config("configured", &config).unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let groups = store.load_groups().unwrap();
        let ids: Vec<&str> = groups.iter().map(|g| g.group_id.as_str()).collect();
        assert_eq!(ids, vec!["configured", "g", "simple"]);
        assert_eq!(
            groups[0].config.as_ref().unwrap().strategy.as_deref(),
            Some("roundrobin")
        );
        assert_eq!(groups[1].snapshot, Some(snapshot("g", 2)));
        let offsets: Vec<(i32, i64)> = groups[1]
            .offsets
            .iter()
            .map(|o| (o.partition, o.offset))
            .collect();
        assert_eq!(offsets, vec![(0, 9), (1, 7)]);
        assert_eq!(groups[1].offsets[0].metadata.as_deref(), Some("at 9"));
        assert!(groups[2].snapshot.is_none());
        assert_eq!(groups[2].offsets.len(), 1);
    }

    #[test]
    fn deleting_a_group_removes_its_metadata_and_offsets_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.save_group(&snapshot("g", 1)).unwrap();
        store.save_offsets("g", &[offset("t", 0, 5)]).unwrap();
        store.save_offsets("other", &[offset("t", 0, 6)]).unwrap();
        store
            .save_group_config("g", &GroupConfig::default())
            .unwrap();
        store.delete_group("g").unwrap();
        let groups = store.load_groups().unwrap();
        let g = groups.iter().find(|g| g.group_id == "g").unwrap();
        assert!(g.snapshot.is_none() && g.offsets.is_empty());
        assert!(g.config.is_some(), "the operator's configuration stays");
        assert_eq!(
            groups
                .iter()
                .find(|g| g.group_id == "other")
                .unwrap()
                .offsets
                .len(),
            1
        );
    }

    /// A store written by a host before records were versioned: its group rows read as the
    /// same groups (the version-1 shape itself is `coordinator::saved`'s to test).
    #[test]
    fn a_group_row_written_before_records_were_versioned_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let SavedGroup::Classic(record) = snapshot("g", 3) else {
            unreachable!()
        };
        let mut row = serde_json::to_value(&record).unwrap();
        let fields = row.as_object_mut().unwrap();
        let kept = fields.remove("assignor").unwrap();
        for (key, value) in kept.as_object().unwrap() {
            fields.insert(key.clone(), value.clone());
        }
        fields.insert("consumer".into(), serde_json::Value::Null);
        let bytes = rmp_serde::to_vec_named(&row).unwrap();
        let tx = store.db().begin_write().unwrap();
        tx.open_table(GROUPS)
            .unwrap()
            .insert("g", bytes.as_slice())
            .unwrap();
        tx.commit().unwrap();
        let groups = store.load_groups().unwrap();
        assert_eq!(groups[0].snapshot, Some(snapshot("g", 3)));
    }
}
