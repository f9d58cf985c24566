//! The `[sandbox]` section as one value: how CPU is metered and the instance pool (fixed for
//! the engine at start), and the bounds of each call. The types of each part are in
//! `limits.rs`.

use serde::{Deserialize, Serialize};

use super::limits::{Metering, PoolConfig, SandboxLimits};

/// The `[sandbox]` section: `metering` and `[sandbox.pool]` for the engine (fixed at start),
/// `[sandbox.limits]` per call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// How CPU is bounded: `"fuel"` (default: fuel budget plus wall-clock deadline, a
    /// deterministic cap) or `"epoch"` (the wall-clock deadline alone: faster calls, a cap
    /// that depends on the machine). See [`Metering`].
    pub metering: Metering,
    /// The bounds of every assignor call (`[sandbox.limits]`).
    pub limits: SandboxLimits,
    /// The engine's instance pool, fixed at start (`[sandbox.pool]`).
    pub pool: PoolConfig,
}
