//! One request frame for every API the host serves, at every version it serves: the first two
//! bytes pick the API (an entry of `versions::decoded()`: `SUPPORTED`, then the proxy-only
//! `PROXY_ONLY`) and its version, the rest is the header and body as a client wrote them. A frame that decodes must decode to that API and
//! version, and its header's correlation id must be the one in the bytes; none may panic or
//! allocate by a length prefix the frame cannot hold.
#![no_main]

use assignor_wire::request::{self, Inbound};
use assignor_wire::versions;
use bytes::{BufMut, Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [which, version, rest @ ..] = data else {
        return;
    };
    let apis = versions::decoded().count();
    let Some((api_key, min, max)) = versions::decoded().nth(*which as usize % apis) else {
        return;
    };
    let version = min + (*version as i16) % (max - min + 1);
    let mut frame = BytesMut::with_capacity(4 + rest.len());
    frame.put_i16(api_key as i16);
    frame.put_i16(version);
    frame.put_slice(rest);
    if let Ok(Inbound::Request(decoded)) = request::parse(Bytes::from(frame)) {
        assert_eq!(decoded.api_key, api_key);
        assert_eq!(decoded.version(), version);
        if rest.len() >= 4 {
            let correlation_id = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
            assert_eq!(decoded.header.correlation_id, correlation_id);
        }
    }
});
