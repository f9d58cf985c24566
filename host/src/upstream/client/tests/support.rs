//! Test glue: Apache Kafka (the shared cluster of tests/kafka, or one of a test's own), an
//! OffsetFetch read straight from it with kafka-protocol (bypassing librdkafka), a member
//! joined on it directly, and a producer.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, BytesMut};
use kafka_harness::{KafkaCluster, Setup};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, OffsetFetchRequest,
    OffsetFetchResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use crate::upstream::client::{ClientSettings, UpstreamClient};

/// A port nothing listens on (just released by the kernel).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A name no other test of this process uses in the shared cluster: `prefix-<n>`.
pub fn unique(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Apache Kafka for a test (tests/kafka): this process's shared single-node cluster, in which
/// the test uses names of its own ([`unique`]), or a cluster of the test's own that it may
/// stop.
pub enum Kafka {
    Shared(&'static KafkaCluster),
    Own(Box<KafkaCluster>),
}

impl Kafka {
    /// The process's shared cluster (started by the first test that asks).
    pub async fn shared() -> Kafka {
        Kafka::Shared(kafka_harness::shared_async().await)
    }

    /// A single-node cluster of the test's own, stopped when dropped.
    pub async fn own() -> Kafka {
        let cluster = kafka_harness::start_async(Setup::default())
            .await
            .unwrap_or_else(|e| panic!("starting a Kafka: {e:#}"));
        Kafka::Own(Box::new(cluster))
    }

    pub fn cluster(&self) -> &KafkaCluster {
        match self {
            Kafka::Shared(cluster) => cluster,
            Kafka::Own(cluster) => cluster,
        }
    }

    /// Node 1's PLAINTEXT listener.
    pub fn addr(&self) -> SocketAddr {
        self.cluster().nodes()[0].plaintext
    }

    pub fn bootstrap(&self) -> String {
        self.cluster().bootstrap().to_owned()
    }

    pub fn client(&self) -> UpstreamClient {
        UpstreamClient::connect(ClientSettings::new(vec![self.bootstrap()])).expect("connect")
    }

    fn config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", self.bootstrap());
        config
    }

    /// The partition count of `topic` in a Metadata answer (no auto-creation), `None` if absent.
    pub fn partition_count(&self, topic: &str) -> Option<usize> {
        let consumer: BaseConsumer = self.config().create().expect("metadata client");
        let metadata = consumer
            .fetch_metadata(Some(topic), Duration::from_secs(5))
            .expect("metadata");
        let topic = metadata.topics().iter().find(|t| t.name() == topic)?;
        topic.error().is_none().then(|| topic.partitions().len())
    }

    /// Waits up to 20 s for `topic` to have `partitions` partitions in the cluster's Metadata:
    /// Kafka answers CreateTopics and CreatePartitions once its controller has the change, and
    /// its brokers' Metadata shows it a moment later.
    pub fn wait_for_partitions(&self, topic: &str, partitions: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let seen = self.partition_count(topic);
            if seen == Some(partitions) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{topic}: {seen:?} partitions in Metadata after 20 s, {partitions} expected"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Produces `counts[p]` records to each partition `p` of `topic`, acknowledged.
    pub fn produce(&self, topic: &str, counts: &[usize]) {
        let producer: BaseProducer = self
            .config()
            .set("linger.ms", "0")
            .create()
            .expect("producer");
        for (partition, &count) in counts.iter().enumerate() {
            for i in 0..count {
                let payload = format!("record {i}");
                let record = BaseRecord::<(), _>::to(topic)
                    .partition(partition as i32)
                    .payload(&payload);
                producer
                    .send(record)
                    .map_err(|(e, _)| e)
                    .expect("enqueue a record");
            }
        }
        producer
            .flush(Duration::from_secs(10))
            .expect("every record acknowledged");
    }

    /// A consumer of `group` that joined on the cluster directly and owns partitions of `topic`;
    /// librdkafka keeps it a member (heartbeats) until it is dropped.
    pub fn member(&self, group: &str, topic: &str) -> BaseConsumer {
        let consumer: BaseConsumer = self
            .config()
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let deadline = Instant::now() + Duration::from_secs(20);
        while consumer.assignment().expect("assignment").count() == 0 {
            assert!(
                Instant::now() < deadline,
                "the direct member got no partitions in 20 s"
            );
            let _ = consumer.poll(Duration::from_millis(50));
        }
        consumer
    }

    /// OffsetFetch v5 for `group`, sent straight to the cluster with kafka-protocol: per partition,
    /// (partition, offset, leader epoch, metadata, error).
    pub fn raw_offsets(
        &self,
        group: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Vec<(i32, i64, i32, Option<String>, i16)> {
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_topics(Some(vec![
                OffsetFetchRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partition_indexes(partitions.to_vec()),
            ]));
        let response: OffsetFetchResponse = call(self.coordinator(group), &request, 5);
        assert_eq!(response.error_code, 0, "raw OffsetFetch error");
        let mut got: Vec<_> = response
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| {
                let metadata = p.metadata.as_ref().map(|m| m.to_string());
                (
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    metadata,
                    p.error_code,
                )
            })
            .collect();
        got.sort_by_key(|p| p.0);
        got
    }

    /// The PLAINTEXT address of `group`'s coordinator on the cluster (FindCoordinator v3).
    pub fn coordinator(&self, group: &str) -> SocketAddr {
        let request = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_string(group.to_owned()))
            .with_key_type(0);
        let found: FindCoordinatorResponse = call(self.addr(), &request, 3);
        assert_eq!(found.error_code, 0, "FindCoordinator {group}: {found:?}");
        let node = found.node_id.0;
        self.cluster().node(node).plaintext
    }
}

/// One request and its answer on a fresh blocking connection (to Kafka, or to a host).
pub fn call<R: Request>(addr: SocketAddr, request: &R, version: i16) -> R::Response {
    use std::io::{Read, Write};
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("upstream-client-tests")))
        .encode(&mut body, R::header_version(version))
        .expect("encode header");
    request.encode(&mut body, version).expect("encode request");
    let mut frame = BytesMut::new();
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(&frame).expect("send");
    let mut size = [0; 4];
    stream.read_exact(&mut size).expect("answer size");
    let mut answer = vec![0; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut answer).expect("answer");
    let mut answer = bytes::Bytes::from(answer);
    let header =
        ResponseHeader::decode(&mut answer, R::Response::header_version(version)).expect("header");
    assert_eq!(header.correlation_id, 7);
    let response = R::Response::decode(&mut answer, version).expect("decode answer");
    assert!(!answer.has_remaining(), "bytes left after the answer");
    response
}
