//! The poller thread: the one reader of the instance's queue. It completes each call's oneshot
//! with its result event, sends librdkafka's log lines and error events to `tracing` (target
//! `assignor_host::upstream`), and remembers whether the cluster looks unreachable.
//!
//! A call registers a oneshot under a fresh id before it is enqueued, and the id travels as the
//! request's opaque (an integer, never a pointer: nothing leaks when a result never comes). A
//! result nobody waits for any more (the caller timed out or was dropped) is destroyed here.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::ffi::{Delivery, Event, Failure, Native};

/// The tracing target of everything librdkafka says.
pub(super) const TARGET: &str = "assignor_host::upstream";

/// The poller thread's name (15 bytes, Linux's limit).
pub(super) const THREAD_NAME: &str = "upstream-poller";

/// librdkafka's codes (`rd_kafka_resp_err_t`) that mean the cluster cannot be talked to:
/// `_TRANSPORT`, `_RESOLVE`, `_ALL_BROKERS_DOWN`, `_SSL`, `_AUTHENTICATION`.
const UNREACHABLE: [i16; 5] = [-195, -193, -187, -181, -169];

/// Whether librdkafka's `code` says the cluster cannot be talked to.
pub(super) fn is_unreachable(code: i16) -> bool {
    UNREACHABLE.contains(&code)
}

/// What the callers and the poller share.
pub(super) struct Shared {
    pub native: Native,
    pending: Mutex<HashMap<usize, oneshot::Sender<Event>>>,
    next_id: AtomicUsize,
    stopping: AtomicBool,
    /// librdkafka's last connection failure, cleared by the next call answered without one of
    /// librdkafka's own errors.
    unreachable: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(native: Native) -> Shared {
        Shared {
            native,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicUsize::new(1),
            stopping: AtomicBool::new(false),
            unreachable: Mutex::new(None),
        }
    }

    /// A fresh id (never 0: a null opaque is no call) and the receiver its result comes to.
    pub fn register(self: &Arc<Shared>) -> Pending {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).max(1);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        Pending {
            id,
            rx,
            shared: Arc::clone(self),
        }
    }

    /// librdkafka's last connection failure, if no call was answered since.
    pub fn unreachable(&self) -> Option<String> {
        self.unreachable.lock().clone()
    }

    /// A call got its answer: the cluster is reachable again.
    pub fn answered(&self) {
        *self.unreachable.lock() = None;
    }
}

/// One call waiting for its result; dropping it (done, timed out, cancelled) forgets the id.
pub(super) struct Pending {
    pub id: usize,
    pub rx: oneshot::Receiver<Event>,
    shared: Arc<Shared>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.shared.pending.lock().remove(&self.id);
    }
}

/// Starts the poller.
pub(super) fn spawn(shared: Arc<Shared>) -> io::Result<JoinHandle<()>> {
    thread::Builder::new()
        .name(THREAD_NAME.to_owned())
        .spawn(move || run(&shared))
}

/// Stops the poller and waits for it (it is blocked in a poll, or about to be).
pub(super) fn stop(shared: &Shared, poller: JoinHandle<()>) {
    shared.stopping.store(true, Ordering::Release);
    shared.native.wake();
    if poller.join().is_err() {
        tracing::error!(target: TARGET, "the upstream poller thread panicked");
    }
}

fn run(shared: &Shared) {
    loop {
        let Some(event) = shared.native.poll() else {
            if shared.stopping.load(Ordering::Acquire) {
                return;
            }
            continue;
        };
        match event.delivery() {
            Delivery::Result(id) => {
                let waiting = shared.pending.lock().remove(&id);
                if let Some(tx) = waiting {
                    // A receiver dropped meanwhile destroys the event with the failed send.
                    let _ = tx.send(event);
                }
            }
            Delivery::Log {
                level,
                facility,
                message,
            } => log(level, &facility, &message),
            Delivery::Error(Failure {
                code,
                name,
                message,
            }) => {
                if is_unreachable(code) {
                    *shared.unreachable.lock() = Some(message.clone());
                }
                tracing::warn!(target: TARGET, code, error = %name, "{message}");
            }
            Delivery::Other(event_type) => {
                tracing::debug!(target: TARGET, event_type, "librdkafka event ignored");
            }
        }
    }
}

/// One librdkafka log line, at the tracing level of its syslog level.
fn log(level: i32, facility: &str, message: &str) {
    match level {
        ..=3 => tracing::error!(target: TARGET, facility, "{message}"),
        4 => tracing::warn!(target: TARGET, facility, "{message}"),
        5 | 6 => tracing::info!(target: TARGET, facility, "{message}"),
        _ => tracing::debug!(target: TARGET, facility, "{message}"),
    }
}
