//! A module written against ABI v2 from docs/abi.md alone, without the SDK
//! (`tests/fixtures/plain-abi-v2`): it loads as ABI v2 with its `assignor_describe`, passes
//! every upload check including the smoke call, and answers concrete groups with exactly its
//! documented round-robin. The module refuses a request that carries an optional input it did
//! not declare, so each accepted call also shows the host withheld the others; the client ids
//! it echoes in `user_data` arrive because it declared `client`, and stop when the declaration
//! is blanked out of the compiled module. That refusal is live: bytes a host breaking the
//! contract would send, written into the module directly, get an `error` naming the input.

use assignor_host::registry::{Registry, RegistryConfig, UploadOptions};
use assignor_sdk::abi::v2::{self, Extras, Inputs, Layout};
use assignor_sdk::{
    AssignRequest, AssignResponse, AssignorInfo, Input, MemberAssignment, RebalanceProtocol,
    TopicPartitions,
};
use wasmtime::{Engine, Linker, Module, Store};

use crate::sandbox_support::*;

fn registry() -> Registry {
    let config = RegistryConfig {
        builtins: vec![],
        ..RegistryConfig::default()
    };
    Registry::open(sandbox(), None, config).expect("registry")
}

/// The fixture with its declared inputs replaced by `inputs` (padded to the same length).
fn declaring(inputs: &str) -> Vec<u8> {
    let mut list = format!("INPUTS={inputs}").into_bytes();
    assert!(
        list.len() <= PLAIN_ABI_V2_INPUTS.len(),
        "{inputs} is too long"
    );
    list.resize(PLAIN_ABI_V2_INPUTS.len(), b' ');
    let mut wasm = plain_abi_v2_wasm().to_vec();
    let at = wasm
        .windows(PLAIN_ABI_V2_INPUTS.len())
        .position(|w| w == PLAIN_ABI_V2_INPUTS)
        .expect("the inputs list");
    wasm[at..at + list.len()].copy_from_slice(&list);
    wasm
}

/// What the module describes itself as, declaring `inputs`.
fn info(inputs: Vec<Input>) -> AssignorInfo {
    AssignorInfo {
        name: "plain-abi-v2".into(),
        version: "0.1.0".into(),
        description: "each topic's partitions round-robin over its subscribers in member-index \
                      order (ABI v2, no SDK)"
            .into(),
        rebalance_protocol: RebalanceProtocol::Eager,
        inputs,
        in_place: false,
    }
}

/// The `user_data` the module gives a member: its marker, then the client id and host when the
/// host sent them.
fn marked(client: Option<(&str, &str)>) -> Vec<u8> {
    let mut user_data = PLAIN_ABI_V2_MARKER.to_vec();
    if let Some((id, host)) = client {
        user_data.extend_from_slice(format!(" {id} {host}").as_bytes());
    }
    user_data
}

fn entry(
    member: &str,
    partitions: Vec<TopicPartitions>,
    client: Option<(&str, &str)>,
) -> MemberAssignment {
    MemberAssignment {
        user_data: Some(marked(client)),
        ..give(member, partitions)
    }
}

/// The client id and host of each member of [`group`], in member order.
const CLIENTS: [(&str, &str); 5] = [
    ("app-alpha", "/10.0.0.1"),
    ("app-bravo", "/10.0.0.2"),
    ("app-charlie", "/10.0.0.3"),
    ("app-delta", "/10.0.0.4"),
    ("app-echo", "/10.0.0.5"),
];

