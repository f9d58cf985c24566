//! # uniform
//!
//! Apache Kafka's `UniformAssignor` (`group-coordinator`, `org.apache.kafka.coordinator.group.assignor`),
//! the default server-side assignor of the KIP-848 consumer protocol, as an assignor-host module
//! for classic-protocol groups. The algorithm is ported in `assignor-uniform-core` (read its
//! crate docs for how Kafka's builders and inputs map onto the ABI); this crate is the module
//! around it, and re-exports the core's parts the `uniform` bench times one by one.

use assignor_sdk::{AssignError, AssignRequest, Assignment, assignor};

pub use assignor_uniform_core::{assignment, group, owners};

#[cfg(all(target_arch = "wasm32", feature = "probes"))]
mod probes;

/// The `uniform` strategy: Kafka's `UniformAssignor`.
#[assignor(
    name = "uniform",
    version = "1.0.0",
    description = "Apache Kafka's UniformAssignor (KIP-848 default): balanced to within one partition, sticky to the previous assignment",
    protocol = "eager"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    assignor_uniform_core::assign(request)
}

/// The module decodes, assigns and encodes, keeping nearly all it allocates until the call
/// ends: the SDK's bump allocator fits and costs less fuel than the default one.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
