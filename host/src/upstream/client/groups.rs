//! The group calls of [`super::UpstreamClient`] (commit, fetch and delete offsets, delete a
//! group), sent by the host itself to the group's upstream coordinator over its own
//! connections, with Kafka's own request types (kafka-protocol).
//!
//! **Why not librdkafka.** librdkafka 2.12.1 (the newest rdkafka-sys, 4.10.0) aborts the whole
//! process (`rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed`) when
//! a coordinator-targeted admin request (AlterConsumerGroupOffsets, ListConsumerGroupOffsets,
//! DeleteConsumerGroupOffsets, DeleteGroups) outlives its deadline while it waits for the
//! coordinator and the coordinator then answers or comes back (confluentinc/librdkafka#4605,
//! the fix in #5397 is not released). In proxy mode that is any upstream coordinator that is
//! slow or restarting: the host's tests reproduced it every time (`proxy_faults`). The calls
//! here do what librdkafka's do (FindCoordinator, then the request at the highest version
//! both sides speak, again on NOT_COORDINATOR and its kin until the deadline) with nothing
//! left running after the deadline. Topics and end offsets stay with librdkafka.
//!
//! The connections are the client's pool (`pool.rs`): one per broker, secured as `[upstream]`
//! says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::FindCoordinatorRequest;
use kafka_protocol::protocol::{Request, StrBytes};

use super::ClientError;
use super::pool::{Failure, Pool, Pooled, retry};

/// Versions of FindCoordinator spoken here: one key per request (v4 batches keys).
const FIND_COORDINATOR: (i16, i16) = (1, 3);

/// The codes that mean "ask again, maybe elsewhere": the coordinator moved, is loading, or is
/// not there yet.
fn moved(code: i16) -> bool {
    code == ResponseError::NotCoordinator.code()
        || code == ResponseError::CoordinatorNotAvailable.code()
        || code == ResponseError::CoordinatorLoadInProgress.code()
}

/// Whether any of `codes` means the request should go to the coordinator again.
pub(super) fn any_moved(codes: impl IntoIterator<Item = i16>) -> bool {
    codes.into_iter().any(moved)
}

/// Which broker coordinates which group.
pub(super) struct Groups {
    bootstrap: Vec<String>,
    timeout: Duration,
    pool: Arc<Pool>,
    /// The coordinator of each group asked so far, `host:port`.
    coordinators: Mutex<HashMap<String, String>>,
}

impl Groups {
    pub(super) fn new(bootstrap: Vec<String>, timeout: Duration, pool: Arc<Pool>) -> Groups {
        Groups {
            bootstrap,
            timeout,
            pool,
            coordinators: Mutex::new(HashMap::new()),
        }
    }

    /// Sends the request `build` makes (given the version) to `group`'s coordinator and returns
    /// the answer, again while the coordinator moves (`moved` says so from the answer) or the
    /// connection fails, until `request_timeout` has passed.
    pub(super) async fn call<R: Request>(
        &self,
        call: &'static str,
        group: &str,
        versions: (i16, i16),
        build: impl Fn(i16) -> R,
        moved: impl Fn(&R::Response) -> bool,
    ) -> Result<R::Response, ClientError> {
        retry(call, self.timeout, || async {
            let attempt = async {
                let connection = self.coordinator(call, group).await?;
                match self.pool.call(&connection, call, versions, &build).await? {
                    answer if moved(&answer) => Err(Failure::Moved),
                    answer => Ok(answer),
                }
            };
            let result = attempt.await;
            if let Err(Failure::Moved | Failure::Io(_)) = &result {
                self.forget(group);
            }
            result
        })
        .await
    }

    /// The connection to `group`'s coordinator, found with FindCoordinator on a bootstrap
    /// server when not known.
    async fn coordinator(&self, call: &'static str, group: &str) -> Result<Arc<Pooled>, Failure> {
        let known = self.coordinators.lock().unwrap().get(group).cloned();
        if let Some(addr) = known {
            return self.pool.get(&addr).await;
        }
        let bootstrap = self.pool.any(&self.bootstrap).await?;
        let request = |_| {
            FindCoordinatorRequest::default()
                .with_key(StrBytes::from_string(group.to_owned()))
                .with_key_type(0)
        };
        let answer = self
            .pool
            .call(&bootstrap, call, FIND_COORDINATOR, request)
            .await?;
        if moved(answer.error_code) {
            return Err(Failure::Moved);
        }
        if answer.error_code != 0 {
            return Err(Failure::Final(kafka_error(call, answer.error_code)));
        }
        let addr = format!("{}:{}", answer.host.as_str(), answer.port);
        self.coordinators
            .lock()
            .unwrap()
            .insert(group.to_owned(), addr.clone());
        self.pool.get(&addr).await
    }

    fn forget(&self, group: &str) {
        self.coordinators.lock().unwrap().remove(group);
    }
}

/// A [`ClientError::Kafka`] for `code`, named as Kafka names it.
pub(super) fn kafka_error(call: &'static str, code: i16) -> ClientError {
    let (name, message) = match ResponseError::try_from_code(code) {
        Some(e) => (format!("{e:?}"), e.to_string()),
        None => (format!("error {code}"), String::new()),
    };
    ClientError::Kafka {
        call,
        code,
        name,
        message,
    }
}
