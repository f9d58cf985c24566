//! What the exports do, as plain functions: bytes in, bytes out.
//!
//! The wasm exports the [`assignor`](crate::assignor) attribute generates are thin wrappers
//! around [`run`] and [`describe`]; everything that can go wrong between the host's bytes and
//! the author's function is decided here, natively testable:
//!
//! - input that is not a MessagePack [`AssignRequest`] -> an [`AssignResponse`] whose `error`
//!   says what was wrong (never a trap: a trap would read to the host as a crashed module);
//! - a request for another ABI version -> an error response naming both versions;
//! - the author's `Err` -> an error response carrying its message;
//! - an `Ok` assignment -> the response from [`Assignment::into_response`].
//!
//! A panic is not caught here: modules are built with `panic = "abort"`, so the panic hook
//! (installed by the wasm exports) logs the message through `assignor.log` at error level and
//! the module then traps, which the host records as a failed call.

use serde::Deserialize;

use crate::abi::{
    ABI_VERSION, AssignRequest, AssignResponse, AssignorInfo, RebalanceProtocol, decode, encode,
};
use crate::assignment::{AssignError, Assignment};

/// Runs `assign` on the MessagePack request in `input` and returns the MessagePack response:
/// exactly what the module's `assignor_assign` export computes.
pub fn run(
    input: &[u8],
    assign: impl FnOnce(&AssignRequest) -> Result<Assignment, AssignError>,
) -> Vec<u8> {
    encode_response(&handle(input, assign))
}

/// [`run`] before encoding: the typed response for the MessagePack request in `input`.
pub fn handle(
    input: &[u8],
    assign: impl FnOnce(&AssignRequest) -> Result<Assignment, AssignError>,
) -> AssignResponse {
    let request = match decode_request(input) {
        Ok(request) => request,
        Err(message) => return error_response(message),
    };
    match assign(&request) {
        Ok(assignment) => assignment.into_response(),
        Err(error) => error_response(error.message().to_owned()),
    }
}

/// The MessagePack [`AssignorInfo`] the module's `assignor_describe` export returns.
pub fn describe(
    name: &str,
    version: &str,
    description: &str,
    rebalance_protocol: RebalanceProtocol,
) -> Vec<u8> {
    let info = AssignorInfo {
        name: name.to_owned(),
        version: version.to_owned(),
        description: description.to_owned(),
        rebalance_protocol,
    };
    // Encoding a struct of strings into a Vec cannot fail; an empty answer would be refused
    // by the host as malformed, which is the right outcome if it ever did.
    encode(&info).unwrap_or_default()
}

/// Decodes the request, checking its ABI version. The error is the message for the host.
fn decode_request(input: &[u8]) -> Result<AssignRequest, String> {
    match decode::<AssignRequest>(input) {
        Ok(request) if request.abi_version == ABI_VERSION => Ok(request),
        Ok(request) => Err(version_mismatch(request.abi_version)),
        Err(error) => {
            // A request of another ABI version may not even have v1's shape: say so rather than
            // report a missing field.
            #[derive(Deserialize)]
            struct Envelope {
                abi_version: u32,
            }
            match decode::<Envelope>(input) {
                Ok(envelope) if envelope.abi_version != ABI_VERSION => {
                    Err(version_mismatch(envelope.abi_version))
                }
                _ => Err(format!(
                    "malformed AssignRequest ({} bytes): {error}",
                    input.len()
                )),
            }
        }
    }
}

fn version_mismatch(got: u32) -> String {
    format!("this module speaks assignor ABI v{ABI_VERSION}, but the request is ABI v{got}")
}

/// The encoded error response carrying `message`.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn error_bytes(message: String) -> Vec<u8> {
    encode_response(&error_response(message))
}

fn error_response(message: String) -> AssignResponse {
    AssignResponse {
        error: Some(message),
        ..AssignResponse::default()
    }
}

fn encode_response(response: &AssignResponse) -> Vec<u8> {
    encode(response).unwrap_or_else(|error| {
        encode(&error_response(format!(
            "could not encode the AssignResponse: {error}"
        )))
        .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Member, Topic, TopicPartitions, decode};

    fn request() -> AssignRequest {
        AssignRequest {
            abi_version: ABI_VERSION,
            group_id: "g".into(),
            protocol_type: "consumer".into(),
            protocol_name: "test".into(),
            members: vec![
                Member {
                    member_id: "m1".into(),
                    topics: vec!["t".into()],
                    ..Member::default()
                },
                Member {
                    member_id: "m2".into(),
                    topics: vec!["t".into()],
                    ..Member::default()
                },
            ],
            topics: vec![Topic {
                name: "t".into(),
                partition_count: 2,
                partition_racks: vec![],
            }],
            ..AssignRequest::default()
        }
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
    ) -> AssignResponse {
        decode(&run(input, f)).expect("run always answers a decodable AssignResponse")
    }

    #[test]
    fn a_valid_request_reaches_the_function_and_its_assignment_comes_back() {
        let response = round_trip(&encode(&request()).unwrap(), deal);
        assert_eq!(response.error, None);
        assert_eq!(response.rebalance_after_ms, Some(5));
        let got: Vec<_> = response
            .assignments
            .iter()
            .map(|m| (m.member_id.as_str(), m.partitions.clone()))
            .collect();
        let tp = |p| {
            vec![TopicPartitions {
                topic: "t".into(),
                partitions: vec![p],
            }]
        };
        assert_eq!(got, [("m1", tp(0)), ("m2", tp(1))]);
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
        let mut req = request();
        req.abi_version = 2;
        let error = round_trip(&encode(&req).unwrap(), deal).error.unwrap();
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
        let input = encode(&V9 {
            abi_version: 9,
            everything: "different",
        })
        .unwrap();
        let error = round_trip(&input, deal).error.unwrap();
        assert_eq!(
            error,
            "this module speaks assignor ABI v1, but the request is ABI v9"
        );
    }

    #[test]
    fn an_author_error_becomes_the_response_error() {
        fn refuse(_: &AssignRequest) -> Result<Assignment, AssignError> {
            Err(AssignError::new("topic `t` needs at least 3 members"))
        }
        let response = round_trip(&encode(&request()).unwrap(), refuse);
        assert_eq!(
            response.error.as_deref(),
            Some("topic `t` needs at least 3 members")
        );
        assert!(response.assignments.is_empty());
    }

    #[test]
    fn unknown_fields_in_the_request_are_ignored() {
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
        assert_eq!(round_trip(&input, deal).error, None);
    }

    #[test]
    fn describe_encodes_the_info_the_host_reads() {
        let info: AssignorInfo = decode(&describe(
            "range",
            "1.2.3",
            "per-topic ranges",
            RebalanceProtocol::Eager,
        ))
        .unwrap();
        assert_eq!(info.name, "range");
        assert_eq!(info.version, "1.2.3");
        assert_eq!(info.description, "per-topic ranges");
        assert_eq!(info.rebalance_protocol, RebalanceProtocol::Eager);
    }
}
