//! OffsetFetch (API 9): what a group committed, for the partitions asked or for all of them.
//! A partition never committed reads offset -1; a group that does not exist reads as one
//! with nothing committed (Kafka answers the same).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::api::{GroupResponse, OffsetFetchQuery, OffsetFetchResult, PartitionOffset, ReplyTo};
use super::committed::{Committed, Offsets};
use super::context::Ctx;
use super::responses::no_offset;

pub(crate) fn handle(
    ctx: &mut Ctx,
    offsets: &HashMap<Arc<str>, Offsets>,
    reply_to: ReplyTo,
    group_id: &str,
    query: OffsetFetchQuery,
) {
    let empty = Offsets::new();
    let offsets = offsets.get(group_id).unwrap_or(&empty);
    let topics = match &query.topics {
        Some(requested) => requested
            .iter()
            .map(|(topic, partitions)| {
                let found = partitions
                    .iter()
                    .map(|p| match offsets.get(&(topic.clone(), *p)) {
                        Some(c) => committed(*p, c),
                        None => no_offset(*p, 0),
                    })
                    .collect();
                (topic.clone(), found)
            })
            .collect(),
        None => {
            let mut by_topic: BTreeMap<&str, Vec<PartitionOffset>> = BTreeMap::new();
            for ((topic, partition), c) in offsets {
                by_topic
                    .entry(topic.as_str())
                    .or_default()
                    .push(committed(*partition, c));
            }
            by_topic
                .into_iter()
                .map(|(t, ps)| (t.to_string(), ps))
                .collect()
        }
    };
    ctx.respond(
        reply_to,
        GroupResponse::OffsetFetch(OffsetFetchResult {
            error_code: 0,
            topics,
        }),
    );
}

fn committed(partition_index: i32, c: &Committed) -> PartitionOffset {
    PartitionOffset {
        partition_index,
        committed_offset: c.offset,
        committed_leader_epoch: c.leader_epoch,
        metadata: c.metadata.clone(),
        error_code: 0,
    }
}
