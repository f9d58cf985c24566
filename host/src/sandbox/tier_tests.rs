//! The two tiers: Winch and Cranelift charge the same fuel and answer the same on every
//! built-in, run out of fuel at the same budget, keep the engine's policy (deadline, memory
//! cap, NaN canonicalization) on the baseline engine, and a baseline module swaps to its
//! optimised code once, whole, for calls that start after the swap.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use assignor_sdk::{AssignRequest, Member, Topic};

use crate::sandbox::{
    Call, CallError, CallTag, CompiledModule, Metering, OptimizeError, PoolConfig, Sandbox,
    SandboxLimits, Tier,
};

const TAG: CallTag<'static> = CallTag {
    module: "tier",
    version: 1,
};

/// One fuel-metered sandbox for these tests (its baseline twin is made on first use).
fn sandbox() -> Sandbox {
    Sandbox::shared_default()
}

fn builtin(name: &str) -> &'static [u8] {
    crate::builtins::builtin(name).expect("built-in").wasm
}

/// `members` consumers all subscribed to `topics` topics of `partitions` partitions each, with
/// Java-like member ids.
fn group(members: usize, topics: usize, partitions: i32) -> AssignRequest {
    let names: Vec<String> = (0..topics).map(|t| format!("topic-{t:03}")).collect();
    AssignRequest {
        abi_version: 1,
        group_id: "tier-group".into(),
        generation_id: 3,
        protocol_type: "consumer".into(),
        protocol_name: "tier".into(),
        members: (0..members)
            .map(|i| Member {
                member_id: format!("consumer-{i}-0f3c{i:04x}"),
                client_id: format!("consumer-{i}"),
                client_host: "/10.0.0.1".into(),
                topics: names.clone().into(),
                owned_generation: -1,
                ..Member::default()
            })
            .collect(),
        topics: names
            .iter()
            .map(|name| Topic {
                name: name.clone(),
                partition_count: partitions,
                partition_racks: Vec::new(),
            })
            .collect(),
        ..AssignRequest::default()
    }
}

/// Loads `wasm` on both tiers: (baseline, optimised).
fn both(sandbox: &Sandbox, wasm: &[u8]) -> (CompiledModule, CompiledModule) {
    let baseline = sandbox.load_baseline(wasm).expect("Winch loads it");
    let optimized = sandbox.load(wasm).expect("Cranelift loads it");
    assert_eq!(baseline.tier(), Tier::Baseline);
    assert_eq!(optimized.tier(), Tier::Optimized);
    (baseline, optimized)
}

#[test]
fn every_builtin_answers_the_same_with_the_same_fuel_on_both_tiers() {
    let sandbox = sandbox();
    for builtin in crate::builtins::BUILTINS {
        let (baseline, optimized) = both(&sandbox, builtin.wasm);
        let mut requests = vec![
            crate::registry::smoke_request(builtin.name),
            group(1, 1, 1),
            group(7, 3, 10),
            group(100, 10, 50),
        ];
        for request in &mut requests {
            request.protocol_name = builtin.name.to_owned();
        }
        let cooperative = baseline
            .info()
            .is_some_and(|i| i.rebalance_protocol == assignor_sdk::RebalanceProtocol::Cooperative);
        for request in &requests {
            let run = |module| {
                sandbox
                    .assign(module, TAG, request, cooperative)
                    .map_err(|failure| failure.error)
            };
            let (slow, fast) = (run(&baseline), run(&optimized));
            let (slow, fast) = match (slow, fast) {
                (Ok(slow), Ok(fast)) => (slow, fast),
                (slow, fast) => panic!(
                    "{}: {} members: baseline {:?}, optimised {:?}",
                    builtin.name,
                    request.members.len(),
                    slow.err(),
                    fast.err()
                ),
            };
            let what = format!("{} on {} members", builtin.name, request.members.len());
            assert!(slow.stats.fuel_used > 0, "{what}: fuel is metered");
            assert_eq!(slow.stats.fuel_used, fast.stats.fuel_used, "{what}: fuel");
            assert_eq!(slow.answer, fast.answer, "{what}: answer");
            assert_eq!(
                slow.stats.peak_memory_bytes, fast.stats.peak_memory_bytes,
                "{what}: memory"
            );
        }
    }
}

