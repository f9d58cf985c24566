//! What the exports do, as plain functions: bytes in, bytes out.
//!
//! The wasm exports the [`assignor`](crate::assignor) attribute generates are thin wrappers
//! around [`run`] and [`describe`]; everything that can go wrong between the host's bytes and
//! the author's function is decided here, natively testable:
//!
//! - input that is not a MessagePack ABI v2 `AssignRequest` -> an answer whose `error` says
//!   what was wrong (never a trap: a trap would read to the host as a crashed module);
//! - a request for another ABI version -> an error naming both versions;
//! - the author's `Err` -> an error carrying its message;
//! - an `Ok` assignment -> its ABI v2 encoding ([`Assignment::to_v2_bytes`]).
//!
//! [`call`] runs a strategy on a request through exactly those bytes, for tests. [`run_v1`] is
//! the same for ABI v1 bytes, as modules built with earlier releases of this crate answered.
//!
//! A panic is not caught here: modules are built with `panic = "abort"`, so the panic hook
//! (installed by the wasm exports) logs the message through `assignor.log` at error level and
//! the module then traps, which the host records as a failed call.

use serde::Deserialize;

use crate::abi::v2::{self, Extras, Inputs, Layout};
use crate::abi::{
    ABI_V1, ABI_V2, AssignRequest, AssignResponse, AssignorInfo, Input, RebalanceProtocol, decode,
    encode,
};
use crate::assignment::{AssignError, Assignment};

/// Runs `assign` on the ABI v2 request in `input` and returns the ABI v2 response: exactly
/// what the module's `assignor_assign` export computes.
pub fn run(
    input: &[u8],
    assign: impl FnOnce(&AssignRequest) -> Result<Assignment, AssignError>,
) -> Vec<u8> {
    let request = match decode_v2(input) {
        Ok(request) => request,
        Err(message) => return error_bytes(message),
    };
    match assign(&request) {
        Ok(assignment) => assignment
            .to_v2_bytes()
            .unwrap_or_else(|e| error_bytes(format!("could not encode the answer: {e}"))),
        Err(error) => error_bytes(error.message().to_owned()),
    }
}

/// `request` through the bytes a module sees and answers, as the host would send it to a
/// module reading `inputs`: encoded as ABI v2, decoded (with its index), `assign`, the answer
/// encoded and read back as the model. What a strategy answers in the sandbox, natively.
pub fn call(
    request: &AssignRequest,
    inputs: &[Input],
    assign: impl FnOnce(&AssignRequest) -> Result<Assignment, AssignError>,
) -> Result<AssignResponse, String> {
    let layout = Layout::new(request).map_err(|e| e.to_string())?;
    let extras = Extras {
        inputs: inputs.iter().copied().collect::<Inputs>(),
        lag: None,
    };
    let input = v2::encode_request(request, &layout, extras).map_err(|e| e.to_string())?;
    let output = run(&input, assign);
    let response = v2::decode_response(&output).map_err(|e| e.to_string())?;
    let members = request.members.len();
    let topics = request.topics.len();
    let in_range = response.assignments.iter().all(|a| {
        (a.member as usize) < members && a.partitions.iter().all(|tp| (tp.topic as usize) < topics)
    });
    if !in_range {
        return Err("the answer names a member or topic index outside the request".into());
    }
    Ok(v2::response_to_model(request, response))
}

/// [`run`] for ABI v1 bytes: the v1 `AssignRequest` in, the v1 `AssignResponse` out.
pub fn run_v1(
    input: &[u8],
    assign: impl FnOnce(&AssignRequest) -> Result<Assignment, AssignError>,
) -> Vec<u8> {
    let response = match decode_v1(input) {
        Ok(request) => match assign(&request) {
            Ok(assignment) => assignment.into_response(),
            Err(error) => error_response(error.message().to_owned()),
        },
        Err(message) => error_response(message),
    };
    encode(&response).unwrap_or_else(|error| {
        encode(&error_response(format!(
            "could not encode the AssignResponse: {error}"
        )))
        .unwrap_or_default()
    })
}

/// The MessagePack [`AssignorInfo`] the module's `assignor_describe` export returns.
pub fn describe(
    name: &str,
    version: &str,
    description: &str,
    rebalance_protocol: RebalanceProtocol,
    inputs: &[Input],
    in_place: bool,
) -> Vec<u8> {
    let info = AssignorInfo {
        name: name.to_owned(),
        version: version.to_owned(),
        description: description.to_owned(),
        rebalance_protocol,
        inputs: inputs.to_vec(),
        in_place,
    };
    // Encoding a struct of strings into a Vec cannot fail; an empty answer would be refused
    // by the host as malformed, which is the right outcome if it ever did.
    encode(&info).unwrap_or_default()
}

