//! Assignor modules in the store: every uploaded version's wasm bytes and metadata, the active
//! version of each name, and the next version number of each name.
//!
//! Built-in modules are not stored (they are embedded in the binary and registered at start),
//! but an active pointer may name version 0, the built-in, after a rollback to it. Version
//! numbers are never reused: the next number of a name survives deleting its versions, so a
//! group override pinned to `name@3` can never silently start running a different module.
//! Each operation is one redb write transaction, so the store never holds a version without
//! its bytes or an active pointer to a version whose write failed.

use std::collections::BTreeMap;

use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError, storage};

/// `(name, version)` -> wasm bytes.
const BLOBS: TableDefinition<'static, (&str, u32), &[u8]> = TableDefinition::new("module_blobs");
/// `(name, version)` -> MessagePack [`StoredVersion`].
const META: TableDefinition<'static, (&str, u32), &[u8]> = TableDefinition::new("module_meta");
/// name -> active version (0 = the built-in).
const ACTIVE: TableDefinition<'static, &str, u32> = TableDefinition::new("module_active");
/// name -> the number the next upload of that name gets.
const NEXT: TableDefinition<'static, &str, u32> = TableDefinition::new("module_next_version");

/// What the store keeps about a version besides its bytes. Describe info is not stored: it is
/// read again from the module when it is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredVersion {
    /// Hex sha256 of the wasm bytes.
    pub sha256: String,
    pub size: u64,
    /// Unix time of the upload, in milliseconds.
    pub uploaded_ms: u64,
}

/// One stored version with its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRecord {
    pub name: String,
    pub version: u32,
    pub meta: StoredVersion,
    pub wasm: Vec<u8>,
}

/// Everything the registry needs to come back after a restart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredModules {
    /// Sorted by name, then version.
    pub versions: Vec<ModuleRecord>,
    pub active: BTreeMap<String, u32>,
    pub next: BTreeMap<String, u32>,
}

impl Store {
    /// Reads every stored module version, the active pointers and the version counters.
    pub fn load_modules(&self) -> Result<StoredModules, StoreError> {
        let txn = self.db().begin_read().map_err(storage)?;
        let mut out = StoredModules::default();
        let (blobs, meta) = match (txn.open_table(BLOBS), txn.open_table(META)) {
            (Ok(blobs), Ok(meta)) => (blobs, meta),
            (Err(TableError::TableDoesNotExist(_)), _)
            | (_, Err(TableError::TableDoesNotExist(_))) => {
                return Ok(out);
            }
            (Err(e), _) | (_, Err(e)) => return Err(storage(e)),
        };
        for row in meta.iter().map_err(storage)? {
            let (key, value) = row.map_err(storage)?;
            let (name, version) = key.value();
            let stored: StoredVersion = rmp_serde::from_slice(value.value()).map_err(|e| {
                StoreError::Storage(format!("metadata of module {name} v{version}: {e}"))
            })?;
            let wasm = blobs
                .get((name, version))
                .map_err(storage)?
                .ok_or_else(|| {
                    StoreError::Storage(format!("module {name} v{version} has no wasm bytes"))
                })?
                .value()
                .to_vec();
            out.versions.push(ModuleRecord {
                name: name.to_owned(),
                version,
                meta: stored,
                wasm,
            });
        }
        out.active = read_counters(&txn, ACTIVE)?;
        out.next = read_counters(&txn, NEXT)?;
        Ok(out)
    }

    /// Stores a new version of `name`; the next upload of `name` gets `version + 1`. With
    /// `activate` it also becomes the active version, in the same transaction.
    pub fn put_module_version(
        &self,
        name: &str,
        version: u32,
        meta: &StoredVersion,
        wasm: &[u8],
        activate: bool,
    ) -> Result<(), StoreError> {
        let encoded = rmp_serde::to_vec_named(meta).map_err(storage)?;
        self.write(|txn| {
            txn.open_table(BLOBS)?.insert((name, version), wasm)?;
            txn.open_table(META)?
                .insert((name, version), encoded.as_slice())?;
            let mut next = txn.open_table(NEXT)?;
            let current = next.get(name)?.map_or(1, |v| v.value());
            next.insert(name, current.max(version + 1))?;
            if activate {
                txn.open_table(ACTIVE)?.insert(name, version)?;
            }
            Ok(())
        })
    }

    /// Makes `version` (0 = the built-in) the active version of `name`.
    pub fn set_active_module(&self, name: &str, version: u32) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.open_table(ACTIVE)?.insert(name, version)?;
            Ok(())
        })
    }

    /// Deletes one stored version of `name` (not its active pointer: the caller refuses to
    /// delete the active version).
    pub fn delete_module_version(&self, name: &str, version: u32) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.open_table(BLOBS)?.remove((name, version))?;
            txn.open_table(META)?.remove((name, version))?;
            Ok(())
        })
    }

    /// Deletes every stored version of `name`. The active pointer becomes `active` (the
    /// built-in's 0 when there is one) or goes away; the version counter stays.
    pub fn delete_module(&self, name: &str, active: Option<u32>) -> Result<(), StoreError> {
        self.write(|txn| {
            let range = (name, 0u32)..=(name, u32::MAX);
            txn.open_table(BLOBS)?
                .retain_in(range.clone(), |_, _| false)?;
            txn.open_table(META)?.retain_in(range, |_, _| false)?;
            let mut pointers = txn.open_table(ACTIVE)?;
            match active {
                Some(version) => {
                    pointers.insert(name, version)?;
                }
                None => {
                    pointers.remove(name)?;
                }
            }
            Ok(())
        })
    }

    /// Runs `f` in one write transaction and commits it.
    fn write(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::Error>,
    ) -> Result<(), StoreError> {
        let txn = self.db().begin_write().map_err(storage)?;
        f(&txn).map_err(storage)?;
        txn.commit().map_err(storage)
    }
}

fn read_counters(
    txn: &redb::ReadTransaction,
    table: TableDefinition<'_, &str, u32>,
) -> Result<BTreeMap<String, u32>, StoreError> {
    let table = match txn.open_table(table) {
        Ok(table) => table,
        Err(TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
        Err(e) => return Err(storage(e)),
    };
    let mut out = BTreeMap::new();
    for row in table.iter().map_err(storage)? {
        let (key, value) = row.map_err(storage)?;
        out.insert(key.value().to_owned(), value.value());
    }
    Ok(out)
}
