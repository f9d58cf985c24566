//! [`CallState`]: the data each call's `Store` carries, so the sandbox's parts (the limiter,
//! the guest's log) reach it from inside wasmtime callbacks.

use super::limits::CallLimiter;
use super::log::GuestLog;

/// The data of a call's `Store`: the limiter and the guest's log lines.
pub(crate) struct CallState {
    pub(crate) limiter: CallLimiter,
    pub(crate) log: GuestLog,
}
