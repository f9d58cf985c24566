//! Derives every target's seeds from the request frames real clients sent
//! (`corpus/frame/`, written by `tests/clients/capture_seeds.py`), and the `abi_response`
//! seeds from real strategies' answers:
//!
//! - `request`: each frame as the target reads it (the API's entry in `versions::decoded()`,
//!   its version's offset in the range, then the header and body), and TxnOffsetCommit at v2-5
//!   encoded here in the shape a Kafka 4.4 producer's `sendOffsetsToTransaction` sends (proxy
//!   mode only: the capture runs a standalone host, which no client sends it to);
//! - `consumer_protocol`: the Subscription of every protocol of every JoinGroup, the
//!   Assignment of every SyncGroup a client leader sent, and the Assignment the host would
//!   write back for each Subscription (what clients decode);
//! - `abi_response`: the answers of `range`, `roundrobin`, `uniform` and `cooperative-sticky`
//!   (the built-ins' own code, through the SDK's glue, as their modules answer) to the target's
//!   group in ABI v1 and v2, eager and cooperative, and three answers the checks refuse;
//! - `scenario`: the example of docs/operating.md ("Scenario files"), in JSON and in TOML.
//!
//! Usage: `cargo run --example seeds -- CORPUS_DIR` (in `fuzz/`). Files are named by their
//! content's hash, so running it again writes only what is new.

use std::path::{Path, PathBuf};

use assignor_fuzz::group;
use assignor_sdk::abi::v2::{self, Extras, Layout};
use assignor_sdk::{
    AssignError, AssignRequest, AssignResponse, Assignment, MemberAssignment, TopicPartitions,
};
use assignor_wire::consumer_protocol::{decode_subscription, encode_assignment};
use assignor_wire::request::{self, Inbound};
use assignor_wire::scenario::Scenario;
use assignor_wire::versions;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, TxnOffsetCommitRequest};
use kafka_protocol::protocol::{Encodable, StrBytes};

type Strategy = fn(&AssignRequest) -> Result<Assignment, AssignError>;

fn write(dir: &Path, bytes: &[u8]) -> bool {
    // FNV-1a: a name that stays the same on every toolchain.
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let path = dir.join(format!("{hash:016x}"));
    if path.exists() {
        return false;
    }
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    true
}

fn tagged(tag: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(bytes);
    out
}

/// The `request` target's input for a frame of `key` at `version` whose header and body are
/// `rest`: the API's index in `versions::decoded()` and the version's offset in its range.
fn request_seed(key: i16, version: i16, rest: &[u8]) -> Option<Vec<u8>> {
    let (i, (_, min, _)) = versions::decoded()
        .enumerate()
        .find(|(_, (k, ..))| *k as i16 == key)?;
    let mut seed = vec![i as u8, (version - min) as u8];
    seed.extend_from_slice(rest);
    Some(seed)
}

/// TxnOffsetCommit's header (after key and version) and body at `version`, as a consume-
/// transform-produce application's producer sends it: two partitions of one topic, the
/// consumer's member id and generation (v3+), leader epochs (v2+).
fn txn_offset_commit(version: i16) -> Vec<u8> {
    let partition = |index: i32, offset: i64| {
        TxnOffsetCommitRequestPartition::default()
            .with_partition_index(index)
            .with_committed_offset(offset)
            .with_committed_leader_epoch(0)
            .with_committed_metadata(Some(StrBytes::from_static_str("")))
    };
    let mut request = TxnOffsetCommitRequest::default()
        .with_transactional_id(StrBytes::from_static_str("counts-3f1c-0").into())
        .with_group_id(StrBytes::from_static_str("counts").into())
        .with_producer_id(1000.into())
        .with_producer_epoch(0)
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default()
                .with_name(StrBytes::from_static_str("words").into())
                .with_partitions(vec![partition(0, 120), partition(3, 7)]),
        ]);
    if version >= 3 {
        request.generation_id = 4;
        request.member_id = StrBytes::from_static_str("counts-3f1c-StreamThread-1-consumer-9d2e");
    }
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::TxnOffsetCommit as i16)
        .with_request_api_version(version)
        .with_correlation_id(11)
        .with_client_id(Some(StrBytes::from_static_str("counts-producer")))
        .encode(
            &mut buf,
            ApiKey::TxnOffsetCommit.request_header_version(version),
        )
        .expect("the header encodes");
    request.encode(&mut buf, version).expect("the body encodes");
    buf[4..].to_vec()
}

