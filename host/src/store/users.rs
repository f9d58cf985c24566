//! The `scram_credentials` table: standalone's users (`crate::users`), one row per user and
//! mechanism name; the value is that part's serialized credential (salt, StoredKey, ServerKey,
//! iterations: never a password), bytes to the store.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{Store, StoreError, storage};

/// (user, mechanism name) -> the credential's bytes.
const CREDENTIALS: TableDefinition<'static, (&str, &str), &[u8]> =
    TableDefinition::new("scram_credentials");

/// A credential row: (user, mechanism name) and its bytes.
pub type CredentialRow = ((String, String), Vec<u8>);

impl Store {
    /// Every stored credential row.
    pub fn load_credentials(&self) -> Result<Vec<CredentialRow>, StoreError> {
        let tx = self.db().begin_read().map_err(storage)?;
        let table = match tx.open_table(CREDENTIALS) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(storage(e)),
        };
        let mut rows = Vec::new();
        for row in table.iter().map_err(storage)? {
            let (key, value) = row.map_err(storage)?;
            let (user, mechanism) = key.value();
            rows.push((
                (user.to_owned(), mechanism.to_owned()),
                value.value().to_vec(),
            ));
        }
        Ok(rows)
    }

    /// Inserts or replaces one credential, durably.
    pub fn put_credential(
        &self,
        user: &str,
        mechanism: &str,
        row: &[u8],
    ) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(CREDENTIALS).map_err(storage)?;
            table.insert((user, mechanism), row).map_err(storage)?;
        }
        tx.commit().map_err(storage)
    }

    /// Removes `user`'s credentials for `mechanisms`, durably, in one transaction.
    pub fn delete_credentials(&self, user: &str, mechanisms: &[&str]) -> Result<(), StoreError> {
        let tx = self.db().begin_write().map_err(storage)?;
        {
            let mut table = tx.open_table(CREDENTIALS).map_err(storage)?;
            for mechanism in mechanisms {
                table.remove((user, *mechanism)).map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)
    }
}