/// The least fuel budget under which `module` answers `request`, by bisection; every budget
/// below it runs out of fuel.
fn least_budget(sandbox: &Sandbox, module: &CompiledModule, request: &AssignRequest) -> u64 {
    let with_fuel = |fuel| {
        let limits = SandboxLimits {
            fuel,
            ..SandboxLimits::default()
        };
        let sandbox = sandbox.with_limits(limits).unwrap();
        match sandbox.assign(module, TAG, request, false) {
            Ok(_) => true,
            Err(failure) => {
                assert_eq!(failure.error, CallError::OutOfFuel { budget: fuel });
                assert_eq!(
                    failure.stats.fuel_used, fuel,
                    "an exhausted budget is all used"
                );
                false
            }
        }
    };
    let (mut low, mut high) = (0u64, SandboxLimits::default().fuel);
    assert!(with_fuel(high));
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if with_fuel(mid) {
            high = mid
        } else {
            low = mid
        }
    }
    high
}

#[test]
fn a_bulk_memory_copy_costs_the_same_on_both_tiers() {
    // Cranelift would also charge a unit per byte copied, which Winch cannot (`fuel_costs`).
    let copy = abi_module(
        r#"(func (export "assignor_assign") (param i32 i32) (result i64)
             (memory.copy (i32.const 0) (i32.const 100) (i32.const 60000))
             (memory.fill (i32.const 0) (i32.const 7) (i32.const 60000))
             (unreachable))"#,
    );
    let sandbox = sandbox();
    let (baseline, optimized) = both(&sandbox, &wat::parse_str(copy).unwrap());
    let run = |module| {
        sandbox
            .assign(module, TAG, &group(1, 1, 1), false)
            .unwrap_err()
    };
    let (slow, fast) = (run(&baseline), run(&optimized));
    assert!(
        matches!(slow.error, CallError::Trap { .. }),
        "{:?}",
        slow.error
    );
    assert_eq!(slow.stats.fuel_used, fast.stats.fuel_used);
    assert!(fast.stats.fuel_used < 60_000, "not charged per byte");
}

#[test]
fn a_module_runs_out_of_fuel_at_the_same_budget_on_both_tiers() {
    let sandbox = sandbox();
    let (baseline, optimized) = both(&sandbox, builtin("range"));
    let request = group(50, 4, 20);
    let slow = least_budget(&sandbox, &baseline, &request);
    let fast = least_budget(&sandbox, &optimized, &request);
    assert_eq!(slow, fast, "the least budget range needs");
    // Fuel is checked at function entries and loop headers only, so the least budget can be
    // below what the whole call uses; it is the same point on both tiers all the same.
    let used = sandbox.assign(&baseline, TAG, &request, false).unwrap();
    assert!(slow > 0 && slow <= used.stats.fuel_used);

    // A hostile loop: a budget runs out at the same point on both.
    let spin = wat::parse_str(abi_module(
        r#"(func (export "assignor_assign") (param i32 i32) (result i64)
             (local $i i32)
             (loop $spin
               (local.set $i (i32.add (local.get $i) (i32.const 1)))
               (br_if $spin (i32.ne (local.get $i) (i32.const 1000000))))
             (i64.const 0))"#,
    ))
    .unwrap();
    let (baseline, optimized) = both(&sandbox, &spin);
    for fuel in [10_000, 123_457, 2_000_000] {
        let limits = SandboxLimits {
            fuel,
            ..SandboxLimits::default()
        };
        let sandbox = sandbox.with_limits(limits).unwrap();
        let run = |module| sandbox.assign(module, TAG, &request, false).unwrap_err();
        let (slow, fast) = (run(&baseline), run(&optimized));
        assert_eq!(slow.error, fast.error, "budget {fuel}");
        assert_eq!(slow.stats.fuel_used, fast.stats.fuel_used, "budget {fuel}");
    }
}

/// A minimal ABI v1 module around `items`: memory, `assignor_abi_version`, an
/// `assignor_alloc` that answers 1024.
fn abi_module(items: &str) -> String {
    format!(
        r#"(module
  (memory (export "memory") 1)
  (func (export "assignor_abi_version") (result i32) (i32.const 1))
  (func (export "assignor_alloc") (param i32) (result i32) (i32.const 1024))
  {items})"#
    )
}

const ENDLESS: &str = r#"(func (export "assignor_assign") (param i32 i32) (result i64)
  (loop $spin (br $spin)) (i64.const 0))"#;

