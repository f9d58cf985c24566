//! Sandbox policy: the bounds every call runs under, and the resource limiter that enforces the
//! memory cap and records peak memory.
//!
//! Limits are configuration (STYLE.md 11): [`SandboxLimits`] holds the per-call bounds, all of
//! which are set per `Store`, so one engine can serve several limit sets
//! ([`super::Sandbox::with_limits`]). [`PoolConfig`] sizes the engine's pooling allocator and
//! [`Metering`] chooses how the engine bounds CPU; both are fixed for the life of the engine.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Fuel units a module burns per millisecond of guest work, measured on the development
/// machine (2-vCPU AMD EPYC VM, wasmtime 48): the built-in `range` module on a 1,000-member
/// group burns 4.2-5.8 million per millisecond at best, 2-3 million when the machine is busy
/// (`host/benches/RESULTS.md`); Redpanda uses 2 million for a tight loop. Only used to turn a
/// budget into an approximate time in messages and docs: fuel itself is deterministic.
pub const FUEL_PER_MS: u64 = 4_000_000;

/// How the engine bounds a call's CPU use: the config file's `[sandbox] metering`.
///
/// An *engine* setting, not a per-call limit: fuel metering is compiled into the module's code
/// (a counter decremented in every block and loop), so the choice is made when the
/// [`super::Sandbox`] is created ([`super::Sandbox::new_metered`]) and every module it compiles
/// carries it. It is therefore not part of [`SandboxLimits`], and a handle made by
/// [`super::Sandbox::with_limits`] always keeps its engine's metering. Precompiled code is
/// per metering too: the precompiled cache keys artifacts by the engine's compatibility hash,
/// which covers this setting, so switching it recompiles once instead of loading stale code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Metering {
    /// Fuel budget ([`SandboxLimits::fuel`]) plus the wall-clock deadline
    /// ([`SandboxLimits::timeout`]) as a backstop. The CPU cap is deterministic: the same
    /// module on the same input runs out of fuel, or not, on every node and under any load.
    /// The price is guest time: on Kafka's benchmark grid wasm/native is 1.4-1.9 with fuel
    /// against about 1.24 with epoch only (`host/benches/RESULTS.md`; the grid bench measures
    /// both, `cargo bench -p assignor-host --bench grid -- --metering epoch`). The default.
    #[default]
    Fuel,
    /// No fuel: the wall-clock deadline ([`SandboxLimits::timeout`], default 5 s) alone stops
    /// a runaway module, and it fails with [`super::CallError::Timeout`], never
    /// [`super::CallError::OutOfFuel`]. [`SandboxLimits::fuel`] is ignored and every call
    /// reports `fuel_used = 0` (the fuel metric records nothing for it). Faster calls, but
    /// whether a heavy call finishes depends on the machine's speed and load.
    Epoch,
}

impl Metering {
    /// The config-file spellings, in the order error messages list them.
    pub const NAMES: [&'static str; 2] = ["fuel", "epoch"];

    /// The config-file spelling (`"fuel"` or `"epoch"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Metering::Fuel => "fuel",
            Metering::Epoch => "epoch",
        }
    }
}

