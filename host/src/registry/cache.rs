//! The precompiled-code cache: Cranelift output on disk, so a restart deserializes modules in
//! about a millisecond instead of compiling them for hundreds.
//!
//! A file is `<dir>/<wasm sha256>-<engine hash>.cwasm`, where the engine hash comes from
//! `Engine::precompile_compatibility_hash` (wasmtime version, compiler flags, enabled
//! features), so a host with another wasmtime or configuration never picks up a stale file. The
//! file is `Module::serialize` output followed by the CRC32C of that output (4 bytes, little
//! endian).
//!
//! # Safety invariant
//!
//! `Module::deserialize` maps its input as executable code and trusts it to be wasmtime's own
//! output. This cache only ever deserializes files that (1) this host wrote into its own cache
//! directory with [`PrecompiledCache::put`], and (2) still match the checksum written with
//! them, so a truncated or bit-flipped file is detected and recompiled rather than executed.
//! The checksum guards against accidents (disk errors, a torn write), not attackers: whoever
//! can write the cache directory can also replace the host binary, so the directory must have
//! the same protection as the data directory, and a fast hardware CRC32C (Kafka's record-batch
//! checksum) is enough. The checksum is why the file is read and verified in memory instead
//! of mapped with `Module::deserialize_file`, which would run a flipped bit unchecked.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::{Engine, Module};

/// The cache directory and the running engine's fingerprint.
#[derive(Debug, Clone)]
pub(crate) struct PrecompiledCache {
    dir: PathBuf,
    engine_hash: String,
}

const CHECKSUM: usize = 4;

impl PrecompiledCache {
    /// Uses (and creates) `dir` for the artifacts of `engine`.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> std::io::Result<PrecompiledCache> {
        std::fs::create_dir_all(dir)?;
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(PrecompiledCache {
            dir: dir.to_owned(),
            engine_hash: format!("{:016x}", hasher.finish()),
        })
    }

    /// The file holding the artifact of the wasm whose sha256 is `sha256`.
    pub(crate) fn path(&self, sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{sha256}-{}.cwasm", self.engine_hash))
    }

    /// The cached module for `sha256`, if a valid artifact is there. A corrupt or unusable file
    /// is removed (and logged), so the caller compiles and writes a fresh one.
    pub(crate) fn get(&self, engine: &Engine, sha256: &str) -> Option<Module> {
        let path = self.path(sha256);
        let bytes = std::fs::read(&path).ok()?;
        let valid = bytes.len() > CHECKSUM && {
            let (artifact, checksum) = bytes.split_at(bytes.len() - CHECKSUM);
            crc32c::crc32c(artifact).to_le_bytes() == checksum
        };
        if !valid {
            tracing::warn!(path = %path.display(), "precompiled module is corrupt; recompiling");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        let artifact = &bytes[..bytes.len() - CHECKSUM];
        // SAFETY: see the module docs: the file was written by `put` of this host, in this
        // host's cache directory, and its checksum matches, so it is wasmtime output.
        match unsafe { Module::deserialize(engine, artifact) } {
            Ok(module) => Some(module),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "precompiled module unusable; recompiling");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Writes the artifact of `module` (compiled from wasm with sha256 `sha256`). Atomic: a
    /// temporary file renamed into place. Failure only costs a recompile later, so it is
    /// logged, not returned.
    pub(crate) fn put(&self, module: &Module, sha256: &str) {
        let path = self.path(sha256);
        if path.exists() {
            return;
        }
        let result = module
            .serialize()
            .map_err(|e| e.to_string())
            .and_then(|mut bytes| {
                let checksum = crc32c::crc32c(&bytes);
                bytes.extend_from_slice(&checksum.to_le_bytes());
                let tmp = path.with_extension(format!("tmp{}", std::process::id()));
                std::fs::write(&tmp, &bytes)
                    .and_then(|()| std::fs::rename(&tmp, &path))
                    .map_err(|e| e.to_string())
            });
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot write precompiled module");
        }
    }

    /// Removes the artifact of `sha256` (when no version uses that wasm any more).
    pub(crate) fn remove(&self, sha256: &str) {
        let _ = std::fs::remove_file(self.path(sha256));
    }
}
