//! DeleteGroups (API 42) for one group: Kafka's `validateDeleteGroup`, only an Empty group
//! can be deleted; its metadata and offsets go with it (the operator's configuration stays).

use std::collections::HashMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;

use super::api::{GroupResponse, ReplyTo};
use super::classic::GroupState;
use super::classic::group::Groups;
use super::committed::Offsets;
use super::context::Ctx;
use super::event::Effect;

pub(crate) fn handle(
    ctx: &mut Ctx,
    groups: &mut Groups,
    offsets: &mut HashMap<Arc<str>, Offsets>,
    reply_to: ReplyTo,
    group_id: &str,
) {
    let code = match groups.get(group_id).map(|g| g.state) {
        None | Some(GroupState::Dead) => ResponseError::GroupIdNotFound.code(),
        Some(GroupState::Empty) => {
            let mut group = groups.remove(group_id).expect("present");
            offsets.remove(group_id);
            group.transition(GroupState::Dead, ctx);
            ctx.effect(Effect::DeleteGroup {
                group_id: group_id.to_string(),
            });
            tracing::info!(group = %group_id, "group deleted");
            0
        }
        Some(_) => ResponseError::NonEmptyGroup.code(),
    };
    ctx.respond(reply_to, GroupResponse::DeleteGroup(code));
}
