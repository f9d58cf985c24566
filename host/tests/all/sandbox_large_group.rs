//! The largest group the default limits are sized for: 10,000 members subscribing to 100
//! topics, as the coordinator sends it (every member's raw Subscription attached), through the
//! built-in `range` module under `SandboxLimits::default()` and `PoolConfig::default()`.

use std::collections::HashMap;

use assignor_host::sandbox::{CallTag, PoolConfig, Sandbox, SandboxLimits};
use assignor_sdk::{AssignRequest, Member, Topic};
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::{Encodable, StrBytes};

const MEMBERS: usize = 10_000;
const TOPICS: usize = 100;
const PARTITIONS_PER_TOPIC: i32 = 10;

/// A version-1 ConsumerProtocolSubscription, as a Java consumer sends it in JoinGroup.
fn subscription(topics: &[String]) -> Vec<u8> {
    let subscription = ConsumerProtocolSubscription::default()
        .with_topics(topics.iter().cloned().map(StrBytes::from_string).collect());
    let mut buf = BytesMut::new();
    buf.put_i16(1);
    subscription.encode(&mut buf, 1).expect("subscription");
    buf.to_vec()
}

/// Java-like member ids whose order is their index (`range` sorts members by id).
fn member_id(i: usize) -> String {
    format!("consumer-{i:05}-6f1c2a8e-4d7b-4b1e-9a3f-2c5d8e7f{i:04x}")
}

fn large_group() -> AssignRequest {
    let names: Vec<String> = (0..TOPICS).map(|t| format!("topic-{t:04}")).collect();
    let metadata = subscription(&names);
    // One subscription list shared by every member, as the coordinator builds them.
    let shared: std::sync::Arc<[String]> = names.clone().into();
    AssignRequest {
        abi_version: 1,
        group_id: "large".into(),
        generation_id: 1,
        protocol_type: "consumer".into(),
        protocol_name: "range".into(),
        now_ms: 0,
        params: Default::default(),
        members: (0..MEMBERS)
            .map(|i| Member {
                member_id: member_id(i),
                client_id: format!("consumer-{i}"),
                client_host: "/10.0.0.1".into(),
                topics: shared.clone(),
                owned_generation: -1,
                metadata: metadata.clone(),
                ..Member::default()
            })
            .collect(),
        topics: names
            .iter()
            .map(|name| Topic {
                name: name.clone(),
                partition_count: PARTITIONS_PER_TOPIC,
                partition_racks: Vec::new(),
            })
            .collect(),
        ..AssignRequest::default()
    }
}

#[test]
fn ten_thousand_members_on_a_hundred_topics_fit_the_default_limits() {
    let limits = SandboxLimits::default();
    let sandbox = Sandbox::new(PoolConfig::default(), limits.clone()).expect("sandbox");
    let range = assignor_host::builtins::builtin("range").expect("built-in range");
    let module = sandbox.load(range.wasm).expect("range loads");
    let request = large_group();
    let tag = CallTag {
        module: "range",
        version: 0,
    };
    let outcome = sandbox
        .assign(&module, tag, &request, false)
        .unwrap_or_else(|failure| panic!("the call failed: {}", failure.error));

    // Kafka's range per topic: 10 partitions over 10,000 members sorted by id gives the first
    // ten members one partition each (member i gets partition i) and everyone else nothing.
    let total = TOPICS as u64 * PARTITIONS_PER_TOPIC as u64;
    assert_eq!(outcome.summary.assigned_partitions, total);
    assert_eq!(outcome.summary.unassigned_partitions, 0);
    let index_of: HashMap<String, usize> = (0..MEMBERS).map(|i| (member_id(i), i)).collect();
    let mut owners = vec![0usize; MEMBERS];
    for assignment in &outcome.answer.to_response(&request).assignments {
        let index = index_of[&assignment.member_id];
        let owned: usize = assignment
            .partitions
            .iter()
            .map(|t| t.partitions.len())
            .sum();
        owners[index] = owned;
        if owned > 0 {
            assert!(index < PARTITIONS_PER_TOPIC as usize, "{index} got {owned}");
            assert_eq!(assignment.partitions.len(), TOPICS, "one per topic");
            for (t, topic) in assignment.partitions.iter().enumerate() {
                assert_eq!(topic.topic, format!("topic-{t:04}"));
                assert_eq!(topic.partitions, [index as i32]);
            }
        }
    }
    assert_eq!(
        owners[..10],
        [TOPICS; 10],
        "the first ten own a partition of each topic"
    );
    assert!(owners[10..].iter().all(|&n| n == 0), "the rest own nothing");

    let stats = &outcome.stats;
    eprintln!(
        "10,000 x 100 topics: request {:.1} MB, peak memory {:.1} MiB, fuel {:.0}M",
        stats.input_bytes as f64 / 1e6,
        stats.peak_memory_bytes as f64 / (1 << 20) as f64,
        stats.fuel_used as f64 / 1e6,
    );
    assert!(stats.input_bytes <= limits.max_input_bytes);
    assert!(stats.peak_memory_bytes <= limits.memory_bytes);
    assert!(stats.fuel_used <= limits.fuel);
}
