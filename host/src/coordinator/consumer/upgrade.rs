//! Kafka's online upgrade (`GroupMetadataManager.validateOnlineUpgrade`,
//! `ConsumerGroup.fromClassicGroup`): a classic group with members becomes a consumer group
//! when a consumer-protocol member joins it, so consumers can be rolled to
//! `group.protocol=consumer` one at a time without emptying the group.
//!
//! Each classic member becomes a classic member of the consumer group, Stable at the
//! classic generation, owning what its last SyncGroup gave it, which is also its target; the
//! group epoch and the target's epoch are that generation. The joining member then moves the
//! epoch as any join does: the classic members learn it from their next Heartbeat
//! (REBALANCE_IN_PROGRESS), rejoin, and give up what the new target moves, before anyone else
//! gets it.
//!
//! Refused (the joining member is answered GROUP_ID_NOT_FOUND, as Kafka answers) when the
//! classic group is rebalancing, is not a `consumer` group, would exceed the group size, or a
//! member's Subscription cannot be read.

use std::collections::BTreeSet;

use super::group::Group;
use super::member::{Classic, Current, Member, MemberState};
use super::partitions::Partitions;
use crate::coordinator::classic::GroupState;
use crate::coordinator::classic::group::Group as ClassicGroup;
use assignor_wire::consumer_protocol::{PROTOCOL_TYPE, decode_assignment, decode_subscription};

/// The consumer group a classic group becomes, or why it cannot.
pub(crate) fn from_classic(classic: &ClassicGroup, max_size: usize) -> Result<Group, String> {
    if !classic.is(GroupState::Stable) {
        return Err(format!(
            "is a classic group in a rebalance ({}); it can be upgraded once Stable",
            classic.state.as_str()
        ));
    }
    if classic.stabilizing.is_some() {
        return Err(
            "is a classic group waiting for its membership to settle before a \
             rebalance (stabilize_ms); it can be upgraded once that rebalance has run"
                .to_owned(),
        );
    }
    if classic.protocol_type.as_deref() != Some(PROTOCOL_TYPE) {
        return Err("is a classic group of another protocol type than consumer".to_owned());
    }
    if classic.members.len() >= max_size {
        return Err(format!("is a classic group of {max_size} members, full"));
    }
    let generation = classic.generation_id;
    let mut group = Group::new(classic.id.clone());
    group.group_epoch = generation;
    group.assignment_epoch = generation;
    let key = classic.protocol_key.as_deref().unwrap_or("");
    let mut taken: BTreeSet<(String, i32)> = BTreeSet::new();
    for m in classic.members.values() {
        let metadata = m
            .metadata_for(key)
            .or_else(|| m.protocols.first().map(|(_, b)| b))
            .cloned()
            .unwrap_or_default();
        let subscription = decode_subscription(&metadata).map_err(|error| {
            format!(
                "has a member ({}) whose subscription cannot be read: {error}",
                m.id
            )
        })?;
        // A partition listed for two members (a client leader's mistake) stays with the first.
        let mut assigned = Partitions::new();
        for tp in decode_assignment(&m.assignment)
            .map(|(a, _)| a)
            .unwrap_or_default()
        {
            for p in tp.partitions {
                if taken.insert((tp.topic.clone(), p)) {
                    assigned.insert(&tp.topic, p);
                }
            }
        }
        let mut member = Member::new(m.id.clone(), &m.client_id, &m.client_host);
        member.instance_id = m.group_instance_id.clone();
        member.rack_id = subscription.rack_id.clone();
        member.rebalance_timeout_ms = m.rebalance_timeout_ms;
        member.topic_names = subscription.topics.iter().cloned().collect();
        member.classic = Some(Classic {
            session_timeout_ms: m.session_timeout_ms,
            protocols: m.protocols.iter().map(|(name, _)| name.clone()).collect(),
            version: subscription.version,
        });
        member.target = assigned.clone();
        member.current = Current {
            epoch: generation,
            previous_epoch: generation - 1,
            state: MemberState::Stable,
            assigned,
            pending_revocation: Partitions::new(),
        };
        group.add(member);
    }
    tracing::info!(group = %group.id, generation, members = group.members.len(),
        "classic group upgraded to a consumer group");
    Ok(group)
}
