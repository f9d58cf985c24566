//! `docs/abi.md` specifies ABI v1 for people who do not read Rust; this test keeps it equal to
//! the SDK's serde types, which the host and every SDK module encode and decode with.
//!
//! - The worked example: each `hex abi-v1-*` block is exactly what [`encode`] writes for the
//!   example message and decodes back to it, each `text abi-v1-*` block shows the same values,
//!   and the response is what an SDK module answers to the request ([`glue::run`]).
//! - Every message table lists the fields the type writes, in wire order, with each value's
//!   MessagePack family and integer range, and what a reader does when the field is absent or
//!   nil; each of those claims is tried on the decoder.
//! - The plain-ABI fixture (`tests/fixtures/plain-abi`, a module written from the ABI alone)
//!   uses only documented exports, imports and field names, so a typo there, which serde would
//!   silently ignore, fails here.
//!
//! When the example changes, the failure message prints the annotated listing to paste.

use std::path::Path;

use assignor_sdk::{
    ABI_V1, AssignError, AssignRequest, AssignResponse, Assignment, AssignorInfo, Input, Member,
    MemberAssignment, RebalanceProtocol, Topic, TopicPartitions, decode, encode, glue,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use msgpack::Value;

fn repo_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("reading {}: {e}", full.display()))
}

fn doc() -> String {
    repo_file("docs/abi.md")
}

// ---------------------------------------------------------------------------------------------
// The worked example.

/// A consumer's Subscription v1 for `["orders"]`, no user data, nothing owned: what a Java
/// client sends as its protocol metadata and the host passes on as `metadata`.
const SUBSCRIPTION_V1_ORDERS: [u8; 22] = [
    0x00, 0x01, // version 1
    0x00, 0x00, 0x00, 0x01, // topics: 1
    0x00, 0x06, b'o', b'r', b'd', b'e', b'r', b's', // "orders"
    0xff, 0xff, 0xff, 0xff, // user_data: null
    0x00, 0x00, 0x00, 0x00, // owned_partitions: 0
];

fn example_request() -> AssignRequest {
    let member = |id: &str, host: &str| Member {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "app".into(),
        client_host: host.into(),
        rack_id: None,
        topics: vec!["orders".into()].into(),
        owned_partitions: vec![],
        owned_generation: -1,
        previous_assignment: vec![],
        user_data: None,
        metadata: SUBSCRIPTION_V1_ORDERS.to_vec(),
        weight: None,
    };
    AssignRequest {
        abi_version: ABI_V1,
        group_id: "demo".into(),
        generation_id: 1,
        protocol_type: "consumer".into(),
        protocol_name: "range".into(),
        now_ms: 3000,
        params: Default::default(),
        members: vec![member("m-1", "/10.0.0.1"), member("m-2", "/10.0.0.2")],
        topics: vec![Topic {
            name: "orders".into(),
            partition_count: 3,
            partition_racks: vec![],
        }],
        ..AssignRequest::default()
    }
}

fn example_response() -> AssignResponse {
    let share = |id: &str, partitions: Vec<i32>| MemberAssignment {
        member_id: id.into(),
        partitions: vec![TopicPartitions {
            topic: "orders".into(),
            partitions,
        }],
        user_data: None,
        metadata: None,
    };
    AssignResponse {
        error: None,
        assignments: vec![share("m-1", vec![0, 1]), share("m-2", vec![2])],
        rebalance_after_ms: None,
        state: None,
    }
}

/// Kafka's range: each topic's partitions split into contiguous ranges over its subscribers
/// in Kafka's member order, the first `partitions % subscribers` getting one more.
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

/// The body of the fenced block whose info string is exactly `info`.
fn block<'a>(doc: &'a str, info: &str) -> &'a str {
    let fence = format!("```{info}\n");
    let start = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/abi.md has no block ```{info}"))
        + fence.len();
    let len = doc[start..]
        .find("```")
        .unwrap_or_else(|| panic!("the block ```{info} in docs/abi.md is not closed"));
    &doc[start..start + len]
}

/// The bytes of a hex block: pairs of hex digits separated by whitespace, `#` to the end of a
/// line being a comment.
fn hex_bytes(block: &str) -> Vec<u8> {
    block
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(|pair| {
            assert_eq!(pair.len(), 2, "`{pair}` is not one byte in hex");
            u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("`{pair}` is not hex"))
        })
        .collect()
}

