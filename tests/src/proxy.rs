//! Proxy mode under test: a host in front of a [`FakeCluster`], and the data-path requests and
//! record batches the proxy tests send through it.
//!
//! [`TestHost::proxy`] starts the host as `serve --upstream` would, with a free port per
//! upstream broker (`broker_ports_from = 0`), a short metadata refresh and short upstream
//! timeouts, so a test sees the host's own reads and bounded failures within its deadline.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiVersionsRequest, FetchRequest, ProduceRequest};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::fake_cluster::{FakeCluster, topic_id};
use crate::{DEADLINE, KafkaClient, TestHost, str, topic_name};

/// How often the host under test reads the upstream's Metadata again.
pub const METADATA_REFRESH: Duration = Duration::from_millis(300);
/// The host's bound on its own upstream calls (offsets, metadata) and on connecting upstream.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(5);

impl TestHost {
    /// A host in proxy mode in front of `cluster` (every broker a bootstrap server).
    pub async fn proxy(cluster: &FakeCluster) -> TestHost {
        TestHost::proxy_with(&cluster.bootstrap(), |_| {}).await
    }

    /// A host in proxy mode in front of `bootstrap` (`host:port,...`), changed by `edit`.
    /// Joins complete at once (no initial rebalance delay), so a test's steps decide the order.
    pub async fn proxy_with(
        bootstrap: &str,
        edit: impl FnOnce(&mut assignor_host::config::Config),
    ) -> TestHost {
        TestHost::with_config(|config| {
            let upstream = &mut config.upstream;
            upstream.bootstrap = bootstrap.split(',').map(str::to_owned).collect();
            upstream.broker_ports_from = Some(0);
            upstream.metadata_refresh = METADATA_REFRESH;
            upstream.request_timeout = UPSTREAM_TIMEOUT;
            upstream.connect_timeout = UPSTREAM_TIMEOUT;
            config.coordinator.initial_rebalance_delay_ms = 0;
            edit(config);
        })
        .await
    }

    /// The port the host serves upstream node `node` on, once it has seen the node.
    pub fn broker_port(&self, node: i32) -> Option<u16> {
        let proxy = self.server().proxy().expect("a host in proxy mode");
        proxy
            .ports()
            .into_iter()
            .find(|(id, ..)| *id == node)
            .map(|(_, port, _)| port)
    }

    /// A new connection to the host's port for upstream node `node`.
    pub async fn broker_client(&self, node: i32) -> KafkaClient {
        let port = self
            .broker_port(node)
            .unwrap_or_else(|| panic!("the host serves no port for node {node}"));
        KafkaClient::connect(([127, 0, 0, 1], port).into())
            .await
            .expect("connect to a broker port of the host")
    }

    /// Waits until the host's catalog (the upstream's topics, from its own Metadata reads)
    /// has `topic` with `partitions`; panics after [`DEADLINE`].
    pub async fn wait_for_topic(&self, topic: &str, partitions: i32) {
        let mut topics = self.server().catalog().subscribe();
        let known = topics.wait_for(|view| {
            view.get(topic)
                .is_some_and(|t| t.partition_count == partitions)
        });
        tokio::time::timeout(DEADLINE, known)
            .await
            .unwrap_or_else(|_| panic!("the host never mirrored {topic} with {partitions}"))
            .expect("the catalog lives as long as the host");
    }
}

/// ApiVersions as a client sends it: v3+ must name the client's software (Kafka's rule,
/// which the host applies when it answers itself; the fake does not check).
pub fn api_versions() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(str("assignor-host-tests"))
        .with_client_software_version(str("1.0"))
}

/// One uncompressed v2 record batch of `values`, base offset 0.
pub fn batch(values: &[&str]) -> Bytes {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // One batch with base sequence -1 (no idempotence), as a plain producer sends.
            sequence: i as i32 - 1,
            timestamp: 1000 + i as i64,
            key: None,
            value: Some(Bytes::copy_from_slice(value.as_bytes())),
            headers: IndexMap::new(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).expect("batch encodes");
    buf.freeze()
}

/// The values of every record in `records` (concatenated batches), in offset order.
pub fn values(records: &Bytes) -> Vec<String> {
    let mut buf = records.clone();
    RecordBatchDecoder::decode_all(&mut buf)
        .expect("batches decode")
        .into_iter()
        .flat_map(|set| set.records)
        .map(|r| String::from_utf8(r.value.expect("a value").to_vec()).expect("utf-8"))
        .collect()
}

/// A Produce (`acks = -1`) of `records` to `topic`'s `partition`.
pub fn produce(topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(topic_name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ]),
        ])
}

/// A Fetch of `topic`'s `partition` from `offset`, naming the topic as `version` requires
/// (v13+ by id: the fake's ids are [`topic_id`]).
pub fn fetch(topic: &str, partition: i32, offset: i64, version: i16) -> FetchRequest {
    let mut fetched = FetchTopic::default().with_partitions(vec![
        FetchPartition::default()
            .with_partition(partition)
            .with_fetch_offset(offset)
            .with_partition_max_bytes(1 << 20),
    ]);
    if version >= 13 {
        fetched.topic_id = topic_id(topic);
    } else {
        fetched.topic = topic_name(topic);
    }
    FetchRequest::default()
        .with_max_wait_ms(50)
        .with_min_bytes(1)
        .with_max_bytes(1 << 24)
        .with_session_epoch(-1)
        .with_topics(vec![fetched])
}
