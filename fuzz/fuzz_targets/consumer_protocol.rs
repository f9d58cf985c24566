//! A member's JoinGroup metadata (Subscription) and a client leader's SyncGroup bytes
//! (Assignment), as the host decodes them. The first byte picks which. A Subscription that
//! decodes must encode and decode back to itself (what the host relays and simulates is what
//! the client sent); an Assignment that decodes must too. No input may panic or make the
//! decoders allocate by a count the bytes cannot hold (issue 14's defect 1: six bytes claiming
//! 2^31-1 partitions aborted the host).
#![no_main]

use assignor_wire::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [which, bytes @ ..] = data else {
        return;
    };
    if which % 2 == 0 {
        if let Ok(subscription) = decode_subscription(bytes) {
            let again = decode_subscription(&encode_subscription(&subscription))
                .expect("an encoded Subscription decodes");
            assert_eq!(again, subscription);
        }
    } else if let Some((partitions, user_data)) = decode_assignment(bytes) {
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        let encoded = encode_assignment(version, &partitions, user_data.as_deref());
        let again = decode_assignment(&encoded).expect("an encoded Assignment decodes");
        assert_eq!(again, (partitions, user_data));
    }
});
