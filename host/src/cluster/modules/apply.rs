//! Applying the module log to this node's registry, one record at a time in log order.
//!
//! Every node applies the same records in the same order, and a node that replays the log
//! later sees what compaction left of it (the latest record of each key, in their order). The
//! rules are chosen so that both reach the same registry:
//! - a version is present from its first `Version` record (a later record of the same number
//!   with other bytes lost the race for it) until its `Deleted` record;
//! - the active version of a name is the one its latest `Active` record names while that is
//!   present, else the lowest present (the built-in, or the first upload): a name nobody
//!   activated runs what it ran first, as one host does.
//!
//! A group's settings go to this node's driver, whether or not it coordinates the group now:
//! a node that gains the group's shard later has them. The driver's view of the modules
//! follows the registry a moment later (a watch), so a setting naming a module uploaded just
//! before is retried for up to [`SETTLE`].
//!
//! Records this node cannot apply (bytes that do not compile here) are logged and skipped.

use std::collections::HashMap;
use std::sync::Arc;

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::runtime::Handle;

use super::record::Record;
use crate::driver::Driver;
use crate::registry::{Inserted, Prepared, Registry, RegistryError};

/// How long a group's setting is retried while the driver's view of the modules catches up.
const SETTLE: Duration = Duration::from_secs(2);

/// What this node compiled and checked for its own uploads, by (name, sha256): applying its
/// record then needs no second compile.
pub(super) type Pending = Arc<Mutex<HashMap<(String, String), Prepared>>>;

/// The applier, owned by the log's reader thread.
pub(super) struct Applier {
    pub registry: Arc<Registry>,
    pub pending: Pending,
    pub driver: Driver,
    pub runtime: Handle,
    /// The version each name's latest `Active` record names.
    pointers: HashMap<String, u32>,
}

impl Applier {
    pub fn new(registry: Arc<Registry>, pending: Pending, driver: Driver, runtime: Handle) -> Self {
        Applier {
            registry,
            pending,
            driver,
            runtime,
            pointers: HashMap::new(),
        }
    }

    pub fn apply(&mut self, record: Record) {
        match record {
            Record::Version {
                name,
                version,
                sha256,
                wasm,
                uploaded_ms,
            } => {
                let prepared = self.pending.lock().remove(&(name.clone(), sha256.clone()));
                match self
                    .registry
                    .insert_version(&name, version, &wasm, prepared, uploaded_ms)
                {
                    Ok(Inserted::Added | Inserted::Present) => {}
                    Ok(Inserted::Taken { sha256: first }) => tracing::info!(
                        module = %name,
                        version,
                        sha256 = %sha256,
                        first = %first,
                        "a second upload of the same version number, skipped: the first in \
                         the module log keeps it"
                    ),
                    Err(error) => tracing::warn!(
                        module = %name,
                        version,
                        %error,
                        "a version from the module log does not load on this node; skipped"
                    ),
                }
                self.settle(&name, None);
            }
            Record::VersionGone { .. } => {}
            Record::Deleted { name, version } => {
                self.registry.reserve_version(&name, version);
                if self.registry.version_of(&name, version).is_some() {
                    self.settle(&name, Some(version));
                    let outcome = match self.registry.delete_version(&name, version) {
                        // The last version of a name without a built-in: the name goes.
                        Err(RegistryError::ActiveVersion { .. }) => {
                            self.registry.delete(&name).map(drop)
                        }
                        other => other,
                    };
                    if let Err(error) = outcome {
                        tracing::warn!(module = %name, version, %error, "deleting failed");
                    }
                }
            }
            Record::Active { name, version } => {
                match version {
                    Some(version) => self.pointers.insert(name.clone(), version),
                    None => self.pointers.remove(&name),
                };
                self.settle(&name, None);
            }
            Record::Group { group, config } => {
                let config = config.unwrap_or_default();
                let deadline = Instant::now() + SETTLE;
                loop {
                    let set = self.driver.set_group_config(&group, config.clone());
                    match self.runtime.block_on(set) {
                        Ok(()) => break,
                        Err(_) if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(error) => {
                            tracing::warn!(%group, %error, "a group's settings do not apply here");
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Activates the version the rules above choose for `name`, leaving out `going` (a version
    /// about to be deleted).
    fn settle(&self, name: &str, going: Option<u32>) {
        let Ok(versions) = self.registry.versions(name) else {
            return;
        };
        let present: Vec<u32> = versions
            .iter()
            .map(|v| v.version)
            .filter(|v| Some(*v) != going)
            .collect();
        let pointer = self.pointers.get(name).copied();
        let Some(wanted) = pointer
            .filter(|p| present.contains(p))
            .or_else(|| present.iter().copied().min())
        else {
            return;
        };
        if versions.iter().any(|v| v.active && v.version == wanted) {
            return;
        }
        if let Err(error) = self.registry.activate(name, wanted) {
            tracing::warn!(module = %name, version = wanted, %error, "activating failed");
        }
    }
}
