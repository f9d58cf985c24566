//! One partition's log: the record batches produced to it, as they came, with offsets assigned.
//!
//! A Produce's `records` are one or more v2 record batches (magic 2, which Produce v3+ requires).
//! Appending checks each batch's frame, writes the log end offset into its `baseOffset` (the
//! only bytes changed: the field is outside the CRC, as Kafka's own offset assignment relies
//! on) and keeps the batch whole, compressed or not. A Fetch returns whole batches from the one
//! holding the fetch offset, concatenated, as Kafka does; ListOffsets looks timestamps up per
//! batch (its `maxTimestamp`), not per record.

use bytes::{Bytes, BytesMut};

/// Bytes of a v2 batch header up to and including `recordsCount`.
const BATCH_HEADER: usize = 61;
/// Bytes before `partitionLeaderEpoch` that the `batchLength` field does not count.
const LOG_OVERHEAD: usize = 12;
const MAGIC_AT: usize = 16;
const LAST_OFFSET_DELTA_AT: usize = 23;
const MAX_TIMESTAMP_AT: usize = 35;

#[derive(Debug, Default)]
pub struct Log {
    batches: Vec<Batch>,
    end_offset: i64,
}

#[derive(Debug)]
struct Batch {
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    bytes: Bytes,
}

impl Log {
    /// The offset the next record gets (Kafka's log end offset and, with every replica in the
    /// ISR, the high watermark).
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    /// Appends the batches in `records`; returns the offset of the first record. Nothing is
    /// appended when any batch is malformed (the caller answers CORRUPT_MESSAGE).
    pub fn append(&mut self, records: &[u8]) -> Result<i64, String> {
        let base = self.end_offset;
        let mut next = base;
        let mut appended = Vec::new();
        let mut rest = records;
        while !rest.is_empty() {
            let (len, last_offset_delta, max_timestamp) = frame(rest)?;
            let mut batch = BytesMut::from(&rest[..len]);
            batch[..8].copy_from_slice(&next.to_be_bytes());
            appended.push(Batch {
                base_offset: next,
                last_offset: next + i64::from(last_offset_delta),
                max_timestamp,
                bytes: batch.freeze(),
            });
            next += i64::from(last_offset_delta) + 1;
            rest = &rest[len..];
        }
        if appended.is_empty() {
            return Err("no record batch".to_owned());
        }
        self.batches.extend(appended);
        self.end_offset = next;
        Ok(base)
    }

    /// The batches from the one holding `offset` on, concatenated, stopping before the batch
    /// that would pass `max_bytes` (the first is always returned whole, as Kafka does).
    pub fn read(&self, offset: i64, max_bytes: usize) -> Bytes {
        let mut out = BytesMut::new();
        for batch in self.batches.iter().filter(|b| b.last_offset >= offset) {
            if !out.is_empty() && out.len() + batch.bytes.len() > max_bytes {
                break;
            }
            out.extend_from_slice(&batch.bytes);
        }
        out.freeze()
    }

    /// The first batch whose records may have a timestamp at or after `timestamp`:
    /// `(its base offset, its max timestamp)`.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Option<(i64, i64)> {
        self.batches
            .iter()
            .find(|b| b.max_timestamp >= timestamp)
            .map(|b| (b.base_offset, b.max_timestamp))
    }

    /// The stored batches, offsets as assigned.
    pub fn batches(&self) -> Vec<Bytes> {
        self.batches.iter().map(|b| b.bytes.clone()).collect()
    }
}

/// Checks the v2 batch at the front of `bytes`: `(its length, lastOffsetDelta, maxTimestamp)`.
fn frame(bytes: &[u8]) -> Result<(usize, i32, i64), String> {
    if bytes.len() < BATCH_HEADER {
        return Err(format!("{} bytes are too few for a batch", bytes.len()));
    }
    let batch_length = i32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let len = usize::try_from(batch_length).map_err(|_| "negative batch length")? + LOG_OVERHEAD;
    if len < BATCH_HEADER || len > bytes.len() {
        return Err(format!(
            "batch length {batch_length} with {} bytes",
            bytes.len()
        ));
    }
    if bytes[MAGIC_AT] != 2 {
        return Err(format!("magic {} (only v2 batches)", bytes[MAGIC_AT]));
    }
    let delta = i32::from_be_bytes(
        bytes[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
            .try_into()
            .expect("4 bytes"),
    );
    if delta < 0 {
        return Err(format!("lastOffsetDelta {delta}"));
    }
    let max_timestamp = i64::from_be_bytes(
        bytes[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8]
            .try_into()
            .expect("8 bytes"),
    );
    Ok((len, delta, max_timestamp))
}
