//! `docs/abi.md` specifies ABI v2 for people who do not read Rust; this test keeps that
//! section equal to the code both sides use (`assignor_sdk::abi::v2`):
//!
//! - the worked request's `hex abi-v2-request` block is exactly what the host encodes for the
//!   example group sent to a module reading `racks`, and decodes back to it with one shared
//!   subscription;
//! - the worked response's `hex abi-v2-response` block is exactly what an SDK module running
//!   Kafka's range answers to those bytes, and the short form the text offers (trailing nils
//!   left out) reads as the same answer;
//! - each v2 message table lists the wire struct's fields, in wire order, and as many rows as
//!   the array has items.

use std::path::Path;

use assignor_sdk::abi::v2::{self, Extras, Inputs, Layout};
use assignor_sdk::{AssignError, AssignRequest, Assignment, Input, Member, Topic, glue};

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/abi.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The body of the fenced block whose info string is exactly `info`.
fn block(doc: &str, info: &str) -> String {
    let fence = format!("```{info}\n");
    let start = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/abi.md has no block ```{info}"))
        + fence.len();
    let len = doc[start..].find("```").expect("block closed");
    doc[start..start + len].to_owned()
}

/// Pairs of hex digits separated by whitespace, `#` to the end of a line being a comment.
fn hex_bytes(text: &str) -> Vec<u8> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(|pair| u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("`{pair}` is not hex")))
        .collect()
}

/// The v1 worked example's group: `m-1` and `m-2` of `demo` on `orders` (3 partitions), both
/// with the same subscription list (one `Arc`, as the coordinator builds them).
fn example_request() -> AssignRequest {
    let orders: std::sync::Arc<[String]> = vec!["orders".to_owned()].into();
    let member = |id: &str, host: &str| Member {
        member_id: id.into(),
        client_id: "app".into(),
        client_host: host.into(),
        topics: orders.clone(),
        owned_generation: -1,
        ..Member::default()
    };
    AssignRequest {
        abi_version: 2,
        group_id: "demo".into(),
        generation_id: 1,
        protocol_type: "consumer".into(),
        protocol_name: "range".into(),
        now_ms: 3000,
        members: vec![member("m-1", "/10.0.0.1"), member("m-2", "/10.0.0.2")],
        topics: vec![Topic {
            name: "orders".into(),
            partition_count: 3,
            partition_racks: vec![],
        }],
        ..AssignRequest::default()
    }
}

/// Kafka's range, written with the SDK's helpers.
fn range(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let mut assignment = Assignment::new(request);
    for topic in &request.topics {
        let subscribers = request.subscribers(&topic.name);
        let (n, m) = (topic.partition_count as usize, subscribers.len());
        let mut next = 0;
        for (i, member) in subscribers.iter().enumerate() {
            let count = n / m + usize::from(i < n % m);
            for p in next..next + count {
                assignment.assign(&member.member_id, &topic.name, p as i32);
            }
            next += count;
        }
    }
    Ok(assignment)
}

#[test]
fn the_worked_v2_request_is_what_the_host_encodes_for_a_module_reading_racks() {
    let request = example_request();
    let layout = Layout::new(&request).unwrap();
    let extras = Extras {
        inputs: Inputs::NONE.with(Input::Racks),
        lag: None,
    };
    let encoded = v2::encode_request(&request, &layout, extras).unwrap();
    let documented = hex_bytes(&block(&doc(), "hex abi-v2-request"));
    assert_eq!(
        encoded, documented,
        "the ```hex abi-v2-request block of docs/abi.md is not what the host encodes"
    );
    assert!(
        doc().contains(&format!("{} bytes where v1 needed", documented.len())),
        "the text after the block gives the request's size"
    );
}

