//! The sandbox's typed failures: [`LoadError`] when a module cannot become callable (compile,
//! imports, exports, ABI version), [`CallError`] when one call fails (every trap classified),
//! and [`CallFailure`], a call error with the statistics gathered up to the failure.
//!
//! Every message names the culprit (the export, the import, the member, the partition) so that
//! a person can act on it from an admin API answer or a log line alone.

use super::log::GuestLogLine;
use super::stats::CallStats;
use assignor_wire::checks::OutputError;

/// Why a module cannot be loaded. Produced by [`super::Sandbox::compile`] and
/// [`super::Sandbox::prepare`]; the registry turns it into a refused upload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The bytes are WebAssembly text: the host takes binary modules only.
    #[error(
        "this is WebAssembly text (WAT); upload the binary .wasm, e.g. `wat2wasm module.wat` / \
         `wasm-tools parse module.wat -o module.wasm`"
    )]
    Text,
    #[error("the module does not compile: {message}")]
    Compile { message: String },
    #[error(
        "the module imports `{module}.{name}` ({kind}); an assignor may import only `assignor.log` \
         (no WASI, clock, randomness or I/O: build for wasm32-unknown-unknown without std I/O)"
    )]
    ForbiddenImport {
        module: String,
        name: String,
        kind: String,
    },
    #[error(
        "the module imports `assignor.log` as {found}; the ABI defines it as (i32, i32, i32) -> ()"
    )]
    WrongImportSignature { found: String },
    #[error("the module does not export `{name}`, which the ABI requires")]
    MissingExport { name: &'static str },
    #[error("the module exports `{name}` as {found}; the ABI defines it as {expected}")]
    WrongExportType {
        name: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error(
        "the module's memory starts at {minimum_bytes} bytes, over the sandbox's memory cap of \
         {cap_bytes} bytes"
    )]
    MemoryTooLarge { minimum_bytes: u64, cap_bytes: u64 },
    #[error("the module cannot be linked: {message}")]
    Link { message: String },
    #[error("`assignor_abi_version` returned {found}; this host speaks ABI 1 and 2")]
    AbiVersion { found: i32 },
    /// Instantiating the module or calling `assignor_abi_version` / `assignor_describe` failed.
    #[error("{step} failed: {error}")]
    Call {
        step: &'static str,
        error: CallError,
    },
    #[error("precompiled code is unusable: {message}")]
    Deserialize { message: String },
}

/// Why one call failed. The sandbox stays usable after any of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error(
        "out of fuel: the module used its whole budget of {budget} fuel units (about {} ms of \
         work) without finishing",
        budget / super::limits::FUEL_PER_MS
    )]
    OutOfFuel { budget: u64 },
    #[error("timed out: the module was still running at the {deadline_ms} ms wall-clock deadline")]
    Timeout { deadline_ms: u64 },
    #[error(
        "memory cap: the module asked for {requested_bytes} bytes of memory, over the cap of \
         {cap_bytes} bytes"
    )]
    MemoryCap {
        cap_bytes: u64,
        requested_bytes: u64,
    },
    /// Any other trap. `guest_message` is the last error the module logged before it, which is
    /// where the SDK puts a panic message (a panic aborts, and an abort is a trap).
    #[error("the module trapped: {trap}{}{}", guest_suffix(.guest_message), backtrace_suffix(.backtrace))]
    Trap {
        trap: String,
        backtrace: String,
        guest_message: Option<String>,
    },
    #[error("the module does not export `{name}`")]
    MissingExport { name: &'static str },
    #[error("the module exports `{name}` with the wrong signature: {message}")]
    WrongSignature { name: &'static str, message: String },
    #[error("`assignor_abi_version` returned {found}; this host speaks ABI 1 and 2")]
    WrongAbiVersion { found: i32 },
    #[error("the request is {bytes} bytes, over the input cap of {cap} bytes")]
    InputTooLarge { bytes: u64, cap: u64 },
    #[error("the module returned {bytes} bytes, over the output cap of {cap} bytes")]
    OutputTooLarge { bytes: u64, cap: u64 },
    #[error(
        "`{export}` returned the region ({ptr:#x}, {len} bytes), outside the module's \
         {memory_bytes}-byte memory"
    )]
    BadPointer {
        export: &'static str,
        ptr: u32,
        len: u32,
        memory_bytes: u64,
    },
    #[error("the output is not a MessagePack {what}: {message}")]
    Malformed { what: &'static str, message: String },
    #[error("the module returned an error: {message}")]
    Guest { message: String },
    #[error("invalid assignment: {0}")]
    Invalid(#[from] OutputError),
    #[error("cannot instantiate the module: {message}")]
    Instantiate { message: String },
    #[error("cannot encode the request: {message}")]
    Encode { message: String },
}

fn guest_suffix(message: &Option<String>) -> String {
    match message {
        Some(m) => format!(" (the module logged: {m})"),
        None => String::new(),
    }
}

fn backtrace_suffix(backtrace: &str) -> String {
    if backtrace.is_empty() {
        String::new()
    } else {
        format!("\n{backtrace}")
    }
}

impl CallError {
    /// A short, stable label for metrics and status (`out_of_fuel`, `trap`, `invalid`, ...).
    pub fn reason(&self) -> &'static str {
        match self {
            CallError::OutOfFuel { .. } => "out_of_fuel",
            CallError::Timeout { .. } => "timeout",
            CallError::MemoryCap { .. } => "memory_cap",
            CallError::Trap { .. } => "trap",
            CallError::MissingExport { .. } => "missing_export",
            CallError::WrongSignature { .. } => "wrong_signature",
            CallError::WrongAbiVersion { .. } => "wrong_abi_version",
            CallError::InputTooLarge { .. } => "input_too_large",
            CallError::OutputTooLarge { .. } => "output_too_large",
            CallError::BadPointer { .. } => "bad_pointer",
            CallError::Malformed { .. } => "malformed",
            CallError::Guest { .. } => "guest_error",
            CallError::Invalid(_) => "invalid_assignment",
            CallError::Instantiate { .. } => "instantiate",
            CallError::Encode { .. } => "encode",
        }
    }

    /// Whether the module is to blame. Host-side causes (an input over the cap, a request that
    /// cannot be encoded) do not count towards quarantining the module.
    pub fn is_module_fault(&self) -> bool {
        !matches!(
            self,
            CallError::InputTooLarge { .. } | CallError::Encode { .. }
        )
    }
}

/// A failed call: what went wrong, and what the call had used by then (fuel, memory, time).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct CallFailure {
    pub error: CallError,
    pub stats: CallStats,
    /// What the module logged before it failed (bounded by the log limits).
    pub logs: Vec<GuestLogLine>,
}
