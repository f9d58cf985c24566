//! The `acls` table: standalone's ACLs (`crate::acls`), one row per binding, the row's key
//! its serialized form (deterministic, so one binding is one key) and no value.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{Store, StoreError, storage};

const ACLS: TableDefinition<'static, &[u8], ()> = TableDefinition::new("acls");

impl Store {
    /// Every stored ACL row.
    pub fn load_acls(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        let tx = self.db().begin_read().map_err(storage)?;
        let table = match tx.open_table(ACLS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(storage(e)),
        };
        let mut rows = Vec::new();
        for row in table.iter().map_err(storage)? {
            let (key, ()) = row.map_err(storage).map(|(k, v)| (k, v.value()))?;
            rows.push(key.value().to_vec());
        }
        Ok(rows)
    }

    /// Inserts ACL rows, durably, in one transaction.
    pub fn put_acls(&self, rows: &[Vec<u8>]) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(ACLS).map_err(storage)?;
            for row in rows {
                table.insert(row.as_slice(), ()).map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)
    }

    /// Removes ACL rows, durably, in one transaction.
    pub fn delete_acls(&self, rows: &[Vec<u8>]) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(ACLS).map_err(storage)?;
            for row in rows {
                table.remove(row.as_slice()).map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)
    }
}
