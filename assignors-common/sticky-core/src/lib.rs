//! # assignor-sticky-core
//!
//! Apache Kafka's `AbstractStickyAssignor` (clients, `org.apache.kafka.clients.consumer`),
//! shared by the built-in `sticky` (Kafka's `StickyAssignor`, eager) and `cooperative-sticky`
//! (Kafka's `CooperativeStickyAssignor`, KIP-429) modules. It lives outside `assignors/`
//! because every directory there is built into a strategy of its own.
//!
//! ## What it guarantees (Kafka's guarantees)
//!
//! 1. **Balance first**: partition counts differ by at most one, or no member with two fewer
//!    partitions than another could take one of that member's partitions (it does not
//!    subscribe to their topics).
//! 2. **Then stickiness**: as many partitions as possible stay with their previous owner.
//! 3. Every partition of a subscribed topic is assigned, once, to a subscriber (the
//!    cooperative flavour leaves out, for one round, partitions changing owner).
//!
//! ## How (Kafka's algorithm, step for step)
//!
//! - Previous ownership and conflicting claims: [`ownership`] (user data for `sticky`,
//!   `owned_partitions` + `owned_generation` for `cooperative-sticky`; the higher generation
//!   wins, equal generations leave the partition unowned).
//! - All subscriptions equal: the constrained builder (`constrained.rs`), linear in the
//!   number of partitions; otherwise the general builder (`general.rs`), Kafka's slower
//!   balancing loop.
//! - Cooperative: Kafka's `adjustAssignment`, plus the host's safety rule ([`cooperative`]).
//! - Rack awareness (KIP-881) is ported from Kafka, both builders: used when members send
//!   `client.rack`, the host knows replica racks, and not every partition is on the same
//!   racks. Balance still comes first; owned partitions on no replica of the member's rack may
//!   move to improve locality.
//!
//! The answer is Kafka's for the same input: where Kafka's choices depend on the iteration
//! order of Java `HashMap`s and `HashSet`s (which member keeps an extra partition, which of
//! two partitions moves), that order is reproduced ([`java`]), and Kafka's own tests, ported
//! as data, pin the results.
//!
//! ## Where it differs from Kafka, on purpose
//!
//! Kafka's answer is kept wherever the host may send it. Where Kafka's would be refused, or
//! Kafka would throw, the port answers differently, always with a valid assignment:
//!
//! - The general builder moves a partition back to a previous owner of an older generation
//!   even when that member no longer subscribes to the topic, and throws when that member takes
//!   no part in balancing. The port runs Kafka's moves first; if they end with a partition on a
//!   member that does not subscribe to it (or would throw), it runs the builder again without
//!   such moves and answers with that.
//! - Kafka's subscription check takes the first non-empty subscription in `HashMap` order as
//!   the reference, so a member subscribing to nothing can make the group "equal", and the
//!   constrained builder then counts it in the quotas and may give it partitions. Here a member
//!   with no subscription makes the group unequal (general builder).
//! - Claims on partitions that do not exist are dropped (Kafka keeps them, hands them out or
//!   throws), and a partition listed twice by one member counts once (Kafka makes it unowned).
//! - The general builder's balancing loop can cycle forever (about one random group in one or
//!   two million of the property tests'; Kafka's `getTheActualPartitionToBeMoved` moves a
//!   partition that is not the overloaded member's, and the pass still counts as a change).
//!   The port stops when a pass ends on an assignment an earlier pass ended on, and Kafka's
//!   undo rule then decides between that and the assignment before balancing
//!   ([`Outcome::balancing_cycled`], logged as a warning). Kafka's own assignor, run on such
//!   a group, was still balancing after 30 s: a Java leader spins until its rebalance times
//!   out.
//! - `cooperative-sticky` also withholds, for a round, a partition two members claim at the
//!   same highest generation when Kafka's general builder gives it to one of them (the host's
//!   cooperative check would refuse Kafka's answer).
//!
//! And where the host knows more than a Java leader:
//!
//! - `sticky` falls back to the host's `previous_assignment` (at generation
//!   `generation_id - 1`) for a member that sent no user data, so a member whose client keeps
//!   no sticky state (a restarted static member) still keeps its partitions.
//! - `cooperative-sticky` reads librdkafka's older user data (a `StickyAssignor` V1 record) for
//!   a generation when the Subscription carries none; Kafka's Java leader would read the first
//!   four bytes (the topic count) as the generation.
//!
//! Smaller differences:
//!
//! - Conflicting claims compare the `MemberData` generation of both members (Kafka reads the
//!   earlier claimant's from its Subscription field: the same value for every current client).
//! - The host leaves topics it does not know out of each member's subscription, so two members
//!   differing only in such a topic count as equal here (Kafka compares the raw lists).
//! - Kafka's `maxGeneration` is a field that keeps growing over the assignor's life; here it is
//!   the highest generation in the request (the same whenever generations only grow).
//!
//! Known Kafka behaviour the port keeps: with racks, an owned partition with no replica on its
//! owner's rack is revoked; if balance then gives it to another such member, the cooperative
//! flavour revokes it again next round, and a group can keep rebalancing (compare
//! KAFKA-15106). Without racks, two rounds settle a group with equal subscriptions.
//!
//! How this is checked: Kafka's `AbstractStickyAssignorTest`, `StickyAssignorTest` and
//! `CooperativeStickyAssignorTest` ported as data, answers recorded from Kafka's Java code on
//! random groups (`oracle/README.md`), and property tests, in the two strategy crates.
//!
//! Errors: the constrained builder's internal consistency checks (Kafka's
//! `IllegalStateException`s) come back as [`AssignError`]s; nothing here panics on input.

