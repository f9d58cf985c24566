//! Tests of the fake cluster itself: a wrong fake makes wrong proxy tests.
//!
//! They speak to the brokers with the crate's own raw client ([`KafkaClient`]: a request with
//! its header, encoded by `kafka-protocol`; a size-prefixed answer decoded at the header version
//! the protocol prescribes, with no byte left over). Builders for the requests and record
//! batches the tests send live here; the tests are split by what they check.

mod cluster;
mod data;
mod hooks;
mod offsets;
mod pipelining;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    FetchRequest, MetadataRequest, MetadataResponse, ProduceRequest, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::{FakeCluster, topic_id};
use crate::{KafkaClient, topic_name};

/// Three brokers (1, 2, 3): `orders` with 6 partitions (leaders 1 2 3 1 2 3), `audit` with 2.
async fn three_brokers() -> FakeCluster {
    FakeCluster::start(&[1, 2, 3], &[("orders", 6), ("audit", 2)]).await
}

async fn connect(cluster: &FakeCluster, broker: i32) -> KafkaClient {
    KafkaClient::connect(cluster.broker_addr(broker))
        .await
        .expect("connect to a fake broker")
}

/// Metadata at `version` from `broker`, checked to re-encode to exactly the bytes received.
async fn metadata(
    cluster: &FakeCluster,
    broker: i32,
    request: &MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let mut client = connect(cluster, broker).await;
    let correlation_id = client.send(request, version).await.unwrap();
    let frame = client.read_frame().await.unwrap().expect("an answer");
    let header_version = MetadataResponse::header_version(version);
    let mut rest = frame.clone();
    let header = ResponseHeader::decode(&mut rest, header_version).unwrap();
    let response = MetadataResponse::decode(&mut rest, version).unwrap();
    assert!(!rest.has_remaining(), "v{version}: bytes left");
    assert_eq!(header.correlation_id, correlation_id);
    let mut again = BytesMut::new();
    header.encode(&mut again, header_version).unwrap();
    response.encode(&mut again, version).unwrap();
    assert_eq!(
        again.freeze(),
        frame,
        "v{version} re-encodes to the same bytes"
    );
    response
}

/// Metadata for every topic at `version` (v0 says "all" with an empty list).
fn all_topics(version: i16) -> MetadataRequest {
    MetadataRequest::default().with_topics((version == 0).then(Vec::new))
}

/// One uncompressed v2 batch of `values`, base offset 0, timestamps 1000, 1001, ...
fn batch(values: &[&str]) -> Bytes {
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
            // kafka-protocol keeps records in one batch while `offset - sequence` is constant;
            // the batch then carries base sequence -1 (no idempotence), as a plain producer sends.
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

/// `(offset, value)` of every record in `records` (concatenated batches).
fn decode(records: &Bytes) -> Vec<(i64, String)> {
    let mut buf = records.clone();
    RecordBatchDecoder::decode_all(&mut buf)
        .expect("batches decode")
        .into_iter()
        .flat_map(|set| set.records)
        .map(|r| {
            let value = r.value.expect("a value");
            (r.offset, String::from_utf8(value.to_vec()).expect("utf-8"))
        })
        .collect()
}

/// A Produce of `records` to `topic`'s `partition`.
fn produce(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
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

/// A Fetch of `topic`'s `partition` from `offset`, naming the topic as `version` requires.
fn fetch(topic: &str, partition: i32, offset: i64, version: i16) -> FetchRequest {
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
        .with_topics(vec![fetched])
}
