//! Logging from a strategy: [`log`] and the macros [`error!`](crate::error),
//! [`warn!`](crate::warn), [`info!`](crate::info), [`debug!`](crate::debug),
//! [`trace!`](crate::trace).
//!
//! In wasm the text goes through the module's one import, `assignor.log(level, ptr, len)`, into
//! the host's tracing (with the group and module as fields; the host truncates long lines and
//! rate-limits). Natively (`cargo test`) it goes to stderr, which the test harness captures and
//! shows for failing tests.

use crate::abi::LogLevel;

/// Sends `message` at `level` to the host (in wasm) or to stderr (natively).
pub fn log(level: LogLevel, message: &str) {
    imp::log(level, message);
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use crate::abi::LogLevel;

    #[link(wasm_import_module = "assignor")]
    unsafe extern "C" {
        /// `assignor.log(level, ptr, len)`: see [`crate::abi::IMPORT_LOG`].
        #[link_name = "log"]
        fn assignor_log(level: i32, ptr: i32, len: i32);
    }

    pub(crate) fn log(level: LogLevel, message: &str) {
        // SAFETY: the host only reads `len` bytes at `ptr`, which is a live &str in this
        // module's memory for the duration of the call. Pointers and lengths fit in i32 on
        // wasm32.
        unsafe { assignor_log(level as i32, message.as_ptr() as i32, message.len() as i32) }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use crate::abi::LogLevel;

    #[allow(
        clippy::print_stderr,
        reason = "natively a strategy runs under `cargo test`, which shows stderr per test"
    )]
    pub(crate) fn log(level: LogLevel, message: &str) {
        eprintln!("{}", super::native_line(level, message));
    }
}

/// The line the native log prints to stderr.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
fn native_line(level: LogLevel, message: &str) -> String {
    format!("[assignor {}] {message}", level_name(level))
}

/// The lowercase name of a level, as the native log prints it.
pub fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Error => "error",
        LogLevel::Warn => "warn",
        LogLevel::Info => "info",
        LogLevel::Debug => "debug",
        LogLevel::Trace => "trace",
    }
}

/// Logs at error level: `assignor_sdk::error!("topic {} has no partitions", name)`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::log($crate::abi::LogLevel::Error, &::std::format!($($arg)+)) };
}

/// Logs at warn level, with `format!` arguments.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log::log($crate::abi::LogLevel::Warn, &::std::format!($($arg)+)) };
}

/// Logs at info level, with `format!` arguments.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::log($crate::abi::LogLevel::Info, &::std::format!($($arg)+)) };
}

/// Logs at debug level, with `format!` arguments.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::log($crate::abi::LogLevel::Debug, &::std::format!($($arg)+)) };
}

/// Logs at trace level, with `format!` arguments.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log::log($crate::abi::LogLevel::Trace, &::std::format!($($arg)+)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_follow_the_abi_levels() {
        let levels = [1, 2, 3, 4, 5].map(LogLevel::from_i32).map(level_name);
        assert_eq!(levels, ["error", "warn", "info", "debug", "trace"]);
    }

    #[test]
    fn native_lines_name_the_level() {
        assert_eq!(native_line(LogLevel::Warn, "slow"), "[assignor warn] slow");
    }
}