#[test]
fn the_worked_v2_request_decodes_to_the_group_with_one_shared_subscription() {
    let bytes = hex_bytes(&block(&doc(), "hex abi-v2-request"));
    let decoded = v2::decode_request(&bytes).unwrap();
    let expected = example_request();
    let ids: Vec<&str> = decoded
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(ids, ["m-1", "m-2"]);
    assert_eq!(decoded.topics, expected.topics);
    assert_eq!((decoded.group_id.as_str(), decoded.now_ms), ("demo", 3000));
    assert!(
        std::sync::Arc::ptr_eq(&decoded.members[0].topics, &decoded.members[1].topics),
        "both members read the one subscription the request sends"
    );
    assert_eq!(&*decoded.members[0].topics, ["orders".to_owned()]);
    // `client` was not declared, so the client fields did not travel.
    assert_eq!(decoded.members[0].client_id, "");
}

/// A member's partitions in a v2 answer: (topic index, partition numbers).
type Partitions = Vec<(u32, Vec<i32>)>;

#[test]
fn the_worked_v2_response_is_what_an_sdk_module_answers_to_the_worked_request() {
    let doc = doc();
    let request = hex_bytes(&block(&doc, "hex abi-v2-request"));
    let documented = hex_bytes(&block(&doc, "hex abi-v2-response"));
    let answered = glue::run(&request, range);
    assert_eq!(
        answered, documented,
        "the ```hex abi-v2-response block of docs/abi.md is not what the SDK answers"
    );
    let response = v2::decode_response(&documented).unwrap();
    let owners: Vec<(u32, Partitions)> = response
        .assignments
        .iter()
        .map(|a| {
            let parts = a
                .partitions
                .iter()
                .map(|tp| (tp.topic, tp.partitions.clone()))
                .collect();
            (a.member, parts)
        })
        .collect();
    assert_eq!(
        owners,
        [(0, vec![(0, vec![0, 1])]), (1, vec![(0, vec![2])])]
    );
}

#[test]
fn the_short_v2_response_the_text_offers_reads_as_the_full_one() {
    let doc = doc();
    let full = v2::decode_response(&hex_bytes(&block(&doc, "hex abi-v2-response"))).unwrap();
    let marker = "A module may also answer `";
    let start = doc.find(marker).expect("the short form is in the text") + marker.len();
    let len = doc[start..].find('`').unwrap();
    let short = hex_bytes(&doc[start..start + len]);
    assert_eq!(v2::decode_response(&short).unwrap(), full);
}

/// The field names of a wire struct in wire order: its default value encoded with names. Every
/// default value is one byte (`""`, 0, nil, an empty array or map), so keys and values
/// alternate predictably.
fn wire_fields<T: serde::Serialize>(value: &T) -> Vec<String> {
    let bytes = rmp_serde::to_vec_named(value).unwrap();
    let mut reader = &bytes[..];
    let len = rmp::decode::read_map_len(&mut reader).unwrap();
    (0..len)
        .map(|_| {
            let key_len = rmp::decode::read_str_len(&mut reader).unwrap() as usize;
            let key = String::from_utf8(reader[..key_len].to_vec()).unwrap();
            reader = &reader[key_len + 1..];
            key
        })
        .collect()
}

/// The `field` column of the table after the heading ``### v2 `name` ``, in order.
fn table_fields(doc: &str, name: &str) -> Vec<String> {
    let heading = format!("### v2 `{name}`\n");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/abi.md has no heading ### v2 `{name}`"));
    doc[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            cells[2].trim_matches('`').to_owned()
        })
        .collect()
}

