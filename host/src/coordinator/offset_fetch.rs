//! OffsetFetch (API 9): what a group committed, for the partitions asked or for all of them.
//! Reading is an effect ([`Effect::FetchOffsets`]): the offsets live where the driver keeps
//! them (this host's store, or the upstream cluster in proxy mode), and the answer is built
//! there ([`super::committed::OffsetTable::fetch`] for the host's own). A group that does not
//! exist reads as one with nothing committed, as Kafka answers.
//!
//! For a consumer group (KIP-848), v9's member id and member epoch are checked as Kafka's
//! `ConsumerGroup.validateOffsetFetch` does: a fetch with neither (an admin, `epoch < 0`) is
//! allowed; otherwise the member must be in the group (UNKNOWN_MEMBER_ID) at that epoch
//! (STALE_MEMBER_EPOCH, on which librdkafka heartbeats and fetches again).

use kafka_protocol::ResponseError;

use super::api::{GroupResponse, OffsetFetchQuery, ReplyTo, RequestContext};
use super::consumer::group::Groups as ConsumerGroups;
use super::context::Ctx;
use super::event::Effect;
use super::responses;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    consumers: &ConsumerGroups,
    reply_to: ReplyTo,
    group_id: &str,
    client: &RequestContext,
    query: OffsetFetchQuery,
) {
    if let Some(group) = consumers.get(group_id)
        && let Err(error) = validate_consumer(group, &query)
    {
        let answer = responses::offset_fetch_error(client.api_version, &query, error.code());
        return ctx.respond(reply_to, GroupResponse::OffsetFetch(answer));
    }
    ctx.effect(Effect::FetchOffsets {
        to: reply_to,
        group_id: group_id.to_string(),
        query,
    });
}

fn validate_consumer(
    group: &super::consumer::group::Group,
    query: &OffsetFetchQuery,
) -> Result<(), ResponseError> {
    let member_id = query.member_id.as_deref().filter(|m| !m.is_empty());
    if member_id.is_none() && query.member_epoch < 0 {
        return Ok(());
    }
    let member = member_id
        .and_then(|m| group.members.get(m))
        .ok_or(ResponseError::UnknownMemberId)?;
    if query.member_epoch != member.epoch() {
        return Err(ResponseError::StaleMemberEpoch);
    }
    Ok(())
}
