//! How the driver runs a strategy: the [`AssignorRunner`] trait, implemented for the registry
//! (modules in the sandbox, `server/assignors.rs`) and by test fakes. It is called on the
//! blocking pool;
//! the coordinator only ever sees the plain [`AssignorOutput`] / [`AssignorFailure`] and
//! installs an output without checking it again, so a runner must check (see
//! [`AssignorOutput`]).

use assignor_sdk::AssignRequest;

use crate::coordinator::{AssignorFailure, AssignorOutput};

/// Runs one strategy on one request. Blocking; called off the shards.
pub trait AssignorRunner: Send + Sync + 'static {
    /// An `Ok` output has no `error` and passed [`crate::checks::check_response`] on `request`
    /// with `cooperative` (the KIP-429 rule: no partition to a new owner while another member
    /// still owns it); an output that failed the checks is a failure with `invalid_output`.
    fn run(
        &self,
        strategy: &str,
        pinned_version: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
    ) -> Result<AssignorOutput, AssignorFailure>;
}
