//! A connection's bytes as a client sends them: the size-prefixed frames the codec cuts with
//! the host's default caps per API, each decoded into a request (header and body) as the
//! connection would. Whatever the bytes, no panic, no abort and no allocation by a length
//! prefix (libFuzzer's `-malloc_limit_mb` in `fuzz/run` fails the run on one); a frame over
//! its API's cap is refused before its body is buffered.
#![no_main]

use assignor_wire::codec::{FrameCaps, FrameCodec, FrameError};
use assignor_wire::request;
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let caps = FrameCaps {
        bytes: 100 * 1024 * 1024,
        group: 8 * 1024 * 1024,
        local: 1024 * 1024,
        relayed: |_| false,
    };
    let mut codec = FrameCodec::new(caps);
    let mut src = BytesMut::from(data);
    loop {
        match codec.decode(&mut src) {
            Ok(Some(frame)) => {
                let _ = request::parse(frame.freeze());
            }
            Ok(None) => break,
            Err(FrameError::TooLarge { size, max, .. }) => {
                assert!(size > max);
                break;
            }
            Err(_) => break,
        }
    }
});
