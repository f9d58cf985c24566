//! # assignor-wire
//!
//! Everything that turns bytes a client or a module controls into values the host acts on,
//! and the checks those values must pass, in a crate that needs neither wasmtime, tokio nor
//! librdkafka. It is what the host's fuzz targets (`fuzz/`) reach, and keeping it apart keeps
//! their coverage-instrumented build to this crate and `kafka-protocol` (about a minute, not the
//! quarter of an hour the whole host takes), so a bounded run of every target fits in the test
//! command.
//!
//! - [`codec`]: Kafka framing, the `int32` size prefix and its per-API caps;
//! - [`request`]: a frame to a request header and body, for every API the host serves
//!   ([`versions`]), through [`guard`], which keeps `kafka-protocol` from allocating by a
//!   length prefix the frame cannot hold;
//! - [`consumer_protocol`]: Kafka's consumer Subscription and Assignment bytes;
//! - [`scenario`]: `simulate`'s scenario files (CLI and admin API), each becoming the request
//!   a live group would send;
//! - [`checks`]: what a module's answer may say (valid assignment, the cooperative rule),
//!   applied to every answer, ABI v1 and v2 alike. The answers themselves are decoded by the
//!   SDK's ABI types (`assignor_sdk`, `assignor_sdk::abi::v2`), which the host shares.
//!
//! The host (`assignor-host`) uses these modules under the same names; its wire layer
//! (`kafka`) adds the connections and one file per API.

pub mod checks;
pub mod codec;
pub mod consumer_protocol;
pub mod guard;
pub mod request;
pub mod scenario;
pub mod versions;
