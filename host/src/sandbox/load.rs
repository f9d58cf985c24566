//! Static checks of a module before anything runs: the bytes are a binary module (not
//! WebAssembly text), and, once compiled, the module matches the ABI (v1 and v2 share their exports): the only import is
//! `assignor.log(i32, i32, i32)`, the required exports exist with their exact types, and the
//! memory is a plain 32-bit memory that starts within the memory cap.
//!
//! Checked in that order so the first error a person sees is the most likely mistake (a WASI
//! import from building with std I/O, then a missing `#[assignor]` export).

use assignor_sdk::{
    EXPORT_ABI_VERSION, EXPORT_ALLOC, EXPORT_ASSIGN, EXPORT_DESCRIBE, EXPORT_MEMORY, IMPORT_LOG,
    IMPORT_MODULE,
};
use wasmtime::{ExternType, FuncType, Module, ValType};

use super::error::LoadError;

/// Size of a wasm page.
const PAGE: u64 = 64 << 10;

/// The first four bytes of every binary module.
const WASM_MAGIC: &[u8; 4] = b"\0asm";

/// Refuses WebAssembly text before compiling. A module's identity is its bytes (the sha256 an
/// operator pins and the store keeps), so it must be the binary that runs, not one of the many
/// texts that assemble to it; and text would only compile with wasmtime's `wat` feature, which
/// the host leaves off. Anything else that is not a binary module is left to the compiler,
/// whose message names the bad header.
pub(crate) fn check_binary(wasm: &[u8]) -> Result<(), LoadError> {
    if !wasm.starts_with(WASM_MAGIC) && looks_like_text(wasm) {
        return Err(LoadError::Text);
    }
    Ok(())
}

/// Whether `bytes` start like a WAT file: after an optional UTF-8 byte-order mark and
/// whitespace, an s-expression `(` or a `;;` line comment (`(;` block comments start with `(`).
fn looks_like_text(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| &bytes[i..]) {
        Some(rest) => rest.starts_with(b"(") || rest.starts_with(b";;"),
        None => false,
    }
}

/// A function export of the ABI: name, parameters, results, and the type as a person reads it.
struct FuncExport {
    name: &'static str,
    params: &'static [ValType],
    results: &'static [ValType],
    shown: &'static str,
}

const REQUIRED: [FuncExport; 3] = [
    FuncExport {
        name: EXPORT_ABI_VERSION,
        params: &[],
        results: &[ValType::I32],
        shown: "a function () -> i32",
    },
    FuncExport {
        name: EXPORT_ALLOC,
        params: &[ValType::I32],
        results: &[ValType::I32],
        shown: "a function (i32) -> i32",
    },
    FuncExport {
        name: EXPORT_ASSIGN,
        params: &[ValType::I32, ValType::I32],
        results: &[ValType::I64],
        shown: "a function (i32, i32) -> i64",
    },
];

const DESCRIBE: FuncExport = FuncExport {
    name: EXPORT_DESCRIBE,
    params: &[],
    results: &[ValType::I64],
    shown: "a function () -> i64",
};

/// Checks `module`'s imports, exports and memory against the ABI. `memory_cap` is the
/// sandbox's memory cap in bytes.
pub(crate) fn check_shape(module: &Module, memory_cap: u64) -> Result<(), LoadError> {
    for import in module.imports() {
        let ty = import.ty();
        if import.module() != IMPORT_MODULE || import.name() != IMPORT_LOG {
            return Err(LoadError::ForbiddenImport {
                module: import.module().to_owned(),
                name: import.name().to_owned(),
                kind: kind(&ty).to_owned(),
            });
        }
        let ok = matches!(&ty, ExternType::Func(f)
            if same_signature(f, &[ValType::I32, ValType::I32, ValType::I32], &[]));
        if !ok {
            return Err(LoadError::WrongImportSignature { found: shown(&ty) });
        }
    }

    for export in &REQUIRED {
        check_func(module, export, true)?;
    }
    check_func(module, &DESCRIBE, false)?;

    match module.get_export(EXPORT_MEMORY) {
        None => Err(LoadError::MissingExport {
            name: EXPORT_MEMORY,
        }),
        Some(ExternType::Memory(m)) if !m.is_64() && !m.is_shared() => {
            let minimum_bytes = m.minimum().saturating_mul(PAGE);
            if minimum_bytes > memory_cap {
                Err(LoadError::MemoryTooLarge {
                    minimum_bytes,
                    cap_bytes: memory_cap,
                })
            } else {
                Ok(())
            }
        }
        Some(other) => Err(LoadError::WrongExportType {
            name: EXPORT_MEMORY,
            expected: "an unshared 32-bit memory",
            found: shown(&other),
        }),
    }
}

fn check_func(module: &Module, export: &FuncExport, required: bool) -> Result<(), LoadError> {
    match module.get_export(export.name) {
        None if required => Err(LoadError::MissingExport { name: export.name }),
        None => Ok(()),
        Some(ExternType::Func(f)) if same_signature(&f, export.params, export.results) => Ok(()),
        Some(other) => Err(LoadError::WrongExportType {
            name: export.name,
            expected: export.shown,
            found: shown(&other),
        }),
    }
}

fn same_signature(f: &FuncType, params: &[ValType], results: &[ValType]) -> bool {
    let same = |a: ValType, b: &ValType| ValType::eq(&a, b);
    f.params().len() == params.len()
        && f.results().len() == results.len()
        && f.params().zip(params).all(|(a, b)| same(a, b))
        && f.results().zip(results).all(|(a, b)| same(a, b))
}

fn kind(ty: &ExternType) -> &'static str {
    match ty {
        ExternType::Func(_) => "function",
        ExternType::Memory(_) => "memory",
        ExternType::Table(_) => "table",
        ExternType::Global(_) => "global",
        ExternType::Tag(_) => "tag",
    }
}

fn shown(ty: &ExternType) -> String {
    match ty {
        ExternType::Func(f) => format!("a function {f}"),
        ExternType::Memory(m) if m.is_64() => "a 64-bit memory".to_owned(),
        ExternType::Memory(m) if m.is_shared() => "a shared memory".to_owned(),
        other => format!("a {}", kind(other)),
    }
}