#[test]
fn the_baseline_engine_keeps_the_deadline_the_memory_cap_and_nan_canonicalization() {
    // Deadline, under epoch metering (no fuel to stop the loop first).
    let pool = PoolConfig {
        max_instances: 2,
        ..PoolConfig::default()
    };
    let limits = SandboxLimits {
        timeout: Duration::from_millis(100),
        ..SandboxLimits::default()
    };
    let epoch = Sandbox::new_metered(pool, limits, Metering::Epoch).unwrap();
    let module = epoch
        .load_baseline(&wat::parse_str(abi_module(ENDLESS)).unwrap())
        .unwrap();
    let failure = epoch
        .assign(&module, TAG, &group(1, 1, 1), false)
        .unwrap_err();
    assert_eq!(failure.error, CallError::Timeout { deadline_ms: 100 });

    // Memory cap: growing past it is refused and reported.
    let sandbox = sandbox();
    let grow = abi_module(
        r#"(func (export "assignor_assign") (param i32 i32) (result i64)
             (drop (memory.grow (i32.const 65000))) (unreachable))"#,
    );
    let (baseline, optimized) = both(&sandbox, &wat::parse_str(grow).unwrap());
    let run = |module| {
        sandbox
            .assign(module, TAG, &group(1, 1, 1), false)
            .unwrap_err()
    };
    let (slow, fast) = (run(&baseline), run(&optimized));
    assert!(
        matches!(slow.error, CallError::MemoryCap { .. }),
        "{:?}",
        slow.error
    );
    assert_eq!(slow.error, fast.error);

    // NaN canonicalization: 0/0 gives x86's negative NaN unless canonicalized.
    let nan = abi_module(
        r#"(func (export "assignor_assign") (param i32 i32) (result i64) (i64.const 0))
           (func (export "nan") (result i32)
             (i32.reinterpret_f32
               (f32.div (f32.load (i32.const 0)) (f32.load (i32.const 0)))))"#,
    );
    let (baseline, optimized) = both(&sandbox, &wat::parse_str(nan).unwrap());
    for module in [&baseline, &optimized] {
        let on = sandbox.on_tier(module.tier).unwrap();
        let mut session = on.session(module).unwrap();
        let bits = session.call_i32("nan").unwrap();
        assert_eq!(
            bits as u32, 0x7fc0_0000,
            "{:?}: the canonical NaN",
            module.tier
        );
    }
}

#[test]
fn winch_refuses_tail_calls_which_cranelift_compiles() {
    let wasm = wat::parse_str(abi_module(
        r#"(func $again (result i64) (i64.const 0))
           (func (export "assignor_assign") (param i32 i32) (result i64) (return_call $again))"#,
    ))
    .unwrap();
    let sandbox = sandbox();
    assert!(
        sandbox.load_baseline(&wasm).is_err(),
        "Winch does not implement tail calls: uploads fall back to Cranelift for such modules"
    );
    assert_eq!(sandbox.load(&wasm).unwrap().tier(), Tier::Optimized);
}

#[test]
fn a_baseline_module_serves_winch_code_until_its_optimised_code_is_installed() {
    let sandbox = sandbox();
    let wasm = builtin("range");
    let module = sandbox.load_baseline(wasm).unwrap();
    let request = group(20, 3, 12);
    assert_eq!(module.tier(), Tier::Baseline);
    assert!(
        module.optimized_module().is_none(),
        "Winch code is never cached"
    );
    let before = sandbox.assign(&module, TAG, &request, false).unwrap();
    assert_eq!(
        module.tier(),
        Tier::Baseline,
        "an answer on baseline code stands"
    );

    let installed = sandbox.optimize(&module, wasm).unwrap();
    assert_eq!(installed.tier(), Tier::Optimized);
    assert_eq!(
        module.tier(),
        Tier::Optimized,
        "calls starting now run the optimised code"
    );
    assert!(std::ptr::eq(module.serving(), installed));
    assert!(module.optimized_module().is_some());
    let after = sandbox.assign(&module, TAG, &request, false).unwrap();
    assert_eq!(before.answer, after.answer);
    assert_eq!(before.stats.fuel_used, after.stats.fuel_used);

    assert!(matches!(
        sandbox.optimize(&module, wasm),
        Err(OptimizeError::AlreadyOptimized)
    ));
    let optimized = sandbox.load(wasm).unwrap();
    assert!(matches!(
        sandbox.optimize(&optimized, wasm),
        Err(OptimizeError::AlreadyOptimized)
    ));
}

