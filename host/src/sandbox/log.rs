//! The one host function a module may import: `assignor.log(level, ptr, len)`.
//!
//! Lines are collected in the call's store, bounded by [`SandboxLimits`] (lines, bytes, and a
//! per-line length past which a line is truncated), and emitted to `tracing` after the call
//! with the call's fields (`module`, `version`, `group`, `generation`). Logging never fails the
//! call: a line with a bad pointer or past the budget is counted as dropped instead of trapping,
//! so a chatty module is quieted, not broken.

use assignor_sdk::LogLevel;
use wasmtime::{Caller, Linker};

use super::limits::SandboxLimits;

/// One line a module logged during a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestLogLine {
    pub level: LogLevel,
    /// UTF-8 text (invalid sequences replaced), truncated to `max_log_line_bytes`.
    pub message: String,
}

/// The log lines of one call and what was dropped.
#[derive(Debug, Default)]
pub(crate) struct GuestLog {
    pub(crate) lines: Vec<GuestLogLine>,
    pub(crate) dropped: u32,
    bytes: u64,
    max_lines: u32,
    max_bytes: u64,
    max_line_bytes: u32,
}

impl GuestLog {
    pub(crate) fn new(limits: &SandboxLimits) -> GuestLog {
        GuestLog {
            max_lines: limits.max_log_lines,
            max_bytes: limits.max_log_bytes,
            max_line_bytes: limits.max_log_line_bytes,
            ..GuestLog::default()
        }
    }

    fn has_room(&self) -> bool {
        (self.lines.len() as u64) < u64::from(self.max_lines) && self.bytes < self.max_bytes
    }

    fn push(&mut self, level: LogLevel, raw: &[u8]) {
        let keep = raw.len().min(self.max_line_bytes as usize);
        let keep = keep.min(usize::try_from(self.max_bytes - self.bytes).unwrap_or(usize::MAX));
        let mut message = String::from_utf8_lossy(&raw[..keep]).into_owned();
        if keep < raw.len() {
            message.push_str(" [truncated]");
        }
        self.bytes += keep as u64;
        self.lines.push(GuestLogLine { level, message });
    }
}

/// Defines `assignor.log` in `linker`, the only import the sandbox links; `log_of` finds the
/// call's [`GuestLog`] in the store's data (generic so this file need not know that type).
pub(crate) fn define<T: 'static>(
    linker: &mut Linker<T>,
    log_of: fn(&mut T) -> &mut GuestLog,
) -> wasmtime::Result<()> {
    linker.func_wrap(
        assignor_sdk::IMPORT_MODULE,
        assignor_sdk::IMPORT_LOG,
        move |mut caller: Caller<'_, T>, level: i32, ptr: i32, len: i32| {
            if !log_of(caller.data_mut()).has_room() {
                log_of(caller.data_mut()).dropped += 1;
                return;
            }
            let memory = caller
                .get_export(assignor_sdk::EXPORT_MEMORY)
                .and_then(|e| e.into_memory());
            let Some(memory) = memory else {
                log_of(caller.data_mut()).dropped += 1;
                return;
            };
            let (data, state) = memory.data_and_store_mut(&mut caller);
            let log = log_of(state);
            let (start, len) = (ptr as u32 as usize, len as u32 as usize);
            match start.checked_add(len).and_then(|end| data.get(start..end)) {
                Some(raw) => log.push(LogLevel::from_i32(level), raw),
                None => log.dropped += 1,
            }
        },
    )?;
    Ok(())
}

/// Emits a call's guest log lines to `tracing`, with the call's fields.
pub(crate) fn emit(
    lines: &[GuestLogLine],
    dropped: u32,
    module: &str,
    version: u32,
    group: &str,
    generation: i32,
) {
    for line in lines {
        let text = line.message.as_str();
        match line.level {
            LogLevel::Error => {
                tracing::error!(target: "assignor::guest", module, version, group, generation, "{text}")
            }
            LogLevel::Warn => {
                tracing::warn!(target: "assignor::guest", module, version, group, generation, "{text}")
            }
            LogLevel::Info => {
                tracing::info!(target: "assignor::guest", module, version, group, generation, "{text}")
            }
            LogLevel::Debug => {
                tracing::debug!(target: "assignor::guest", module, version, group, generation, "{text}")
            }
            LogLevel::Trace => {
                tracing::trace!(target: "assignor::guest", module, version, group, generation, "{text}")
            }
        }
    }
    if dropped > 0 {
        tracing::warn!(
            target: "assignor::guest",
            module,
            version,
            group,
            generation,
            dropped,
            "guest log lines dropped (over the per-call log budget or bad pointers)"
        );
    }
}
