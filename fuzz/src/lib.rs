//! What the fuzz targets and the seed generator share: the group an `abi_response` answer is
//! read against.

use assignor_sdk::{AssignRequest, Member, Topic, TopicPartitions};

/// Partitions of the group's topics: a (4) and b (2).
pub const PARTITIONS: u64 = 6;

/// The group of the `abi_response` target: three members, `m-1` subscribing to both topics,
/// `m-2` to `a`, `m-3` to `b`; when `cooperative`, `m-1` owns a-0 and `m-2` owns a-1 and a-2
/// (generation 1), so an answer moving them to another member breaks the cooperative rule.
pub fn group(cooperative: bool) -> AssignRequest {
    let member = |id: &str, topics: &[&str], owned: Vec<TopicPartitions>| Member {
        member_id: id.into(),
        client_id: "fuzz".into(),
        client_host: "/127.0.0.1".into(),
        topics: topics
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .into(),
        owned_partitions: owned,
        owned_generation: if cooperative { 1 } else { -1 },
        ..Member::default()
    };
    let owned = |topic: &str, partitions: &[i32]| {
        if cooperative {
            vec![TopicPartitions {
                topic: topic.into(),
                partitions: partitions.to_vec(),
            }]
        } else {
            Vec::new()
        }
    };
    AssignRequest {
        abi_version: 2,
        group_id: "g".into(),
        generation_id: 2,
        protocol_type: "consumer".into(),
        protocol_name: "fuzz".into(),
        members: vec![
            member("m-1", &["a", "b"], owned("a", &[0])),
            member("m-2", &["a"], owned("a", &[1, 2])),
            member("m-3", &["b"], Vec::new()),
        ],
        topics: vec![
            Topic {
                name: "a".into(),
                partition_count: 4,
                ..Topic::default()
            },
            Topic {
                name: "b".into(),
                partition_count: 2,
                ..Topic::default()
            },
        ],
        ..AssignRequest::default()
    }
}
