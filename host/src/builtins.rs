//! The built-in strategies, compiled to wasm by build.rs and embedded. (to be written)
