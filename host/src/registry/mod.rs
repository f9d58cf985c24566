//! The module registry: assignor modules by protocol name, their versions, which version is
//! active, and the one entry point the driver uses to run them ([`Registry::run`]).
//!
//! - **Names and versions.** A module is named by the protocol name clients propose. Uploaded
//!   versions of a name count from 1 and are never renumbered; a name's built-in (embedded in
//!   the binary, registered at start) is version 0. An upload supersedes the built-in; rolling
//!   back from version 1, or deleting every uploaded version, returns to it. The built-in
//!   itself cannot be deleted.
//! - **Hot swap.** The catalog (`catalog::Catalog`) is an immutable snapshot behind an
//!   `ArcSwap`: a call resolves its `Arc<ModuleVersion>` once and runs exactly that version to
//!   the end, whatever happens meanwhile. Writers compile and smoke-test off any lock, then take a writer lock
//!   only to persist and swap, so uploads never block calls.
//! - **Health.** [`Registry::run`] records per-version counters and recent failures and
//!   quarantines a version that keeps failing ([`health`]).
//! - **Durability.** With a [`Store`], every version and active pointer is persisted, and
//!   compiled code is cached on disk (`cache`), so a restart restores the registry without
//!   recompiling. Without one (tests) everything lives in memory.
//! - **Two tiers.** An upload is checked and first served on baseline (Winch) code, compiled
//!   in a fraction of Cranelift's time; a background worker (`optimizer`) then compiles it with
//!   Cranelift and swaps the optimised code into the same version. Fuel is charged alike on
//!   both, and only optimised code is cached, so a restart runs optimised code.
//!
//! Layout: `catalog` (the data), `restore` (start), `upload` (checks), `optimizer` (the
//! background compile), `manage` (activate, roll back, delete), `replica` (versions numbered
//! by a cluster's module log), `run` (calls and quarantine), [`health`], [`aliases`], `cache`.

pub mod aliases;
pub mod health;

mod cache;
mod catalog;
mod manage;
mod optimizer;
mod params;
mod replica;
mod restore;
mod run;
mod upload;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use assignor_sdk::{AssignorInfo, RebalanceProtocol};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

pub use catalog::{BUILTIN_VERSION, ModuleSummary, ModuleVersion, VersionInfo, VersionMeta};
pub use health::{
    Clock, FailureRecord, HealthSnapshot, ManualClock, QuarantinePolicy, SystemClock,
};
pub use manage::DeleteOutcome;
pub use optimizer::Optimization;
pub use replica::Inserted;
pub use run::{RunError, RunErrorKind, RunReport};
pub use upload::{Checked, Prepared, UploadError, UploadOptions, UploadOutcome, smoke_request};

use crate::coordinator::view::StrategiesView;
use crate::sandbox::{CompiledModule, LoadError, Sandbox, Tier};
use crate::store::{Store, StoreError};
use cache::PrecompiledCache;
use catalog::Catalog;

/// A built-in module to register at start.
#[derive(Debug, Clone)]
pub struct BuiltinSource {
    pub name: String,
    pub wasm: Cow<'static, [u8]>,
}

impl BuiltinSource {
    /// The strategies embedded in this binary ([`crate::builtins::BUILTINS`]).
    pub fn embedded() -> Vec<BuiltinSource> {
        crate::builtins::BUILTINS
            .iter()
            .map(|b| BuiltinSource {
                name: b.name.to_owned(),
                wasm: Cow::Borrowed(b.wasm),
            })
            .collect()
    }
}

/// The `[registry]` section: what an upload may be, and when a failing version is quarantined
/// (`[registry.quarantine]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegistrySettings {
    /// Largest module accepted by an upload, in bytes (default 16 MiB: the built-ins are a few
    /// hundred KB, and Redpanda's cap for the same purpose is 10 MiB); also the admin API's
    /// body cap for uploads.
    pub max_module_bytes: u64,
    /// When a failing version is quarantined, and for how long (`[registry.quarantine]`).
    pub quarantine: QuarantinePolicy,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        RegistrySettings {
            max_module_bytes: 16 << 20,
            quarantine: QuarantinePolicy::default(),
        }
    }
}

