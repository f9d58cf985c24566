//! What can go wrong talking to the upstream cluster, as opposed to a Kafka error code the
//! cluster answers for one partition, topic or group (those are data in the results).

use std::time::Duration;

use thiserror::Error;

/// A call to the upstream that produced no answer to act on.
#[derive(Debug, Error)]
pub enum ClientError {
    /// No answer within the call's bound (`request_timeout`), with no sign that the cluster is
    /// unreachable: it is slow, or the coordinator is moving.
    #[error("upstream {call} timed out after {timeout:?}")]
    TimedOut {
        call: &'static str,
        timeout: Duration,
    },
    /// No answer, and the last attempt's connection failed (refused, reset, name not
    /// resolved, closed); `detail` says how.
    #[error("upstream unreachable ({call}): {detail}")]
    Unreachable { call: &'static str, detail: String },
    /// The request as a whole was refused: an error for the group (for the group-offsets calls)
    /// or for the request, with Kafka's name and message. `code` is Kafka's (negative for an
    /// answer the host cannot use: -199 for one that is not the request's).
    #[error("upstream {call}: {name} ({code}): {message}")]
    Kafka {
        call: &'static str,
        code: i16,
        name: String,
        message: String,
    },
    /// An argument no cluster takes (a partition count below 1), refused before sending.
    #[error("invalid upstream {call}: {message}")]
    InvalidArgument { call: &'static str, message: String },
    /// The upstream refuses the host's connection: its TLS or its SASL login failed. The text
    /// names the setting to change; trying again without changing it does not help.
    #[error("the upstream refuses the host: {0}")]
    Refused(String),
    /// The client could not be created (a bad property, an invalid setting).
    #[error("cannot create the upstream client: {0}")]
    Create(String),
}

impl ClientError {
    /// The Kafka error code of a [`ClientError::Kafka`] (the top-level code of the answer).
    pub fn kafka_code(&self) -> Option<i16> {
        match self {
            ClientError::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }
}