/// Five members over three topics, four distinct subscriptions (`bravo` and `echo` share one),
/// with what the module did not declare filled in: static ids, racks, replica racks, owned
/// partitions, subscription user data and metadata.
fn group() -> AssignRequest {
    let subscriptions: [(&str, &[&str]); 5] = [
        ("alpha", &["orders", "payments"]),
        ("bravo", &["orders"]),
        ("charlie", &["audit", "orders", "payments"]),
        ("delta", &["payments"]),
        ("echo", &["orders"]),
    ];
    let mut request = request();
    request.generation_id = 12;
    request.members = subscriptions
        .iter()
        .enumerate()
        .map(|(i, (id, topics))| {
            let mut m = member(id, topics);
            (m.client_id, m.client_host) = (CLIENTS[i].0.into(), CLIENTS[i].1.into());
            m.rack_id = Some(format!("rack-{}", i % 2));
            if i % 2 == 0 {
                m.group_instance_id = Some(format!("instance-{id}"));
            }
            m.user_data = Some(vec![i as u8; 3]);
            m.metadata = vec![0, 1, i as u8];
            m.owned_generation = 11;
            m.owned_partitions = vec![tp(topics[0], &[i as i32 % 2])];
            m
        })
        .collect();
    request.topics = vec![topic("audit", 1), topic("orders", 7), topic("payments", 4)];
    request.topics[1].partition_racks = (0..7).map(|p| vec![format!("rack-{}", p % 2)]).collect();
    request
}

/// [`group`]'s expected answer. Subscribers in member-index order: `audit` charlie; `orders`
/// alpha, bravo, charlie, echo; `payments` alpha, charlie, delta. Partition `p` goes to
/// subscriber `p % count`.
fn expected_for_group(with_client: bool) -> AssignResponse {
    let client = |i: usize| with_client.then_some(CLIENTS[i]);
    AssignResponse {
        assignments: vec![
            entry(
                "alpha",
                vec![tp("orders", &[0, 4]), tp("payments", &[0, 3])],
                client(0),
            ),
            entry("bravo", vec![tp("orders", &[1, 5])], client(1)),
            entry(
                "charlie",
                vec![
                    tp("audit", &[0]),
                    tp("orders", &[2, 6]),
                    tp("payments", &[1]),
                ],
                client(2),
            ),
            entry("delta", vec![tp("payments", &[2])], client(3)),
            entry("echo", vec![tp("orders", &[3])], client(4)),
        ],
        ..AssignResponse::default()
    }
}

#[test]
fn the_plain_v2_module_loads_as_abi_v2_and_describes_itself() {
    let module = sandbox()
        .load(plain_abi_v2_wasm())
        .expect("the module compiles and loads");
    assert_eq!(module.abi_version(), 2);
    assert_eq!(module.info(), Some(&info(vec![Input::Client])));
}

#[test]
fn the_plain_v2_module_passes_every_upload_check_and_is_listed_as_abi_v2() {
    let registry = registry();
    let outcome = registry
        .upload("plain-v2", plain_abi_v2_wasm(), UploadOptions::default())
        .expect("the plain-abi-v2 module passes every upload check");
    assert_eq!((outcome.version, outcome.created), (1, true));
    assert_eq!(outcome.info, info(vec![Input::Client]));
    let smoke = outcome.smoke.expect("the smoke call ran");
    assert!(smoke.input_bytes > 0 && smoke.output_bytes > 0, "{smoke:?}");

    let listed: Vec<String> = registry.list().into_iter().map(|m| m.name).collect();
    assert_eq!(listed, ["plain-v2"]);
    let versions = registry.versions("plain-v2").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].meta.abi_version, 2);
    assert_eq!(versions[0].meta.info, info(vec![Input::Client]));
}

#[test]
fn the_plain_v2_module_deals_each_topic_round_robin_over_its_subscribers() {
    let registry = registry();
    registry
        .upload("plain-v2", plain_abi_v2_wasm(), UploadOptions::default())
        .unwrap();

    // The support group: m1 on `a` (3 partitions) and `b` (2), m2 on `a`, m3 on `b`.
    let small = request();
    let report = registry.run("plain-v2", None, &small, false).unwrap();
    let client = Some(("client", "/127.0.0.1"));
    let expected = AssignResponse {
        assignments: vec![
            entry("m1", vec![tp("a", &[0, 2]), tp("b", &[0])], client),
            entry("m2", vec![tp("a", &[1])], client),
            entry("m3", vec![tp("b", &[1])], client),
        ],
        ..AssignResponse::default()
    };
    assert_eq!(report.answer.to_response(&small), expected);
    assert_eq!((report.version, report.unassigned_partitions), (1, 0));

    let group = group();
    let report = registry.run("plain-v2", None, &group, false).unwrap();
    assert_eq!(report.answer.to_response(&group), expected_for_group(true));
    assert_eq!(report.unassigned_partitions, 0);
}