/// Decodes a v2 request, telling a request of another version from a malformed one.
fn decode_v2(input: &[u8]) -> Result<AssignRequest, String> {
    match v2::decode_request(input) {
        Ok(request) => Ok(request),
        Err(message) => match abi_version_of(input) {
            Some(version) if version != ABI_V2 => Err(version_mismatch(ABI_V2, version)),
            _ => Err(message),
        },
    }
}

/// Decodes a v1 request, checking its ABI version. The error is the message for the host.
fn decode_v1(input: &[u8]) -> Result<AssignRequest, String> {
    match decode::<AssignRequest>(input) {
        Ok(request) if request.abi_version == ABI_V1 => Ok(request),
        Ok(request) => Err(version_mismatch(ABI_V1, request.abi_version)),
        Err(error) => match abi_version_of(input) {
            Some(version) if version != ABI_V1 => Err(version_mismatch(ABI_V1, version)),
            _ => Err(format!(
                "malformed AssignRequest ({} bytes): {error}",
                input.len()
            )),
        },
    }
}

/// The `abi_version` of a request of any version: the `abi_version` entry of a map (v1), or
/// the first item of an array (v2 and later).
fn abi_version_of(input: &[u8]) -> Option<u32> {
    #[derive(Deserialize)]
    struct Envelope {
        abi_version: u32,
    }
    if let Ok(envelope) = decode::<Envelope>(input) {
        return Some(envelope.abi_version);
    }
    let mut reader = input;
    let len = rmp::decode::read_array_len(&mut reader).ok()?;
    if len == 0 {
        return None;
    }
    rmp::decode::read_int(&mut reader).ok()
}

fn version_mismatch(speaks: u32, got: u32) -> String {
    format!("this module speaks assignor ABI v{speaks}, but the request is ABI v{got}")
}

/// The encoded ABI v2 error answer carrying `message`.
pub(crate) fn error_bytes(message: String) -> Vec<u8> {
    v2::encode(&v2::Response {
        error: Some(message),
        ..v2::Response::default()
    })
    .unwrap_or_default()
}

