//! Reading the events the queue delivers: what an event is (a call's result, a log line, an
//! error), and each result's content copied out into plain Rust values.
//!
//! Everything read here belongs to the event and stays valid while the [`Event`] guard is alive;
//! nothing is destroyed on its own. The codes of an [`Outcome`] are Kafka's (0 or positive):
//! an entry carrying one of librdkafka's own codes (negative: `_TIMED_OUT`, `_TRANSPORT`, which
//! librdkafka puts per group or topic when a request got no answer) fails the whole result,
//! except "unknown topic" and "unknown partition", which are Kafka's
//! UNKNOWN_TOPIC_OR_PARTITION (3) found by librdkafka itself.

use std::ffi::c_char;
use std::slice;

use rdkafka_sys as rd;
use rdkafka_sys::types::RDKafkaRespErr as RespErr;

use super::{Event, error_name, text};

/// What an event taken off the queue is.
pub enum Delivery {
    /// The result of the call whose id is the value (the admin options' opaque).
    Result(usize),
    /// A log line: syslog level (0 emergency .. 7 debug), facility, text.
    Log {
        level: i32,
        facility: String,
        message: String,
    },
    /// An error event of the instance (a broker down, all brokers down, authentication).
    Error(Failure),
    /// Any other event type (none is asked for; dropped).
    Other(i32),
}

/// An error as librdkafka reports it: Kafka's code (positive) or its own (negative).
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: i16,
    pub name: String,
    pub message: String,
}

/// One partition of a result; `error` is Kafka's code.
#[derive(Debug, Clone)]
pub struct Partition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub error: i16,
}

/// A result's content: partitions (group offsets, ListOffsets) or Kafka's code per topic or
/// group (CreateTopics, CreatePartitions, DeleteGroups).
pub enum Outcome {
    Partitions(Vec<Partition>),
    Codes(Vec<i16>),
}

/// The result event types of the requests [`super::Request`] makes.
const RESULTS: [i32; 7] = [
    rd::RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT,
    rd::RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT,
    rd::RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT,
    rd::RD_KAFKA_EVENT_LISTOFFSETS_RESULT,
    rd::RD_KAFKA_EVENT_DELETEGROUPS_RESULT,
    rd::RD_KAFKA_EVENT_CREATETOPICS_RESULT,
    rd::RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT,
];

fn failure(err: RespErr, message: *const c_char) -> Failure {
    // SAFETY: `message` is null or a string owned by the event or error being read.
    let message = unsafe { text(message) };
    // SAFETY: err2str returns a static string for every code.
    let message =
        message.unwrap_or_else(|| unsafe { text(rd::rd_kafka_err2str(err)) }.unwrap_or_default());
    // librdkafka's codes run from -200 to Kafka's highest, all within i16.
    Failure {
        code: err as i32 as i16,
        name: error_name(err),
        message,
    }
}

/// Kafka's code of one entry, or the failure of librdkafka's own code.
fn kafka_code(err: RespErr, message: *const c_char) -> Result<i16, Failure> {
    match err {
        RespErr::RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC
        | RespErr::RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION => Ok(3),
        err if (err as i32) < 0 => Err(failure(err, message)),
        err => Ok(err as i32 as i16),
    }
}

/// A `(pointer, count)` result array as a slice; empty for null.
///
/// # Safety
/// `items` is null or points at `count` items alive for `'a` (the event's life).
unsafe fn items<'a, T>(items: *const T, count: usize) -> &'a [T] {
    if items.is_null() || count == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { slice::from_raw_parts(items, count) }
}

/// Copies one partition of a result list.
///
/// # Safety
/// `p` is an element of a list owned by a live event.
unsafe fn partition(p: &rd::rd_kafka_topic_partition_t) -> Result<Partition, Failure> {
    // SAFETY: the caller's contract: the topic is a C string of the list, owned by the event.
    unsafe {
        Ok(Partition {
            topic: text(p.topic).unwrap_or_default(),
            partition: p.partition,
            offset: p.offset,
            leader_epoch: rd::rd_kafka_topic_partition_get_leader_epoch(p),
            error: kafka_code(p.err, std::ptr::null())?,
        })
    }
}

