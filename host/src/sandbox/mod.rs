//! Wasm sandbox. (to be written)
