//! [`CallStats`]: what one call used, reported for successful and failed calls alike.

use std::time::Duration;

use serde::Serialize;

/// What a call used. Filled in for failed calls too, up to the point of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CallStats {
    /// Wall time of the whole call: encoding, instantiation, the guest, decoding and checks.
    pub duration: Duration,
    /// Fuel the guest consumed (deterministic for a given module and input). Always 0 under
    /// [`Metering::Epoch`](super::Metering::Epoch), where nothing is counted: a plain `u64` rather than an `Option`
    /// because a fuel-metered call always burns some (instantiation alone does), so 0 is
    /// unambiguous, and consumers (the fuel metric, which skips 0, the admin API, `simulate`)
    /// keep one type. [`super::Sandbox::metering`] says which case applies.
    pub fuel_used: u64,
    /// Largest size the guest's linear memory reached, in bytes.
    pub peak_memory_bytes: u64,
    /// Size of the MessagePack request written into the guest.
    pub input_bytes: u64,
    /// Size of the MessagePack response read out of the guest.
    pub output_bytes: u64,
}
