//! A module written against ABI v1 without the SDK (`tests/fixtures/plain-abi`) runs in the
//! registry, and calls running while versions are uploaded and rolled back each use exactly
//! one whole version: every member's `user_data` carries the marker of the build that
//! answered, and the marker must be that of the version the report names.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use assignor_host::registry::{Registry, RegistryConfig, UploadOptions};
use assignor_sdk::{AssignResponse, AssignorInfo, MemberAssignment, RebalanceProtocol};

use crate::sandbox_support::*;

fn registry() -> Registry {
    let config = RegistryConfig {
        builtins: vec![],
        ..RegistryConfig::default()
    };
    Registry::open(sandbox(), None, config).expect("registry")
}

fn marked_entry(
    member: &str,
    partitions: Vec<assignor_sdk::TopicPartitions>,
    n: u32,
) -> MemberAssignment {
    MemberAssignment {
        member_id: member.to_owned(),
        partitions,
        user_data: Some(plain_abi_marker(n)),
        metadata: None,
    }
}

#[test]
fn a_module_written_without_the_sdk_runs() {
    let registry = registry();
    let outcome = registry
        .upload("plain", plain_abi_wasm(), UploadOptions::default())
        .expect("the plain-abi module passes every upload check");
    assert_eq!(
        outcome.info,
        AssignorInfo {
            name: "plain".into(),
            version: String::new(),
            description: String::new(),
            rebalance_protocol: RebalanceProtocol::Eager,
            inputs: Vec::new(),
            in_place: false,
        }
    );
    let report = registry.run("plain", None, &request(), false).unwrap();
    // Each topic goes wholly to its first subscriber by member id: `a` and `b` to m1.
    let expected = AssignResponse {
        error: None,
        assignments: vec![
            marked_entry("m1", vec![tp("a", &[0, 1, 2]), tp("b", &[0, 1])], 0),
            marked_entry("m2", vec![], 0),
            marked_entry("m3", vec![], 0),
        ],
        rebalance_after_ms: None,
        state: None,
    };
    assert_eq!(report.answer.to_response(&request()), expected);
    assert_eq!(report.unassigned_partitions, 0);
    assert_eq!(report.version, 1);
}

/// Callers run the module in a loop while one thread uploads new builds (build `n` is
/// uploaded as version `n`), activates old ones and rolls back. After every change the
/// switcher waits until each caller has started and finished a call after it, so each
/// change is observed by every caller; no sleeps and no timing assumptions.
#[test]
fn every_call_uses_exactly_one_whole_version_while_versions_change() {
    const CALLERS: usize = 3;
    const BUILDS: u32 = 5;
    let registry = registry();
    let req = request();
    assert_eq!(
        registry
            .upload("plain", &plain_abi_marked(1), UploadOptions::default())
            .unwrap()
            .version,
        1
    );
    let done = AtomicBool::new(false);
    let calls: Vec<AtomicU64> = (0..CALLERS).map(|_| AtomicU64::new(0)).collect();

    let seen: Vec<Vec<u32>> = std::thread::scope(|s| {
        let callers: Vec<_> = (0..CALLERS)
            .map(|i| {
                let (registry, req, done, calls) = (&registry, &req, &done, &calls);
                s.spawn(move || {
                    let mut seen = Vec::new();
                    while !done.load(Ordering::SeqCst) {
                        let report = registry.run("plain", None, req, false).expect("run");
                        let marker = plain_abi_marker(report.version);
                        assert_eq!(report.answer.to_response(req).assignments.len(), 3);
                        for assignment in &report.answer.to_response(req).assignments {
                            assert_eq!(
                                assignment.user_data.as_ref(),
                                Some(&marker),
                                "member {} answered by another build than version {}",
                                assignment.member_id,
                                report.version
                            );
                        }
                        if seen.last() != Some(&report.version) {
                            seen.push(report.version);
                        }
                        calls[i].fetch_add(1, Ordering::SeqCst);
                    }
                    seen
                })
            })
            .collect();

        let observed_by_all = || {
            let start: Vec<u64> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
            // Two more completed calls: the second started after the change.
            while calls
                .iter()
                .zip(&start)
                .any(|(c, s)| c.load(Ordering::SeqCst) < s + 2)
            {
                std::thread::yield_now();
            }
        };
        observed_by_all();
        for n in 2..=BUILDS {
            let outcome = registry
                .upload("plain", &plain_abi_marked(n), UploadOptions::default())
                .unwrap();
            assert_eq!((outcome.version, outcome.created), (n, true));
            observed_by_all();
            assert_eq!(registry.rollback("plain").unwrap(), n - 1);
            observed_by_all();
            registry.activate("plain", n).unwrap();
            observed_by_all();
        }
        done.store(true, Ordering::SeqCst);
        callers.into_iter().map(|h| h.join().unwrap()).collect()
    });

    for versions in seen {
        // Every caller saw every activation, in order: 1, then for each build n: n, n-1, n.
        let mut expected = vec![1];
        for n in 2..=BUILDS {
            expected.extend([n, n - 1, n]);
        }
        assert_eq!(versions, expected);
    }
}
