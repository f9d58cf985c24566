//! The bytes of requests being read and decoded, bounded across every connection
//! (`kafka.queued_max_request_bytes`, Kafka's `queued.max.request.bytes`).
//!
//! A request costs far more decoded than on the wire: a JoinGroup naming half a million
//! protocols, 8 MiB on the wire, takes about fifteen times that while kafka-protocol's structs
//! and the coordinator's copy of them coexist, and every connection can send one. So a frame
//! takes its size from the budget as soon as its size prefix and API key are read (so the
//! size has passed that API's cap), before its body is, and a connection whose frame does not
//! fit waits without reading (the client's sends back up in TCP, as Kafka mutes a channel when
//! its memory pool is empty). The share comes back:
//!
//! - for a request passed up to the cluster, once it is written up its link;
//! - for a request the host answers, when its API's file is done with the decoded request:
//!   for the APIs that wait on other members (JoinGroup, SyncGroup, ConsumerGroupHeartbeat),
//!   once the group's shard has taken it in (`Driver::call_holding`), so a JoinGroup parked
//!   for the rest of its group holds nothing and cannot keep the others' JoinGroups from
//!   being read; for the rest, when the answer is made.
//!
//! Frames under [`SMALL_FRAME_BYTES`] take nothing: heartbeats, commits and fetches of every
//! other client are read at once however many large frames wait, and what they can cost is
//! already bounded per connection (`kafka.max_in_flight_requests`). A frame larger than the
//! whole budget waits for all of it, so it is read alone rather than never.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Frames smaller than this are read without taking from the budget.
pub const SMALL_FRAME_BYTES: usize = 64 * 1024;

/// The budget's unit: permits count KiB, so a budget of gigabytes fits a semaphore's `u32`.
const UNIT: usize = 1024;

/// The budget shared by every Kafka port of the host.
#[derive(Debug)]
pub struct Budget {
    permits: Arc<Semaphore>,
    units: u32,
    /// Bytes of the shares given out (a waiter's partial reservation is not counted), and
    /// frames that waited: the host's metrics' own gauge and counter
    /// (`Metrics::request_budget`), or ones of the budget's alone.
    held: Gauge,
    waits: Counter,
}

/// A share of the budget, given back when dropped.
#[derive(Debug)]
pub struct Held {
    _permit: OwnedSemaphorePermit,
    bytes: i64,
    held: Gauge,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.held.dec_by(self.bytes);
    }
}

impl Budget {
    /// A budget of `bytes` (rounded up to whole KiB); `None` for 0, Kafka's "no bound".
    pub fn new(bytes: usize, metrics: Option<(Gauge, Counter)>) -> Option<Budget> {
        let units = u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX);
        (units > 0).then(|| Budget {
            permits: Arc::new(Semaphore::new(units as usize)),
            units,
            held: metrics
                .as_ref()
                .map(|(held, _)| held.clone())
                .unwrap_or_default(),
            waits: metrics.map(|(_, waits)| waits).unwrap_or_default(),
        })
    }

    /// The share of a frame of `bytes`, waiting until the budget has it; `None` for a small
    /// frame, which takes nothing. Waiters are served in order (tokio's semaphore is fair),
    /// so a large frame is not passed over forever by smaller ones.
    pub async fn take(&self, bytes: usize) -> Option<Held> {
        if bytes < SMALL_FRAME_BYTES {
            return None;
        }
        let units = u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(self.units);
        let permits = self.permits.clone();
        let permit = match permits.clone().try_acquire_many_owned(units) {
            Ok(permit) => permit,
            Err(_) => {
                self.waits.inc();
                permits
                    .acquire_many_owned(units)
                    .await
                    .expect("the budget's semaphore is never closed")
            }
        };
        let bytes = i64::from(units) * UNIT as i64;
        self.held.inc_by(bytes);
        Some(Held {
            _permit: permit,
            bytes,
            held: self.held.clone(),
        })
    }

    /// Bytes held by frames now.
    pub fn held_bytes(&self) -> u64 {
        u64::try_from(self.held.get()).unwrap_or(0)
    }

    /// Frames that had to wait for their share, since start.
    pub fn waits(&self) -> u64 {
        self.waits.get()
    }
}

/// A share as the driver carries it to the group's shard ([`crate::driver::Holding`]).
pub fn holding(held: Option<Held>) -> Option<crate::driver::Holding> {
    held.map(|held| Box::new(held) as crate::driver::Holding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn small_frames_take_nothing_and_large_ones_are_given_back_on_drop() {
        let budget = Budget::new(1024 * 1024, None).unwrap();
        assert!(budget.take(SMALL_FRAME_BYTES - 1).await.is_none());
        assert_eq!(budget.held_bytes(), 0);
        let held = budget.take(300 * 1024).await.expect("a share");
        assert_eq!(budget.held_bytes(), 300 * 1024);
        drop(held);
        assert_eq!((budget.held_bytes(), budget.waits()), (0, 0));
    }

    #[tokio::test]
    async fn a_frame_that_does_not_fit_waits_for_the_one_before_it() {
        let budget = Arc::new(Budget::new(1024 * 1024, None).unwrap());
        let first = budget.take(700 * 1024).await.expect("fits");
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.take(700 * 1024).await }
        });
        // Counted as a wait once it asked; not served while the first is held.
        while budget.waits() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        assert_eq!(budget.held_bytes(), 700 * 1024);
        drop(first);
        let second = waiting
            .await
            .unwrap()
            .expect("served once the first is back");
        assert_eq!(budget.held_bytes(), 700 * 1024);
        drop(second);
        assert_eq!(budget.held_bytes(), 0);
    }

    #[tokio::test]
    async fn a_frame_larger_than_the_budget_takes_all_of_it_and_no_budget_is_none() {
        let budget = Budget::new(512 * 1024, None).unwrap();
        let held = budget
            .take(8 * 1024 * 1024)
            .await
            .expect("the whole budget");
        assert_eq!(budget.held_bytes(), 512 * 1024);
        drop(held);
        assert!(Budget::new(0, None).is_none(), "0: no bound, as Kafka's -1");
    }
}
