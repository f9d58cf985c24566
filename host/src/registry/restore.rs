//! Bringing the registry back at start: the built-ins first (version 0 of their names), then
//! every stored version and the active pointers, each module from the precompiled cache when a
//! valid artifact is there and compiled (then cached) otherwise. With
//! [`super::RegistryConfig::serve_first`] "compiled" is baseline code, and the versions that
//! got it are handed back for the optimiser, as uploads are.

use std::sync::Arc;

use assignor_sdk::AssignorInfo;

use super::catalog::{BUILTIN_VERSION, Catalog, ModuleVersion, NameEntry, VersionMeta};
use super::{LoadProblem, Registry, RegistryError, info_or_default, sha256_hex};
use crate::sandbox::{CompiledModule, LoadError, Sandbox, Tier};

/// The versions restored on baseline code, with the bytes their optimised code is compiled from.
pub(super) type Baseline = Vec<(Arc<ModuleVersion>, Vec<u8>)>;

impl Registry {
    pub(super) fn restore(&mut self) -> Result<(Catalog, Baseline), RegistryError> {
        let now = self.config.clock.now_ms();
        let mut catalog = Catalog::default();
        let mut baseline = Baseline::new();
        for builtin in &self.config.builtins.clone() {
            let meta = |sha256: String| VersionMeta {
                sha256,
                size: builtin.wasm.len() as u64,
                uploaded_ms: now,
                info: AssignorInfo::default(),
                builtin: true,
                precompiled: false,
                abi_version: 0,
            };
            let sha256 = sha256_hex(&builtin.wasm);
            match self.load_version(&builtin.name, BUILTIN_VERSION, &builtin.wasm, sha256, meta) {
                Ok(version) => {
                    let version = Arc::new(version);
                    if version.compiled.tier() == Tier::Baseline {
                        baseline.push((version.clone(), builtin.wasm.to_vec()));
                    }
                    let versions = [(BUILTIN_VERSION, version)].into();
                    let entry = NameEntry {
                        versions,
                        active: BUILTIN_VERSION,
                    };
                    catalog.names.insert(builtin.name.clone(), entry);
                }
                Err(problem) => self.problems.push(problem),
            }
        }
        let Some(store) = self.store.clone() else {
            return Ok((catalog, baseline));
        };
        let stored = store.load_modules()?;
        catalog.next = stored.next;
        for mut record in stored.versions {
            let meta = |sha256: String| VersionMeta {
                sha256,
                size: record.meta.size,
                uploaded_ms: record.meta.uploaded_ms,
                info: AssignorInfo::default(),
                builtin: false,
                precompiled: false,
                abi_version: 0,
            };
            // The store's sha256 was computed at upload; no need to hash the bytes again.
            let sha256 = record.meta.sha256.clone();
            match self.load_version(&record.name, record.version, &record.wasm, sha256, meta) {
                Ok(version) => {
                    let version = Arc::new(version);
                    if version.compiled.tier() == Tier::Baseline {
                        baseline.push((version.clone(), std::mem::take(&mut record.wasm)));
                    }
                    let entry =
                        catalog
                            .names
                            .entry(record.name.clone())
                            .or_insert_with(|| NameEntry {
                                versions: Default::default(),
                                active: record.version,
                            });
                    entry.versions.insert(record.version, version);
                }
                Err(problem) => self.problems.push(problem),
            }
        }
        for (name, entry) in catalog.names.iter_mut() {
            let highest = *entry
                .versions
                .keys()
                .next_back()
                .expect("entries are not empty");
            entry.active = match stored.active.get(name) {
                Some(v) if entry.versions.contains_key(v) => *v,
                Some(v) => {
                    tracing::error!(module = %name, version = v, fallback = highest,
                        "active version could not be loaded; running the highest loaded version");
                    highest
                }
                None => highest,
            };
        }
        Ok((catalog, baseline))
    }

    /// Loads `wasm` (whose hex sha256 is `sha256`) as `name` version `version`: from the
    /// precompiled cache when possible, else compiled (optimised code is then cached; baseline
    /// code, with `serve_first`, is the optimiser's to replace and cache). `meta` builds the
    /// metadata from the sha256.
    #[allow(
        clippy::result_large_err,
        reason = "failures are rare (one per failed rebalance) and carry what an operator needs; boxing buys nothing"
    )]
    fn load_version(
        &self,
        name: &str,
        version: u32,
        wasm: &[u8],
        sha256: String,
        meta: impl FnOnce(String) -> VersionMeta,
    ) -> Result<ModuleVersion, LoadProblem> {
        let compiled = if self.config.serve_first {
            self.compile_for_upload(wasm, &sha256)
        } else {
            self.compile(wasm, &sha256)
        };
        let (compiled, precompiled) = compiled.map_err(|error| {
            tracing::error!(module = name, version, %error, "cannot load module version");
            LoadProblem {
                name: name.to_owned(),
                version,
                error,
            }
        })?;
        if !precompiled
            && compiled.tier() == Tier::Optimized
            && let Some(cache) = &self.cache
        {
            cache.put(compiled.module(), &sha256);
        }
        let mut meta = meta(sha256);
        meta.info = info_or_default(&compiled, name);
        meta.precompiled = precompiled;
        meta.abi_version = compiled.abi_version();
        Ok(ModuleVersion {
            name: name.to_owned(),
            version,
            meta,
            compiled,
            health: Default::default(),
        })
    }

    /// The compiled module for `wasm`: the cached artifact if there is a valid one (then
    /// `true`), else a fresh compile. Either way optimised code, checked against the ABI.
    pub(super) fn compile(
        &self,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<(CompiledModule, bool), LoadError> {
        if let Some(cached) = self.cached(wasm, sha256)? {
            return Ok((cached, true));
        }
        Ok((self.sandbox.load(wasm)?, false))
    }

    /// [`Registry::compile`] for an upload: the cached artifact if there is one, else baseline
    /// code (Winch, the `optimizer` swaps in optimised code later), else, when
    /// Winch cannot take the module (it does not implement tail calls, say), a Cranelift
    /// compile, whose answer is the verdict.
    pub(super) fn compile_for_upload(
        &self,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<(CompiledModule, bool), LoadError> {
        if let Some(cached) = self.cached(wasm, sha256)? {
            return Ok((cached, true));
        }
        match self.sandbox.load_baseline(wasm) {
            Ok(baseline) => Ok((baseline, false)),
            Err(error) => {
                tracing::debug!(%error, "no baseline code; compiling with Cranelift");
                Ok((self.sandbox.load(wasm)?, false))
            }
        }
    }

    /// The module of the valid cached artifact of `sha256`, checked against the ABI.
    fn cached(&self, wasm: &[u8], sha256: &str) -> Result<Option<CompiledModule>, LoadError> {
        // Text first: a cached artifact must not let a text upload in by its sha256.
        Sandbox::check_binary(wasm)?;
        let engine = self.sandbox.engine();
        match self.cache.as_ref().and_then(|c| c.get(engine, sha256)) {
            Some(module) => Ok(Some(self.sandbox.prepare(module)?)),
            None => Ok(None),
        }
    }
}
