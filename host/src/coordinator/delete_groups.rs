//! DeleteGroups (API 42) for one group: Kafka's `validateDeleteGroup`, only an Empty group
//! can be deleted; its metadata and offsets go with it ([`Effect::DeleteGroup`]; the operator's
//! configuration stays).

use kafka_protocol::ResponseError;

use super::api::{GroupResponse, ReplyTo};
use super::classic::GroupState;
use super::classic::group::Groups;
use super::context::Ctx;
use super::event::Effect;

pub(crate) fn handle(ctx: &mut Ctx<'_>, groups: &mut Groups, reply_to: ReplyTo, group_id: &str) {
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
