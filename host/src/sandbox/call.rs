//! One call into a module: a fresh `Store` and instance from the module's `InstancePre`, fuel
//! (under [`Metering::Fuel`]) and epoch deadline set, input written through `assignor_alloc`, output read back through
//! the `(ptr << 32) | len` the export returns, every failure classified into a [`CallError`].
//!
//! A [`Session`] is one store + instance. It holds a pool permit for its whole life, so the
//! pooling allocator never runs out of slots: a call beyond the pool size waits instead.
//! Nothing here panics on module behaviour: pointers are bounds-checked, lengths capped, traps
//! turned into values.

use assignor_sdk::{AssignorInfo, EXPORT_ALLOC, EXPORT_ASSIGN, EXPORT_MEMORY, LogLevel};
use wasmtime::{Instance, Memory, Store, Trap, TypedFunc, WasmBacktrace, WasmParams, WasmResults};

use super::engine::Permit;
use super::error::CallError;
use super::limits::{CallLimiter, Metering, SandboxLimits};
use super::log::GuestLog;
use super::stats::CallStats;
use super::store::CallState;
use super::{CompiledModule, Sandbox};

/// One store and instance of a module, alive for one call.
pub(crate) struct Session<'a> {
    // Field order matters: the store (and its pool slot) is dropped before the permit.
    store: Store<CallState>,
    instance: Instance,
    limits: &'a SandboxLimits,
    /// The fuel the store started with; `None` under [`Metering::Epoch`].
    fuel_budget: Option<u64>,
    pub(crate) stats: CallStats,
    _permit: Permit<'a>,
}

impl Sandbox {
    /// Instantiates `module` in a fresh store with this sandbox's limits.
    pub(crate) fn session<'a>(&'a self, module: &CompiledModule) -> Result<Session<'a>, CallError> {
        let permit = self.shared.permits.acquire();
        let limits = &*self.limits;
        let mut store = Store::new(
            &self.shared.engine,
            CallState {
                limiter: CallLimiter::new(limits.memory_bytes),
                log: GuestLog::new(limits),
            },
        );
        store.limiter(|state| &mut state.limiter);
        // `set_fuel` fails on an engine without fuel, so it is only called under fuel metering.
        let fuel_budget = match self.shared.metering {
            Metering::Fuel => Some(limits.fuel),
            Metering::Epoch => None,
        };
        if let Some(fuel) = fuel_budget {
            store.set_fuel(fuel).map_err(|e| CallError::Instantiate {
                message: format!("{e:#}"),
            })?;
        }
        store.set_epoch_deadline(self.shared.deadline_ticks(limits.timeout));
        store.epoch_deadline_trap();
        match module.pre.instantiate(&mut store) {
            Ok(instance) => Ok(Session {
                store,
                instance,
                limits,
                fuel_budget,
                stats: CallStats::default(),
                _permit: permit,
            }),
            Err(err) => {
                let is_trap = err.downcast_ref::<Trap>().is_some();
                if is_trap || store.data().limiter.refused.is_some() {
                    Err(classify(err, &store, limits))
                } else {
                    Err(CallError::Instantiate {
                        message: format!("{err:#}"),
                    })
                }
            }
        }
    }
}