fn main() {
    let corpus = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    let dirs = ["request", "consumer_protocol", "abi_response", "scenario"].map(|t| {
        let dir = corpus.join(t);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        dir
    });
    let [requests, consumer, abi, scenarios] = &dirs;
    let mut new = [0usize; 4];
    let mut frames = 0;
    for entry in std::fs::read_dir(corpus.join("frame")).expect("corpus/frame (capture first)") {
        let raw = std::fs::read(entry.expect("a corpus entry").path()).expect("a frame");
        let Some(frame) = raw.get(4..).filter(|f| f.len() >= 4) else {
            continue;
        };
        frames += 1;
        let key = i16::from_be_bytes([frame[0], frame[1]]);
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        if let Some(seed) = request_seed(key, version, &frame[4..]) {
            new[0] += write(requests, &seed) as usize;
        }
        let Ok(Inbound::Request(parsed)) = request::parse(Bytes::copy_from_slice(frame)) else {
            continue;
        };
        match parsed.body {
            RequestKind::JoinGroup(join) => {
                for protocol in &join.protocols {
                    new[1] += write(consumer, &tagged(0, &protocol.metadata)) as usize;
                    if let Ok(subscription) = decode_subscription(&protocol.metadata) {
                        let partitions: Vec<TopicPartitions> = subscription
                            .topics
                            .iter()
                            .map(|t| TopicPartitions {
                                topic: t.clone(),
                                partitions: vec![0, 1],
                            })
                            .collect();
                        let user_data = subscription.user_data.as_deref();
                        let assignment =
                            encode_assignment(subscription.version, &partitions, user_data);
                        new[1] += write(consumer, &tagged(1, &assignment)) as usize;
                    }
                }
            }
            RequestKind::SyncGroup(sync) => {
                for a in &sync.assignments {
                    new[1] += write(consumer, &tagged(1, &a.assignment)) as usize;
                }
            }
            _ => {}
        }
    }
    for version in 2..=5 {
        let frame = txn_offset_commit(version);
        let seed = request_seed(ApiKey::TxnOffsetCommit as i16, version, &frame)
            .expect("TxnOffsetCommit is decoded");
        new[0] += write(requests, &seed) as usize;
    }
    let strategies: [Strategy; 4] = [
        assignor_range::assign,
        assignor_roundrobin::assign,
        assignor_uniform::assign,
        assignor_cooperative_sticky::assign,
    ];
    for cooperative in [false, true] {
        let request = group(cooperative);
        let mode = cooperative as u8;
        for assign in strategies {
            let v1 = assign(&request).expect("a strategy assigns the fixed group");
            let v1 = assignor_sdk::encode(&v1.into_response()).expect("a v1 answer encodes");
            new[2] += write(abi, &tagged(mode, &v1)) as usize;
            let layout = Layout::new(&request).expect("the fixed group lays out");
            let input = v2::encode_request(&request, &layout, Extras::default())
                .expect("the fixed group encodes");
            let v2 = assignor_sdk::glue::run(&input, assign);
            new[2] += write(abi, &tagged(mode | 2, &v2)) as usize;
        }
        // Refused: a member not in the group (v1), the same partition twice (v1), a member
        // index past the request's members (v2).
        let stranger = AssignResponse {
            assignments: vec![MemberAssignment {
                member_id: "m-9".into(),
                partitions: vec![TopicPartitions {
                    topic: "a".into(),
                    partitions: vec![0],
                }],
                ..MemberAssignment::default()
            }],
            ..AssignResponse::default()
        };
        let twice = AssignResponse {
            assignments: ["m-1", "m-2"]
                .map(|m| MemberAssignment {
                    member_id: m.into(),
                    partitions: vec![TopicPartitions {
                        topic: "a".into(),
                        partitions: vec![3],
                    }],
                    ..MemberAssignment::default()
                })
                .to_vec(),
            ..AssignResponse::default()
        };
        for refused in [stranger, twice] {
            let bytes = assignor_sdk::encode(&refused).expect("encodes");
            new[2] += write(abi, &tagged(mode, &bytes)) as usize;
        }
        let out_of_range = v2::Response {
            assignments: vec![v2::MemberAssignment {
                member: 7,
                partitions: vec![v2::TopicPartitions {
                    topic: 0,
                    partitions: vec![0],
                }],
                ..v2::MemberAssignment::default()
            }],
            ..v2::Response::default()
        };
        let bytes = v2::encode(&out_of_range).expect("encodes");
        new[2] += write(abi, &tagged(mode | 2, &bytes)) as usize;
    }
    let docs = include_str!("../../docs/operating.md");
    let example = docs
        .split("## Scenario files")
        .nth(1)
        .and_then(|section| section.split("```json\n").nth(1))
        .and_then(|block| block.split("```").next())
        .expect("docs/operating.md has the scenario example");
    let scenario = Scenario::from_text(example, false, "docs/operating.md")
        .expect("the documented scenario loads");
    let toml = toml::to_string(&scenario).expect("a scenario writes as TOML");
    new[3] += write(scenarios, &tagged(0, example.as_bytes())) as usize;
    new[3] += write(scenarios, &tagged(1, toml.as_bytes())) as usize;
    println!(
        "{frames} frames read; new seeds: request {}, consumer_protocol {}, abi_response {}, \
         scenario {}",
        new[0], new[1], new[2], new[3]
    );
}
