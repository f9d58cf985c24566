//! Lag in proxy mode ([`LagSource`]): the group's committed offsets and the partitions' end
//! offsets, both read from the upstream cluster through the host's client of it, for a module
//! that reads lag (ABI v2 input `lag`). Standalone the store gives committed offsets only
//! (`driver::StoreLag`).
//!
//! The driver asks on the blocking pool, during the module call, so the two reads run on the
//! server's runtime and the call waits for them; each is bounded by the client's
//! `upstream.request_timeout`. A failed read leaves every offset unknown for that run (the
//! driver logs it) and the module still runs.

use assignor_sdk::TopicOffsets;

use crate::driver::LagSource;
use crate::upstream::client::UpstreamClient;

/// Offsets from the upstream cluster.
pub(super) struct UpstreamLag {
    pub(super) client: UpstreamClient,
    pub(super) runtime: tokio::runtime::Handle,
}

impl LagSource for UpstreamLag {
    fn offsets(&self, group: &str, topics: &[(&str, i32)]) -> Result<Vec<TopicOffsets>, String> {
        let asked: Vec<(String, Vec<i32>)> = topics
            .iter()
            .map(|&(t, n)| (t.to_owned(), (0..n.max(0)).collect()))
            .collect();
        let partitions: Vec<(String, i32)> = asked
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |&p| (t.clone(), p)))
            .collect();
        let client = self.client.clone();
        let (committed, ends) = self.runtime.block_on(async move {
            let committed = client.fetch_offsets(group, Some(&asked)).await;
            let ends = client.end_offsets(&partitions).await;
            (committed, ends)
        });
        let committed = committed.map_err(|e| format!("committed offsets: {e}"))?;
        let ends = ends.map_err(|e| format!("end offsets: {e}"))?;
        let mut out: Vec<TopicOffsets> = topics
            .iter()
            .map(|&(_, n)| {
                let n = usize::try_from(n).unwrap_or(0);
                TopicOffsets {
                    committed: vec![-1; n],
                    end: vec![-1; n],
                }
            })
            .collect();
        let position: std::collections::HashMap<&str, usize> = topics
            .iter()
            .enumerate()
            .map(|(t, &(name, _))| (name, t))
            .collect();
        let slot = |topic: &str, partition: i32| {
            Some((*position.get(topic)?, usize::try_from(partition).ok()?))
        };
        for c in committed.iter().filter(|c| c.error == 0 && c.offset >= 0) {
            if let Some((t, p)) = slot(&c.topic, c.partition)
                && let Some(v) = out[t].committed.get_mut(p)
            {
                *v = c.offset;
            }
        }
        for e in ends.iter().filter(|e| e.error == 0 && e.offset >= 0) {
            if let Some((t, p)) = slot(&e.topic, e.partition)
                && let Some(v) = out[t].end.get_mut(p)
            {
                *v = e.offset;
            }
        }
        Ok(out)
    }
}