#[test]
fn client_ids_arrive_only_because_the_module_declares_client() {
    let registry = registry();
    registry
        .upload(
            "declares-client",
            plain_abi_v2_wasm(),
            UploadOptions::default(),
        )
        .unwrap();
    let outcome = registry
        .upload("declares-nothing", &declaring(""), UploadOptions::default())
        .expect("the module declaring no input passes every upload check too");
    assert_eq!(outcome.info, info(vec![]));
    assert_eq!(
        registry.versions("declares-nothing").unwrap()[0]
            .meta
            .info
            .inputs,
        []
    );

    let group = group();
    let with = registry
        .run("declares-client", None, &group, false)
        .unwrap();
    let without = registry
        .run("declares-nothing", None, &group, false)
        .expect("the host sent no optional input, or the module would have refused the call");
    assert_eq!(with.answer.to_response(&group), expected_for_group(true));
    assert_eq!(
        without.answer.to_response(&group),
        expected_for_group(false),
        "the same partitions; no client id or host in user_data"
    );
    assert!(
        without.stats.input_bytes < with.stats.input_bytes,
        "the client ids and hosts are not encoded for the module that does not read them: \
         {} vs {} bytes",
        without.stats.input_bytes,
        with.stats.input_bytes
    );
}

/// One bare call of the fixture on `input`, outside the host (no limits, no checks): what the
/// module answers to bytes the host would never send it.
fn call_directly(input: &[u8]) -> v2::Response {
    let engine = Engine::default();
    let module = Module::new(&engine, plain_abi_v2_wasm()).expect("compiles");
    let mut store = Store::new(&engine, ());
    let mut linker = Linker::new(&engine);
    linker
        .func_wrap("assignor", "log", |_: i32, _: i32, _: i32| {})
        .unwrap();
    let instance = linker.instantiate(&mut store, &module).unwrap();
    let alloc = instance
        .get_typed_func::<i32, i32>(&mut store, "assignor_alloc")
        .unwrap();
    let assign = instance
        .get_typed_func::<(i32, i32), i64>(&mut store, "assignor_assign")
        .unwrap();
    let memory = instance.get_memory(&mut store, "memory").unwrap();
    let len = i32::try_from(input.len()).unwrap();
    let ptr = alloc.call(&mut store, len).unwrap();
    memory.write(&mut store, ptr as usize, input).unwrap();
    let packed = assign.call(&mut store, (ptr, len)).unwrap() as u64;
    let (at, len) = ((packed >> 32) as usize, (packed & 0xffff_ffff) as usize);
    v2::decode_response(&memory.data(&store)[at..at + len]).expect("a v2 answer")
}

#[test]
fn the_plain_v2_module_refuses_inputs_it_did_not_declare_and_v1_requests() {
    let group = group();
    let layout = Layout::new(&group).unwrap();
    let sent = |inputs: &[Input]| {
        let extras = Extras {
            inputs: inputs.iter().copied().collect::<Inputs>(),
            lag: None,
        };
        call_directly(&v2::encode_request(&group, &layout, extras).unwrap())
    };
    let accepted = sent(&[Input::Client]);
    assert_eq!((accepted.error, accepted.assignments.len()), (None, 5));
    for (input, name) in [
        (Input::Racks, "racks"),
        (Input::UserData, "user_data"),
        (Input::Metadata, "metadata"),
    ] {
        assert_eq!(
            sent(&[Input::Client, input]).error.as_deref(),
            Some(
                format!("the host sent input `{name}`, which this module did not declare").as_str()
            ),
        );
    }
    let v1 = call_directly(&assignor_sdk::encode(&group).unwrap());
    let error = v1.error.expect("a v1 request is refused");
    assert!(
        error.starts_with("cannot decode the request as ABI v2"),
        "{error}"
    );
}
