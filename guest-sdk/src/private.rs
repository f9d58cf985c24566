//! Support for the code the [`assignor`](crate::assignor) attribute generates. Not a public
//! API: names here may change in any release; authors use the attribute.
//!
//! The attribute emits a `#[cfg(target_arch = "wasm32")]` module whose `extern "C"` exports
//! call the functions below, and a compile-time check that each export name it writes equals
//! the constant in [`crate::abi`], so the two cannot drift apart.
//!
//! Memory: the host runs every call in a fresh instance and drops it afterwards
//! (`docs/abi.md`, "One call"), so nothing here is ever freed: the input buffer from
//! `alloc` and the output buffer of `assign`/`describe` are leaked on purpose and stay
//! valid until the instance is gone, which is exactly as long as the host needs to read them.

pub use crate::abi::{Input, RebalanceProtocol};

/// Fails compilation if an export name the attribute writes differs from the ABI constant.
pub const fn check_export_name(abi_constant: &str, written: &str) {
    let (a, b) = (abi_constant.as_bytes(), written.as_bytes());
    let mut same = a.len() == b.len();
    let mut i = 0;
    while same && i < a.len() {
        same = a[i] == b[i];
        i += 1;
    }
    assert!(
        same,
        "assignor-sdk-macros writes an export name that is not the ABI constant"
    );
}

#[cfg(target_arch = "wasm32")]
pub use wasm::{abi_version, alloc, assign, describe};

#[cfg(target_arch = "wasm32")]
mod wasm {
    use crate::abi::{ABI_VERSION, AssignRequest, Input, LogLevel, RebalanceProtocol};
    use crate::assignment::{AssignError, Assignment};
    use crate::glue;

    /// `assignor_abi_version`: the ABI this module speaks.
    pub fn abi_version() -> i32 {
        ABI_VERSION as i32
    }

    /// `assignor_alloc(len)`: a buffer of `len` bytes for the host to write the request into.
    /// Never freed (see the module docs). A negative `len` gets 0, a null pointer.
    pub fn alloc(len: i32) -> i32 {
        let Ok(len) = usize::try_from(len) else {
            return 0;
        };
        let buffer = Vec::<u8>::with_capacity(len);
        let ptr = buffer.as_ptr() as i32;
        std::mem::forget(buffer);
        ptr
    }

    /// `assignor_assign(ptr, len)`: decodes the request the host wrote at `ptr`, runs the
    /// author's function and returns `(out_ptr << 32) | out_len` of the encoded response.
    pub fn assign(
        ptr: i32,
        len: i32,
        f: impl FnOnce(&AssignRequest) -> Result<Assignment, AssignError>,
    ) -> i64 {
        install_panic_hook();
        let output = match usize::try_from(len) {
            Ok(0) => glue::run(&[], f),
            Ok(len) if ptr != 0 => {
                // SAFETY: the host's side of the ABI: it called `assignor_alloc(len)` and wrote
                // `len` bytes at the pointer it returned, which is `ptr`; that buffer is never
                // freed or written by the guest. A host breaking the contract makes the read
                // out of bounds, which in wasm traps instead of reading foreign memory.
                let input = unsafe { std::slice::from_raw_parts(ptr as usize as *const u8, len) };
                glue::run(input, f)
            }
            _ => glue::error_bytes(format!("invalid input buffer: ptr={ptr} len={len}")),
        };
        leak(output)
    }

    /// `assignor_describe()`: `(ptr << 32) | len` of the encoded `AssignorInfo`.
    pub fn describe(
        name: &str,
        version: &str,
        description: &str,
        protocol: RebalanceProtocol,
        inputs: &[Input],
        in_place: bool,
    ) -> i64 {
        install_panic_hook();
        leak(glue::describe(
            name,
            version,
            description,
            protocol,
            inputs,
            in_place,
        ))
    }

    /// Hands `bytes` to the host: leaked, so they stay put until the instance is dropped.
    fn leak(bytes: Vec<u8>) -> i64 {
        let bytes: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
        let (ptr, len) = (bytes.as_ptr() as usize as u64, bytes.len() as u64);
        ((ptr << 32) | len) as i64
    }

    /// Sends a panic's message (with its location) to the host at error level before
    /// `panic = "abort"` traps, so the operator sees why the module failed.
    fn install_panic_hook() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            std::panic::set_hook(Box::new(|info| {
                crate::log::log(LogLevel::Error, &info.to_string());
            }));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_names_written_by_the_macro_match_the_abi() {
        // The same checks the attribute emits, evaluated here at compile time.
        const _: () = check_export_name(crate::abi::EXPORT_ASSIGN, "assignor_assign");
        const _: () = check_export_name(crate::abi::EXPORT_ALLOC, "assignor_alloc");
        // And the comparison itself tells different names apart.
        let differs = std::panic::catch_unwind(|| check_export_name("assignor_assign", "assign"));
        assert!(differs.is_err());
        let prefix =
            std::panic::catch_unwind(|| check_export_name("assignor_alloc", "assignor_allo"));
        assert!(prefix.is_err());
    }
}
