//! What a cluster of host nodes' module log (`cluster::modules`) needs of this node's registry:
//! versions added under the number the log gave them, and the numbers a deleted version used.
//!
//! Decision: a version from the log is not smoke-called again. The node that took the upload
//! ran every check of [`Registry::prepare`] before it wrote the record, and a second smoke
//! call on each node would only repeat it; compiling (or loading the precompiled artifact) is
//! what each node must do itself. A record whose bytes do not compile here (a node of another
//! host version, say) is logged and skipped: the other versions still apply.

use std::sync::Arc;

use super::catalog::ModuleVersion;
use super::upload::Prepared;
use super::{Registry, info_or_default};

/// What [`Registry::insert_version`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted {
    /// The version is new here.
    Added,
    /// This version with these bytes was already here (a replayed record).
    Present,
    /// The number is another upload's: its sha256. The log's first record of a number wins.
    Taken { sha256: String },
}

impl Registry {
    /// Adds uploaded `version` of `name`, inactive, from `prepared` (this node checked the
    /// upload) or else from `wasm`. `Err` says why the bytes do not load here (the precompiled cache first, then a compile).
    pub fn insert_version(
        &self,
        name: &str,
        version: u32,
        wasm: &[u8],
        prepared: Option<Prepared>,
        uploaded_ms: u64,
    ) -> Result<Inserted, String> {
        let sha256 = super::sha256_hex(wasm);
        if let Some(present) = self.version_of(name, version) {
            return Ok(if present.meta.sha256 == sha256 {
                Inserted::Present
            } else {
                Inserted::Taken {
                    sha256: present.meta.sha256.clone(),
                }
            });
        }
        let prepared = match prepared.filter(|p| p.sha256 == sha256) {
            Some(prepared) => prepared,
            None => {
                let (compiled, precompiled) =
                    self.compile(wasm, &sha256).map_err(|e| e.to_string())?;
                if !precompiled && let Some(cache) = &self.cache {
                    cache.put(compiled.module(), &sha256);
                }
                Prepared {
                    info: info_or_default(&compiled, name),
                    sha256,
                    compiled,
                    precompiled,
                    smoke: Default::default(),
                }
            }
        };
        let _writer = self.writer.lock();
        if self.version_of(name, version).is_some() {
            // Only the log's applier inserts, one record at a time; kept for a second writer.
            return Ok(Inserted::Present);
        }
        self.commit(name, version, prepared, wasm, uploaded_ms, false)
            .map_err(|e| e.to_string())?;
        Ok(Inserted::Added)
    }

    /// Version numbers of `name` up to `version` are used: the next upload gets a higher one,
    /// as it would had the deleted version been seen before its deletion.
    pub fn reserve_version(&self, name: &str, version: u32) {
        let _writer = self.writer.lock();
        let mut catalog = (**self.catalog.load()).clone();
        if catalog.next_version(name) > version {
            return;
        }
        catalog.next.insert(name.to_owned(), version + 1);
        self.publish(catalog);
    }

    /// The number the next upload of `name` gets.
    pub fn next_version(&self, name: &str) -> u32 {
        self.catalog.load().next_version(name)
    }

    /// `version` of `name` (the exact name, not an alias), if present.
    pub fn version_of(&self, name: &str, version: u32) -> Option<Arc<ModuleVersion>> {
        let catalog = self.catalog.load();
        catalog.names.get(name)?.versions.get(&version).cloned()
    }
}