/// The partitions of a list owned by a live event.
///
/// # Safety
/// `list` is null or a list owned by a live event.
unsafe fn partitions(list: *const rd::rd_kafka_topic_partition_list_t) -> Result<Outcome, Failure> {
    if list.is_null() {
        return Ok(Outcome::Partitions(Vec::new()));
    }
    // SAFETY: the caller's contract: `elems` holds `cnt` elements.
    let all = unsafe { items((*list).elems, usize::try_from((*list).cnt).unwrap_or(0)) };
    // SAFETY: each element belongs to the list.
    let read: Result<Vec<_>, _> = all.iter().map(|p| unsafe { partition(p) }).collect();
    read.map(Outcome::Partitions)
}

impl Event {
    /// What this event is.
    pub fn delivery(&self) -> Delivery {
        // SAFETY: the event is live; the accessors only read it, each for its own event type.
        unsafe {
            match rd::rd_kafka_event_type(self.0) {
                rd::RD_KAFKA_EVENT_LOG => {
                    let (mut facility, mut message, mut level) =
                        (std::ptr::null(), std::ptr::null(), 0);
                    rd::rd_kafka_event_log(self.0, &mut facility, &mut message, &mut level);
                    let facility = text(facility).unwrap_or_default();
                    Delivery::Log {
                        level,
                        facility,
                        message: text(message).unwrap_or_default(),
                    }
                }
                rd::RD_KAFKA_EVENT_ERROR => {
                    let err = rd::rd_kafka_event_error(self.0);
                    Delivery::Error(failure(err, rd::rd_kafka_event_error_string(self.0)))
                }
                t if RESULTS.contains(&t) => {
                    Delivery::Result(rd::rd_kafka_event_opaque(self.0).addr())
                }
                other => Delivery::Other(other),
            }
        }
    }

    /// The event-level error, if any (a whole request failed: timed out, no coordinator).
    pub fn failure(&self) -> Option<Failure> {
        // SAFETY: the event is live; the error string belongs to it.
        unsafe {
            let err = rd::rd_kafka_event_error(self.0);
            (err != RespErr::RD_KAFKA_RESP_ERR_NO_ERROR)
                .then(|| failure(err, rd::rd_kafka_event_error_string(self.0)))
        }
    }

