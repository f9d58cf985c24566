//! The built-in strategies: the crates under `assignors/` (Kafka's `range`, `roundrobin`, ...),
//! compiled to `wasm32-unknown-unknown` by `build.rs` with the documented module profile and
//! embedded in the binary.
//!
//! They are ordinary modules: the registry registers each at start under its protocol name,
//! runs it in the sandbox like an upload, and lets an upload of the same name supersede it
//! (a rollback returns to the built-in). Nothing here knows how to run them.

/// One embedded strategy.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The protocol name it serves (`range`, `roundrobin`): the name consumers put in
    /// `partition.assignment.strategy`, and the directory `assignors/<name>` it is built from.
    pub name: &'static str,
    /// The module: a core wasm module exporting ABI v1 (see `assignor_sdk::abi`), importing at
    /// most `assignor.log`.
    pub wasm: &'static [u8],
}

// `pub static BUILTINS: &[Builtin]`, sorted by name, one entry per crate directory under
// `assignors/`.
include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The built-in strategy serving protocol `name`, if there is one.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_and_roundrobin_are_built_in_and_found_by_name() {
        let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        assert!(
            names.contains(&"range") && names.contains(&"roundrobin"),
            "{names:?}"
        );
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "sorted and unique: {names:?}"
        );
        assert_eq!(builtin("range").map(|b| b.name), Some("range"));
        assert!(builtin("no-such-strategy").is_none());
    }

    #[test]
    fn every_builtin_is_a_wasm_module() {
        for b in BUILTINS {
            assert_eq!(
                &b.wasm[..8],
                b"\0asm\x01\0\0\0",
                "{} is not a wasm v1 binary",
                b.name
            );
        }
    }
}
