//! What a connection does with one request: the one type every API's handler answers with.

use kafka_protocol::messages::ResponseKind;

/// What a connection does with one request.
#[allow(clippy::large_enum_variant)] // one per request, written at once
pub enum Answer {
    /// Write this response, encoded at `version` with the header version it prescribes.
    Reply { version: i16, body: ResponseKind },
    /// Write nothing and go on (Produce with acks=0).
    Silent,
    /// Close the connection, answering nothing more.
    Close(String),
}

impl Answer {
    pub fn reply(version: i16, body: impl Into<ResponseKind>) -> Answer {
        Answer::Reply {
            version,
            body: body.into(),
        }
    }
}
