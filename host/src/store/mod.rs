//! Durable state in one embedded transactional store (redb): modules, committed offsets, group
//! metadata, topics, configuration, standalone's users and ACLs. Each submodule owns its tables.

use std::path::Path;
use std::sync::Arc;

pub mod acls;
#[cfg(test)]
mod corrupt_rows;
pub mod groups;
pub mod modules;
pub mod topics;
pub mod users;

/// A handle on the host's database. Cheap to clone; every clone shares one `redb::Database`.
#[derive(Clone)]
pub struct Store {
    db: Arc<redb::Database>,
}

/// Something went wrong in the storage layer itself.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store at {path}: {source}")]
    Open {
        path: String,
        source: redb::DatabaseError,
    },
    #[error("storage: {0}")]
    Storage(String),
}

impl Store {
    /// Opens (or creates) `dir/assignor-host.redb`, creating `dir` if needed.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Storage(e.to_string()))?;
        let path = dir.join("assignor-host.redb");
        let db = redb::Database::create(&path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Store { db: Arc::new(db) })
    }

    /// The database, for the submodules' transactions.
    pub(crate) fn db(&self) -> &redb::Database {
        &self.db
    }
}

/// Maps any redb error into [`StoreError::Storage`], keeping its message.
pub(crate) fn storage<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Storage(e.to_string())
}