impl fmt::Display for Metering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `metering` value that is neither `"fuel"` nor `"epoch"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`metering` must be \"fuel\" or \"epoch\", not {found:?}")]
pub struct UnknownMetering {
    pub found: String,
}

impl FromStr for Metering {
    type Err = UnknownMetering;

    fn from_str(text: &str) -> Result<Metering, UnknownMetering> {
        match text {
            "fuel" => Ok(Metering::Fuel),
            "epoch" => Ok(Metering::Epoch),
            other => Err(UnknownMetering {
                found: other.to_owned(),
            }),
        }
    }
}

impl Serialize for Metering {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read from a string only; a wrong one is refused naming the key and both allowed values
/// (serde's derived message would name neither the key nor, for a non-string, the values).
impl<'de> Deserialize<'de> for Metering {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Metering, D::Error> {
        let text = String::deserialize(d).map_err(|_| {
            serde::de::Error::custom("`metering` must be the string \"fuel\" or \"epoch\"")
        })?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The bounds of one assignor call. Every field has a default that suits a production host;
/// `serde` names are the config-file keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxLimits {
    /// Largest linear memory a module may have, in bytes (default 256 MiB). A `memory.grow`
    /// past it returns -1 to the guest and the call fails with [`super::CallError::MemoryCap`]
    /// if the guest then traps. Must not exceed [`PoolConfig::max_memory_bytes`].
    ///
    /// Why 256 MiB, not the 64 MiB first planned: a 10,000-member group subscribing to 100
    /// topics sends a 25 MB request (every member lists 100 topic names, and its raw
    /// Subscription repeats them), and the built-in `range` peaks at 84 MiB on it with 10
    /// partitions per topic (the sandbox test
    /// `ten_thousand_members_on_a_hundred_topics_fit_the_default_limits`), at 62-114 MiB on the
    /// bench grid's 50,000-500,000 partitions without metadata (`host/benches/RESULTS.md`):
    /// the input, its decoded form and the answer live in linear memory together. The cap costs nothing
    /// until used: memory is a reservation of address space ([`PoolConfig::max_memory_bytes`]),
    /// and only the pages a call touches become resident. The worst case is every concurrent
    /// call at the cap; concurrent calls are the driver's `assignor_threads` +
    /// `fallback_threads` plus uploads and simulations in flight (a few, on a small host),
    /// never more than [`PoolConfig::max_instances`].
    pub memory_bytes: u64,
    /// CPU budget per call, in wasmtime fuel units (about one per wasm instruction). Fuel is
    /// deterministic: the same module on the same input passes or fails the same way on every
    /// node. Default 4,000,000,000, about one second of guest work at [`FUEL_PER_MS`] (two on
    /// a busy machine): `range` on 10,000 members and 100,000 partitions over 10 topics burns
    /// 0.7 billion, so only a runaway module or an extreme group gets near it. Ignored under
    /// [`Metering::Epoch`].
    pub fuel: u64,
    /// Wall-clock backstop per call (default 5 s): catches what fuel does not count well (bulk
    /// memory operations, host calls). Longer than the fuel budget's ~1 s so that on a loaded
    /// machine fuel, the deterministic bound, is what normally stops a runaway module. Under
    /// [`Metering::Epoch`] it is the only CPU bound.
    #[serde(with = "crate::duration")]
    pub timeout: Duration,
    /// Largest MessagePack `AssignRequest` the host will send, in bytes (default 64 MiB). The
    /// guest needs room for the input, its decoded form (two to three times larger) and its
    /// output within `memory_bytes`, so a quarter of the memory cap is the useful maximum. A
    /// 1,000-member group subscribing to 100 topics encodes to about 2.5 MB, a 10,000-member
    /// one to about 25 MB (over the first default of 16 MiB).
    pub max_input_bytes: u64,
    /// Largest MessagePack `AssignResponse` the host will read, in bytes (default 64 MiB). An
    /// assignment is smaller than its request (one entry per owned partition, no subscriptions
    /// or metadata), so the same bound as the input leaves ample room.
    pub max_output_bytes: u64,
    /// Guest log lines kept per call (default 64); further lines are counted and dropped.
    pub max_log_lines: u32,
    /// Guest log bytes kept per call (default 16 KiB); further lines are counted and dropped.
    pub max_log_bytes: u64,
    /// A longer guest log line is truncated to this many bytes (default 1 KiB, as Redpanda).
    pub max_log_line_bytes: u32,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            memory_bytes: 256 << 20,
            fuel: 1_000 * FUEL_PER_MS,
            timeout: Duration::from_secs(5),
            max_input_bytes: 64 << 20,
            max_output_bytes: 64 << 20,
            max_log_lines: 64,
            max_log_bytes: 16 << 10,
            max_log_line_bytes: 1 << 10,
        }
    }
}

/// Sizing of the engine's pooling allocator; fixed when the [`super::Sandbox`] is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolConfig {
    /// Instances that may exist at once, i.e. concurrent calls (default 64). A call beyond it
    /// waits for a slot instead of failing. Each slot reserves address space only (4 GiB plus
    /// guard per memory, so bounds checks are elided); resident memory is what calls touch.
    pub max_instances: u32,
    /// Upper bound for any [`SandboxLimits::memory_bytes`] used with this engine (default
    /// 256 MiB, the default cap).
    ///
    /// Raising it allocates nothing: wasmtime's pool reserves one slot of address space per
    /// instance, `PROT_NONE`, of the engine's memory reservation (4 GiB plus guard on 64-bit
    /// hosts, whatever this value, so bounds checks are elided); this value only bounds how
    /// much of a slot may be made accessible. Pages become resident when a call touches them,
    /// and when an instance is dropped everything past [`PoolConfig::keep_resident_bytes`] is
    /// given back to the OS, so an idle pool holds at most `max_instances x
    /// keep_resident_bytes` (512 MiB by default, in practice the few slots that concurrent calls
    /// used), not `max_instances x max_memory_bytes`.
    pub max_memory_bytes: u64,
    /// Bytes of each memory slot kept resident (zeroed with `memset` instead of `madvise`) when
    /// an instance is dropped (default 8 MiB): the guest's stack, data and heap up to that size
    /// sit there, so the next call takes no page faults for them (wasm-host-anchors.md 2.5).
    /// Resetting costs what the call touched, not this size (wasmtime zeroes only the
    /// accessible part). 8 MiB holds a 10,000-member, 100,000-partition `uniform` call: at the
    /// 256 KiB this was before, that call spent about 3 ms of its 18 in page faults
    /// (`host/benches/RESULTS.md`).
    pub keep_resident_bytes: u64,
    /// Period of the epoch ticker thread that drives [`SandboxLimits::timeout`] (default
    /// 10 ms): the timeout fires within one period of its deadline.
    #[serde(with = "crate::duration")]
    pub epoch_tick: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_instances: 64,
            max_memory_bytes: 256 << 20,
            keep_resident_bytes: 8 << 20,
            epoch_tick: Duration::from_millis(10),
        }
    }
}

