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
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

    /// Writes the artifact of `module` (compiled from wasm with sha256 `sha256`). Failure only
    /// costs a recompile later, so it is logged, not returned.
    ///
    /// Atomic, and safe with other writers of the same directory, in this process or others
    /// (hosts may share one cache directory, as the test suites do): [`Self::stage`] writes the
    /// bytes to a temporary file of this write's own, and [`Staged::commit`] renames it into
    /// place. A reader sees no file or a whole one; two writers of the same artifact never
    /// write into one file, and the last rename wins with identical bytes.
    pub(crate) fn put(&self, module: &Module, sha256: &str) {
        let result = match self.stage(module, sha256) {
            Ok(Some(staged)) => staged.commit().map_err(|e| e.to_string()),
            Ok(None) => Ok(()),
            Err(error) => Err(error),
        };
        if let Err(error) = result {
            let path = self.path(sha256);
            tracing::warn!(path = %path.display(), %error, "cannot write precompiled module");
        }
    }

    /// Serializes `module` into a temporary file named for this write alone (process id and a
    /// per-process counter, created exclusively); `None` when the artifact already exists.
    fn stage(&self, module: &Module, sha256: &str) -> Result<Option<Staged>, String> {
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let path = self.path(sha256);
        if path.exists() {
            return Ok(None);
        }
        let mut bytes = module.serialize().map_err(|e| e.to_string())?;
        let checksum = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&checksum.to_le_bytes());
        let write = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp{}-{write}", std::process::id()));
        let staged = Staged { tmp, path };
        write_new(&staged.tmp, &bytes).map_err(|e| e.to_string())?;
        Ok(Some(staged))
    }

    /// Removes the artifact of `sha256` (when no version uses that wasm any more).
    pub(crate) fn remove(&self, sha256: &str) {
        let _ = std::fs::remove_file(self.path(sha256));
    }
}

/// A whole artifact in its temporary file, not yet visible under its cache name. Dropped
/// without [`Staged::commit`] (a failed write), the temporary file is removed.
struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

impl Staged {
    /// Renames the temporary file into place (atomic on one file system).
    fn commit(self) -> std::io::Result<()> {
        std::fs::rename(&self.tmp, &self.path)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // After a commit the temporary name is gone and this does nothing.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Writes `bytes` to a file that must not exist yet (`O_EXCL`), so no other writer shares it.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// The built-in `range`, a few hundred KB of code, so a write takes long enough to race.
    fn range(engine: &Engine) -> Module {
        let wasm = crate::builtins::builtin("range")
            .expect("built-in range")
            .wasm;
        Module::from_binary(engine, wasm).expect("range compiles")
    }

    #[test]
    fn two_writers_of_one_artifact_each_write_their_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let module = range(&engine);
        let ours = PrecompiledCache::open(dir.path(), &engine).unwrap();
        let theirs = PrecompiledCache::open(dir.path(), &engine).unwrap();
        // Both have written their bytes before either renames: the interleaving two hosts
        // starting together on one shared directory produce.
        let first = ours.stage(&module, "ab").unwrap().expect("not cached yet");
        let second = theirs
            .stage(&module, "ab")
            .unwrap()
            .expect("not cached yet");
        assert_ne!(first.tmp, second.tmp);
        first.commit().expect("first rename");
        assert!(
            theirs.get(&engine, "ab").is_some(),
            "the first artifact is whole"
        );
        second
            .commit()
            .expect("second rename: its own file is still there");
        assert!(
            ours.get(&engine, "ab").is_some(),
            "the second artifact is whole"
        );
        assert!(ours.stage(&module, "ab").unwrap().is_none(), "cached now");
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files.len(), 1, "no temporary file left: {files:?}");
    }

    #[test]
    fn concurrent_writers_of_one_artifact_never_expose_a_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let module = range(&engine);
        // Two caches on one directory: two hosts sharing it.
        let caches = [
            PrecompiledCache::open(dir.path(), &engine).unwrap(),
            PrecompiledCache::open(dir.path(), &engine).unwrap(),
        ];
        let path = caches[0].path("ab");
        for round in 0..10 {
            let _ = std::fs::remove_file(&path);
            let done = AtomicBool::new(false);
            std::thread::scope(|s| {
                let reader = s.spawn(|| {
                    let mut partial = 0;
                    while !done.load(Ordering::Acquire) {
                        if let Ok(bytes) = std::fs::read(&path) {
                            let (artifact, checksum) = bytes.split_at(bytes.len().max(4) - 4);
                            if crc32c::crc32c(artifact).to_le_bytes() != checksum {
                                partial += 1;
                            }
                        }
                    }
                    partial
                });
                let writers: Vec<_> = (0..4)
                    .map(|i| {
                        let (cache, module) = (&caches[i % 2], &module);
                        s.spawn(move || cache.put(module, "ab"))
                    })
                    .collect();
                writers.into_iter().for_each(|w| w.join().unwrap());
                done.store(true, Ordering::Release);
                assert_eq!(
                    reader.join().unwrap(),
                    0,
                    "round {round}: a partial file was seen"
                );
            });
            assert!(caches[1].get(&engine, "ab").is_some(), "round {round}");
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left.len(),
            1,
            "only the artifact, no temporary files: {left:?}"
        );
    }
}