/// Checks one message of the worked example against its `hex` and `text` blocks.
fn check_example<T>(name: &str, typed: &T, label: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let doc = doc();
    let documented = hex_bytes(block(&doc, &format!("hex abi-v1-{name}")));
    let encoded = encode(typed).unwrap();
    let value: Value = decode(&encoded).unwrap();
    assert!(
        documented == encoded,
        "the ```hex abi-v1-{name} block of docs/abi.md is not what the SDK encodes; the \
         encoding is:\n{}",
        msgpack::annotate(&value, label)
    );
    // The listing a reader sees is the encoding, item by item, and the text gives its size.
    assert_eq!(hex_bytes(&msgpack::annotate(&value, label)), encoded);
    let size = format!("{} bytes", encoded.len());
    assert!(
        doc.contains(&size),
        "docs/abi.md should say the {name} is {size}"
    );
    assert_eq!(&decode::<T>(&documented).unwrap(), typed);
    let text = block(&doc, &format!("text abi-v1-{name}"));
    assert_eq!(
        msgpack::squeeze(text),
        msgpack::squeeze(&msgpack::render(&value, 0)),
        "the ```text abi-v1-{name} block of docs/abi.md does not show the encoded values; \
         they are:\n{}",
        msgpack::render(&value, 0)
    );
}

#[test]
fn the_worked_request_is_what_the_host_encodes() {
    check_example("request", &example_request(), "AssignRequest");
}

#[test]
fn the_worked_response_is_what_the_sdk_encodes() {
    check_example("response", &example_response(), "AssignResponse");
}

#[test]
fn the_worked_response_is_what_an_sdk_module_answers_to_the_worked_request() {
    let doc = doc();
    let request = hex_bytes(block(&doc, "hex abi-v1-request"));
    let response = hex_bytes(block(&doc, "hex abi-v1-response"));
    assert_eq!(glue::run_v1(&request, range), response);
}

// ---------------------------------------------------------------------------------------------
// The message tables.

/// One row of a message table: `| field | MessagePack type | if absent | nil | meaning |`.
#[derive(Debug)]
struct Row {
    field: String,
    ty: String,
    absent: String,
    nil: bool,
}

/// The rows of the first table after the heading ``### `name` ``.
fn table(doc: &str, name: &str) -> Vec<Row> {
    let heading = format!("### `{name}`\n");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/abi.md has no heading ### `{name}`"));
    let rows: Vec<Row> = doc[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // header and separator
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let unquote = |cell: &str| cell.trim_matches('`').to_owned();
            assert!(cells.len() >= 6, "{name}: a row needs 5 columns: {line}");
            Row {
                field: unquote(cells[1]),
                ty: cells[2].to_owned(),
                absent: unquote(cells[3]),
                nil: match cells[4] {
                    "yes" => true,
                    "no" => false,
                    other => panic!("{name}.{}: nil must be yes or no, not {other}", cells[1]),
                },
            }
        })
        .collect();
    assert!(!rows.is_empty(), "{name}: no table rows");
    rows
}

/// `bytes` decoded as `T` and encoded again, as a value: what a reader of `T` makes of them.
fn read_as<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Result<Value, String> {
    let typed: T = decode(bytes).map_err(|e| e.to_string())?;
    Ok(decode(&encode(&typed).unwrap()).unwrap())
}

