//! # sticky
//!
//! Apache Kafka's client-side `StickyAssignor` (`org.apache.kafka.clients.consumer`) as an
//! assignor-host module: the eager sticky strategy, rack-aware (KIP-881). The algorithm is
//! Kafka's `AbstractStickyAssignor`, ported in `assignor-sticky-core` (read its crate docs for
//! what matches Kafka and what differs on purpose); this crate is the module around it.
//!
//! What a group gets:
//! - **Balance first**: partition counts differ by at most one, or no member with two fewer
//!   partitions than another could take one of that member's partitions (it does not subscribe
//!   to their topics).
//! - **Then stickiness**: as many partitions as possible stay where they were. With consumers
//!   `C0`, `C1`, `C2` on topics `t0`..`t3` of two partitions each, the first assignment is
//!   `C0: [t0p0, t1p1, t3p0]`, `C1: [t0p1, t2p0, t3p1]`, `C2: [t1p0, t2p1]`; when `C1` leaves,
//!   `C0` and `C2` keep all of theirs and share `C1`'s: `C0: [t0p0, t0p1, t1p1, t3p0]`,
//!   `C2: [t1p0, t2p0, t2p1, t3p1]` (Kafka's answer; its class docs show an older one).
//!
//! Where previous ownership comes from: like Kafka's `StickyAssignor`, the member's user data
//! (its previous assignment and generation, which Kafka's Java client, kafka-python and
//! aiokafka send); `owned_partitions` is ignored, since an eager client empties it before
//! rejoining. A member that sent no user data keeps what the host gave it last generation
//! (`previous_assignment`): the host's addition, so that, say, a restarted static member still
//! gets its partitions back.
//!
//! librdkafka clients cannot select `sticky` (only `range`, `roundrobin` and
//! `cooperative-sticky`); Java, kafka-python and aiokafka clients can.

use assignor_sdk::{AssignError, AssignRequest, Assignment, assignor};
use assignor_sticky_core::Flavor;

/// The `sticky` strategy: Kafka's `StickyAssignor`.
#[assignor(
    name = "sticky",
    version = "1.0.0",
    description = "Apache Kafka's StickyAssignor: balanced, then as sticky as possible (eager); rack-aware (KIP-881)",
    protocol = "eager",
    inputs = "racks, user_data"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    assignor_sticky_core::assign(request, Flavor::Sticky)
}
