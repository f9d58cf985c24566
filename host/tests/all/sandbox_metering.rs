//! CPU metering: the same modules under a fuel-metered engine (the default, from
//! `sandbox_support`) and an epoch-metered one. Under `Metering::Epoch` fuel is neither set
//! nor counted, so a runaway module is stopped by the wall-clock deadline and reported as a
//! timeout, and every call reports `fuel_used = 0`. The deadline here is short only so the
//! test ends quickly; nothing asserts how long a call took.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;
use std::time::Duration;

use assignor_host::sandbox::{CallError, CallTag, Metering, PoolConfig, Sandbox, SandboxLimits};

use crate::sandbox_support::*;

const TAG: CallTag<'static> = CallTag {
    module: "metering",
    version: 1,
};

const ENDLESS_LOOP: &str = "(loop $spin (br $spin)) (i64.const 0)";

/// The test binary's epoch-metered engine (a second engine next to `sandbox()`'s fuel one).
fn epoch_sandbox() -> Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX
        .get_or_init(|| {
            let pool = PoolConfig {
                max_instances: 4,
                ..PoolConfig::default()
            };
            Sandbox::new_metered(pool, SandboxLimits::default(), Metering::Epoch)
                .expect("epoch sandbox")
        })
        .clone()
}

/// Limits whose fuel budget would stop the endless loop almost at once, with a short deadline.
fn tiny_fuel_short_deadline() -> SandboxLimits {
    SandboxLimits {
        fuel: 100_000,
        timeout: Duration::from_millis(200),
        ..SandboxLimits::default()
    }
}

#[test]
fn each_engine_reports_its_metering() {
    assert_eq!(
        sandbox().metering(),
        Metering::Fuel,
        "Sandbox::new meters fuel"
    );
    assert_eq!(epoch_sandbox().metering(), Metering::Epoch);
    let handle = epoch_sandbox()
        .with_limits(tiny_fuel_short_deadline())
        .unwrap();
    assert_eq!(
        handle.metering(),
        Metering::Epoch,
        "with_limits keeps the engine's metering"
    );
}

#[test]
fn under_epoch_metering_an_endless_loop_is_stopped_by_the_deadline_not_fuel() {
    let sandbox = epoch_sandbox()
        .with_limits(tiny_fuel_short_deadline())
        .unwrap();
    let module = sandbox.load(&wasm(&assigning(ENDLESS_LOOP))).unwrap();
    let failure = sandbox.assign(&module, TAG, &request(), false).unwrap_err();
    assert_eq!(
        failure.error,
        CallError::Timeout { deadline_ms: 200 },
        "the 100,000-unit fuel budget is ignored; the deadline stops the loop"
    );
    assert_eq!(failure.error.reason(), "timeout");
    assert_eq!(failure.stats.fuel_used, 0, "nothing is counted");

    // The sandbox is usable again right away and answers exactly.
    let good = sandbox
        .load(&wasm(&returning_response(&valid_response())))
        .unwrap();
    let outcome = sandbox.assign(&good, TAG, &request(), false).unwrap();
    assert_eq!(outcome.answer.to_response(&request()), valid_response());
}

#[test]
fn under_fuel_metering_the_same_loop_and_limits_run_out_of_fuel() {
    let sandbox = sandbox().with_limits(tiny_fuel_short_deadline()).unwrap();
    let module = sandbox.load(&wasm(&assigning(ENDLESS_LOOP))).unwrap();
    let failure = sandbox.assign(&module, TAG, &request(), false).unwrap_err();
    assert_eq!(failure.error, CallError::OutOfFuel { budget: 100_000 });
    assert_eq!(failure.stats.fuel_used, 100_000);
}

#[test]
fn a_normal_call_reports_no_fuel_under_epoch_and_some_under_fuel() {
    let wat = returning_response(&valid_response());
    let run = |sandbox: &Sandbox| {
        let module = sandbox.load(&wasm(&wat)).unwrap();
        sandbox.assign(&module, TAG, &request(), false).unwrap()
    };
    let (fuel, epoch) = (run(&sandbox()), run(&epoch_sandbox()));
    assert_eq!(fuel.answer.to_response(&request()), valid_response());
    assert_eq!(
        epoch.answer.to_response(&request()),
        valid_response(),
        "same answer either way"
    );
    assert!(fuel.stats.fuel_used > 0, "{:?}", fuel.stats);
    assert_eq!(epoch.stats.fuel_used, 0, "{:?}", epoch.stats);
    // Everything but fuel and time is measured alike.
    assert_eq!(epoch.stats.input_bytes, fuel.stats.input_bytes);
    assert_eq!(epoch.stats.output_bytes, fuel.stats.output_bytes);
    assert_eq!(epoch.stats.peak_memory_bytes, fuel.stats.peak_memory_bytes);
}

/// The precompiled cache keys artifacts by `precompile_compatibility_hash`; the two meterings
/// must hash apart, and wasmtime must refuse one engine's code in the other, so switching the
/// setting can never run code compiled for the other metering.
#[test]
fn the_two_meterings_never_share_compiled_code() {
    let hash = |sandbox: &Sandbox| {
        let mut hasher = DefaultHasher::new();
        sandbox
            .engine()
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        hasher.finish()
    };
    assert_ne!(hash(&sandbox()), hash(&epoch_sandbox()));

    let wat = returning_response(&valid_response());
    let bytes = sandbox().compile(&wasm(&wat)).unwrap().serialize().unwrap();
    // SAFETY: `bytes` is wasmtime's own `serialize` output from this process.
    let loaded = unsafe { wasmtime::Module::deserialize(epoch_sandbox().engine(), &bytes) };
    let error = format!("{:#}", loaded.expect_err("fuel-metered code is refused"));
    assert!(error.contains("fuel"), "{error}");
}