#[test]
fn optimizing_with_other_bytes_is_refused_and_the_baseline_goes_on_serving() {
    let sandbox = sandbox();
    let module = sandbox.load_baseline(builtin("range")).unwrap();
    // range speaks ABI v2; this module v1.
    let other = wat::parse_str(abi_module(ENDLESS)).unwrap();
    match sandbox.optimize(&module, &other) {
        Err(OptimizeError::Differs { what }) => assert_eq!(what, "assignor_abi_version"),
        other => panic!("expected Differs, got {:?}", other.map(|m| m.tier())),
    }
    assert!(matches!(
        sandbox.optimize(&module, b"not wasm"),
        Err(OptimizeError::Load(_))
    ));
    assert_eq!(module.tier(), Tier::Baseline);
    sandbox
        .assign(&module, TAG, &group(3, 1, 3), false)
        .expect("still serving");
}

#[test]
fn calls_under_way_when_the_optimised_code_is_installed_all_complete_alike() {
    let sandbox = sandbox();
    let wasm = builtin("range");
    let module = sandbox.load_baseline(wasm).unwrap();
    let request = group(30, 2, 15);
    let expected = sandbox.assign(&module, TAG, &request, false).unwrap();
    let installed = AtomicBool::new(false);
    std::thread::scope(|s| {
        let callers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut after_install = 0;
                    // Keep calling through the install and a few calls past it.
                    while after_install < 3 {
                        if installed.load(Ordering::Acquire) {
                            after_install += 1;
                        }
                        let outcome = sandbox.assign(&module, TAG, &request, false).unwrap();
                        assert_eq!(outcome.answer, expected.answer);
                        assert_eq!(outcome.stats.fuel_used, expected.stats.fuel_used);
                    }
                })
            })
            .collect();
        sandbox.optimize(&module, wasm).unwrap();
        installed.store(true, Ordering::Release);
        callers.into_iter().for_each(|c| c.join().unwrap());
    });
    assert_eq!(module.tier(), Tier::Optimized);
}

/// A module recursing `depth` calls deep through a function with 40 unused `i64` locals:
/// Winch gives each call a stack slot for every local, Cranelift none.
fn recursing(depth: u32) -> Vec<u8> {
    let locals = "(local i64)".repeat(40);
    wat::parse_str(abi_module(&format!(
        r#"(func $deep (param $n i32) (result i32) {locals}
             (if (result i32) (i32.eqz (local.get $n))
               (then (i32.const 0))
               (else (call $deep (i32.sub (local.get $n) (i32.const 1))))))
           (func (export "assignor_assign") (param i32 i32) (result i64)
             (drop (call $deep (i32.const {depth})))
             (unreachable))"#
    )))
    .unwrap()
}

#[test]
fn a_call_baseline_code_fails_is_decided_by_the_optimised_code() {
    // Not a fuel outcome but a tier-dependent one all the same: Winch's frames are larger
    // (here ~10x: it overflows between 1,000 and 1,500 calls deep, Cranelift between 10,000
    // and 15,000), so a module recursing near wasmtime's stack limit traps on baseline code
    // only.
    let sandbox = sandbox();
    let (baseline, optimized) = both(&sandbox, &recursing(6_000));
    let trap = |failure: crate::sandbox::CallFailure| match failure.error {
        CallError::Trap { trap, .. } => trap,
        other => panic!("{other:?}"),
    };
    let request = group(1, 1, 1);
    let on = |module: &CompiledModule| {
        let sandbox = sandbox.on_tier(module.tier).unwrap();
        trap(
            sandbox
                .call_compiled(
                    module,
                    Call {
                        tag: TAG,
                        request: &request,
                        cooperative: false,
                        lag: None,
                    },
                )
                .unwrap_err(),
        )
    };
    assert!(on(&baseline).contains("stack"), "{}", on(&baseline));
    assert!(on(&optimized).contains("unreachable"), "{}", on(&optimized));

    // Through `assign`, the baseline failure is run again on optimised code compiled there
    // and then: its outcome is the call's, and the module runs optimised code from then on.
    let outcome = sandbox.assign(&baseline, TAG, &request, false).unwrap_err();
    assert!(trap(outcome).contains("unreachable"));
    assert_eq!(baseline.tier(), Tier::Optimized);
}
