//! # assignor-uniform-core
//!
//! Apache Kafka's `UniformAssignor` (`group-coordinator`, `org.apache.kafka.coordinator.group.assignor`),
//! the default server-side assignor of the KIP-848 consumer protocol, for classic-protocol
//! groups: the algorithm of the built-in `uniform` module (`assignors/uniform`, the module
//! around this crate) and of the composite modules that run `uniform` inside (through
//! `assignor-inner`). It lives outside `assignors/` because every directory there is built into
//! a strategy of its own.
//!
//! Kafka picks one of two builders by the group's subscription type, and so does this crate:
//!
//! - **Homogeneous** (every member subscribes to the same topic names):
//!   `UniformHomogeneousAssignmentBuilder` ([`homogeneous`]). Every member gets
//!   `partitions / members` partitions and `partitions % members` of them one more, so sizes
//!   differ by at most one. A member keeps what it had up to its quota; the rest is handed out
//!   in order. The extra partitions go first to members that already hold one more than the
//!   minimum, then to the last members in order (Kafka's KAFKA-18688 stability fix: the answer
//!   does not depend on the order members are visited in once the group is balanced).
//! - **Heterogeneous**: `UniformHeterogeneousAssignmentBuilder` ([`heterogeneous`], the
//!   KAFKA-17710 rework). Every member keeps all it had of topics it still subscribes to; the
//!   rest goes topic by topic to the least loaded subscriber; then at most 16 passes move
//!   partitions from the most to the least loaded subscribers of each topic. Exact balance when
//!   subscribers of a topic share their subscription, close to it otherwise.
//!
//! ## How Kafka's inputs map onto the ABI
//!
//! - Kafka's *current target assignment* of a member is the member's `previous_assignment`:
//!   what the host gave it in the last generation. That is where stickiness comes from, so the
//!   `uniform` module is `eager`: classic clients revoke everything and are given a full
//!   assignment each generation, mostly the same partitions as before.
//! - Topic ids are topic names. Kafka iterates topic ids in `HashSet` order (an accident of
//!   Java's `Uuid.hashCode`); here topics go in name order, partitions ascending, and a member's
//!   previous assignment is read in the order the request lists it (the host lists it by topic
//!   name). Where the heterogeneous builder breaks ties by topic id, the tie goes to the name.
//! - Kafka's `GroupSpec.memberIds()` order is a `HashMap`'s; here it is Kafka's classic member
//!   order ([`assignor_sdk::kafka_member_order`]): static members by `group.instance.id`, then
//!   dynamic members by member id. It is deterministic, and a static member keeps its place
//!   when it rejoins under a new member id.
//! - A subscribed topic the host does not know (missing from `topics`, or no partitions) is
//!   left out, as Kafka's coordinator leaves out topic names it cannot resolve to an id before
//!   the assignor runs (`TopicIds`); Kafka's assignor only throws for an unknown id, which the
//!   coordinator never hands it. The subscription type is still decided on the names, as
//!   Kafka's `ModernGroup.subscriptionType` does.
//! - A previous assignment naming an unknown topic, a partition out of range (a topic
//!   re-created with fewer partitions under the same name) or a partition another member
//!   already listed is ignored for that member (Kafka's ids make these impossible). Kafka
//!   ignores racks here too (its describer returns none), and so does this module.
//!
//! Everything in the builders' loops is an index: members by position in Kafka's order,
//! topics by name rank, partitions by a global number ([`group`]).

use assignor_sdk::{AssignError, AssignRequest, Assignment};

pub mod group;
pub mod heterogeneous;
pub mod homogeneous;
mod output;

pub use output::assignment;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod uniform_heterogeneous_assignment_builder_test;
#[cfg(test)]
mod uniform_homogeneous_assignment_builder_test;

use group::Group;

/// Kafka's `UniformAssignor`: the answer of the `uniform` strategy for `request`.
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let group = Group::new(request)?;
    let owners = owners(&group)?;
    Ok(assignment(&group, &owners))
}

/// Kafka's `UniformAssignor.assign`: the owner (member position, or [`group::NO_MEMBER`]) of
/// every partition, by global partition number. An empty group gets nothing; otherwise the
/// builder follows the subscription type.
pub fn owners(group: &Group<'_>) -> Result<Vec<u32>, AssignError> {
    if group.member_count() == 0 {
        return Ok(vec![group::NO_MEMBER; group.total_partitions()]);
    }
    if group.is_homogeneous() {
        homogeneous::build(group)
    } else {
        Ok(heterogeneous::build(group))
    }
}