#[test]
fn the_v2_tables_list_every_field_in_wire_order() {
    let doc = doc();
    let cases = [
        // `state` is the one field left out when empty: set, so it is listed too.
        (
            "AssignRequest",
            wire_fields(&v2::Request {
                state: Some(Vec::new()),
                ..v2::Request::default()
            }),
        ),
        ("Topic", wire_fields(&v2::Topic::default())),
        ("Member", wire_fields(&v2::Member::default())),
        (
            "AssignResponse",
            wire_fields(&v2::Response {
                state: Some(Vec::new()),
                ..v2::Response::default()
            }),
        ),
        (
            "MemberAssignment",
            wire_fields(&v2::MemberAssignment::default()),
        ),
    ];
    for (name, fields) in cases {
        assert_eq!(table_fields(&doc, name), fields, "v2 `{name}`");
        let items = format!("An array of {} items", fields.len());
        let up_to = format!("An array of up to {} items", fields.len());
        let range = format!("An array of 2 to {} items", fields.len());
        let section = &doc[doc.find(&format!("### v2 `{name}`\n")).unwrap()..];
        let intro = section.lines().nth(2).unwrap_or("");
        assert!(
            intro.starts_with(&items) || intro.starts_with(&up_to) || intro.starts_with(&range),
            "v2 `{name}`: the text gives the array's length ({}): {intro}",
            fields.len()
        );
    }
}

/// docs/abi.md, "v2 encoding": nil is not an array. An answer whose `assignments`, or a
/// `MemberAssignment` whose `partitions`, is nil is malformed (leave the item out instead, or
/// send `[]`); a nil `error`, `rebalance_after_ms` or `state` is its "if absent" value.
#[test]
fn nil_is_no_array_in_an_answer() {
    // [nil, nil]: `assignments` nil.
    assert!(v2::decode_response(&[0x92, 0xc0, 0xc0]).is_err());
    // [nil, [[0, nil]]]: member 0's `partitions` nil.
    assert!(v2::decode_response(&[0x92, 0xc0, 0x91, 0x92, 0x00, 0xc0]).is_err());
    // [nil, [], nil, nil]: everything else nil is as absent.
    let empty = v2::decode_response(&[0x94, 0xc0, 0x90, 0xc0, 0xc0]).unwrap();
    assert_eq!(empty, v2::decode_response(&[0x90]).unwrap());
}

/// docs/abi.md, "Optional inputs", `weights`: what a whole number is, and an ignored value
/// falling through to the next rule.
#[test]
fn a_weight_is_a_whole_number_and_anything_else_falls_through() {
    let member = Member {
        member_id: "m".into(),
        group_instance_id: Some("a".into()),
        client_id: "c".into(),
        ..Member::default()
    };
    let weight = |pairs: &[(&str, &str)]| {
        let params = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        v2::member_weight(&params, &member)
    };
    assert_eq!(weight(&[]), 1);
    for three in [" 3 ", "+3", "003", "3"] {
        assert_eq!(weight(&[("weight.instance.a", three)]), 3, "{three:?}");
    }
    assert_eq!(weight(&[("weight.instance.a", "4294967295")]), u32::MAX);
    let rest = [("weight.client.c", "5"), ("weight.default", "7")];
    for ignored in ["heavy", "-1", "4294967296", "2.5", "1_000", ""] {
        let mut params = vec![("weight.instance.a", ignored)];
        params.extend(rest);
        assert_eq!(
            weight(&params),
            5,
            "{ignored:?} falls through to the client's"
        );
    }
    assert_eq!(
        weight(&[("weight.client.c", "x"), ("weight.default", "7")]),
        7
    );
    assert_eq!(weight(&[("weight.default", "x")]), 1);
}

/// docs/abi.md, v2 `AssignRequest` `subscriptions`: entries in the order of first use.
#[test]
fn subscriptions_are_listed_in_the_order_members_first_use_them() {
    let mut request = example_request();
    let topic = |name: &str| Topic {
        name: name.into(),
        partition_count: 1,
        partition_racks: Vec::new(),
    };
    request.topics = vec![topic("a"), topic("b")];
    request.members = ["m0", "m1", "m2", "m3"]
        .iter()
        .zip([&["b"][..], &["a", "b"], &["b"], &["a"]])
        .map(|(id, topics)| Member {
            member_id: id.to_string(),
            topics: topics
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .into(),
            ..Member::default()
        })
        .collect();
    let layout = Layout::new(&request).unwrap();
    assert_eq!(layout.subscriptions, [vec![1], vec![0, 1], vec![0]]);
    assert_eq!(layout.subscription_of, [0, 1, 0, 2]);
}
