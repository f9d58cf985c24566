//! Derives every target's seeds from the request frames real clients sent
//! (`corpus/frame/`, written by `tests/clients/capture_seeds.py`), and the `abi_response`
//! seeds from real strategies' answers:
//!
//! - `request`: each frame as the target reads it (the API's entry in `SUPPORTED`, its
//!   version's offset in the range, then the header and body);
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
use assignor_wire::versions::SUPPORTED;
use bytes::Bytes;
use kafka_protocol::messages::RequestKind;

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
        if let Some(i) = SUPPORTED.iter().position(|(k, ..)| *k as i16 == key) {
            let offset = (version - SUPPORTED[i].1) as u8;
            let mut seed = vec![i as u8, offset];
            seed.extend_from_slice(&frame[4..]);
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