/// Checks the table of `name` against `example`, a value of the message with every optional
/// field set, read back through `read` (the SDK's decoder for the type).
fn check_table(doc: &str, name: &str, example: Value, read: fn(&[u8]) -> Result<Value, String>) {
    let rows = table(doc, name);
    let Value::Map(entries) = &example else {
        panic!("{name}: the example is not a map");
    };
    let written: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    let documented: Vec<&str> = rows.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(
        documented, written,
        "{name}: the table's fields, in wire order"
    );
    let with = |field: &str, value: Option<Value>| {
        let mut entries = entries.clone();
        let at = entries.iter().position(|(k, _)| k == field).unwrap();
        match value {
            Some(v) => entries[at].1 = v,
            None => {
                entries.remove(at);
            }
        }
        encode(&Value::Map(entries)).unwrap()
    };
    let field_of = |value: &Value, field: &str| match value {
        Value::Map(entries) => entries.iter().find(|(k, _)| k == field).unwrap().1.clone(),
        other => panic!("{name}: read back as {other:?}"),
    };
    for (row, (_, value)) in rows.iter().zip(entries) {
        let what = format!("{name}.{}", row.field);
        assert!(
            msgpack::is_of_type(value, &row.ty),
            "{what}: documented as {}, written as {value:?}",
            row.ty
        );
        let absent = read(&with(&row.field, None));
        if row.absent == "required" {
            assert!(
                absent.is_err(),
                "{what} is documented as required: {absent:?}"
            );
        } else {
            let default = msgpack::literal(&row.absent)
                .unwrap_or_else(|| panic!("{what}: `{}` is not a default I can read", row.absent));
            assert_eq!(
                absent.map(|v| field_of(&v, &row.field)),
                Ok(default),
                "{what}: read when absent"
            );
        }
        let nil = read(&with(&row.field, Some(Value::Nil)));
        if row.nil {
            assert_eq!(
                nil.map(|v| field_of(&v, &row.field)),
                Ok(Value::Nil),
                "{what}: nil"
            );
        } else {
            assert!(nil.is_err(), "{what} is documented as not nil: {nil:?}");
        }
        if let Some((low, high)) = msgpack::int_range(&row.ty) {
            let array = row.ty.starts_with("array of");
            let int = |n: i128| {
                let v = Value::Int(n);
                if array { Value::Array(vec![v]) } else { v }
            };
            for n in [low, high] {
                assert!(read(&with(&row.field, Some(int(n)))).is_ok(), "{what}: {n}");
            }
            for n in [low - 1, high + 1] {
                if msgpack::encodable(n) {
                    assert!(
                        read(&with(&row.field, Some(int(n)))).is_err(),
                        "{what}: {n}"
                    );
                }
            }
        }
    }
}

/// `typed` as a value.
fn value_of<T: Serialize>(typed: &T) -> Value {
    decode(&encode(typed).unwrap()).unwrap()
}

#[test]
fn the_message_tables_say_what_the_types_write_and_read() {
    let doc = doc();
    let tp = |topic: &str, partitions: Vec<i32>| TopicPartitions {
        topic: topic.into(),
        partitions,
    };
    let member = Member {
        member_id: "m-1".into(),
        group_instance_id: Some("i-1".into()),
        client_id: "app".into(),
        client_host: "/10.0.0.1".into(),
        rack_id: Some("r1".into()),
        topics: vec!["orders".into()].into(),
        owned_partitions: vec![tp("orders", vec![0])],
        owned_generation: 4,
        previous_assignment: vec![tp("orders", vec![0, 1])],
        user_data: Some(vec![1]),
        metadata: vec![0, 1],
        weight: None,
    };
    let topic = Topic {
        name: "orders".into(),
        partition_count: 3,
        partition_racks: vec![vec!["r1".into()], vec!["r2".into()], vec![]],
    };
    let mut request = example_request();
    request.params.insert("weight".into(), "2".into());
    request.members = vec![member.clone()];
    request.topics = vec![topic.clone()];
    let assignment = MemberAssignment {
        member_id: "m-1".into(),
        partitions: vec![tp("orders", vec![0, 1])],
        user_data: Some(vec![1]),
        metadata: Some(vec![2]),
    };
    let response = AssignResponse {
        error: Some("no members".into()),
        assignments: vec![assignment.clone()],
        rebalance_after_ms: Some(30_000),
        state: None,
    };
    let info = AssignorInfo {
        name: "range".into(),
        version: "1.0.0".into(),
        description: "per-topic ranges".into(),
        rebalance_protocol: RebalanceProtocol::Cooperative,
        inputs: vec![Input::Lag],
        in_place: true,
    };

    check_table(
        &doc,
        "AssignRequest",
        value_of(&request),
        read_as::<AssignRequest>,
    );
    check_table(&doc, "Member", value_of(&member), read_as::<Member>);
    check_table(&doc, "Topic", value_of(&topic), read_as::<Topic>);
    check_table(
        &doc,
        "TopicPartitions",
        value_of(&tp("orders", vec![0])),
        read_as::<TopicPartitions>,
    );
    check_table(
        &doc,
        "AssignResponse",
        value_of(&response),
        read_as::<AssignResponse>,
    );
    check_table(
        &doc,
        "MemberAssignment",
        value_of(&assignment),
        read_as::<MemberAssignment>,
    );
    check_table(
        &doc,
        "AssignorInfo",
        value_of(&info),
        read_as::<AssignorInfo>,
    );
}

