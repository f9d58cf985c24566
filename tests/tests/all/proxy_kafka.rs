//! Proxy mode in front of three real Apache Kafka 4.4 brokers (tests/kafka), for what is about
//! brokers: each broker behind a port of the host, Metadata naming those ports with the
//! brokers' racks and Kafka's own leaders, records produced on a leader's port read back there,
//! Kafka's own KIP-951 leader hints rewritten to the leader's port here, and a broker stopped
//! and started again while a group on the host stays stable.
//!
//! The scripted fake cluster (`fake_cluster`, proxy_wire.rs, proxy_topology.rs) stays for what
//! a real cluster cannot be made to do on cue: a broker added under a new id, a leader moved to
//! it, an answer delayed.

use std::time::{Duration, Instant};

use assignor_host_tests::proxy::{batch, fetch, produce, values};
use assignor_host_tests::{DEADLINE, KafkaClient, TestHost, topic_name};
use kafka_harness::{KafkaCluster, Setup};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{ElectLeadersRequest, MetadataResponse};

use super::admin_support::Member;
use super::proxy_support::{HOST, all_topics, brokers, create_on_kafka, expected_brokers, leaders};

/// Three nodes, each broker and controller (a quorum of three: one may stop).
async fn three_nodes() -> KafkaCluster {
    kafka_harness::start_async(Setup::nodes(3))
        .await
        .unwrap_or_else(|e| panic!("starting three Kafka nodes: {e:#}"))
}

/// `topic` with `partitions` partitions, each replicated on all three nodes.
async fn create_topic(kafka: &KafkaCluster, topic: &str, partitions: i32) {
    create_on_kafka(kafka, topic, partitions, 3).await;
}

/// Metadata (v12) for every topic on `client`.
async fn metadata(client: &mut KafkaClient) -> MetadataResponse {
    client.call(&all_topics(12), 12).await.unwrap()
}

