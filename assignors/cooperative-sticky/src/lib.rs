//! # cooperative-sticky
//!
//! Apache Kafka's client-side `CooperativeStickyAssignor` (`org.apache.kafka.clients.consumer`)
//! as an assignor-host module: the sticky strategy with KIP-429 incremental cooperative
//! rebalancing, rack-aware (KIP-881). The algorithm is Kafka's `AbstractStickyAssignor`, ported
//! in `assignor-sticky-core` (read its crate docs for what matches Kafka and what differs on
//! purpose); this crate is the module around it. librdkafka consumers (confluent-kafka,
//! rdkafka, kcat) on `partition.assignment.strategy=cooperative-sticky` are assigned by it.
//!
//! One rebalance, seen from the group:
//! 1. The sticky assignment is computed as for `sticky`: balanced first, then keeping what each
//!    member owns (`owned_partitions`, at `owned_generation`; a higher generation wins a
//!    disputed partition, equal generations leave it unowned).
//! 2. Every partition that would go straight from one owner to another is left out: its owner
//!    is told to revoke it (it is missing from its new assignment) and nobody gets it yet. The
//!    same goes for a partition two members still claim at one generation. The host's
//!    cooperative check refuses any output that breaks this.
//! 3. The owner revokes and rejoins at once (KIP-429 clients do); in that next rebalance the
//!    partition is free and is assigned. Two rounds reach the balanced sticky assignment.
//!
//! A member's generation is read from the Subscription (v2+). For v0/v1 subscriptions it comes
//! from the user data: Kafka's 4-byte generation, or librdkafka's older `StickyAssignor`-format
//! user data; without either (kafka-python's v1 subscription) it is -1.

use assignor_sdk::{AssignError, AssignRequest, Assignment, assignor};
use assignor_sticky_core::Flavor;

/// The `cooperative-sticky` strategy: Kafka's `CooperativeStickyAssignor`.
#[assignor(
    name = "cooperative-sticky",
    version = "1.0.0",
    description = "Apache Kafka's CooperativeStickyAssignor: balanced, then sticky; partitions changing owner are revoked first and handed out in the next round (KIP-429); rack-aware (KIP-881)",
    protocol = "cooperative",
    inputs = "racks, user_data"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    assignor_sticky_core::assign(request, Flavor::CooperativeSticky)
}
