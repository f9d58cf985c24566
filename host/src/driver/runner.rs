//! How the driver runs a strategy: the [`AssignorRunner`] trait, implemented for the registry
//! (modules in the sandbox, `server/assignors.rs`) and by test fakes. It is called on the
//! blocking pool;
//! the coordinator only ever sees the plain [`AssignorOutput`] / [`AssignorFailure`] and
//! installs an output without checking it again, so a runner must check (see
//! [`AssignorOutput`]).

use assignor_sdk::{AssignRequest, TopicOffsets};

use crate::coordinator::{AssignorFailure, AssignorOutput};

/// Runs one strategy on one request. Blocking; called off the shards.
pub trait AssignorRunner: Send + Sync + 'static {
    /// An `Ok` output has no `error` and passed [`assignor_wire::checks::check_response`] on `request`
    /// with `cooperative` (the KIP-429 rule: no partition to a new owner while another member
    /// still owns it); an output that failed the checks is a failure with `invalid_output`.
    /// `lag` is where the group's offsets come from, asked only if the module that runs reads
    /// them (ABI v2 input `lag`).
    fn run(
        &self,
        strategy: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
        lag: &dyn LagSource,
    ) -> Result<AssignorOutput, AssignorFailure>;
}

/// Where a group's per-partition offsets come from, for a module that reads lag (ABI v2
/// input `lag`): the group's committed offset and the partition's end offset.
///
/// The driver is given one ([`crate::driver::DriverConfig::lag`]) and hands it to every run;
/// the runner asks it on the blocking pool, during the run, only when the module it resolved
/// reads lag, so a group whose strategy does not read lag costs nothing. Implementations:
/// [`StoreLag`] standalone (committed offsets from the store, no end offsets: the host stores
/// no messages); in proxy mode, the host's client of the upstream cluster, which knows both.
pub trait LagSource: Send + Sync + 'static {
    /// The offsets of `group` on each of `topics` (name, partition count), one entry per topic
    /// in the same order, each list as long as the partition count, -1 where unknown. Bounded
    /// in time by the implementation. An `Err` (a message for the log) leaves every offset
    /// unknown for this run; the module still runs.
    fn offsets(&self, group: &str, topics: &[(&str, i32)]) -> Result<Vec<TopicOffsets>, String>;
}

/// No source: every offset unknown. What a driver without a configured source uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnknownLag;

impl LagSource for UnknownLag {
    fn offsets(&self, _: &str, topics: &[(&str, i32)]) -> Result<Vec<TopicOffsets>, String> {
        Ok(topics.iter().map(|&(_, n)| unknown(n)).collect())
    }
}

/// Standalone: the committed offsets the host keeps in its store, and no end offsets (the host
/// stores no messages, so it knows none: every `end` is -1).
#[derive(Clone)]
pub struct StoreLag {
    store: crate::store::Store,
}

impl StoreLag {
    pub fn new(store: crate::store::Store) -> StoreLag {
        StoreLag { store }
    }
}

impl LagSource for StoreLag {
    fn offsets(&self, group: &str, topics: &[(&str, i32)]) -> Result<Vec<TopicOffsets>, String> {
        topics
            .iter()
            .map(|&(topic, count)| {
                let mut offsets = unknown(count);
                let committed = self
                    .store
                    .committed_offsets(group, topic)
                    .map_err(|e| e.to_string())?;
                for (partition, offset) in committed {
                    if let Some(slot) = usize::try_from(partition)
                        .ok()
                        .and_then(|p| offsets.committed.get_mut(p))
                    {
                        *slot = offset;
                    }
                }
                Ok(offsets)
            })
            .collect()
    }
}

/// `count` partitions, every offset unknown.
pub(crate) fn unknown(count: i32) -> TopicOffsets {
    let n = usize::try_from(count).unwrap_or(0);
    TopicOffsets {
        committed: vec![-1; n],
        end: vec![-1; n],
    }
}

/// The offsets `source` gives for `request`'s topics, in the request's topic order; every
/// offset unknown (and a warning) when it fails.
pub fn lag_for(source: &dyn LagSource, request: &AssignRequest) -> Vec<TopicOffsets> {
    let topics: Vec<(&str, i32)> = request
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.partition_count))
        .collect();
    match source.offsets(&request.group_id, &topics) {
        Ok(offsets) if offsets.len() == topics.len() => offsets,
        Ok(offsets) => {
            tracing::warn!(group = %request.group_id, got = offsets.len(), wanted = topics.len(),
                "the lag source answered for another number of topics; lag unknown for this run");
            topics.iter().map(|&(_, n)| unknown(n)).collect()
        }
        Err(error) => {
            tracing::warn!(group = %request.group_id, %error, "no lag for this run");
            topics.iter().map(|&(_, n)| unknown(n)).collect()
        }
    }
}