use assignor_sdk::{AssignError, AssignRequest, Assignment};

mod constrained;
pub mod cooperative;
mod general;
mod group;
pub mod java;
#[cfg(feature = "kafka-test")]
pub mod kafka_test;
mod movements;
pub mod ownership;
mod rack;
pub mod user_data;

use group::{Group, NONE};

/// Which of Kafka's two sticky assignors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `StickyAssignor` (`sticky`): eager; previous ownership from user data.
    Sticky,
    /// `CooperativeStickyAssignor` (`cooperative-sticky`): KIP-429; previous ownership from
    /// `owned_partitions`, and partitions changing owner wait a round.
    CooperativeSticky,
}

/// Switches that are not part of the strategy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Kafka's test-only `AbstractPartitionAssignor.preferRackAwareLogic`: run the rack-aware
    /// code whenever racks overlap, even if every partition is on every rack. The strategies
    /// always run with it off; the ported Kafka tests turn it on where Kafka's do.
    pub prefer_rack_aware_logic: bool,
}

/// Which builder Kafka's algorithm picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builder {
    /// All subscriptions equal.
    Constrained,
    /// Different subscriptions.
    General,
}

/// A run with what Kafka's tests look at besides the assignment.
#[derive(Debug)]
pub struct Outcome {
    pub assignment: Assignment,
    pub builder: Builder,
    /// Kafka's `partitionsTransferringOwnership` as `(topic, partition, new owner)`, sorted:
    /// recorded by the constrained builder, `None` after the general one (as in Kafka).
    pub partitions_transferring_ownership: Option<Vec<(String, i32, String)>>,
    /// Kafka's `isSticky()` after the general builder: no two members traded partitions of a
    /// topic. `None` after the constrained builder.
    pub is_sticky: Option<bool>,
    /// Cooperative: partitions left out of this round, as `(topic, partition, member it would
    /// have gone to)`, sorted.
    pub withheld: Vec<(String, i32, String)>,
    /// Conflicting ownership claims seen (two members claiming one partition).
    pub conflicts: usize,
    /// The general builder's balancing cycled and was stopped where Kafka's would have run
    /// forever (`general.rs`'s module docs).
    pub balancing_cycled: bool,
}

/// The strategy: Kafka's sticky assignment of `request` in `flavor`.
pub fn assign(request: &AssignRequest, flavor: Flavor) -> Result<Assignment, AssignError> {
    let outcome = run(request, flavor, Options::default())?;
    if outcome.conflicts > 0 {
        assignor_sdk::warn!(
            "{} conflicting ownership claims (two members claiming one partition); the higher \
             generation kept each, ties left it unowned",
            outcome.conflicts
        );
    }
    if outcome.balancing_cycled {
        assignor_sdk::warn!(
            "balancing came back to an assignment it had already reached and was stopped there \
             (Kafka's StickyAssignor would loop forever on this group); Kafka's undo rule then \
             chose between the assignment before balancing and the one reached"
        );
    }
    assignor_sdk::debug!(
        "{:?} builder, {} partitions withheld for the next round",
        outcome.builder,
        outcome.withheld.len()
    );
    Ok(outcome.assignment)
}

