//! The lease renewals' commits, answered on a queue of their own. rdkafka's asynchronous
//! `commit` reports its result only through librdkafka's `offset_commit_cb`, which rdkafka
//! never sets, so `ConsumerContext::commit_callback` is never called for it (librdkafka
//! 2.12.1, `rd_kafka_cgrp_propagate_commit_result`); and a synchronous commit blocks the
//! member's thread (its rebalance callbacks too) for as long as the coordinator does not
//! answer. `rd_kafka_commit_queue` posts each result on a queue this module owns, which the
//! member's loop polls without waiting. The member id, which rdkafka does not expose either,
//! is read here too.

use std::ptr;

use rdkafka::TopicPartitionList;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka_sys as rd;
use rdkafka_sys::types::RDKafkaRespErr;

/// A queue of commit results of one consumer. Must be dropped before that consumer.
pub(super) struct CommitQueue(*mut rd::rd_kafka_queue_t);

// SAFETY: librdkafka's queues are thread safe (locked internally); the handle is a pointer.
unsafe impl Send for CommitQueue {}

/// librdkafka requires a callback with the poll APIs; with the event API (`queue_poll`) it is
/// never called, and the result comes back as an event.
unsafe extern "C" fn ignored(
    _rk: *mut rd::rd_kafka_t,
    _err: RDKafkaRespErr,
    _offsets: *mut rd::rd_kafka_topic_partition_list_t,
    _opaque: *mut std::ffi::c_void,
) {
}

impl CommitQueue {
    pub fn new<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> CommitQueue {
        // SAFETY: the consumer's instance is live; the new handle is destroyed by `Drop`.
        CommitQueue(unsafe { rd::rd_kafka_queue_new(consumer.client().native_ptr()) })
    }

    /// Sends a commit of `offsets` with the member's id and generation; its result comes back
    /// from [`CommitQueue::poll`]. An error here means it was not sent.
    pub fn commit<C: ConsumerContext>(
        &self,
        consumer: &BaseConsumer<C>,
        offsets: &TopicPartitionList,
    ) -> Result<(), RDKafkaErrorCode> {
        // SAFETY: the instance, the list and the queue are live for the call; librdkafka
        // copies the list.
        let err = unsafe {
            rd::rd_kafka_commit_queue(
                consumer.client().native_ptr(),
                offsets.ptr(),
                self.0,
                Some(ignored),
                ptr::null_mut(),
            )
        };
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR => Ok(()),
            err => Err(err.into()),
        }
    }

    /// The result of the oldest commit answered since the last call, if any (never waits).
    pub fn poll(&self) -> Option<Result<(), RDKafkaErrorCode>> {
        // SAFETY: the queue is live; a non-null event is ours, destroyed below after reading.
        let event = unsafe { rd::rd_kafka_queue_poll(self.0, 0) };
        if event.is_null() {
            return None;
        }
        // SAFETY: `event` is the live event just popped; destroyed once, here.
        let err = unsafe {
            let err = rd::rd_kafka_event_error(event);
            rd::rd_kafka_event_destroy(event);
            err
        };
        Some(match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR => Ok(()),
            err => Err(err.into()),
        })
    }
}

/// The member id the upstream gave this consumer (empty before its first JoinGroup answer).
/// rdkafka does not expose `rd_kafka_memberid`.
pub(super) fn member_id<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> String {
    let rk = consumer.client().native_ptr();
    // SAFETY: the instance is live; the returned copy is ours, freed below with the instance's
    // allocator after it was read.
    unsafe {
        let id = rd::rd_kafka_memberid(rk);
        if id.is_null() {
            return String::new();
        }
        let text = std::ffi::CStr::from_ptr(id).to_string_lossy().into_owned();
        rd::rd_kafka_mem_free(rk, id.cast());
        text
    }
}

impl Drop for CommitQueue {
    fn drop(&mut self) {
        // SAFETY: the handle was returned by queue_new and is destroyed only here.
        unsafe { rd::rd_kafka_queue_destroy(self.0) }
    }
}