#[test]
fn rebalance_protocol_is_one_of_the_two_documented_strings() {
    let doc = doc();
    let row = table(&doc, "AssignorInfo")
        .into_iter()
        .find(|r| r.field == "rebalance_protocol")
        .unwrap();
    assert_eq!(row.ty, "str: `\"eager\"` or `\"cooperative\"`");
    for (protocol, text) in [
        (RebalanceProtocol::Eager, "eager"),
        (RebalanceProtocol::Cooperative, "cooperative"),
    ] {
        assert_eq!(encode(&protocol).unwrap(), encode(&text).unwrap());
    }
    assert!(decode::<RebalanceProtocol>(&encode(&"Eager").unwrap()).is_err());
}

// ---------------------------------------------------------------------------------------------
// The plain-ABI fixture.

/// The ABI message each of the fixture's serde structs stands for.
const FIXTURE_MESSAGES: [(&str, &str); 6] = [
    ("Request", "AssignRequest"),
    ("Member", "Member"),
    ("Topic", "Topic"),
    ("Response", "AssignResponse"),
    ("MemberAssignment", "MemberAssignment"),
    ("TopicPartitions", "TopicPartitions"),
];

/// `(struct name, field names)` of every `struct` in `source` (the fixture's plain layout:
/// one field per line, attributes and doc comments on their own lines).
fn structs(source: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix("struct ") else {
            continue;
        };
        let name = rest.trim_end_matches(['{', ' ']).to_owned();
        let fields = lines
            .by_ref()
            .take_while(|l| l.trim() != "}")
            .map(str::trim)
            .filter(|l| !l.starts_with("#[") && !l.starts_with("//"))
            .filter_map(|l| l.split_once(':').map(|(f, _)| f.trim().to_owned()))
            .collect();
        out.push((name, fields));
    }
    out
}

#[test]
fn the_plain_abi_fixture_uses_only_documented_names() {
    let doc = doc();
    let source = repo_file("tests/fixtures/plain-abi/src/lib.rs");
    let found = structs(&source);
    assert!(!found.is_empty(), "no structs found in the fixture");
    for (name, fields) in &found {
        let message = FIXTURE_MESSAGES
            .iter()
            .find(|(s, _)| s == name)
            .unwrap_or_else(|| panic!("the fixture's struct {name} stands for no ABI message"))
            .1;
        let documented: Vec<String> = table(&doc, message).into_iter().map(|r| r.field).collect();
        for field in fields {
            assert!(
                documented.contains(field),
                "the fixture's {name}.{field} is not a field of {message} in docs/abi.md"
            );
        }
    }

    let exports: Vec<&str> = source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub extern \"C\" fn "))
        .map(|rest| rest.split('(').next().unwrap())
        .collect();
    assert_eq!(exports.len(), 3, "the fixture's exports: {exports:?}");
    for export in exports {
        assert!(
            doc.contains(&format!("| `{export}` |")),
            "the fixture exports `{export}`, which the exports table of docs/abi.md lacks"
        );
    }
    assert!(source.contains("#[link(wasm_import_module = \"assignor\")]"));
    assert!(source.contains("fn log(level: i32,"));
    assert!(doc.contains("| `assignor.log` |"));
}

/// A MessagePack value with map keys in their order, and the helpers that show one.
mod msgpack {
    use std::fmt::{self, Write};

    use serde::de::{self, MapAccess, SeqAccess, Visitor};
    use serde::ser::{SerializeMap, SerializeSeq};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Value {
        Nil,
        Bool(bool),
        Int(i128),
        Str(String),
        Bin(Vec<u8>),
        Array(Vec<Value>),
        Map(Vec<(String, Value)>),
    }

    /// Whether MessagePack can carry the integer `n` at all.
    pub fn encodable(n: i128) -> bool {
        (i64::MIN as i128..=u64::MAX as i128).contains(&n)
    }

