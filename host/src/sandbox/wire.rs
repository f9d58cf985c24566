//! The request and the answer on the wire, per ABI version: v1's named-field maps, v2's
//! positional arrays (`assignor_sdk::abi::v2`), and the layout cache that keeps v2's topic
//! and subscription tables across the rebalances of a group whose topics and subscriptions
//! did not change.
//!
//! Both versions read and write the same model (`AssignRequest`, `AssignResponse`), so
//! everything above the sandbox (the coordinator, the simulator, the registry's smoke call)
//! is the same for v1 and v2 modules. A v2 answer names members and topics by index: each is
//! checked against the request here ([`OutputError::MemberIndexOutOfRange`],
//! [`OutputError::TopicIndexOutOfRange`]) before the answer becomes the model the rest of the
//! output checks read.

use std::collections::HashMap;
use std::sync::Arc;

use assignor_sdk::abi::v2::{self, Extras, Layout};
use assignor_sdk::{ABI_V1, AssignRequest, AssignResponse, Member, Topic, TopicOffsets};
use parking_lot::Mutex;
use serde::Serialize;

use super::error::CallError;
use assignor_wire::checks::{self, CheckSummary, OutputError};

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

/// A v2 answer as the model, every index checked against `request`, and the output checks'
/// verdict on it. The fast reader (`v2::read_response`) and the position-based checks take the
/// common case; an answer they give up on (an error answer, an index out of range, anything
/// but the canonical encoding) goes through rmp-serde and the name-based checks, which decide
/// the same way and word the error.
pub(crate) fn decode_v2(
    request: &AssignRequest,
    layout: &Layout,
    bytes: &[u8],
    cooperative: bool,
) -> Result<(AssignResponse, Option<Result<CheckSummary, OutputError>>), CallError> {
    if let Some(read) = v2::read_response(request, bytes) {
        let verdict = checks::check_positioned(request, &read, layout, cooperative);
        return Ok((read.response, Some(verdict)));
    }
    let response = v2::decode_response(bytes).map_err(|e| CallError::Malformed {
        what: "AssignResponse (ABI v2)",
        message: e.to_string(),
    })?;
    if response.error.is_none() {
        checks::check_indices(request, &response).map_err(CallError::Invalid)?;
    }
    Ok((v2::response_to_model(request, response), None))
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