/// The per-store [`wasmtime::ResourceLimiter`]: enforces the memory cap, one memory and one
/// table per instance, and remembers the peak and whether it refused a growth, so a trap that
/// follows a refused growth is reported as [`super::CallError::MemoryCap`].
#[derive(Debug)]
pub(crate) struct CallLimiter {
    cap: usize,
    /// Largest memory size granted so far, in bytes.
    pub(crate) peak: usize,
    /// The size the guest asked for when a growth was refused.
    pub(crate) refused: Option<usize>,
    /// `(current, desired)` of the last growth granted, to undo it if it then fails.
    last_grant: (usize, usize),
}

/// Largest table (in elements) a module may grow to. Rust guests use one small table for
/// indirect calls; 100,000 entries is far beyond any real assignor and bounds host memory.
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl CallLimiter {
    pub(crate) fn new(cap: u64) -> CallLimiter {
        CallLimiter {
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
            peak: 0,
            refused: None,
            last_grant: (0, 0),
        }
    }
}

impl wasmtime::ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.refused = Some(desired);
            return Ok(false);
        }
        self.last_grant = (self.peak, desired);
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        // The pool (or the OS) refused a growth the cap allowed: still a memory limit.
        let (before, desired) = self.last_grant;
        self.peak = before;
        self.refused = Some(desired);
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_strings_integers_or_tables() {
        let read = |text: &str| toml::from_str::<SandboxLimits>(text).map(|l| l.timeout);
        assert_eq!(read("timeout = \"250ms\""), Ok(Duration::from_millis(250)));
        assert_eq!(read("timeout = \"2m\""), Ok(Duration::from_secs(120)));
        assert_eq!(read("timeout = 1500"), Ok(Duration::from_millis(1500)));
        assert_eq!(
            read("timeout = { secs = 2, nanos = 0 }"),
            Ok(Duration::from_secs(2))
        );
        let error = read("timeout = \"5 parsecs\"").unwrap_err().to_string();
        assert!(error.contains("unknown duration unit `parsecs`"), "{error}");
    }

    #[test]
    fn metering_reads_fuel_or_epoch_and_refuses_anything_else_naming_both() {
        #[derive(Debug, Deserialize)]
        struct Section {
            metering: Metering,
        }
        let read = |text: &str| toml::from_str::<Section>(text).map(|s| s.metering);
        assert_eq!(read("metering = \"fuel\"").unwrap(), Metering::Fuel);
        assert_eq!(read("metering = \"epoch\"").unwrap(), Metering::Epoch);
        for bad in [
            "metering = \"Epoch\"",
            "metering = \"cycles\"",
            "metering = 1",
        ] {
            let error = read(bad).unwrap_err().to_string();
            assert!(
                error.contains("`metering` must be")
                    && error.contains("\"fuel\"")
                    && error.contains("\"epoch\""),
                "{bad}: {error}"
            );
        }
        assert_eq!(Metering::default(), Metering::Fuel);
        assert_eq!(
            Metering::NAMES.map(|n| n.parse::<Metering>().unwrap().as_str()),
            Metering::NAMES
        );
    }

    #[test]
    fn limits_round_trip_through_toml() {
        let text = toml::to_string(&SandboxLimits::default()).unwrap();
        assert!(text.contains("timeout = \"5s\""), "{text}");
        assert_eq!(
            toml::from_str::<SandboxLimits>(&text).unwrap(),
            SandboxLimits::default()
        );
        let pool = toml::to_string(&PoolConfig::default()).unwrap();
        assert!(pool.contains("epoch_tick = \"10ms\""), "{pool}");
        assert_eq!(
            toml::from_str::<PoolConfig>(&pool).unwrap(),
            PoolConfig::default()
        );
    }
}
