//! A `simulate` scenario file (`assignor-host simulate --scenario FILE`, or the `scenario` of
//! `POST /v1/simulate`): the first byte picks TOML or JSON, the rest is the text. A scenario
//! that loads must become the request a live group would send: `to_request` succeeds, with
//! one member per scenario member and each member's Subscription bytes decoding back to its
//! subscription (the promise of `Scenario::validate`: a scenario that loads is one a live group
//! could have).
#![no_main]

use std::collections::BTreeSet;

use assignor_wire::consumer_protocol::{PROTOCOL_TYPE, decode_subscription};
use assignor_wire::scenario::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [format, text @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let Ok(scenario) = Scenario::from_text(text, format % 2 == 1, "fuzz") else {
        return;
    };
    let request = scenario
        .to_request("range")
        .expect("a scenario that loads becomes a request");
    assert_eq!(request.members.len(), scenario.members.len());
    if scenario.protocol_type != PROTOCOL_TYPE {
        return;
    }
    for member in &request.members {
        let declared = &scenario
            .members
            .iter()
            .find(|m| m.id == member.member_id)
            .expect("every request member is a scenario member")
            .subscription;
        let subscription =
            decode_subscription(&member.metadata).expect("the member's Subscription decodes");
        let declared: BTreeSet<&str> = declared.iter().map(String::as_str).collect();
        let decoded: BTreeSet<&str> = subscription.topics.iter().map(String::as_str).collect();
        assert_eq!(decoded, declared, "{}", member.member_id);
    }
});
