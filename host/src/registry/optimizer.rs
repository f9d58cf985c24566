//! The background optimiser: an upload is checked and served on baseline (Winch) code
//! ([`crate::sandbox::Sandbox::load_baseline`]), and this worker then compiles the same bytes
//! with Cranelift and installs the result into that same version
//! ([`crate::sandbox::Sandbox::optimize`]). A rebalance resolves the code once, so it runs one
//! compiled module from start to end; calls that start after the install run optimised code.
//!
//! - **One worker thread**, made on the first job, taking jobs in commit order: Cranelift's
//!   parallel compile already uses every core, and a burst of uploads would only fight over
//!   them.
//! - **The precompiled cache gets the optimised artifact**, written under the writer lock and
//!   only while a version still uses those bytes (a version deleted meanwhile leaves no file
//!   behind, as a delete removes it under the same lock), so a restart loads optimised code.
//! - **A failure** (the optimising compile refusing what Winch accepted, a resource error) is
//!   logged and kept (`Registry::optimization`); the version goes on serving baseline code,
//!   with the same fuel verdicts, and a restart compiles it again with Cranelift.
//! - **Dropping the registry finishes the queued jobs** (a few hundred ms each), so the cache
//!   holds the optimised code of every version when the host stops.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

use super::cache::PrecompiledCache;
use super::catalog::{Catalog, ModuleVersion};
use crate::sandbox::{OptimizeError, Sandbox};

/// Where a version's optimised code stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Optimization {
    /// Calls run optimised code.
    Done,
    /// Calls run baseline code; the optimising compile is queued or under way.
    Pending,
    /// Calls run baseline code; the optimising compile failed, for this reason.
    Failed(String),
}

/// One version to optimise, with the bytes it was uploaded as.
struct Job {
    version: Arc<ModuleVersion>,
    wasm: Arc<[u8]>,
}

/// What the worker needs of the registry.
#[derive(Clone)]
pub(super) struct Context {
    pub(super) sandbox: Sandbox,
    pub(super) cache: Option<PrecompiledCache>,
    pub(super) catalog: Arc<ArcSwap<Catalog>>,
    pub(super) writer: Arc<Mutex<()>>,
}

/// Jobs not yet finished, and the failures of finished ones, by (name, version).
#[derive(Default)]
struct State {
    /// Taken by the worker around each job; a test holds it to keep a version on baseline
    /// code while it looks (no sleeps, no races).
    gate: Mutex<()>,
    pending: Mutex<usize>,
    settled: Condvar,
    failures: Mutex<BTreeMap<(String, u32), String>>,
}

/// The queue and its worker. Dropping it finishes the queued jobs.
pub(super) struct Optimizer {
    context: Context,
    state: Arc<State>,
    queue: Mutex<Option<(mpsc::Sender<Job>, JoinHandle<()>)>>,
}

impl Optimizer {
    pub(super) fn new(context: Context) -> Optimizer {
        Optimizer {
            context,
            state: Default::default(),
            queue: Mutex::new(None),
        }
    }

    /// Queues `version` (serving baseline code) for its optimised code, compiled from `wasm`.
    pub(super) fn submit(&self, version: Arc<ModuleVersion>, wasm: &[u8]) {
        *self.state.pending.lock() += 1;
        let job = Job {
            version,
            wasm: wasm.into(),
        };
        let mut queue = self.queue.lock();
        if queue.is_none() {
            match self.spawn() {
                Ok(started) => *queue = Some(started),
                Err(error) => {
                    drop(queue);
                    let reason = format!("cannot start the optimiser thread: {error}");
                    self.state.finish(&job, Some(reason));
                    return;
                }
            }
        }
        let (sender, _) = queue.as_ref().expect("started above");
        if let Err(mpsc::SendError(job)) = sender.send(job) {
            // The worker is gone (it only stops on drop, or if a job panicked).
            drop(queue);
            self.state
                .finish(&job, Some("the optimiser thread stopped".to_owned()));
        }
    }

    fn spawn(&self) -> std::io::Result<(mpsc::Sender<Job>, JoinHandle<()>)> {
        let (sender, jobs) = mpsc::channel::<Job>();
        let (context, state) = (self.context.clone(), self.state.clone());
        // The worker logs where the thread that started it does (the global subscriber in the
        // host; a test's own one in a test).
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let worker = std::thread::Builder::new()
            .name("assignor-optimize".into())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    for job in jobs {
                        let gate = state.gate.lock();
                        let failure = context.optimize(&job);
                        drop(gate);
                        state.finish(&job, failure);
                    }
                })
            })?;
        Ok((sender, worker))
    }

    /// Blocks until every job submitted so far is finished.
    pub(super) fn settle(&self) {
        let mut pending = self.state.pending.lock();
        while *pending > 0 {
            self.state.settled.wait(&mut pending);
        }
    }

    /// Holds the worker before its next job until the guard is dropped.
    #[cfg(test)]
    pub(super) fn hold(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.state.gate.lock()
    }

    /// Why the optimising compile of `version` of `name` failed, if it did.
    pub(super) fn failure(&self, name: &str, version: u32) -> Option<String> {
        let failures = self.state.failures.lock();
        failures.get(&(name.to_owned(), version)).cloned()
    }
}

impl Drop for Optimizer {
    fn drop(&mut self) {
        if let Some((sender, worker)) = self.queue.lock().take() {
            drop(sender);
            let _ = worker.join();
        }
    }
}

impl State {
    fn finish(&self, job: &Job, failure: Option<String>) {
        if let Some(reason) = failure {
            let key = (job.version.name.clone(), job.version.version);
            self.failures.lock().insert(key, reason);
        }
        let mut pending = self.pending.lock();
        *pending -= 1;
        if *pending == 0 {
            self.settled.notify_all();
        }
    }
}

impl Context {
    /// Compiles and installs `job`'s optimised code and caches it; the reason on failure.
    fn optimize(&self, job: &Job) -> Option<String> {
        let version = &job.version;
        let (name, number) = (version.name.as_str(), version.version);
        let started = Instant::now();
        let installed = match self.sandbox.optimize(&version.compiled, &job.wasm) {
            Ok(installed) => installed.module(),
            // A call that failed on baseline code compiled it first (`sandbox::tier`).
            Err(OptimizeError::AlreadyOptimized) => match version.compiled.optimized_module() {
                Some(module) => module,
                None => return Some(OptimizeError::AlreadyOptimized.to_string()),
            },
            Err(error) => {
                tracing::error!(module = name, version = number, %error,
                    "optimising compile failed; the version goes on serving baseline code");
                return Some(error.to_string());
            }
        };
        tracing::info!(
            module = name,
            version = number,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "optimised code installed"
        );
        if let Some(cache) = &self.cache {
            let _writer = self.writer.lock();
            if self.catalog.load().uses_sha(&version.meta.sha256) {
                cache.put(installed, &version.meta.sha256);
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "optimizer_tests.rs"]
mod tests;
