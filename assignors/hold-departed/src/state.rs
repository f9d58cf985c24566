//! What `hold-departed` remembers between rebalances (the ABI's `state`): the last answer,
//! member by member with who each member is, and the departed members whose partitions are
//! being held, with when they left.
//!
//! Encoded with rmp-serde as positional arrays, led by a layout version: bytes of another
//! version, or that do not decode, are read as no state (the group is then assigned as if
//! it had no history, which is what a new group gets), never as an error.

use serde::{Deserialize, Serialize};

/// The layout written by this version of the module.
pub const LAYOUT: u32 = 1;

/// The kept state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct State {
    /// [`LAYOUT`].
    pub layout: u32,
    /// Every member of the last answer, with what it got.
    pub members: Vec<Seat>,
    /// Members that left while holding partitions, and the partitions waiting for them.
    pub held: Vec<Held>,
}

/// A member as this strategy recognises it when it comes back, and its partitions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Seat {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// `(topic, partitions)`, topics sorted, partitions ascending.
    pub partitions: Vec<(String, Vec<i32>)>,
}

/// A departed member's seat and the coordinator time (`now_ms`) of the first rebalance that
/// found it gone.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Held {
    pub seat: Seat,
    pub since_ms: i64,
}

impl Seat {
    /// Whether `other` is the same consumer come back: the same `group.instance.id` when
    /// either is static, else the same client id and host.
    pub fn same_consumer(
        &self,
        instance: Option<&str>,
        client_id: &str,
        client_host: &str,
    ) -> bool {
        match (self.group_instance_id.as_deref(), instance) {
            (None, None) => self.client_id == client_id && self.client_host == client_host,
            (a, b) => a == b,
        }
    }

    /// Every partition of the seat.
    pub fn partitions(&self) -> impl Iterator<Item = (&str, i32)> {
        self.partitions
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |&p| (t.as_str(), p)))
    }
}

impl State {
    /// The state in `bytes`, or the empty state when there are none or they are not this
    /// layout's.
    pub fn read(bytes: Option<&[u8]>) -> State {
        bytes
            .and_then(|b| rmp_serde::from_slice::<State>(b).ok())
            .filter(|s| s.layout == LAYOUT)
            .unwrap_or_default()
    }

    /// The bytes to keep.
    pub fn to_bytes(&self) -> Vec<u8> {
        rmp_serde::to_vec(self).unwrap_or_default()
    }
}
