//! The admin requests, built as librdkafka takes them and enqueued on the instance's queue
//! with the caller's id as opaque. Every object made for a request is destroyed by its guard
//! once the request is enqueued (librdkafka copies what it keeps).

use std::ffi::{c_char, c_void};
use std::ptr;
use std::time::Duration;

use rdkafka_sys as rd;
use rdkafka_sys::types::RDKafkaRespErr;

use super::{Native, cstring, text};

/// One admin request, as librdkafka takes it (the group calls are the host's own: `groups.rs`).
pub enum Request<'a> {
    ListOffsetsLatest {
        partitions: &'a [(String, i32)],
    },
    CreateTopic {
        name: &'a str,
        partitions: i32,
        replication_factor: i16,
        configs: &'a [(&'a str, String)],
    },
    CreatePartitions {
        name: &'a str,
        total: i32,
    },
}

impl Request<'_> {
    fn op(&self) -> rd::rd_kafka_admin_op_t {
        use rd::rd_kafka_admin_op_t as Op;
        match self {
            Request::ListOffsetsLatest { .. } => Op::RD_KAFKA_ADMIN_OP_LISTOFFSETS,
            Request::CreateTopic { .. } => Op::RD_KAFKA_ADMIN_OP_CREATETOPICS,
            Request::CreatePartitions { .. } => Op::RD_KAFKA_ADMIN_OP_CREATEPARTITIONS,
        }
    }
}

impl Native {
    /// Enqueues `request`; its result will be an event whose opaque is `id` (never 0).
    pub fn send(&self, request: &Request<'_>, id: usize, timeout: Duration) -> Result<(), String> {
        let rk = self.client.native_ptr();
        let q = self.results.0;
        let options = Options::new(rk, request.op(), id, timeout)?;
        if let Request::CreateTopic { .. } | Request::CreatePartitions { .. } = request {
            // The broker answers once the change is done or half the bound has passed (then
            // REQUEST_TIMED_OUT for the topic, the change still under way), not right away.
            options.operation_timeout(timeout / 2)?;
        }
        let o = options.0;
        match *request {
            Request::ListOffsetsLatest { partitions } => {
                let list = Tpl::new(partitions.len())?;
                for (topic, partition) in partitions {
                    let latest = rd::rd_kafka_OffsetSpec_t::RD_KAFKA_OFFSET_SPEC_LATEST as i64;
                    list.add(topic, *partition, latest)?;
                }
                // SAFETY: `list` outlives the call, which copies it.
                unsafe { rd::rd_kafka_ListOffsets(rk, list.0, o, q) };
            }
            Request::CreateTopic {
                name,
                partitions,
                replication_factor,
                configs,
            } => {
                let name = cstring(name)?;
                let mut err = ErrBuf::new();
                // SAFETY: `name` and `err` outlive `_new`, which returns null with a message in
                // `err` for invalid arguments; the topic is destroyed by its guard.
                unsafe {
                    let t = rd::rd_kafka_NewTopic_new(
                        name.as_ptr(),
                        partitions,
                        replication_factor.into(),
                        err.ptr(),
                        err.len(),
                    );
                    if t.is_null() {
                        return Err(err.text());
                    }
                    let t = Owned(t, rd::rd_kafka_NewTopic_destroy);
                    for (key, value) in configs {
                        let (key, value) = (cstring(key)?, cstring(value)?);
                        // Copies both strings; fails only for null arguments.
                        let code =
                            rd::rd_kafka_NewTopic_set_config(t.0, key.as_ptr(), value.as_ptr());
                        if code != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                            return Err(format!("topic config {key:?}: {code:?}"));
                        }
                    }
                    rd::rd_kafka_CreateTopics(rk, [t.0].as_mut_ptr(), 1, o, q);
                }
            }
            Request::CreatePartitions { name, total } => {
                let name = cstring(name)?;
                let total = usize::try_from(total).map_err(|_| format!("{total} partitions"))?;
                let mut err = ErrBuf::new();
                // SAFETY: as for CreateTopic.
                unsafe {
                    let p =
                        rd::rd_kafka_NewPartitions_new(name.as_ptr(), total, err.ptr(), err.len());
                    if p.is_null() {
                        return Err(err.text());
                    }
                    let p = Owned(p, rd::rd_kafka_NewPartitions_destroy);
                    rd::rd_kafka_CreatePartitions(rk, [p.0].as_mut_ptr(), 1, o, q);
                }
            }
        }
        Ok(())
    }
}

