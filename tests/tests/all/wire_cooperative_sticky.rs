//! KIP-429 over real sockets with the built-in `cooperative-sticky` module: two consumers that
//! report what they own (Subscription v3 `owned_partitions` and `generation_id`, as librdkafka
//! and the Java client send them) and behave as cooperative clients do.
//!
//! 1. `a` joins alone and gets all six partitions.
//! 2. `b` joins; `a` rejoins still owning all six. The module keeps three with `a` and leaves
//!    the other three unassigned: they still belong to `a`, so nobody may have them in this
//!    generation (the host's cooperative check would refuse otherwise). `b` gets nothing yet.
//! 3. `a` revokes the three it lost and rejoins at once; `b` follows the rebalance. Now the
//!    three are free and `b` gets them: the hand-over took two rounds, and `a` never lost the
//!    partitions it kept.
//! 4. `b` leaves: its partitions have no other owner, so `a` gets them in one round.
//!
//! Every round is computed by the module itself (the admin API shows no fallback).

use assignor_host_tests::{KafkaClient, TestHost, decode_assignment, str, topic_name};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    ConsumerProtocolSubscription, GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    SyncGroupRequest,
};
use kafka_protocol::protocol::Encodable;

use crate::admin_support::Admin;

const GROUP: &str = "coop";
const TOPIC: &str = "orders";
const STRATEGY: &str = "cooperative-sticky";
const JOIN_VERSION: i16 = 5;

/// A cooperative consumer: what it owns and the generation it owns it in go into every join.
struct Consumer {
    client: KafkaClient,
    id: String,
    generation: i32,
    owned: Vec<i32>,
}

/// Subscription v3 with owned partitions and their generation.
fn subscription(owned: &[i32], generation: i32) -> Bytes {
    let mut subscription = ConsumerProtocolSubscription::default()
        .with_topics(vec![str(TOPIC)])
        .with_generation_id(generation);
    if !owned.is_empty() {
        subscription.owned_partitions = vec![
            TopicPartition::default()
                .with_topic(topic_name(TOPIC))
                .with_partitions(owned.to_vec()),
        ];
    }
    let mut buf = BytesMut::new();
    buf.put_i16(3);
    subscription
        .encode(&mut buf, 3)
        .expect("subscription encodes");
    buf.freeze()
}

impl Consumer {
    /// Connects and takes a member id (KIP-394's two-step join).
    async fn new(host: &TestHost) -> Consumer {
        let mut consumer = Consumer {
            client: host.client().await,
            id: String::new(),
            generation: -1,
            owned: Vec::new(),
        };
        let first = consumer
            .client
            .call(&consumer.join(), JOIN_VERSION)
            .await
            .unwrap();
        assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
        consumer.id = first.member_id.to_string();
        consumer
    }

    fn join(&self) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(GroupId(str(GROUP)))
            .with_session_timeout_ms(30_000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(str(&self.id))
            .with_protocol_type(str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(str(STRATEGY))
                    .with_metadata(subscription(&self.owned, self.generation)),
            ])
    }

    /// Sends JoinGroup (parked until the join phase ends).
    async fn send_join(&mut self) -> i32 {
        self.client.send(&self.join(), JOIN_VERSION).await.unwrap()
    }

    async fn joined(&mut self, correlation_id: i32) {
        let response = self
            .client
            .receive::<JoinGroupRequest>(correlation_id, JOIN_VERSION)
            .await
            .unwrap();
        assert_eq!(response.error_code, 0, "JoinGroup failed");
        assert_eq!(response.protocol_name.as_deref(), Some(STRATEGY));
        self.generation = response.generation_id;
    }

    /// SyncGroup; the partitions of `orders` it was given. Like a cooperative client, it then
    /// owns exactly those (revoking the rest) in this generation.
    async fn sync(&mut self) -> Vec<i32> {
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(str(GROUP)))
            .with_generation_id(self.generation)
            .with_member_id(str(&self.id));
        let response = self.client.call(&request, 3).await.unwrap();
        assert_eq!(response.error_code, 0, "SyncGroup failed");
        let assigned: Vec<i32> = decode_assignment(response.assignment)
            .unwrap()
            .into_iter()
            .filter(|(topic, _)| topic == TOPIC)
            .flat_map(|(_, partitions)| partitions)
            .collect();
        self.owned = assigned.clone();
        assigned
    }

    /// Heartbeats until the coordinator answers REBALANCE_IN_PROGRESS.
    async fn until_rebalance(&mut self) {
        for _ in 0..100_000 {
            let request = HeartbeatRequest::default()
                .with_group_id(GroupId(str(GROUP)))
                .with_generation_id(self.generation)
                .with_member_id(str(&self.id));
            match self.client.call(&request, 3).await.unwrap().error_code {
                0 => continue,
                27 => return,
                other => panic!("heartbeat answered {other}"),
            }
        }
        panic!("no rebalance started");
    }
}

/// The module, not the fallback, computed the group's last assignment.
async fn computed_by_the_module(admin: &Admin) {
    let (_, detail) = admin.get(&format!("/v1/groups/{GROUP}")).await;
    assert_eq!(detail["strategy"], STRATEGY, "{detail}");
    assert_eq!(detail["last_run"]["module"], STRATEGY, "{detail}");
    assert_eq!(detail["last_run"]["fallback_used"], false, "{detail}");
}

#[tokio::test]
async fn a_partition_changes_owner_over_two_rounds_and_never_has_two() {
    let host = TestHost::with_config(|c| {
        c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
            name: TOPIC.into(),
            partitions: 6,
            partition_racks: Vec::new(),
        }];
        c.coordinator.initial_rebalance_delay_ms = 0;
    })
    .await;
    let admin = Admin::new(&host);

    // 1. Alone.
    let mut a = Consumer::new(&host).await;
    let join = a.send_join().await;
    a.joined(join).await;
    assert_eq!(a.sync().await, [0, 1, 2, 3, 4, 5]);
    computed_by_the_module(&admin).await;

    // 2. `b` joins; `a` rejoins owning all six. Three stay with `a`, three wait.
    let mut b = Consumer::new(&host).await;
    let b_join = b.send_join().await;
    a.until_rebalance().await;
    let a_join = a.send_join().await;
    a.joined(a_join).await;
    b.joined(b_join).await;
    assert_eq!(a.generation, b.generation);
    assert_eq!(a.sync().await, [0, 1, 2]);
    assert!(b.sync().await.is_empty(), "b may not get what a still owns");
    computed_by_the_module(&admin).await;

    // 3. `a` revoked 3, 4 and 5 and rejoins at once; `b` follows. Now `b` gets them.
    let a_join = a.send_join().await;
    b.until_rebalance().await;
    let b_join = b.send_join().await;
    a.joined(a_join).await;
    b.joined(b_join).await;
    assert_eq!(a.sync().await, [0, 1, 2], "a keeps what it kept");
    assert_eq!(b.sync().await, [3, 4, 5]);
    computed_by_the_module(&admin).await;

    // 4. `b` leaves: nobody else owns its partitions, so `a` gets them in one round.
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(str(GROUP)))
        .with_members(vec![MemberIdentity::default().with_member_id(str(&b.id))]);
    assert_eq!(b.client.call(&leave, 3).await.unwrap().error_code, 0);
    a.until_rebalance().await;
    let a_join = a.send_join().await;
    a.joined(a_join).await;
    assert_eq!(a.sync().await, [0, 1, 2, 3, 4, 5]);
    computed_by_the_module(&admin).await;
    host.stop().await;
}