/// [`assign`] with [`Options`], returning what Kafka's tests inspect too.
pub fn run(
    request: &AssignRequest,
    flavor: Flavor,
    options: Options,
) -> Result<Outcome, AssignError> {
    let partitions: u64 = request
        .topics
        .iter()
        .map(|t| u64::try_from(t.partition_count).unwrap_or(0))
        .sum();
    if partitions >= u64::from(NONE) {
        return Err(AssignError::new(format!(
            "sticky: the group's topics have {partitions} partitions; at most {} are supported",
            NONE - 1
        )));
    }
    let group = Group::new(request);
    if group.members() == 0 {
        return Ok(Outcome {
            assignment: Assignment::new(request),
            builder: Builder::Constrained,
            partitions_transferring_ownership: Some(Vec::new()),
            is_sticky: None,
            withheld: Vec::new(),
            conflicts: 0,
            balancing_cycled: false,
        });
    }
    let settled = ownership::settle(&group, flavor);
    let racks = rack::RackInfo::new(&group, options.prefer_rack_aware_logic);
    let Built {
        mut assignment,
        transferring,
        builder,
        is_sticky,
        cycled,
    } = build(&group, &racks, &settled)?;
    let partitions_transferring_ownership = transferring.as_ref().map(|t| {
        let pairs = t
            .iter()
            .enumerate()
            .filter(|(_, m)| **m != NONE)
            .map(|(gid, &m)| (gid as u32, m))
            .collect();
        named(&group, pairs)
    });
    let withheld = match flavor {
        Flavor::Sticky => Vec::new(),
        Flavor::CooperativeSticky => {
            let transferring = transferring
                .unwrap_or_else(|| cooperative::transferring_ownership(&group, &assignment));
            named(
                &group,
                cooperative::adjust(&group, &mut assignment, &transferring),
            )
        }
    };
    // By position, not by name: looking each run's member id up again (a binary search of
    // string comparisons) was a third of a call in wasm, where `memcmp` is a byte loop.
    let mut out = Assignment::new(request);
    for (m, mut gids) in assignment.into_iter().enumerate() {
        gids.sort_unstable();
        for run in gids.chunk_by(|a, b| {
            group.partition_topic[*a as usize] == group.partition_topic[*b as usize]
        }) {
            let t = group.partition_topic[run[0] as usize];
            let first = group.offsets[t as usize];
            out.assign_all_indexed(
                m,
                group.topic_source[t as usize],
                run.iter().map(|&gid| (gid - first) as i32),
            );
        }
    }
    Ok(Outcome {
        assignment: out,
        builder,
        partitions_transferring_ownership,
        is_sticky,
        withheld,
        conflicts: settled.conflicts,
        balancing_cycled: cycled,
    })
}

struct Built {
    assignment: Vec<Vec<u32>>,
    transferring: Option<Vec<u32>>,
    builder: Builder,
    is_sticky: Option<bool>,
    cycled: bool,
}

/// Kafka's builder for the group and Kafka's answer; for different subscriptions, if Kafka's
/// general builder hands a partition to a member that does not subscribe to its topic (or
/// would throw), the general builder without the moves that lead there (see the crate docs).
fn build(
    group: &Group<'_>,
    racks: &rack::RackInfo,
    settled: &ownership::Ownership,
) -> Result<Built, AssignError> {
    if group.all_subscriptions_equal {
        let built = constrained::Constrained::new(group, racks, settled).build(&settled.owned)?;
        return Ok(Built {
            assignment: built.assignment,
            transferring: Some(built.transferring),
            builder: Builder::Constrained,
            is_sticky: None,
            cycled: false,
        });
    }
    let mut built =
        general::General::new(group, racks, settled, general::Mode::Kafka).build(&settled.owned);
    if built.failed || !valid(group, &built.current) {
        built = general::General::new(group, racks, settled, general::Mode::Guarded)
            .build(&settled.owned);
    }
    let is_sticky = Some(built.movements.is_sticky());
    Ok(Built {
        assignment: built.current,
        transferring: None,
        builder: Builder::General,
        is_sticky,
        cycled: built.cycled,
    })
}

/// Whether every member got only partitions of topics it subscribes to.
fn valid(group: &Group<'_>, assignment: &[Vec<u32>]) -> bool {
    assignment.iter().enumerate().all(|(m, list)| {
        list.iter()
            .all(|&gid| group.subscribes(m as u32, group.partition_topic[gid as usize]))
    })
}

fn named(group: &Group<'_>, pairs: Vec<(u32, u32)>) -> Vec<(String, i32, String)> {
    let mut out: Vec<(String, i32, String)> = pairs
        .into_iter()
        .map(|(gid, m)| {
            let topic = group.topic_names[group.partition_topic[gid as usize] as usize];
            (
                topic.to_string(),
                group.partition_number(gid),
                group.request.members[m as usize].member_id.clone(),
            )
        })
        .collect();
    out.sort();
    out
}