    /// The content of a result event; `Err` for an event-level error, a group-level error of a
    /// group-offsets call (one group per call), or an entry with librdkafka's own code.
    pub fn outcome(&self) -> Result<Outcome, Failure> {
        if let Some(failure) = self.failure() {
            return Err(failure);
        }
        let (e, mut n) = (self.0, 0);
        // SAFETY: the event is live and has no error; each `_result` accessor returns null
        // unless the event is of its type, and the arrays it leads to belong to the event.
        unsafe {
            match rd::rd_kafka_event_type(e) {
                rd::RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT => {
                    let r = rd::rd_kafka_event_AlterConsumerGroupOffsets_result(e);
                    one_group(items(
                        rd::rd_kafka_AlterConsumerGroupOffsets_result_groups(r, &mut n),
                        n,
                    ))
                }
                rd::RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT => {
                    let r = rd::rd_kafka_event_ListConsumerGroupOffsets_result(e);
                    one_group(items(
                        rd::rd_kafka_ListConsumerGroupOffsets_result_groups(r, &mut n),
                        n,
                    ))
                }
                rd::RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT => {
                    let r = rd::rd_kafka_event_DeleteConsumerGroupOffsets_result(e);
                    one_group(items(
                        rd::rd_kafka_DeleteConsumerGroupOffsets_result_groups(r, &mut n),
                        n,
                    ))
                }
                rd::RD_KAFKA_EVENT_LISTOFFSETS_RESULT => {
                    let r = rd::rd_kafka_event_ListOffsets_result(e);
                    let infos = items(rd::rd_kafka_ListOffsets_result_infos(r, &mut n), n);
                    let tps = infos
                        .iter()
                        .map(|&i| rd::rd_kafka_ListOffsetsResultInfo_topic_partition(i));
                    let read: Result<Vec<_>, _> = tps
                        .filter(|p| !p.is_null())
                        .map(|p| partition(&*p))
                        .collect();
                    read.map(Outcome::Partitions)
                }
                rd::RD_KAFKA_EVENT_DELETEGROUPS_RESULT => {
                    let r = rd::rd_kafka_event_DeleteGroups_result(e);
                    let groups = items(rd::rd_kafka_DeleteGroups_result_groups(r, &mut n), n);
                    groups
                        .iter()
                        .map(|&g| group_code(g))
                        .collect::<Result<_, _>>()
                        .map(Outcome::Codes)
                }
                rd::RD_KAFKA_EVENT_CREATETOPICS_RESULT => {
                    let r = rd::rd_kafka_event_CreateTopics_result(e);
                    topic_codes(items(rd::rd_kafka_CreateTopics_result_topics(r, &mut n), n))
                }
                rd::RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT => {
                    let r = rd::rd_kafka_event_CreatePartitions_result(e);
                    topic_codes(items(
                        rd::rd_kafka_CreatePartitions_result_topics(r, &mut n),
                        n,
                    ))
                }
                other => Err(Failure {
                    code: RespErr::RD_KAFKA_RESP_ERR__FAIL as i16,
                    name: error_name(RespErr::RD_KAFKA_RESP_ERR__FAIL),
                    message: format!("unexpected result event type {other}"),
                }),
            }
        }
    }
}

/// The single group of a group-offsets result: its error, else its partitions.
///
/// # Safety
/// The group results belong to a live event.
unsafe fn one_group(groups: &[*const rd::rd_kafka_group_result_t]) -> Result<Outcome, Failure> {
    let [group] = groups else {
        let message = format!("{} group results for one group", groups.len());
        return Err(Failure {
            message,
            ..failure(RespErr::RD_KAFKA_RESP_ERR__BAD_MSG, std::ptr::null())
        });
    };
    // SAFETY: the caller's contract; the error and the partition list belong to the result.
    unsafe {
        let error = rd::rd_kafka_group_result_error(*group);
        if !error.is_null() {
            return Err(failure(
                rd::rd_kafka_error_code(error),
                rd::rd_kafka_error_string(error),
            ));
        }
        partitions(rd::rd_kafka_group_result_partitions(*group))
    }
}

/// Kafka's code of a group result (0 when it has no error).
///
/// # Safety
/// `group` belongs to a live event.
unsafe fn group_code(group: *const rd::rd_kafka_group_result_t) -> Result<i16, Failure> {
    // SAFETY: the caller's contract.
    unsafe {
        let error = rd::rd_kafka_group_result_error(group);
        if error.is_null() {
            return Ok(0);
        }
        kafka_code(
            rd::rd_kafka_error_code(error),
            rd::rd_kafka_error_string(error),
        )
    }
}

/// Kafka's codes of the topic results of CreateTopics / CreatePartitions.
///
/// # Safety
/// The topic results belong to a live event.
unsafe fn topic_codes(topics: &[*const rd::rd_kafka_topic_result_t]) -> Result<Outcome, Failure> {
    let code = |&t| {
        // SAFETY: the caller's contract.
        unsafe {
            kafka_code(
                rd::rd_kafka_topic_result_error(t),
                rd::rd_kafka_topic_result_error_string(t),
            )
        }
    };
    topics
        .iter()
        .map(code)
        .collect::<Result<_, _>>()
        .map(Outcome::Codes)
}
