//! The `topics` and `topic_ids` tables: the catalog's topics, one row per topic name, and each
//! topic's id (KIP-516), so a restart serves the same Metadata under the same ids. Topic values
//! are JSON (`assignor_sdk::Topic`): tiny, rare writes, readable with any redb tool; ids are
//! their 16 bytes. A topic and its id are written and removed in one transaction.

use std::collections::BTreeMap;

use assignor_sdk::Topic;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use uuid::Uuid;

use super::{Store, StoreError, storage};

/// Topic name -> JSON of [`Topic`].
const TOPICS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("topics");
/// Topic name -> the topic id's 16 bytes. Stores written before topic ids have none: the
/// catalog gives those topics an id when it opens.
const TOPIC_IDS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("topic_ids");

impl Store {
    /// Every stored topic, sorted by name. A row that does not parse is an error naming the
    /// topic rather than a silently shorter catalog.
    pub fn load_topics(&self) -> Result<Vec<Topic>, StoreError> {
        let tx = self.db().begin_read().map_err(storage)?;
        let table = match tx.open_table(TOPICS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(storage(e)),
        };
        let mut topics = Vec::new();
        for row in table.iter().map_err(storage)? {
            let (name, value) = row.map_err(storage)?;
            let topic: Topic = serde_json::from_slice(value.value()).map_err(|e| {
                StoreError::Storage(format!("topic row {:?} is corrupt: {e}", name.value()))
            })?;
            topics.push(topic);
        }
        Ok(topics)
    }

    /// Every stored topic id, by topic name.
    pub fn load_topic_ids(&self) -> Result<BTreeMap<String, Uuid>, StoreError> {
        let tx = self.db().begin_read().map_err(storage)?;
        let table = match tx.open_table(TOPIC_IDS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
            Err(e) => return Err(storage(e)),
        };
        let mut ids = BTreeMap::new();
        for row in table.iter().map_err(storage)? {
            let (name, value) = row.map_err(storage)?;
            let id = Uuid::from_slice(value.value()).map_err(|e| {
                StoreError::Storage(format!("topic id row {:?} is corrupt: {e}", name.value()))
            })?;
            ids.insert(name.value().to_owned(), id);
        }
        Ok(ids)
    }

    /// Inserts or replaces one topic and its id, durably, in one transaction.
    pub fn put_topic(&self, topic: &Topic, id: Uuid) -> Result<(), StoreError> {
        let value = serde_json::to_vec(topic).map_err(storage)?;
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(TOPICS).map_err(storage)?;
            table
                .insert(topic.name.as_str(), value.as_slice())
                .map_err(storage)?;
            let mut ids = tx.open_table(TOPIC_IDS).map_err(storage)?;
            ids.insert(topic.name.as_str(), id.as_bytes().as_slice())
                .map_err(storage)?;
        }
        tx.commit().map_err(storage)
    }

    /// Removes one topic and its id, durably; removing a missing topic is not an error.
    pub fn delete_topic(&self, name: &str) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(TOPICS).map_err(storage)?;
            table.remove(name).map_err(storage)?;
            let mut ids = tx.open_table(TOPIC_IDS).map_err(storage)?;
            ids.remove(name).map_err(storage)?;
        }
        tx.commit().map_err(storage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, partitions: i32) -> Topic {
        Topic {
            name: name.to_owned(),
            partition_count: partitions,
            partition_racks: Vec::new(),
        }
    }

    #[test]
    fn topics_survive_reopening_the_store() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            assert!(store.load_topics().unwrap().is_empty());
            store.put_topic(&topic("b", 3), id(3)).unwrap();
            store.put_topic(&topic("a", 1), id(1)).unwrap();
            store.put_topic(&topic("b", 5), id(3)).unwrap();
            store.put_topic(&topic("gone", 2), id(9)).unwrap();
            store.delete_topic("gone").unwrap();
            store.delete_topic("never-there").unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.load_topics().unwrap(),
            vec![topic("a", 1), topic("b", 5)]
        );
        assert_eq!(
            store.load_topic_ids().unwrap(),
            BTreeMap::from([("a".to_owned(), id(1)), ("b".to_owned(), id(3))])
        );
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }
}
