//! The registry's data: every loaded version of every module name, and which one is active.
//!
//! A [`Catalog`] is an immutable snapshot. Writers (upload, activate, delete) clone it, change
//! the clone and swap it in; readers load the current snapshot without a lock. A
//! [`ModuleVersion`] is shared by `Arc` between snapshots and by the calls running it, so a
//! rebalance keeps the exact version it resolved even if it is deleted meanwhile.

use std::collections::BTreeMap;
use std::sync::Arc;

use assignor_sdk::{AssignorInfo, RebalanceProtocol};
use serde::Serialize;

use super::aliases;
use super::health::{Health, HealthSnapshot};
use crate::coordinator::view::{StrategiesView, StrategyEntry};
use crate::sandbox::CompiledModule;

/// The version number of a name's built-in module. Uploaded versions count from 1, so an
/// upload always supersedes the built-in, and a rollback from version 1 returns to it.
pub const BUILTIN_VERSION: u32 = 0;

/// One version of a module, compiled and ready to run. Immutable apart from its health.
pub struct ModuleVersion {
    pub name: String,
    pub version: u32,
    pub meta: VersionMeta,
    pub(crate) compiled: CompiledModule,
    pub(crate) health: Health,
}

impl ModuleVersion {
    /// The compiled module, for running it outside [`super::Registry::run`] (e.g. a simulation
    /// that must not count towards the version's health).
    pub fn compiled(&self) -> &CompiledModule {
        &self.compiled
    }

    pub fn is_cooperative(&self) -> bool {
        self.meta.info.rebalance_protocol == RebalanceProtocol::Cooperative
    }
}

/// What is known about a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionMeta {
    /// Hex sha256 of the wasm bytes.
    pub sha256: String,
    /// Size of the wasm bytes.
    pub size: u64,
    /// Unix ms of the upload; for a built-in, when this process registered it.
    pub uploaded_ms: u64,
    /// From `assignor_describe`, or the defaults: the module name, empty version and
    /// description, eager.
    pub info: AssignorInfo,
    /// Embedded in the binary (always version 0).
    pub builtin: bool,
    /// Loaded from the precompiled cache rather than compiled in this process.
    pub precompiled: bool,
    /// The ABI version the module speaks (`assignor_abi_version`): 1 or 2.
    pub abi_version: u32,
}

/// A version as listed by the admin API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionInfo {
    pub name: String,
    pub version: u32,
    pub active: bool,
    #[serde(flatten)]
    pub meta: VersionMeta,
    pub health: HealthSnapshot,
}

/// A module name as listed by the admin API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleSummary {
    pub name: String,
    pub active_version: u32,
    pub versions: Vec<u32>,
    pub has_builtin: bool,
    pub rebalance_protocol: RebalanceProtocol,
    /// The active version is quarantined right now.
    pub quarantined: bool,
}

/// All versions of one name. Invariant: `versions` is not empty and holds `active`.
#[derive(Clone)]
pub(crate) struct NameEntry {
    pub(crate) versions: BTreeMap<u32, Arc<ModuleVersion>>,
    pub(crate) active: u32,
}

impl NameEntry {
    pub(crate) fn active(&self) -> &Arc<ModuleVersion> {
        &self.versions[&self.active]
    }
}

/// One snapshot of the registry.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) names: BTreeMap<String, NameEntry>,
    /// The number the next upload of each name gets (never reused, even after deletion).
    pub(crate) next: BTreeMap<String, u32>,
}

impl Catalog {
    /// The canonical module name for `name`: itself if a module has it, else its alias target.
    pub(crate) fn resolve<'a>(&'a self, name: &'a str) -> Option<(&'a str, &'a NameEntry)> {
        if let Some((key, entry)) = self.names.get_key_value(name) {
            return Some((key.as_str(), entry));
        }
        let canonical = aliases::canonical(name)?;
        self.names
            .get_key_value(canonical)
            .map(|(k, e)| (k.as_str(), e))
    }

    pub(crate) fn next_version(&self, name: &str) -> u32 {
        self.next.get(name).copied().unwrap_or(1).max(1)
    }

    /// Whether any version of any name is built from the wasm with `sha256` (so its
    /// precompiled artifact is still needed).
    pub(crate) fn uses_sha(&self, sha256: &str) -> bool {
        self.names
            .values()
            .flat_map(|e| e.versions.values())
            .any(|v| v.meta.sha256 == sha256)
    }

    /// What the coordinator sees: each name's active version and protocol, and the aliases.
    pub(crate) fn view(&self) -> StrategiesView {
        StrategiesView {
            modules: self
                .names
                .iter()
                .map(|(name, entry)| {
                    let active = entry.active();
                    let info = StrategyEntry {
                        active_version: active.version,
                        rebalance_protocol: active.meta.info.rebalance_protocol,
                        in_place: active.meta.info.in_place,
                    };
                    (name.clone(), info)
                })
                .collect(),
            aliases: aliases::ALIASES
                .iter()
                .map(|a| (a.spelling.to_owned(), a.canonical.to_owned()))
                .collect(),
        }
    }
}
