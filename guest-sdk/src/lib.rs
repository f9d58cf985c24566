//! # assignor-sdk
//!
//! Write a Kafka partition assignor in Rust, test it natively with `cargo test`, build it to
//! `wasm32-unknown-unknown`, and upload it to a running assignor-host.
//!
//! Layout:
//! - [`abi`]: the ABI v1 messages and constants (the contract with the host).

pub mod abi;

pub use abi::*;