/// How the registry runs: its settings and what the host wires in. `Default` is the production
/// setup minus persistence.
#[derive(Clone)]
pub struct RegistryConfig {
    /// The `[registry]` section.
    pub settings: RegistrySettings,
    /// Where precompiled code goes (`<data_dir>/cache`); `None` compiles at every start.
    pub cache_dir: Option<PathBuf>,
    /// Registered at start as version 0 of their names.
    pub builtins: Vec<BuiltinSource>,
    /// Source of upload times and quarantine deadlines.
    pub clock: Arc<dyn Clock>,
    /// At start, serve a module the precompiled cache lacks on baseline code (Winch, tens of
    /// milliseconds) and optimise it in the background, as an upload is; `false` compiles it
    /// with Cranelift before `open` returns (seconds per large module). The server sets it so
    /// a first start (an empty cache) listens at once; tests and benches that time calls keep
    /// the default and start on optimised code.
    pub serve_first: bool,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            settings: RegistrySettings::default(),
            cache_dir: None,
            builtins: BuiltinSource::embedded(),
            clock: Arc::new(SystemClock),
            serve_first: false,
        }
    }
}

/// A registry operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("no module named `{name}`")]
    NotFound { name: String },
    #[error("module `{name}` has no version {version}")]
    VersionNotFound { name: String, version: u32 },
    #[error(
        "version {version} of `{name}` is active; activate or roll back to another version \
         first, or delete the whole module"
    )]
    ActiveVersion { name: String, version: u32 },
    #[error(
        "`{name}` version 0 is the built-in embedded in the binary and cannot be deleted \
         (deleting all uploaded versions of `{name}` returns to it)"
    )]
    Builtin { name: String },
    #[error("`{name}` has no version before {version} to roll back to")]
    NoPreviousVersion { name: String, version: u32 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A stored or built-in version that could not be loaded at start. It stays in the store;
/// the registry runs without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    pub name: String,
    pub version: u32,
    pub error: LoadError,
}

/// The registry. Share it with `Arc`; every method takes `&self`.
pub struct Registry {
    sandbox: Sandbox,
    store: Option<Store>,
    cache: Option<PrecompiledCache>,
    config: RegistryConfig,
    catalog: Arc<ArcSwap<Catalog>>,
    /// Serializes writers (upload commit, activate, delete, the optimiser's cache writes);
    /// readers never take it.
    writer: Arc<Mutex<()>>,
    view_tx: watch::Sender<Arc<StrategiesView>>,
    problems: Vec<LoadProblem>,
    /// Compiles uploads' optimised code in the background; finishes its queue on drop.
    optimizer: optimizer::Optimizer,
}

impl Registry {
    /// Registers the built-ins, then restores the stored versions and active pointers (from
    /// the precompiled cache where possible). A version that fails to load is logged and
    /// listed in [`Registry::load_problems`]; if it was active, the highest loaded version of
    /// its name becomes active instead (in memory only, so a fixed host restores the pointer).
    pub fn open(
        sandbox: Sandbox,
        store: Option<Store>,
        config: RegistryConfig,
    ) -> Result<Registry, RegistryError> {
        let cache = config.cache_dir.as_ref().and_then(|dir| {
            PrecompiledCache::open(dir, sandbox.engine())
                .inspect_err(
                    |e| tracing::warn!(dir = %dir.display(), error = %e, "no precompiled cache"),
                )
                .ok()
        });
        let (view_tx, _) = watch::channel(Arc::new(StrategiesView::default()));
        let catalog = Arc::new(ArcSwap::from_pointee(Catalog::default()));
        let writer = Arc::new(Mutex::new(()));
        let optimizer = optimizer::Optimizer::new(optimizer::Context {
            sandbox: sandbox.clone(),
            cache: cache.clone(),
            catalog: catalog.clone(),
            writer: writer.clone(),
        });
        let mut registry = Registry {
            sandbox,
            store,
            cache,
            config,
            catalog,
            writer,
            view_tx,
            problems: Vec::new(),
            optimizer,
        };
        let started = std::time::Instant::now();
        let (catalog, baseline) = registry.restore()?;
        let versions: usize = catalog.names.values().map(|e| e.versions.len()).sum();
        let precompiled = catalog
            .names
            .values()
            .flat_map(|e| e.versions.values())
            .filter(|v| v.meta.precompiled)
            .count();
        tracing::info!(
            versions,
            precompiled,
            baseline = baseline.len(),
            problems = registry.problems.len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "module registry restored"
        );
        registry.publish(catalog);
        // Queued once published: the optimiser caches code only for versions the catalog uses.
        for (version, wasm) in baseline {
            registry.optimizer.submit(version, &wasm);
        }
        Ok(registry)
    }

