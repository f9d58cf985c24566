//! What the host keeps of a group: one record per group type, each written with its version,
//! the way Kafka keeps a classic group in one `GroupMetadataValue` (versions 0-4) and a
//! consumer group in its `ConsumerGroup*Value` records. A record is written at each installed
//! generation, when a group becomes Empty, and (consumer groups) a moment after an epoch or a
//! member moved, so a restart resumes groups without a rebalance; the conversions from and to
//! a live group belong to its protocol (`classic/snapshot.rs`, `consumer/snapshot.rs`).
//!
//! The bytes ([`SavedGroup::encode`]) are MessagePack of a map `{version, group}`. A reader
//! takes every version it knows: [`VERSION`], and version 1 (`v1`), the one shape for both
//! group types that hosts wrote before records were versioned (no `version` key). A version
//! from a newer host is refused by name rather than read as something else. Changing a record
//! means a new version number and a reader for the one before; this shape is also what the
//! failover work writes to the cluster, one record per group.

mod v1;
mod v2;

use serde::{Deserialize, Serialize};

pub use v2::{
    AssignorRecord, ClassicGroupRecord, ClassicMemberRecord, ConsumerGroupRecord,
    ConsumerMemberRecord, DeferredRebalance, ModuleState, SavedGroup,
};

/// The version [`SavedGroup::encode`] writes.
pub const VERSION: u16 = 2;

/// A saved group's bytes that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SavedGroupError {
    #[error("written by a newer host (record version {0}; this host reads 1 to {VERSION})")]
    Newer(u16),
    #[error("not a group record of version {version}: {reason}")]
    Malformed { version: u16, reason: String },
}

/// The bytes as written: the version first.
#[derive(Serialize)]
struct Envelope<'a> {
    version: u16,
    group: &'a SavedGroup,
}

/// The bytes as read at version 2.
#[derive(Deserialize)]
struct EnvelopeV2 {
    group: SavedGroup,
}

/// Only the version, whatever else the map holds (`None`: version 1, which had no key).
#[derive(Deserialize)]
struct Version {
    #[serde(default)]
    version: Option<u16>,
}

impl SavedGroup {
    /// The record's bytes at the current version (`VERSION`).
    pub fn encode(&self) -> Result<Vec<u8>, rmp_serde::encode::Error> {
        rmp_serde::to_vec_named(&Envelope {
            version: VERSION,
            group: self,
        })
    }

    /// A record written by this host or an older one.
    pub fn decode(bytes: &[u8]) -> Result<SavedGroup, SavedGroupError> {
        let malformed = |version: u16| {
            move |e: rmp_serde::decode::Error| SavedGroupError::Malformed {
                version,
                reason: e.to_string(),
            }
        };
        let version = rmp_serde::from_slice::<Version>(bytes)
            .map_err(malformed(0))?
            .version;
        match version {
            None => Ok(rmp_serde::from_slice::<v1::GroupSnapshot>(bytes)
                .map_err(malformed(1))?
                .upgrade()),
            Some(VERSION) => Ok(rmp_serde::from_slice::<EnvelopeV2>(bytes)
                .map_err(malformed(VERSION))?
                .group),
            Some(newer) if newer > VERSION => Err(SavedGroupError::Newer(newer)),
            Some(other) => Err(SavedGroupError::Malformed {
                version: other,
                reason: "no host wrote this version".to_owned(),
            }),
        }
    }
}

/// One committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

#[cfg(test)]
mod tests;