impl Session<'_> {
    /// The typed export `name`, or which way it is wrong.
    fn func<P: WasmParams, R: WasmResults>(
        &mut self,
        name: &'static str,
    ) -> Result<TypedFunc<P, R>, CallError> {
        self.instance
            .get_typed_func::<P, R>(&mut self.store, name)
            .map_err(|e| {
                if self.instance.get_export(&mut self.store, name).is_none() {
                    CallError::MissingExport { name }
                } else {
                    CallError::WrongSignature {
                        name,
                        message: format!("{e:#}"),
                    }
                }
            })
    }

    fn memory(&mut self) -> Result<Memory, CallError> {
        self.instance
            .get_memory(&mut self.store, EXPORT_MEMORY)
            .ok_or(CallError::MissingExport {
                name: EXPORT_MEMORY,
            })
    }

    fn fail(&self, err: wasmtime::Error) -> CallError {
        classify(err, &self.store, self.limits)
    }

    /// Calls a `() -> i32` export (`assignor_abi_version`).
    pub(crate) fn call_i32(&mut self, name: &'static str) -> Result<i32, CallError> {
        let f = self.func::<(), i32>(name)?;
        f.call(&mut self.store, ()).map_err(|e| self.fail(e))
    }

    /// Calls `assignor_describe` and decodes its [`AssignorInfo`].
    pub(crate) fn describe(&mut self) -> Result<AssignorInfo, CallError> {
        let f = self.func::<(), i64>(assignor_sdk::EXPORT_DESCRIBE)?;
        let packed = f.call(&mut self.store, ()).map_err(|e| self.fail(e))?;
        self.read(assignor_sdk::EXPORT_DESCRIBE, packed, |bytes| {
            assignor_sdk::decode::<AssignorInfo>(bytes).map_err(|e| CallError::Malformed {
                what: "AssignorInfo",
                message: e.to_string(),
            })
        })
    }

    /// Writes `input` through `assignor_alloc`, calls `assignor_assign`, and hands the output
    /// bytes (still inside guest memory, bounds-checked and capped) to `read`.
    pub(crate) fn assign<R>(
        &mut self,
        input: &[u8],
        read: impl FnOnce(&[u8]) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        self.stats.input_bytes = input.len() as u64;
        // Lengths cross the ABI as i32, so nothing over 2 GiB is ever sent whatever the cap.
        if input.len() as u64 > self.limits.max_input_bytes.min(i32::MAX as u64) {
            return Err(CallError::InputTooLarge {
                bytes: input.len() as u64,
                cap: self.limits.max_input_bytes,
            });
        }
        let len = input.len() as u32;
        let alloc = self.func::<i32, i32>(EXPORT_ALLOC)?;
        let assign = self.func::<(i32, i32), i64>(EXPORT_ASSIGN)?;
        let memory = self.memory()?;
        let ptr = alloc
            .call(&mut self.store, len as i32)
            .map_err(|e| self.fail(e))? as u32;
        let data = memory.data_mut(&mut self.store);
        let memory_bytes = data.len() as u64;
        match (ptr as usize)
            .checked_add(input.len())
            .and_then(|end| data.get_mut(ptr as usize..end))
        {
            Some(dst) => dst.copy_from_slice(input),
            None => {
                return Err(CallError::BadPointer {
                    export: EXPORT_ALLOC,
                    ptr,
                    len,
                    memory_bytes,
                });
            }
        }
        let packed = assign
            .call(&mut self.store, (ptr as i32, len as i32))
            .map_err(|e| self.fail(e))?;
        self.read(EXPORT_ASSIGN, packed, read)
    }

    /// Bounds-checks the `(ptr << 32) | len` an export returned and hands the bytes to `read`.
    fn read<R>(
        &mut self,
        export: &'static str,
        packed: i64,
        read: impl FnOnce(&[u8]) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        let (ptr, len) = ((packed as u64 >> 32) as u32, packed as u64 as u32);
        self.stats.output_bytes = u64::from(len);
        if u64::from(len) > self.limits.max_output_bytes {
            return Err(CallError::OutputTooLarge {
                bytes: u64::from(len),
                cap: self.limits.max_output_bytes,
            });
        }
        let memory = self.memory()?;
        let data = memory.data(&self.store);
        let end = ptr as usize + len as usize;
        match data.get(ptr as usize..end) {
            Some(bytes) => read(bytes),
            None => Err(CallError::BadPointer {
                export,
                ptr,
                len,
                memory_bytes: data.len() as u64,
            }),
        }
    }

    /// Ends the session: fills in fuel (0 under epoch metering) and memory use, returns the
    /// stats and the guest's log.
    pub(crate) fn finish(mut self) -> (CallStats, GuestLog) {
        self.stats.fuel_used = match self.fuel_budget {
            Some(budget) => budget.saturating_sub(self.store.get_fuel().unwrap_or(0)),
            None => 0,
        };
        let size = self
            .instance
            .get_memory(&mut self.store, EXPORT_MEMORY)
            .map_or(0, |m| m.data_size(&self.store));
        let peak = self.store.data().limiter.peak.max(size);
        self.stats.peak_memory_bytes = peak as u64;
        let log = std::mem::take(&mut self.store.data_mut().log);
        (self.stats, log)
    }
}

/// Turns a wasmtime error from a call into a [`CallError`]: fuel and epoch traps first (they
/// are what the limits produce), then a trap after a refused `memory.grow` (a guest whose
/// allocator fails usually traps with `unreachable`), then any other trap with its wasm
/// backtrace.
fn classify(err: wasmtime::Error, store: &Store<CallState>, limits: &SandboxLimits) -> CallError {
    let trap = err.downcast_ref::<Trap>().copied();
    match trap {
        Some(Trap::OutOfFuel) => {
            return CallError::OutOfFuel {
                budget: limits.fuel,
            };
        }
        Some(Trap::Interrupt) => {
            return CallError::Timeout {
                deadline_ms: limits.timeout.as_millis() as u64,
            };
        }
        _ => {}
    }
    if let Some(requested) = store.data().limiter.refused {
        return CallError::MemoryCap {
            cap_bytes: limits.memory_bytes,
            requested_bytes: requested as u64,
        };
    }
    let backtrace = err
        .downcast_ref::<WasmBacktrace>()
        .map(|b| b.to_string())
        .unwrap_or_default();
    let trap = match trap {
        Some(trap) => trap.to_string(),
        None => format!("{err:#}"),
    };
    let guest_message = store
        .data()
        .log
        .lines
        .iter()
        .rev()
        .find(|line| line.level == LogLevel::Error)
        .map(|line| line.message.clone());
    CallError::Trap {
        trap,
        backtrace,
        guest_message,
    }
}