fn error_response(message: String) -> AssignResponse {
    AssignResponse {
        error: Some(message),
        ..AssignResponse::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Member, Topic, TopicPartitions};

    fn request() -> AssignRequest {
        let member = |id: &str| Member {
            member_id: id.into(),
            topics: vec!["t".into()].into(),
            ..Member::default()
        };
        AssignRequest {
            abi_version: ABI_V1,
            group_id: "g".into(),
            protocol_type: "consumer".into(),
            protocol_name: "test".into(),
            members: vec![member("m1"), member("m2")],
            topics: vec![Topic {
                name: "t".into(),
                partition_count: 2,
                partition_racks: vec![],
            }],
            ..AssignRequest::default()
        }
    }

    fn v2_input(request: &AssignRequest) -> Vec<u8> {
        let layout = Layout::new(request).unwrap();
        v2::encode_request(request, &layout, Extras::default()).unwrap()
    }

    /// Gives partition p of every topic to the p-th member in id order.
    fn deal(request: &AssignRequest) -> Result<Assignment, AssignError> {
        let mut a = Assignment::new(request);
        for topic in &request.topics {
            for (p, m) in topic.partitions().zip(&request.members) {
                a.assign(&m.member_id, &topic.name, p);
            }
        }
        a.rebalance_after_ms(5);
        Ok(a)
    }

    fn round_trip(
        input: &[u8],
        f: fn(&AssignRequest) -> Result<Assignment, AssignError>,
    ) -> v2::Response {
        v2::decode_response(&run(input, f)).expect("run always answers a decodable response")
    }

    fn round_trip_v1(
        input: &[u8],
        f: fn(&AssignRequest) -> Result<Assignment, AssignError>,
    ) -> AssignResponse {
        decode(&run_v1(input, f)).expect("run_v1 always answers a decodable AssignResponse")
    }

    #[test]
    fn a_valid_request_reaches_the_function_and_its_assignment_comes_back() {
        let response = round_trip(&v2_input(&request()), deal);
        assert_eq!(response.error, None);
        assert_eq!(response.rebalance_after_ms, Some(5));
        let got: Vec<_> = response
            .assignments
            .iter()
            .map(|m| (m.member, m.partitions.clone()))
            .collect();
        let tp = |p| {
            vec![v2::TopicPartitions {
                topic: 0,
                partitions: vec![p],
            }]
        };
        assert_eq!(got, [(0, tp(0)), (1, tp(1))]);
        // The same through call(), as the model, and through ABI v1.
        let model = call(&request(), &[], deal).unwrap();
        assert_eq!(model, round_trip_v1(&encode(&request()).unwrap(), deal));
        let tp = |p| {
            vec![TopicPartitions {
                topic: "t".into(),
                partitions: vec![p],
            }]
        };
        let got: Vec<_> = model
            .assignments
            .iter()
            .map(|m| (m.member_id.as_str(), m.partitions.clone()))
            .collect();
        assert_eq!(got, [("m1", tp(0)), ("m2", tp(1))]);
    }

    #[test]
    fn a_decoded_request_carries_its_index_and_the_same_content() {
        let mut seen = None;
        let _ = run(&v2_input(&request()), |r| {
            seen = Some((r.index.0.is_some(), r.clone()));
            Ok(Assignment::new(r))
        });
        let (indexed, decoded) = seen.unwrap();
        assert!(indexed);
        let mut expected = request();
        expected.abi_version = ABI_V2;
        assert_eq!(decoded, expected);
    }

    #[test]
    fn malformed_input_is_an_error_response_not_a_trap() {
        let response = round_trip(b"\xc1not msgpack", deal);
        let error = response.error.expect("malformed input must be reported");
        assert!(
            error.starts_with("malformed AssignRequest (12 bytes): "),
            "{error}"
        );
        assert!(response.assignments.is_empty());
        let v1 = round_trip_v1(b"\xc1not msgpack", deal).error.unwrap();
        assert!(
            v1.starts_with("malformed AssignRequest (12 bytes): "),
            "{v1}"
        );
    }

    #[test]
    fn empty_input_is_an_error_response() {
        let error = round_trip(b"", deal).error.unwrap();
        assert!(
            error.starts_with("malformed AssignRequest (0 bytes)"),
            "{error}"
        );
    }

    #[test]
    fn another_abi_version_is_refused_naming_both_versions() {
        let error = round_trip(&encode(&request()).unwrap(), deal)
            .error
            .unwrap();
        assert_eq!(
            error,
            "this module speaks assignor ABI v2, but the request is ABI v1"
        );
        let error = round_trip_v1(&v2_input(&request()), deal).error.unwrap();
        assert_eq!(
            error,
            "this module speaks assignor ABI v1, but the request is ABI v2"
        );
    }

    #[test]
    fn another_abi_version_with_another_shape_is_still_a_version_error() {
        #[derive(serde::Serialize)]
        struct V9 {
            abi_version: u32,
            everything: &'static str,
        }
        let v9 = V9 {
            abi_version: 9,
            everything: "different",
        };
        for input in [encode(&v9).unwrap(), v2::encode(&v9).unwrap()] {
            let error = round_trip(&input, deal).error.unwrap();
            assert_eq!(
                error,
                "this module speaks assignor ABI v2, but the request is ABI v9"
            );
        }
    }

    #[test]
    fn an_author_error_becomes_the_response_error() {
        fn refuse(_: &AssignRequest) -> Result<Assignment, AssignError> {
            Err(AssignError::new("topic `t` needs at least 3 members"))
        }
        let response = round_trip(&v2_input(&request()), refuse);
        assert_eq!(
            response.error.as_deref(),
            Some("topic `t` needs at least 3 members")
        );
        assert!(response.assignments.is_empty());
    }

    #[test]
    fn unknown_fields_in_a_v1_request_are_ignored() {
        #[derive(serde::Serialize)]
        struct Extended {
            #[serde(flatten)]
            request: AssignRequest,
            lag: Vec<u64>,
        }
        let input = encode(&Extended {
            request: request(),
            lag: vec![1, 2],
        })
        .unwrap();
        assert_eq!(round_trip_v1(&input, deal).error, None);
    }

    #[test]
    fn describe_encodes_the_info_the_host_reads() {
        let info: AssignorInfo = decode(&describe(
            "range",
            "1.2.3",
            "per-topic ranges",
            RebalanceProtocol::Eager,
            &[Input::Racks, Input::Lag],
            true,
        ))
        .unwrap();
        assert!(info.in_place);
        assert_eq!(info.name, "range");
        assert_eq!(info.version, "1.2.3");
        assert_eq!(info.description, "per-topic ranges");
        assert_eq!(info.rebalance_protocol, RebalanceProtocol::Eager);
        assert_eq!(info.inputs, [Input::Racks, Input::Lag]);
    }

    #[test]
    fn an_info_without_in_place_reads_as_false() {
        #[derive(serde::Serialize)]
        struct Older {
            name: String,
            version: String,
            description: String,
            rebalance_protocol: RebalanceProtocol,
        }
        let info: AssignorInfo = decode(
            &encode(&Older {
                name: "range".into(),
                version: "1".into(),
                description: "d".into(),
                rebalance_protocol: RebalanceProtocol::Eager,
            })
            .unwrap(),
        )
        .unwrap();
        assert!(!info.in_place);
        assert!(info.inputs.is_empty());
    }
}
