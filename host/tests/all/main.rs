//! The host's integration tests, as one test binary: every file directly under `tests/` is a
//! binary of its own that links the whole host (wasmtime, tokio, axum, redb) again, and those
//! links were the slowest part of building the tests. Each module below is one such former
//! file, its tests named `module::test`; `sandbox_support` is compiled once for all of them.
//!
//! The modules share one process, so what is process-wide is shared too: the `OnceLock`
//! sandboxes and registries of `sandbox_support` and of single modules (compiled once, not once
//! per file), and the global tracing subscriber `tracing_spans` installs on first use (it then
//! also records the other modules' events; its checks only look at their own group ids). No
//! test sets environment variables or the working directory; `cli` runs the binary itself
//! (`CARGO_BIN_EXE_assignor-host`), so its commands get processes of their own.

mod sandbox_support;

mod builtins;
mod cli;
mod registry_builtins;
mod registry_durability;
mod registry_hot_swap;
mod registry_lifecycle;
mod sandbox_abi_v2;
mod sandbox_calls;
mod sandbox_hostile;
mod sandbox_large_group;
mod sandbox_metering;
mod sandbox_plain_v2;
mod sandbox_v1_sdk;
mod tracing_spans;