/// Waits until Metadata through the host says `topic` has `partitions` partitions, each with
/// a leader satisfying `ok`; returns the leaders.
async fn leaders_once(
    host: &TestHost,
    topic: &str,
    partitions: usize,
    ok: impl Fn(&[i32]) -> bool,
) -> Vec<i32> {
    let deadline = Instant::now() + DEADLINE;
    let mut client = host.client().await;
    loop {
        let answer = metadata(&mut client).await;
        let known = answer
            .topics
            .iter()
            .any(|t| t.name.as_ref().map(|n| n.as_str()) == Some(topic));
        if known {
            let now = leaders(&answer, topic);
            if now.len() == partitions && now.iter().all(|&l| l > 0) && ok(&now) {
                return now;
            }
            assert!(Instant::now() < deadline, "{topic}'s leaders: {now:?}");
        }
        assert!(Instant::now() < deadline, "{topic} never in Metadata");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Produces `value` to `topic`'s `partition` on the host's port for `node` (v11), a broker
/// that Metadata has just named the partition's leader, returning the partition's error code
/// and base offset. Sent again while the answer is NOT_LEADER_OR_FOLLOWER, as a producer
/// retries it: the broker that answered Metadata may have applied the election before `node`
/// did, and `node` publishes a new image to its metadata cache before its replica manager
/// takes the leadership. A NOT_LEADER_OR_FOLLOWER appends nothing.
async fn produce_on(
    host: &TestHost,
    node: i32,
    topic: &str,
    partition: i32,
    value: &str,
) -> (i16, i64) {
    let deadline = Instant::now() + DEADLINE;
    let mut client = host.broker_client(node).await;
    loop {
        let answer = client
            .call(&produce(topic, partition, batch(&[value])), 11)
            .await
            .unwrap();
        let p = &answer.responses[0].partition_responses[0];
        if p.error_code != 6 || Instant::now() >= deadline {
            return (p.error_code, p.base_offset);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_kafka_brokers_each_behind_its_port_with_their_racks_leaders_and_hints() {
    let kafka = three_nodes().await;
    let host = TestHost::proxy_to(&kafka, |_| {}).await;
    create_topic(&kafka, "spread", 3).await;
    host.wait_for_topic("spread", 3).await;
    let leaders = leaders_once(&host, "spread", 3, |_| true).await;

    // Metadata through the host names every broker at its port here, with the rack Kafka
    // reports, and Kafka's own leaders.
    let through = metadata(&mut host.client().await).await;
    let mut named = brokers(&through);
    named.sort();
    let mut expected = expected_brokers(&host, &[1, 2, 3]);
    expected.sort();
    assert_eq!(named, expected);
    let racks: Vec<(i32, Option<String>)> = through
        .brokers
        .iter()
        .filter(|b| b.node_id.0 <= 3)
        .map(|b| (b.node_id.0, b.rack.as_ref().map(|r| r.to_string())))
        .collect();
    for (node, rack) in racks {
        assert_eq!(rack, Some(format!("rack-{node}")), "node {node}");
    }
    let direct = metadata(
        &mut KafkaClient::connect(kafka.nodes()[0].plaintext)
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(super::proxy_support::leaders(&direct, "spread"), leaders);

    for partition in 0..3 {
        let leader = leaders[partition as usize];
        // Produced on the leader's port here, read back there.
        let value = format!("p{partition}-on-{leader}");
        assert_eq!(
            produce_on(&host, leader, "spread", partition, &value).await,
            (0, 0),
            "partition {partition} on its leader {leader}"
        );
        let mut client = host.broker_client(leader).await;
        let fetched = client
            .call(&fetch("spread", partition, 0, 12), 12)
            .await
            .unwrap();
        let data = &fetched.responses[0].partitions[0];
        assert_eq!((data.error_code, data.high_watermark), (0, 1));
        assert_eq!(values(data.records.as_ref().expect("records")), [value]);

        // Sent to a follower's port: Kafka's NOT_LEADER_OR_FOLLOWER with its KIP-951 hint,
        // which names the leader at its port here.
        let follower = (1..=3).find(|&n| n != leader).unwrap();
        let mut wrong = host.broker_client(follower).await;
        let answer = wrong
            .call(&produce("spread", partition, batch(&["lost"])), 11)
            .await
            .unwrap();
        let p = &answer.responses[0].partition_responses[0];
        assert_eq!(
            p.error_code, 6,
            "NOT_LEADER_OR_FOLLOWER from node {follower}"
        );
        assert_eq!(p.current_leader.leader_id.0, leader);
        let hints: Vec<(i32, String, i32)> = answer
            .node_endpoints
            .iter()
            .map(|e| (e.node_id.0, e.host.to_string(), e.port))
            .collect();
        let port = i32::from(host.broker_port(leader).unwrap());
        assert_eq!(hints, [(leader, HOST.to_owned(), port)]);
    }
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_broker_stopped_and_started_again_while_a_group_on_the_host_stays_stable() {
    let kafka = three_nodes().await;
    let host = TestHost::proxy_to(&kafka, |_| {}).await;
    create_topic(&kafka, "moving", 3).await;
    host.wait_for_topic("moving", 3).await;
    let before = leaders_once(&host, "moving", 3, |_| true).await;
    // A member of a group on the host, subscribed to `orders` (which does not exist here: the
    // group's assignment is beside the point, its membership is).
    let mut member = Member::new(&host, "steady", "range").await;
    let joined = member.send_join().await;
    member.joined(joined).await;
    member.sync().await;
    assert_eq!(member.heartbeat().await, 0);

    // A controlled shutdown of node 2: Kafka moves its leaderships to the others first.
    let led_by_2 = before
        .iter()
        .position(|&l| l == 2)
        .expect("node 2 leads one") as i32;
    let stop = tokio::task::spawn_blocking({
        let dir = kafka.state().dir.clone();
        move || KafkaCluster::attach(&dir).unwrap().stop_node(2)
    });
    stop.await.unwrap().expect("node 2 stops");
    let moved = leaders_once(&host, "moving", 3, |l| !l.contains(&2)).await;
    let new_leader = moved[led_by_2 as usize];
    assert_eq!(
        produce_on(&host, new_leader, "moving", led_by_2, "while-2-is-away").await,
        (0, 0),
        "produced on the new leader's port"
    );
    // The host's port for node 2 has no broker behind it now: a request there closes the
    // connection (as a stopped broker's would), and the client looks the leader up again.
    let port = host.broker_port(2).expect("node 2's port");
    let closed = match KafkaClient::connect(([127, 0, 0, 1], port).into()).await {
        // In an UPSTREAM_SECURITY=sasl_ssl run the client logs in first: its SaslHandshake is
        // the request node 2 is not there to answer.
        Err(_) => true,
        Ok(mut gone) => {
            let sent = gone
                .send(&produce("moving", led_by_2, batch(&["x"])), 11)
                .await;
            sent.is_err() || gone.is_closed_by_host().await.unwrap()
        }
    };
    assert!(
        closed,
        "node 2's port still answers while node 2 is stopped"
    );
    // The group on the host never noticed.
    assert_eq!(
        member.heartbeat().await,
        0,
        "heartbeat while node 2 is away"
    );

    // Node 2 back, and made leader of its partition again (a preferred-leader election, as
    // Kafka's own balancer does after `leader.imbalance.check.interval.seconds`).
    let start = tokio::task::spawn_blocking({
        let dir = kafka.state().dir.clone();
        move || KafkaCluster::attach(&dir).unwrap().start_node(2)
    });
    start.await.unwrap().expect("node 2 starts again");
    let mut direct = KafkaClient::connect(kafka.nodes()[0].plaintext)
        .await
        .unwrap();
    let elect = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(30_000)
        .with_topic_partitions(Some(vec![
            TopicPartitions::default()
                .with_topic(topic_name("moving"))
                .with_partitions(vec![led_by_2]),
        ]));
    let deadline = Instant::now() + DEADLINE;
    loop {
        // Node 2 leads again once it has caught up (in the ISR); until then the election
        // answers PREFERRED_LEADER_NOT_AVAILABLE.
        let answer = direct.call(&elect, 2).await.unwrap();
        let code = answer.replica_election_results[0].partition_result[0].error_code;
        if code == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the election kept failing: {code}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    leaders_once(&host, "moving", 3, |l| l[led_by_2 as usize] == 2).await;
    assert_eq!(
        produce_on(&host, 2, "moving", led_by_2, "back-on-2").await,
        (0, 1),
        "node 2's port forwards to node 2 again, which has the record produced meanwhile"
    );
    assert_eq!(
        member.heartbeat().await,
        0,
        "heartbeat after node 2 is back"
    );
    host.stop().await;
}
