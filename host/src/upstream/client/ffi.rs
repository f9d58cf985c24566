//! The native side of [`super::UpstreamClient`]: one librdkafka instance, one queue that every
//! admin result and (forwarded) librdkafka's main queue land on, and the admin requests
//! enqueued on it through rdkafka-sys, each tagged with its caller's id.
//!
//! rdkafka's safe `AdminClient` is not used: it runs a polling thread of its own and lacks
//! AlterConsumerGroupOffsets, ListConsumerGroupOffsets, DeleteConsumerGroupOffsets and
//! ListOffsets; with every call here, one queue and one poller serve them all.
//!
//! Ownership: every native object made here is destroyed on every path by a guard: [`Queue`]
//! and [`Event`] here, the request objects in [`requests`] (librdkafka copies a request when it
//! is enqueued, so they die right after). Result lists belong to their event and are only read
//! in place ([`results`]). The instance itself is destroyed last, after both queue handles.

use std::ffi::{CStr, CString, c_char};
use std::ptr;

use rdkafka::client::{Client, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::types::RDKafkaType;
use rdkafka_sys as rd;
use rdkafka_sys::types::RDKafkaRespErr;

use super::error::ClientError;

mod requests;
mod results;

pub(super) use requests::Request;
pub(super) use results::{Delivery, Failure, Outcome, Partition};

/// One librdkafka instance and the queue its results, logs and errors arrive on.
pub(super) struct Native {
    /// Every admin result, and librdkafka's main queue (logs, error events) forwarded into it.
    results: Queue,
    /// A handle on the main queue, forwarded into `results` until [`Native`] is dropped.
    main: Queue,
    /// Declared last: dropped (`rd_kafka_destroy`) after both queue handles.
    client: Client<DefaultClientContext>,
}

impl Native {
    /// Creates the instance. librdkafka connects in the background, so this needs no cluster.
    pub fn new(config: &ClientConfig) -> Result<Native, ClientError> {
        let create = |e: rdkafka::error::KafkaError| ClientError::Create(e.to_string());
        let native_config = config.create_native_config().map_err(create)?;
        let client = Client::new(
            config,
            native_config,
            RDKafkaType::RD_KAFKA_PRODUCER,
            DefaultClientContext,
        )
        .map_err(create)?;
        let rk = client.native_ptr();
        // SAFETY: `rk` is the live instance `client` owns; both calls return new queue
        // handles, which the guards destroy.
        let (results, main) = unsafe {
            (
                Queue(rd::rd_kafka_queue_new(rk)),
                Queue(rd::rd_kafka_queue_get_main(rk)),
            )
        };
        // SAFETY: both handles are live queues of this instance; `Drop` undoes the forwarding
        // before either handle is destroyed.
        unsafe { rd::rd_kafka_queue_forward(main.0, results.0) };
        Ok(Native {
            results,
            main,
            client,
        })
    }

    /// Waits for the next event: a result, a log line, an error. `None` after [`Native::wake`].
    pub fn poll(&self) -> Option<Event> {
        // SAFETY: the queue is live for `self`'s life; a non-null event is owned by the caller,
        // and the guard destroys it.
        let event = unsafe { rd::rd_kafka_queue_poll(self.results.0, -1) };
        (!event.is_null()).then_some(Event(event))
    }

    /// Makes the current (or the next) [`Native::poll`] return `None`: librdkafka keeps the
    /// wake-up until a poll consumes it, so one sent before the poll starts is not lost.
    pub fn wake(&self) {
        // SAFETY: the queue is live for `self`'s life; yield is allowed from any thread.
        unsafe { rd::rd_kafka_queue_yield(self.results.0) };
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        // SAFETY: both handles are still live; a null destination removes the forwarding.
        unsafe { rd::rd_kafka_queue_forward(self.main.0, ptr::null_mut()) };
    }
}

fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"))
}

/// librdkafka's name of an error code (`UNKNOWN_MEMBER_ID`, `_TIMED_OUT`).
pub(super) fn error_name(code: RDKafkaRespErr) -> String {
    // SAFETY: err2name returns a static string for every code, known or not.
    unsafe { text(rd::rd_kafka_err2name(code)) }.unwrap_or_default()
}

/// Copies a C string librdkafka owns; `None` for null.
///
/// # Safety
/// `p` is null or a NUL-terminated string alive for the call.
unsafe fn text(p: *const c_char) -> Option<String> {
    // SAFETY: the caller's contract.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A queue handle of this instance.
struct Queue(*mut rd::rd_kafka_queue_t);

// SAFETY: librdkafka's queues are thread safe (locked internally); the handle is only a pointer.
unsafe impl Send for Queue {}
// SAFETY: as above: poll, yield and forward may run concurrently from any thread.
unsafe impl Sync for Queue {}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the handle was returned by queue_new/get_main and is destroyed only here.
        unsafe { rd::rd_kafka_queue_destroy(self.0) }
    }
}

/// An event taken off the queue, destroyed when dropped.
pub(super) struct Event(*mut rd::rd_kafka_event_t);

// SAFETY: an event popped off a queue belongs to its holder alone; librdkafka allows reading and
// destroying it on any thread.
unsafe impl Send for Event {}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: popped by queue_poll, destroyed only here.
        unsafe { rd::rd_kafka_event_destroy(self.0) }
    }
}