/// An admin request's options: request timeout and the caller's id as opaque.
struct Options(*mut rd::rd_kafka_AdminOptions_t);

impl Options {
    fn new(
        rk: *mut rd::rd_kafka_t,
        op: rd::rd_kafka_admin_op_t,
        id: usize,
        timeout: Duration,
    ) -> Result<Options, String> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let mut err = ErrBuf::new();
        // SAFETY: `rk` is live; the options are destroyed by the guard on every path; the opaque
        // is an integer librdkafka only hands back, never dereferences.
        unsafe {
            let options = Options(rd::rd_kafka_AdminOptions_new(rk, op));
            rd::rd_kafka_AdminOptions_set_opaque(
                options.0,
                ptr::without_provenance_mut::<c_void>(id),
            );
            let e =
                rd::rd_kafka_AdminOptions_set_request_timeout(options.0, ms, err.ptr(), err.len());
            if e != RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
                return Err(err.text());
            }
            Ok(options)
        }
    }

    fn operation_timeout(&self, timeout: Duration) -> Result<(), String> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let mut err = ErrBuf::new();
        // SAFETY: the options are live; `err` outlives the call.
        let e = unsafe {
            rd::rd_kafka_AdminOptions_set_operation_timeout(self.0, ms, err.ptr(), err.len())
        };
        match e {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR => Ok(()),
            _ => Err(err.text()),
        }
    }
}

impl Drop for Options {
    fn drop(&mut self) {
        // SAFETY: made by AdminOptions_new, destroyed only here.
        unsafe { rd::rd_kafka_AdminOptions_destroy(self.0) }
    }
}

/// A topic-partition list built for a request.
struct Tpl(*mut rd::rd_kafka_topic_partition_list_t);

impl Tpl {
    fn new(capacity: usize) -> Result<Tpl, String> {
        let capacity = i32::try_from(capacity).map_err(|_| format!("{capacity} partitions"))?;
        // SAFETY: returns a new list, destroyed by the guard.
        Ok(Tpl(unsafe {
            rd::rd_kafka_topic_partition_list_new(capacity)
        }))
    }

    /// Appends one partition with `offset` (an offset spec).
    fn add(&self, topic: &str, partition: i32, offset: i64) -> Result<(), String> {
        let topic = cstring(topic)?;
        // SAFETY: the list is live; `add` copies the topic name and returns an element owned
        // by the list, valid until the list changes.
        unsafe {
            let element = rd::rd_kafka_topic_partition_list_add(self.0, topic.as_ptr(), partition);
            (*element).offset = offset;
        }
        Ok(())
    }
}

impl Drop for Tpl {
    fn drop(&mut self) {
        // SAFETY: made by list_new, destroyed only here (with its elements and metadata).
        unsafe { rd::rd_kafka_topic_partition_list_destroy(self.0) }
    }
}

/// A request object and its destructor.
struct Owned<T>(*mut T, unsafe extern "C" fn(*mut T));

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from the matching `_new` and is destroyed only here.
        unsafe { (self.1)(self.0) }
    }
}

/// librdkafka's error text buffer for `_new` and option calls.
struct ErrBuf([c_char; 512]);

impl ErrBuf {
    fn new() -> ErrBuf {
        ErrBuf([0; 512])
    }
    fn ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn text(&self) -> String {
        // SAFETY: the buffer starts zeroed and librdkafka writes at most `len` bytes, NUL included.
        unsafe { text(self.0.as_ptr()) }.unwrap_or_default()
    }
}
