//! Runs a strategy module in the sandbox, as the host does at each rebalance: the built-in
//! `range` (compiled to wasm by the host's build and embedded), in a fresh instance with the
//! default limits (memory, fuel, time), on a group of two consumers and two topics; the answer
//! comes back checked (every partition once, only members of the group, only subscribed topics).
//!
//! `cargo run -p assignor-host --example sandbox`

#![allow(
    clippy::print_stdout,
    reason = "an example shows what it does on stdout"
)]

use assignor_host::sandbox::{CallTag, PoolConfig, Sandbox, SandboxLimits};
use assignor_sdk::{AssignRequest, Member, Topic};

fn main() -> anyhow::Result<()> {
    let sandbox = Sandbox::new(PoolConfig::default(), SandboxLimits::default())?;
    let range = assignor_host::builtins::builtin("range").expect("`range` is built in");
    // Compiles with Cranelift and checks the module against the ABI (its exports, its memory).
    let module = sandbox.load(range.wasm)?;

    let member = |id: &str| Member {
        member_id: id.to_owned(),
        client_id: "example".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        topics: vec!["orders".to_owned(), "payments".to_owned()].into(),
        owned_generation: -1,
        ..Member::default()
    };
    let topic = |name: &str, partitions| Topic {
        name: name.to_owned(),
        partition_count: partitions,
        partition_racks: Vec::new(),
    };
    // Members sorted by id and topics by name, as the coordinator builds a request.
    let request = AssignRequest {
        group_id: "example".to_owned(),
        generation_id: 1,
        protocol_type: "consumer".to_owned(),
        protocol_name: "range".to_owned(),
        members: vec![member("consumer-a"), member("consumer-b")],
        topics: vec![topic("orders", 3), topic("payments", 2)],
        ..AssignRequest::default()
    };

    let tag = CallTag {
        module: "range",
        version: 0,
    };
    let outcome = sandbox.assign(&module, tag, &request, false)?;
    for assignment in outcome.answer.to_response(&request).assignments {
        let partitions: Vec<String> = assignment
            .partitions
            .iter()
            .map(|tp| format!("{} {:?}", tp.topic, tp.partitions))
            .collect();
        println!("{}: {}", assignment.member_id, partitions.join(", "));
    }
    println!(
        "fuel {}, {} us, {} bytes in, {} bytes out",
        outcome.stats.fuel_used,
        outcome.stats.duration.as_micros(),
        outcome.stats.input_bytes,
        outcome.stats.output_bytes,
    );
    Ok(())
}
