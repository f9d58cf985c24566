//! DeleteGroups (API 42) for one group, classic or consumer (KIP-848): Kafka's
//! `validateDeleteGroup`, only an Empty group can be deleted; its metadata and offsets go with
//! it ([`Effect::DeleteGroup`]; the operator's configuration stays).

use kafka_protocol::ResponseError;

use super::api::{GroupResponse, ReplyTo};
use super::classic::GroupState;
use super::classic::group::Groups;
use super::consumer::group::Groups as ConsumerGroups;
use super::context::Ctx;
use super::event::Effect;

pub(crate) fn handle(
    ctx: &mut Ctx<'_>,
    (groups, consumers): (&mut Groups, &mut ConsumerGroups),
    reply_to: ReplyTo,
    group_id: &str,
) {
    if let Some(group) = consumers.get(group_id) {
        if !group.members.is_empty() {
            let refused = ResponseError::NonEmptyGroup.code();
            return ctx.respond(reply_to, GroupResponse::DeleteGroup(refused));
        }
        consumers.remove(group_id);
        tracing::info!(group = %group_id, "consumer group deleted");
        return ctx.effect(Effect::DeleteGroup {
            to: reply_to,
            group_id: group_id.to_string(),
        });
    }
    let refused = match groups.get(group_id).map(|g| g.state) {
        None | Some(GroupState::Dead) => ResponseError::GroupIdNotFound,
        Some(GroupState::Empty) => {
            let mut group = groups.remove(group_id).expect("present");
            group.transition(GroupState::Dead, ctx);
            tracing::info!(group = %group_id, "group deleted");
            return ctx.effect(Effect::DeleteGroup {
                to: reply_to,
                group_id: group_id.to_string(),
            });
        }
        Some(_) => ResponseError::NonEmptyGroup,
    };
    ctx.respond(reply_to, GroupResponse::DeleteGroup(refused.code()));
}
