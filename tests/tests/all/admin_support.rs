//! Shared by the admin black-box tests: an HTTP client of the admin API, group members that
//! join, sync and heartbeat over real sockets as a client library does, and a scrape reader.

use assignor_host_tests::{KafkaClient, TestHost, decode_assignment, str, subscription};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{GroupId, HeartbeatRequest, JoinGroupRequest, SyncGroupRequest};
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub const JOIN_VERSION: i16 = 5;

/// The admin API of one host.
pub struct Admin {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Admin {
    pub fn new(host: &TestHost) -> Admin {
        Admin::at(host.admin_url(), None)
    }

    /// The API at `base` (`https://...` trusting the PEM CA `ca`), by the host's own client
    /// builder (reqwest here has no crypto provider of its own).
    pub fn at(base: String, ca: Option<&std::path::Path>) -> Admin {
        let http = assignor_host::tls::http_client(ca, "the test's CA")
            .expect("the CA loads")
            .build()
            .expect("an HTTP client");
        Admin {
            base,
            token: None,
            http,
        }
    }

    pub fn with_token(mut self, token: &str) -> Admin {
        self.token = Some(token.to_owned());
        self
    }

    /// Sends a request; the status and the body as JSON (or as a JSON string if it is not).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.expect("the admin API answers");
        let status = response.status();
        let text = response.text().await.expect("a body");
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(Method::GET, path, None).await
    }

    pub async fn json(&self, method: Method, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(method, path, Some(body.to_string().into_bytes()))
            .await
    }

    /// Uploads `wasm` as the next version of `name`; panics unless it was accepted.
    pub async fn push(&self, name: &str, wasm: &[u8]) -> Value {
        let (status, body) = self
            .send(
                Method::PUT,
                &format!("/v1/modules/{name}"),
                Some(wasm.to_vec()),
            )
            .await;
        assert!(
            status.is_success(),
            "upload of {name} refused: {status} {body}"
        );
        body
    }

    /// The text of `/metrics`.
    pub async fn scrape(&self) -> String {
        let (status, body) = self.get("/metrics").await;
        assert_eq!(status, StatusCode::OK);
        body.as_str().expect("metrics are text").to_owned()
    }
}

/// The value of the sample `name{labels}` in a scrape (0 when absent: a counter not yet
/// created has counted nothing).
pub fn sample(text: &str, name_and_labels: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// One consumer: its connection to the coordinator, member id and generation.
pub struct Member {
    pub client: KafkaClient,
    pub id: String,
    pub generation: i32,
    group: String,
    protocol: String,
}

impl Member {
    /// Connects and takes a member id (the two-step join of KIP-394).
    pub async fn new(host: &TestHost, group: &str, protocol: &str) -> Member {
        let mut member = Member {
            client: host.client().await,
            id: String::new(),
            generation: -1,
            group: group.to_owned(),
            protocol: protocol.to_owned(),
        };
        let first = member
            .client
            .call(&member.join(), JOIN_VERSION)
            .await
            .unwrap();
        assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
        member.id = first.member_id.to_string();
        member
    }

    pub fn join(&self) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(GroupId(str(&self.group)))
            .with_session_timeout_ms(30_000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(str(&self.id))
            .with_protocol_type(str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(str(&self.protocol))
                    .with_metadata(subscription(&["orders"], 3)),
            ])
    }

    /// Sends JoinGroup without waiting (it is parked until the join phase ends).
    pub async fn send_join(&mut self) -> i32 {
        self.client.send(&self.join(), JOIN_VERSION).await.unwrap()
    }

    /// The answer to [`Member::send_join`]; records the generation.
    pub async fn joined(&mut self, correlation_id: i32) {
        let response = self
            .client
            .receive::<JoinGroupRequest>(correlation_id, JOIN_VERSION)
            .await
            .unwrap();
        assert_eq!(response.error_code, 0, "JoinGroup failed");
        self.generation = response.generation_id;
    }

    /// SyncGroup; the member's assignment, `(topic, partitions)` sorted.
    pub async fn sync(&mut self) -> Vec<(String, Vec<i32>)> {
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(str(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(str(&self.id));
        let response = self.client.call(&request, 3).await.unwrap();
        assert_eq!(response.error_code, 0, "SyncGroup failed");
        decode_assignment(response.assignment).unwrap()
    }

    /// One Heartbeat; its error code.
    pub async fn heartbeat(&mut self) -> i16 {
        let request = HeartbeatRequest::default()
            .with_group_id(GroupId(str(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(str(&self.id));
        self.client.call(&request, 3).await.unwrap().error_code
    }

    /// Heartbeats until the coordinator answers REBALANCE_IN_PROGRESS.
    pub async fn until_rebalance(&mut self) {
        for _ in 0..100_000 {
            match self.heartbeat().await {
                0 => continue,
                27 => return,
                other => panic!("heartbeat answered {other}"),
            }
        }
        panic!("no rebalance started");
    }
}

/// Two members in one generation: `a` joins alone, then `b` joins and `a` rejoins (the order
/// a client library follows, with no timing assumptions). Returns them sorted by member id,
/// synced, with their assignments.
pub async fn two_members(
    host: &TestHost,
    group: &str,
    protocol: &str,
) -> ([Member; 2], [Vec<(String, Vec<i32>)>; 2]) {
    let mut a = Member::new(host, group, protocol).await;
    let alone = a.send_join().await;
    a.joined(alone).await;
    a.sync().await;
    let mut b = Member::new(host, group, protocol).await;
    let b_join = b.send_join().await;
    a.until_rebalance().await;
    let a_join = a.send_join().await;
    a.joined(a_join).await;
    b.joined(b_join).await;
    assert_eq!(a.generation, b.generation);
    let mut members = [a, b];
    members.sort_by(|x, y| x.id.cmp(&y.id));
    let assignments = rebalanced_assignments(&mut members).await;
    (members, assignments)
}

/// Every member syncs; their assignments in member order.
pub async fn rebalanced_assignments(members: &mut [Member; 2]) -> [Vec<(String, Vec<i32>)>; 2] {
    let first = members[0].sync().await;
    let second = members[1].sync().await;
    [first, second]
}

/// After a rebalance started: every member learns it from Heartbeat, rejoins, and syncs.
pub async fn rejoin(members: &mut [Member; 2]) -> [Vec<(String, Vec<i32>)>; 2] {
    for member in members.iter_mut() {
        member.until_rebalance().await;
    }
    let mut pending = Vec::new();
    for member in members.iter_mut() {
        pending.push(member.send_join().await);
    }
    for (member, correlation_id) in members.iter_mut().zip(pending) {
        member.joined(correlation_id).await;
    }
    rebalanced_assignments(members).await
}

/// `(topic, partitions)` for the `orders` topic.
pub fn orders(partitions: &[i32]) -> Vec<(String, Vec<i32>)> {
    vec![("orders".to_owned(), partitions.to_vec())]
}
