//! # assignor-host
//!
//! A Kafka-wire-compatible consumer-group coordinator whose partition assignors are sandboxed
//! WebAssembly modules. Unmodified Kafka consumers join groups here; the host computes each
//! group's assignment by calling the strategy the group selected, as a wasm module.
//!
//! ## Layout
//!
//! The flow a request takes is the architecture: bytes -> [`kafka`] frame -> per-API handler ->
//! event to the group's shard in [`driver`] -> [`coordinator`] decides -> effects (respond,
//! timers, run assignor, persist) -> [`driver`] executes them -> [`registry`] runs the module in
//! the [`sandbox`] on a blocking pool -> the result goes back to the shard as an event.
//!
//! - [`coordinator`]: sans-io group state machine, `handle(now, Event) -> Vec<Effect>`.
//! - [`driver`]: the tokio side: shards, timers, effects, the assignor pool.
//! - [`sandbox`]: wasmtime engine, per-call store with limits, ABI marshalling; runs the checks.
//! - `assignor_wire` (its own crate, below every part): the decoders of what clients, modules
//!   and authors send (framing, requests, the consumer Subscription and Assignment, scenario
//!   files) and the output checks, with neither wasmtime nor tokio, so the fuzz targets build
//!   without them.
//! - [`registry`]: modules by protocol name: upload checks, versions, hot swap, built-ins.
//! - [`builtins`]: the built-in strategies, compiled to wasm at build time and embedded.
//! - [`kafka`]: the wire: frame codec, connections, listener, one file per Kafka API.
//! - [`catalog`]: the topics the host serves.
//! - [`store`]: durable state (redb).
//! - [`admin`]: HTTP admin API (modules, groups, topics, simulate, `/metrics`, `/healthz`).
//! - [`metrics`]: Prometheus metrics fed by the wire layer, the coordinator's notices and scrapes.
//! - [`simulate`]: scenario files, local and live simulations, balance and movement reports.
//! - [`cli`]: the command line's client side: admin API calls, tables, `--json`.
//! - [`config`]: reads the TOML file, the environment and the flags into each part's own
//!   settings type, every field defaulted.
//! - [`upstream`]: proxy mode, the host in front of a Kafka-compatible cluster; its
//!   [`upstream::client`] is the host's own client of that cluster.
//! - [`users`]: standalone's SCRAM users, which `kafka.authentication = "local"` checks.
//! - [`acls`]: standalone's ACLs, decided by Kafka's `StandardAuthorizer` rules.
//! - [`server`]: assembles the parts from a [`config::Config`] and runs them until shutdown.
//!
//! The arrows between these parts, and the ones that must never exist, are in
//! `docs/architecture.md`; `tests/architecture` (`cargo test -p assignor-architecture`) checks
//! the code against it.

pub mod acls;
pub mod admin;
pub mod builtins;
pub mod catalog;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod coordinator;
pub mod driver;
pub mod duration;
pub mod kafka;
pub mod metrics;
#[cfg(test)]
mod mutate;
pub mod registry;
pub mod sandbox;
pub mod server;
pub mod simulate;
pub mod store;
pub mod tls;
pub mod upstream;
pub mod users;
