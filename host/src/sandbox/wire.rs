//! The request and the answer on the wire, per ABI version: v1's named-field maps, v2's
//! positional arrays (`assignor_sdk::abi::v2`), and the layout cache that keeps v2's topic
//! and subscription tables across the rebalances of a group whose topics and subscriptions
//! did not change.
//!
//! Both versions take the same model (`AssignRequest`) and give the same [`Answer`], an answer
//! by positions in its request, so everything above the sandbox (the coordinator, the
//! simulator, the registry's smoke call) is the same for v1 and v2 modules. A v2 answer is
//! read by position straight away, each index checked against the request
//! (`OutputError::MemberIndexOutOfRange`, `OutputError::TopicIndexOutOfRange`); a v1 answer
//! names members and topics, and is turned into positions with the same refusals the output
//! checks give (`OutputError::UnknownMember`, `OutputError::UnknownTopic`).

use std::collections::HashMap;
use std::sync::Arc;

use assignor_sdk::abi::v2::{self, Extras, Layout};
use assignor_sdk::{ABI_V1, Answer, AssignRequest, AssignResponse, Member, Topic, TopicOffsets};
use parking_lot::Mutex;
use serde::Serialize;

use super::error::CallError;
use assignor_wire::checks;

/// ABI v1's `AssignRequest`: the model's fields under their wire names, with `abi_version`
/// 1 whatever the model says (the host's model is shared by both versions).
#[derive(Serialize)]
struct V1Request<'a> {
    abi_version: u32,
    group_id: &'a str,
    generation_id: i32,
    protocol_type: &'a str,
    protocol_name: &'a str,
    now_ms: i64,
    params: &'a std::collections::BTreeMap<String, String>,
    members: &'a [Member],
    topics: &'a [Topic],
}

/// The v1 request bytes.
pub(crate) fn encode_v1(request: &AssignRequest) -> Result<Vec<u8>, CallError> {
    assignor_sdk::encode(&V1Request {
        abi_version: ABI_V1,
        group_id: &request.group_id,
        generation_id: request.generation_id,
        protocol_type: &request.protocol_type,
        protocol_name: &request.protocol_name,
        now_ms: request.now_ms,
        params: &request.params,
        members: &request.members,
        topics: &request.topics,
    })
    .map_err(|e| CallError::Encode {
        message: e.to_string(),
    })
}

/// The v2 request bytes, with the layout they were laid out by (the answer's checks read it).
pub(crate) fn encode_v2(
    request: &AssignRequest,
    layouts: &LayoutCache,
    extras: Extras<'_>,
) -> Result<(Vec<u8>, Arc<Layout>), CallError> {
    let layout = layouts.layout(request)?;
    let bytes = v2::encode_request(request, &layout, extras).map_err(|e| CallError::Encode {
        message: e.to_string(),
    })?;
    Ok((bytes, layout))
}

/// A v2 answer by positions, every index checked against `request`. The fast reader
/// (`v2::read_response`) takes the common case; an answer it gives up on (an error answer, an
/// index out of range, anything but the canonical encoding) goes through rmp-serde, which
/// decides the same way and words the error.
pub(crate) fn read_v2(request: &AssignRequest, bytes: &[u8]) -> Result<Answer, CallError> {
    if let Some(answer) = v2::read_response(request, bytes) {
        return Ok(answer);
    }
    let response = v2::decode_response(bytes).map_err(|e| CallError::Malformed {
        what: "AssignResponse (ABI v2)",
        message: e.to_string(),
    })?;
    if let Some(message) = response.error {
        return Err(CallError::Guest { message });
    }
    checks::check_indices(request, &response).map_err(CallError::Invalid)?;
    Ok(v2::response_to_answer(response))
}

/// A v1 answer (names) by positions in `request`; a name the request does not have is refused
/// as the output checks refuse it.
pub(crate) fn read_v1(request: &AssignRequest, bytes: &[u8]) -> Result<Answer, CallError> {
    let response =
        assignor_sdk::decode::<AssignResponse>(bytes).map_err(|e| CallError::Malformed {
            what: "AssignResponse",
            message: e.to_string(),
        })?;
    if let Some(message) = response.error {
        return Err(CallError::Guest { message });
    }
    checks::resolve(request, &response).map_err(CallError::Invalid)
}

/// The v2 layouts of recent requests, by group: the topic table and the distinct
/// subscriptions, kept while a group's topics and each member's subscription stay the same.
/// An entry is reused only after its content is compared ([`Layout::fits`] and the topics),
/// so a stale or colliding entry is never used, only replaced.
#[derive(Default)]
pub(crate) struct LayoutCache {
    entries: Mutex<HashMap<String, CachedLayout>>,
}

struct CachedLayout {
    topics: Vec<Topic>,
    layout: Arc<Layout>,
}

/// Groups whose layouts are kept; past it the cache starts over (a host with more groups
/// rebalancing than this at once computes layouts afresh, which is correct, only slower).
const MAX_CACHED_GROUPS: usize = 1024;

impl LayoutCache {
    pub(crate) fn layout(&self, request: &AssignRequest) -> Result<Arc<Layout>, CallError> {
        if let Some(entry) = self.entries.lock().get(&request.group_id)
            && entry.topics == request.topics
            && entry.layout.fits(request)
        {
            return Ok(entry.layout.clone());
        }
        let layout = Arc::new(Layout::new(request).map_err(|e| CallError::Encode {
            message: e.to_string(),
        })?);
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_CACHED_GROUPS && !entries.contains_key(&request.group_id) {
            entries.clear();
        }
        entries.insert(
            request.group_id.clone(),
            CachedLayout {
                topics: request.topics.clone(),
                layout: layout.clone(),
            },
        );
        Ok(layout)
    }

    /// Groups with a kept layout (for tests and metrics).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

/// Lag for a call: the offsets to send, when the module reads lag.
pub type LagLookup<'a> = &'a dyn Fn(&AssignRequest) -> Option<Vec<TopicOffsets>>;