    impl Serialize for Value {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Value::Nil => s.serialize_unit(),
                Value::Bool(b) => s.serialize_bool(*b),
                Value::Int(n) if *n < 0 => s.serialize_i64(*n as i64),
                Value::Int(n) => s.serialize_u64(*n as u64),
                Value::Str(text) => s.serialize_str(text),
                Value::Bin(bytes) => s.serialize_bytes(bytes),
                Value::Array(items) => {
                    let mut seq = s.serialize_seq(Some(items.len()))?;
                    for item in items {
                        seq.serialize_element(item)?;
                    }
                    seq.end()
                }
                Value::Map(entries) => {
                    let mut map = s.serialize_map(Some(entries.len()))?;
                    for (k, v) in entries {
                        map.serialize_entry(k, v)?;
                    }
                    map.end()
                }
            }
        }
    }

    impl<'de> Deserialize<'de> for Value {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
            d.deserialize_any(ValueVisitor)
        }
    }

    struct ValueVisitor;

    impl<'de> Visitor<'de> for ValueVisitor {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a MessagePack value without floats")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
            Ok(Value::Nil)
        }
        fn visit_none<E: de::Error>(self) -> Result<Value, E> {
            Ok(Value::Nil)
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
            Ok(Value::Bool(b))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
            Ok(Value::Int(n.into()))
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
            Ok(Value::Int(n.into()))
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<Value, E> {
            Ok(Value::Str(text.to_owned()))
        }
        fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Value, E> {
            Ok(Value::Bin(bytes.to_vec()))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut entries = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, Value>()? {
                entries.push((k, v));
            }
            Ok(Value::Map(entries))
        }
    }

    /// Whether `value` is of the documented type: `int`, `str`, `bin`, a message name (a map),
    /// `map of str to str`, `array of <type>`; a parenthesised range or a `:` note after the
    /// type is ignored here.
    pub fn is_of_type(value: &Value, ty: &str) -> bool {
        let ty = ty.split([' ', ':']).collect::<Vec<_>>();
        matches_words(value, &ty)
    }

    fn matches_words(value: &Value, words: &[&str]) -> bool {
        match (words, value) {
            (["array", "of", rest @ ..], Value::Array(items)) => {
                items.iter().all(|item| matches_words(item, rest))
            }
            (["map", "of", "str", "to", "str", ..], Value::Map(entries)) => {
                entries.iter().all(|(_, v)| matches!(v, Value::Str(_)))
            }
            (["int", ..], Value::Int(_)) => true,
            (["str", ..], Value::Str(_)) => true,
            (["bin", ..], Value::Bin(_)) => true,
            (["bool", ..], Value::Bool(_)) => true,
            ([message, ..], Value::Map(_)) => message.starts_with(|c: char| c.is_ascii_uppercase()),
            _ => false,
        }
    }

    /// The range of an `int (i32)`-like type, if the type (or its element type) is one.
    pub fn int_range(ty: &str) -> Option<(i128, i128)> {
        let width = ty.split_once("int (")?.1.split(')').next()?;
        Some(match width {
            "i32" => (i32::MIN.into(), i32::MAX.into()),
            "u32" => (0, u32::MAX.into()),
            "i64" => (i64::MIN.into(), i64::MAX.into()),
            "u64" => (0, u64::MAX.into()),
            other => panic!("unknown integer width {other}"),
        })
    }

    /// A default as the tables write it: `nil`, `[]`, `{}`, `h''` or an integer.
    pub fn literal(text: &str) -> Option<Value> {
        match text {
            "nil" => Some(Value::Nil),
            "[]" => Some(Value::Array(vec![])),
            "{}" => Some(Value::Map(vec![])),
            "h''" => Some(Value::Bin(vec![])),
            "false" => Some(Value::Bool(false)),
            "true" => Some(Value::Bool(true)),
            n => n.parse().ok().map(Value::Int),
        }
    }

    /// JSON, with bin written `h'…'` (CBOR's diagnostic notation) and nil as `null`.
    pub fn render(value: &Value, indent: usize) -> String {
        let pad = |n: usize| "  ".repeat(n);
        match value {
            Value::Nil => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Str(text) => format!("{text:?}"),
            Value::Bin(bytes) => format!("h'{}'", hex(bytes, "")),
            Value::Array(items) if items.iter().all(is_scalar) => {
                let items: Vec<String> = items.iter().map(|v| render(v, 0)).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Array(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|v| format!("{}{}", pad(indent + 1), render(v, indent + 1)))
                    .collect();
                format!("[\n{}\n{}]", items.join(",\n"), pad(indent))
            }
            Value::Map(entries) if entries.is_empty() => "{}".to_owned(),
            Value::Map(entries) => {
                let entries: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{}{k:?}: {}", pad(indent + 1), render(v, indent + 1)))
                    .collect();
                format!("{{\n{}\n{}}}", entries.join(",\n"), pad(indent))
            }
        }
    }

    fn is_scalar(value: &Value) -> bool {
        !matches!(value, Value::Array(_) | Value::Map(_))
    }

    /// `text` without whitespace outside string literals, to compare layouts loosely.
    pub fn squeeze(text: &str) -> String {
        let mut out = String::new();
        let mut quoted = false;
        let mut escaped = false;
        for c in text.chars() {
            if quoted {
                out.push(c);
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => quoted = false,
                    _ => {}
                }
            } else if c == '"' {
                quoted = true;
                out.push(c);
            } else if !c.is_whitespace() {
                out.push(c);
            }
        }
        out
    }

    fn hex(bytes: &[u8], separator: &str) -> String {
        let pairs: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        pairs.join(separator)
    }

    /// The element message of an array field, for the listing's comments.
    fn element_of(key: &str) -> Option<&'static str> {
        match key {
            "members" => Some("Member"),
            "topics" => Some("Topic"),
            "assignments" => Some("MemberAssignment"),
            "partitions" | "owned_partitions" | "previous_assignment" => Some("TopicPartitions"),
            _ => None,
        }
    }

    /// The encoding of `value` item by item: the bytes of each item in hex, indented by depth,
    /// with a comment naming it; [`super::hex_bytes`] reads it back as the encoding.
    pub fn annotate(value: &Value, label: &str) -> String {
        let mut out = String::new();
        item(&mut out, value, Some(label), 0, false);
        out
    }

    const BYTES_PER_LINE: usize = 12;
    const COMMENT_COLUMN: usize = 44;

    fn line(out: &mut String, depth: usize, bytes: &[u8], comment: &str) {
        for (i, chunk) in bytes.chunks(BYTES_PER_LINE).enumerate() {
            let code = format!("{}{}", "  ".repeat(depth), hex(chunk, " "));
            if i == 0 {
                let _ = writeln!(out, "{code:<COMMENT_COLUMN$}# {comment}");
            } else {
                let _ = writeln!(out, "{code}");
            }
        }
    }

    fn header(len: usize, fix: u8, sixteen: u8) -> Vec<u8> {
        match len {
            0..=15 => vec![fix | len as u8],
            16..=0xffff => [&[sixteen][..], &(len as u16).to_be_bytes()].concat(),
            _ => [&[sixteen + 1][..], &(len as u32).to_be_bytes()].concat(),
        }
    }

    fn int_form(first: u8) -> &'static str {
        match first {
            0x00..=0x7f => "fixint",
            0xe0..=0xff => "negative fixint",
            0xcc => "uint 8",
            0xcd => "uint 16",
            0xce => "uint 32",
            0xcf => "uint 64",
            0xd0 => "int 8",
            0xd1 => "int 16",
            0xd2 => "int 32",
            _ => "int 64",
        }
    }

    fn item(out: &mut String, value: &Value, label: Option<&str>, depth: usize, is_value: bool) {
        let lead = if is_value { "  " } else { "" };
        let bytes = rmp_serde::to_vec(value).unwrap();
        match value {
            Value::Map(entries) if entries.is_empty() => {
                line(out, depth, &bytes, &format!("{lead}map, empty"))
            }
            Value::Map(entries) => {
                let name = label.map(|l| format!(": {l}")).unwrap_or_default();
                let n = entries.len();
                let comment = format!("{lead}map, {n} entries{name}");
                line(out, depth, &header(n, 0x80, 0xde), &comment);
                for (k, v) in entries {
                    item(out, &Value::Str(k.clone()), None, depth + 1, false);
                    item(out, v, element_of(k), depth + 1, true);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let n = items.len();
                let noun = if n == 1 { "item" } else { "items" };
                let comment = format!("{lead}array, {n} {noun}");
                line(out, depth, &header(n, 0x90, 0xdc), &comment);
                for v in items {
                    item(out, v, label, depth + 1, true);
                }
            }
            Value::Array(_) => line(out, depth, &bytes, &format!("{lead}array, empty")),
            Value::Nil => line(out, depth, &bytes, &format!("{lead}nil")),
            Value::Bool(b) => line(out, depth, &bytes, &format!("{lead}{b}")),
            Value::Int(n) => {
                let comment = format!("{lead}{n} ({})", int_form(bytes[0]));
                line(out, depth, &bytes, &comment)
            }
            Value::Str(text) => line(out, depth, &bytes, &format!("{lead}{text:?}")),
            Value::Bin(b) => line(out, depth, &bytes, &format!("{lead}bin, {} bytes", b.len())),
        }
    }
}
