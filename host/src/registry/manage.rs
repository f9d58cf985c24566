//! Operator actions on versions: activate, roll back, delete a version, delete a name.
//!
//! Each persists first and swaps the catalog second, under the writer lock, so a store error
//! leaves both the store and the running registry as they were. Calls in flight keep the
//! version they resolved; the next call sees the change.
//!
//! Decisions: rolling back activates the highest version *below* the active one (for version
//! 1 of a name with a built-in, the built-in), a rule that needs no history and survives
//! restarts. The active version cannot be deleted on its own. Deleting a whole name removes
//! every uploaded version; a name with a built-in then returns to the built-in, which itself
//! is never deleted.

use serde::Serialize;

use super::catalog::{BUILTIN_VERSION, Catalog, NameEntry};
use super::{Registry, RegistryError};

/// What deleting a name did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeleteOutcome {
    pub name: String,
    /// Uploaded versions removed.
    pub removed_versions: Vec<u32>,
    /// The version active afterwards: the built-in's 0, or none when the name is gone.
    pub active: Option<u32>,
}

impl Registry {
    /// Makes `version` of `name` the active version.
    pub fn activate(&self, name: &str, version: u32) -> Result<(), RegistryError> {
        let _writer = self.writer.lock();
        let mut catalog = (**self.catalog.load()).clone();
        let (canonical, entry) = entry_mut(&mut catalog, name)?;
        if !entry.versions.contains_key(&version) {
            return Err(RegistryError::VersionNotFound {
                name: canonical,
                version,
            });
        }
        if entry.active == version {
            return Ok(());
        }
        if let Some(store) = &self.store {
            store.set_active_module(&canonical, version)?;
        }
        let previous = std::mem::replace(&mut entry.active, version);
        self.publish(catalog);
        tracing::info!(module = %canonical, version, previous, "module version activated");
        Ok(())
    }

    /// Activates the highest version below the active one; returns it.
    pub fn rollback(&self, name: &str) -> Result<u32, RegistryError> {
        let target = {
            let catalog = self.catalog.load();
            let (canonical, entry) = catalog.resolve(name).ok_or_else(|| not_found(name))?;
            let before = entry.versions.range(..entry.active).next_back();
            match before {
                Some((&v, _)) => v,
                None => {
                    return Err(RegistryError::NoPreviousVersion {
                        name: canonical.to_owned(),
                        version: entry.active,
                    });
                }
            }
        };
        // A concurrent activation between the read and this call is fine: the operator asked
        // for "the version before", and `activate` checks the target still exists.
        self.activate(name, target)?;
        Ok(target)
    }

    /// Deletes one version of `name`. Refuses the active version and the built-in.
    pub fn delete_version(&self, name: &str, version: u32) -> Result<(), RegistryError> {
        let _writer = self.writer.lock();
        let mut catalog = (**self.catalog.load()).clone();
        let (canonical, entry) = entry_mut(&mut catalog, name)?;
        let Some(removed) = entry.versions.get(&version).cloned() else {
            return Err(RegistryError::VersionNotFound {
                name: canonical,
                version,
            });
        };
        if removed.meta.builtin {
            return Err(RegistryError::Builtin { name: canonical });
        }
        if entry.active == version {
            return Err(RegistryError::ActiveVersion {
                name: canonical,
                version,
            });
        }
        if let Some(store) = &self.store {
            store.delete_module_version(&canonical, version)?;
        }
        entry.versions.remove(&version);
        self.forget_code(&catalog, &removed.meta.sha256);
        self.publish(catalog);
        tracing::info!(module = %canonical, version, "module version deleted");
        Ok(())
    }

    /// Deletes every uploaded version of `name`. A name with a built-in returns to it; a name
    /// with only its built-in is refused ([`RegistryError::Builtin`]).
    pub fn delete(&self, name: &str) -> Result<DeleteOutcome, RegistryError> {
        let _writer = self.writer.lock();
        let mut catalog = (**self.catalog.load()).clone();
        let (canonical, entry) = entry_mut(&mut catalog, name)?;
        let builtin = entry.versions.get(&BUILTIN_VERSION).cloned();
        let removed: Vec<_> = entry
            .versions
            .values()
            .filter(|v| !v.meta.builtin)
            .cloned()
            .collect();
        if removed.is_empty() {
            return Err(RegistryError::Builtin { name: canonical });
        }
        let active = builtin.as_ref().map(|_| BUILTIN_VERSION);
        if let Some(store) = &self.store {
            store.delete_module(&canonical, active)?;
        }
        match builtin {
            Some(builtin) => {
                let versions = [(BUILTIN_VERSION, builtin)].into();
                catalog.names.insert(
                    canonical.clone(),
                    NameEntry {
                        versions,
                        active: BUILTIN_VERSION,
                    },
                );
            }
            None => {
                catalog.names.remove(&canonical);
            }
        }
        for version in &removed {
            self.forget_code(&catalog, &version.meta.sha256);
        }
        self.publish(catalog);
        let removed_versions: Vec<u32> = removed.iter().map(|v| v.version).collect();
        tracing::info!(module = %canonical, ?removed_versions, ?active, "module deleted");
        Ok(DeleteOutcome {
            name: canonical,
            removed_versions,
            active,
        })
    }

    /// Drops the precompiled artifact of `sha256` unless another version still uses it.
    fn forget_code(&self, catalog: &Catalog, sha256: &str) {
        if let Some(cache) = &self.cache
            && !catalog.uses_sha(sha256)
        {
            cache.remove(sha256);
        }
    }
}

/// The entry `name` (canonical or alias) resolves to, with its canonical name.
fn entry_mut<'a>(
    catalog: &'a mut Catalog,
    name: &str,
) -> Result<(String, &'a mut NameEntry), RegistryError> {
    let canonical = catalog
        .resolve(name)
        .map(|(c, _)| c.to_owned())
        .ok_or_else(|| not_found(name))?;
    let entry = catalog
        .names
        .get_mut(&canonical)
        .ok_or_else(|| not_found(name))?;
    Ok((canonical, entry))
}

fn not_found(name: &str) -> RegistryError {
    RegistryError::NotFound {
        name: name.to_owned(),
    }
}