    /// Swaps in `catalog` and tells subscribers. Callers hold the writer lock (or own `self`).
    fn publish(&self, catalog: Catalog) {
        let view = Arc::new(catalog.view());
        self.catalog.store(Arc::new(catalog));
        self.view_tx.send_replace(view);
    }

    /// The sandbox the registry runs modules in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Versions that could not be loaded at start.
    pub fn load_problems(&self) -> &[LoadProblem] {
        &self.problems
    }

    /// The coordinator's view of the strategies: active versions and aliases.
    pub fn view(&self) -> StrategiesView {
        self.catalog.load().view()
    }

    /// Largest module an upload may be, in bytes (the admin API caps upload bodies with it).
    pub fn max_module_bytes(&self) -> u64 {
        self.config.settings.max_module_bytes
    }

    /// A receiver of the coordinator's view, updated on every change.
    pub fn subscribe(&self) -> watch::Receiver<Arc<StrategiesView>> {
        self.view_tx.subscribe()
    }

    /// Every module name with its active version.
    pub fn list(&self) -> Vec<ModuleSummary> {
        let now = self.config.clock.now_ms();
        self.catalog
            .load()
            .names
            .iter()
            .map(|(name, entry)| {
                let active = entry.active();
                ModuleSummary {
                    name: name.clone(),
                    active_version: entry.active,
                    versions: entry.versions.keys().copied().collect(),
                    has_builtin: entry.versions.contains_key(&BUILTIN_VERSION),
                    rebalance_protocol: active.meta.info.rebalance_protocol,
                    quarantined: active.health.check(now).is_err(),
                }
            })
            .collect()
    }

    /// Every version of `name` (canonical or alias) with its metadata and health: the admin
    /// API's versions and status pages.
    pub fn versions(&self, name: &str) -> Result<Vec<VersionInfo>, RegistryError> {
        let now = self.config.clock.now_ms();
        let catalog = self.catalog.load();
        let (canonical, entry) = catalog
            .resolve(name)
            .ok_or_else(|| RegistryError::NotFound {
                name: name.to_owned(),
            })?;
        Ok(entry
            .versions
            .values()
            .map(|v| VersionInfo {
                name: canonical.to_owned(),
                version: v.version,
                active: v.version == entry.active,
                meta: v.meta.clone(),
                health: v.health.snapshot(now),
            })
            .collect())
    }

    /// Where the optimised code of `version` of `name` (the exact name) stands; `None` when
    /// there is no such version.
    pub fn optimization(&self, name: &str, version: u32) -> Option<Optimization> {
        let found = self.version_of(name, version)?;
        Some(match found.compiled.tier() {
            Tier::Optimized => Optimization::Done,
            Tier::Baseline => match self.optimizer.failure(name, version) {
                Some(reason) => Optimization::Failed(reason),
                None => Optimization::Pending,
            },
        })
    }

    /// Blocks until every version uploaded so far runs optimised code or failed to get it
    /// (a bench, a test, or a caller about to measure call speed waits here).
    pub fn finish_optimizing(&self) {
        self.optimizer.settle();
    }

    /// The health of every version of `name`: counters, recent failures, quarantine.
    pub fn status(&self, name: &str) -> Result<ModuleStatus, RegistryError> {
        let versions = self.versions(name)?;
        Ok(ModuleStatus {
            name: versions[0].name.clone(),
            active_version: versions.iter().find(|v| v.active).map_or(0, |v| v.version),
            versions: versions
                .into_iter()
                .map(|v| VersionStatus {
                    version: v.version,
                    active: v.active,
                    health: v.health,
                })
                .collect(),
        })
    }
}

/// The health of a module's versions, for the admin API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleStatus {
    pub name: String,
    pub active_version: u32,
    pub versions: Vec<VersionStatus>,
}

/// The health of one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionStatus {
    pub version: u32,
    pub active: bool,
    #[serde(flatten)]
    pub health: HealthSnapshot,
}

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `assignor_describe`'s answer, or the defaults for a module without it.
fn info_or_default(compiled: &CompiledModule, name: &str) -> AssignorInfo {
    compiled.info().cloned().unwrap_or_else(|| AssignorInfo {
        name: name.to_owned(),
        version: String::new(),
        description: String::new(),
        rebalance_protocol: RebalanceProtocol::Eager,
        inputs: Vec::new(),
        in_place: false,
    })
}
