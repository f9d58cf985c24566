//! OffsetFetch (API 9): what a group committed, for the partitions asked or for all of them.
//! Reading is an effect ([`Effect::FetchOffsets`]): the offsets live where the driver keeps
//! them (this host's store, or the upstream cluster in proxy mode), and the answer is built
//! there ([`super::committed::OffsetTable::fetch`] for the host's own). A group that does not
//! exist reads as one with nothing committed, as Kafka answers.

use super::api::{OffsetFetchQuery, ReplyTo};
use super::context::Ctx;
use super::event::Effect;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    reply_to: ReplyTo,
    group_id: &str,
    query: OffsetFetchQuery,
) {
    ctx.effect(Effect::FetchOffsets {
        to: reply_to,
        group_id: group_id.to_string(),
        query,
    });
}
