//! Transactions through the host in proxy mode, in front of a real Apache Kafka 4.4 (the
//! harness's shared single node): the transaction's own requests (FindCoordinator for a
//! transactional id, InitProducerId, AddOffsetsToTxn, EndTxn) pass through to Kafka's
//! transaction coordinator, while TxnOffsetCommit comes to the group's coordinator, the host,
//! which checks it against its group and commits it on Kafka inside the client's transaction.
//! Checked on Kafka directly: the offsets are pending (UNSTABLE_OFFSET_COMMIT under
//! `require_stable`, through the host and on Kafka) until the transaction commits, then they
//! are the group's; an aborted transaction's offsets never are. Also: which of these APIs each
//! mode offers, and that the streams group protocol (KIP-1071), which would form the group on
//! Kafka behind the host's back, is not offered in proxy mode.

use std::time::{Duration, Instant};

use assignor_host_tests::proxy::api_versions;
use assignor_host_tests::{DEADLINE, KafkaClient, TestHost, str, topic_name};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, ApiKey, ApiVersionsResponse, CreateTopicsRequest, EndTxnRequest,
    FindCoordinatorRequest, GroupId, InitProducerIdRequest, OffsetFetchRequest,
    TxnOffsetCommitRequest,
};

use super::admin_support::{Admin, Member, sample};

const UNSTABLE_OFFSET_COMMIT: i16 = 88;
const ILLEGAL_GENERATION: i16 = 22;
const UNKNOWN_MEMBER_ID: i16 = 25;
/// Errors the transaction coordinator answers while it gets ready or finishes the previous
/// step, which a client retries: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
/// NOT_COORDINATOR, CONCURRENT_TRANSACTIONS.
const NOT_YET: [i16; 4] = [14, 15, 16, 51];

/// The shared Kafka node and a host in front of it.
async fn kafka_and_host() -> (&'static kafka_harness::KafkaCluster, TestHost) {
    let kafka = kafka_harness::shared_async().await;
    let host = TestHost::proxy_to(kafka, |_| {}).await;
    (kafka, host)
}

/// A name no other test in this process's Kafka uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// `topic` with `partitions` partitions, created on Kafka itself; the host mirrors it.
async fn create_topic(kafka: &kafka_harness::KafkaCluster, host: &TestHost, topic: &str) {
    let mut direct = kafka_client(kafka).await;
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(topic_name(topic))
                .with_num_partitions(2)
                .with_replication_factor(1),
        ]);
    let answer = direct.call(&request, 5).await.unwrap();
    assert_eq!(answer.topics[0].error_code, 0, "{:?}", answer.topics[0]);
    host.wait_for_topic(topic, 2).await;
}

async fn kafka_client(kafka: &kafka_harness::KafkaCluster) -> KafkaClient {
    KafkaClient::connect(kafka.nodes()[0].plaintext)
        .await
        .unwrap()
}

/// Calls `request` until its error code (`code`) is none of [`NOT_YET`]; returns the answer.
async fn settled<R: kafka_protocol::protocol::Request>(
    client: &mut KafkaClient,
    request: &R,
    version: i16,
    code: impl Fn(&R::Response) -> i16,
) -> R::Response {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let answer = client.call(request, version).await.unwrap();
        if !NOT_YET.contains(&code(&answer)) {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "still {} after {DEADLINE:?}",
            code(&answer)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One transactional producer, as a client runs it through the host: its transaction
/// coordinator found through the host (FindCoordinator passed up, answered with the port the
/// host serves that broker on), then spoken to there.
struct Producer {
    transactional_id: String,
    coordinator: KafkaClient,
    producer_id: i64,
    epoch: i16,
    /// The version of InitProducerId, AddOffsetsToTxn and EndTxn (4: transaction v1, 5:
    /// EndTxn of transaction v2, KIP-890).
    end_txn_version: i16,
}

impl Producer {
    async fn init(host: &TestHost, transactional_id: &str, end_txn_version: i16) -> Producer {
        let mut bootstrap = host.client().await;
        let find = FindCoordinatorRequest::default()
            .with_key(str(transactional_id))
            .with_key_type(1);
        let found = settled(&mut bootstrap, &find, 3, |r| r.error_code).await;
        assert_eq!(found.error_code, 0, "{found:?}");
        let port = u16::try_from(found.port).unwrap();
        assert_ne!(
            port,
            host.addr().port(),
            "a transaction's coordinator is a broker, not the host"
        );
        let addr = format!("{}:{port}", found.host.as_str());
        let mut coordinator = KafkaClient::connect(addr.parse().unwrap()).await.unwrap();
        let init = InitProducerIdRequest::default()
            .with_transactional_id(Some(str(transactional_id).into()))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id((-1).into())
            .with_producer_epoch(-1);
        let answer = settled(&mut coordinator, &init, 4, |r| r.error_code).await;
        assert_eq!(answer.error_code, 0, "{answer:?}");
        Producer {
            transactional_id: transactional_id.to_owned(),
            coordinator,
            producer_id: answer.producer_id.0,
            epoch: answer.producer_epoch,
            end_txn_version,
        }
    }

    /// AddOffsetsToTxn for `group` (transaction v1: the client adds the group's offsets
    /// partition to the transaction before its TxnOffsetCommit).
    async fn add_offsets(&mut self, group: &str) {
        let request = AddOffsetsToTxnRequest::default()
            .with_transactional_id(str(&self.transactional_id).into())
            .with_producer_id(self.producer_id.into())
            .with_producer_epoch(self.epoch)
            .with_group_id(GroupId(str(group)));
        let answer = settled(&mut self.coordinator, &request, 4, |r| r.error_code).await;
        assert_eq!(answer.error_code, 0, "AddOffsetsToTxn: {answer:?}");
    }

    /// EndTxn: commit or abort.
    async fn end(&mut self, commit: bool) {
        let request = EndTxnRequest::default()
            .with_transactional_id(str(&self.transactional_id).into())
            .with_producer_id(self.producer_id.into())
            .with_producer_epoch(self.epoch)
            .with_committed(commit);
        let version = self.end_txn_version;
        let answer = settled(&mut self.coordinator, &request, version, |r| r.error_code).await;
        assert_eq!(answer.error_code, 0, "EndTxn: {answer:?}");
        if version >= 5 {
            // Transaction v2 bumps the epoch at every transaction's end.
            self.epoch = answer.producer_epoch;
        }
    }

    /// A TxnOffsetCommit of `offsets` (partition, offset) of `topic` by `member` at
    /// `generation`, at `version`.
    fn offsets(
        &self,
        group: &str,
        topic: &str,
        member: &str,
        generation: i32,
        offsets: &[(i32, i64)],
    ) -> TxnOffsetCommitRequest {
        TxnOffsetCommitRequest::default()
            .with_transactional_id(str(&self.transactional_id).into())
            .with_group_id(GroupId(str(group)))
            .with_producer_id(self.producer_id.into())
            .with_producer_epoch(self.epoch)
            .with_generation_id(generation)
            .with_member_id(str(member))
            .with_topics(vec![
                TxnOffsetCommitRequestTopic::default()
                    .with_name(topic_name(topic))
                    .with_partitions(
                        offsets
                            .iter()
                            .map(|&(partition, offset)| {
                                TxnOffsetCommitRequestPartition::default()
                                    .with_partition_index(partition)
                                    .with_committed_offset(offset)
                            })
                            .collect(),
                    ),
            ])
    }
}

/// The codes of a TxnOffsetCommit answer, in order.
async fn txn_commit(
    client: &mut KafkaClient,
    request: &TxnOffsetCommitRequest,
    v: i16,
) -> Vec<i16> {
    let answer = client.call(request, v).await.unwrap();
    (answer.topics.iter())
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// OffsetFetch v8 (groups[]) of `topic`'s partitions 0 and 1: `(offset, error)` each.
async fn fetched(
    client: &mut KafkaClient,
    group: &str,
    topic: &str,
    require_stable: bool,
) -> Vec<(i64, i16)> {
    let request = OffsetFetchRequest::default()
        .with_require_stable(require_stable)
        .with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(str(group)))
                .with_topics(Some(vec![
                    OffsetFetchRequestTopics::default()
                        .with_name(topic_name(topic))
                        .with_partition_indexes(vec![0, 1]),
                ])),
        ]);
    let answer = client.call(&request, 8).await.unwrap();
    let group = &answer.groups[0];
    assert_eq!(group.error_code, 0, "OffsetFetch of {group:?}");
    (group.topics.iter())
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.committed_offset, p.error_code))
        .collect()
}

/// Reads stable offsets until they are `want` (the commit markers of a transaction that just
/// ended are written a moment after EndTxn answers); panics with the last read after the
/// deadline.
async fn until_stable(client: &mut KafkaClient, group: &str, topic: &str, want: &[(i64, i16)]) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let now = fetched(client, group, topic, true).await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{group}: stable offsets {now:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactions_offsets_are_pending_until_it_commits_and_never_the_groups_if_it_aborts() {
    let (kafka, host) = kafka_and_host().await;
    let (group, topic) = (unique("txn-group"), unique("txn-topic"));
    create_topic(kafka, &host, &topic).await;
    // A member of the host's group, as a consume-transform-produce application's consumer.
    let mut member = Member::new(&host, &group, "range").await;
    let join = member.send_join().await;
    member.joined(join).await;
    member.sync().await;
    let mut producer = Producer::init(&host, &unique("txn-id"), 4).await;
    let mut through_host = host.client().await;
    let mut direct = kafka_client(kafka).await;

    producer.add_offsets(&group).await;
    // The host checks the member and generation as Kafka's coordinator would.
    let stale = producer.offsets(&group, &topic, &member.id, member.generation - 1, &[(0, 1)]);
    assert_eq!(
        txn_commit(&mut through_host, &stale, 4).await,
        vec![ILLEGAL_GENERATION]
    );
    let stranger = producer.offsets(&group, &topic, "stranger", member.generation, &[(0, 1)]);
    assert_eq!(
        txn_commit(&mut through_host, &stranger, 4).await,
        vec![UNKNOWN_MEMBER_ID]
    );
    let offsets = producer.offsets(
        &group,
        &topic,
        &member.id,
        member.generation,
        &[(0, 5), (1, 9)],
    );
    assert_eq!(txn_commit(&mut through_host, &offsets, 4).await, vec![0, 0]);

    // Pending in Kafka's coordinator: a read_committed consumer (require_stable) is told to
    // wait, through the host as on Kafka; an uncommitted read sees no offset yet.
    let unstable = vec![(-1, UNSTABLE_OFFSET_COMMIT); 2];
    assert_eq!(
        fetched(&mut through_host, &group, &topic, true).await,
        unstable
    );
    assert_eq!(fetched(&mut direct, &group, &topic, true).await, unstable);
    assert_eq!(
        fetched(&mut through_host, &group, &topic, false).await,
        vec![(-1, 0); 2]
    );

    producer.end(true).await;
    let committed = [(5, 0), (9, 0)];
    until_stable(&mut through_host, &group, &topic, &committed).await;
    until_stable(&mut direct, &group, &topic, &committed).await;

    // A second transaction, aborted: its offsets never become the group's.
    producer.add_offsets(&group).await;
    let aborted = producer.offsets(
        &group,
        &topic,
        &member.id,
        member.generation,
        &[(0, 50), (1, 90)],
    );
    assert_eq!(txn_commit(&mut through_host, &aborted, 4).await, vec![0, 0]);
    assert_eq!(fetched(&mut direct, &group, &topic, true).await, unstable);
    producer.end(false).await;
    until_stable(&mut through_host, &group, &topic, &committed).await;
    assert_eq!(fetched(&mut direct, &group, &topic, false).await, committed);

    // Each TxnOffsetCommit was the host's to answer: counted by its metrics, by error.
    let metrics = Admin::new(&host).scrape().await;
    let answered = |error: &str| {
        sample(
            &metrics,
            &format!(
                "assignor_host_kafka_errors_total{{api=\"TxnOffsetCommit\",error=\"{error}\"}}"
            ),
        )
    };
    assert_eq!(
        (
            answered("NONE"),
            answered("ILLEGAL_GENERATION"),
            answered("UNKNOWN_MEMBER_ID")
        ),
        (4.0, 1.0, 1.0),
        "{metrics}"
    );
}

/// Whether Kafka runs transaction v2 (KIP-890 part 2), as its ApiVersions says.
fn transaction_version(versions: &ApiVersionsResponse) -> i16 {
    (versions.finalized_features.iter())
        .find(|f| f.name.as_str() == "transaction.version")
        .map_or(0, |f| f.max_version_level)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_transaction_v2_the_offsets_go_up_at_v5_and_kafka_adds_them_to_the_transaction() {
    let (kafka, host) = kafka_and_host().await;
    let kafka_versions = kafka_client(kafka)
        .await
        .call(&api_versions(), 3)
        .await
        .unwrap();
    assert!(
        transaction_version(&kafka_versions) >= 2,
        "Kafka 4.4 as the harness formats it runs transaction v2: {:?}",
        kafka_versions.finalized_features
    );
    let (group, topic) = (unique("txn2-group"), unique("txn2-topic"));
    create_topic(kafka, &host, &topic).await;
    let mut producer = Producer::init(&host, &unique("txn2-id"), 5).await;
    let mut through_host = host.client().await;
    // No AddOffsetsToTxn: at v5 the group coordinator adds the offsets to the transaction
    // itself. The host sends it on at the client's version; at v4 Kafka would refuse it, the
    // offsets partition not being in the transaction.
    let offsets = producer.offsets(&group, &topic, "", -1, &[(0, 3), (1, 4)]);
    assert_eq!(txn_commit(&mut through_host, &offsets, 5).await, vec![0, 0]);
    assert_eq!(
        fetched(&mut through_host, &group, &topic, true).await,
        vec![(-1, UNSTABLE_OFFSET_COMMIT); 2]
    );
    producer.end(true).await;
    until_stable(&mut through_host, &group, &topic, &[(3, 0), (4, 0)]).await;
    let mut direct = kafka_client(kafka).await;
    assert_eq!(
        fetched(&mut direct, &group, &topic, false).await,
        vec![(3, 0), (4, 0)]
    );
}

/// `(min, max)` of `key` in an ApiVersions answer.
fn range(versions: &ApiVersionsResponse, key: i16) -> Option<(i16, i16)> {
    (versions.api_keys.iter())
        .find(|v| v.api_key == key)
        .map(|v| (v.min_version, v.max_version))
}

/// The streams group protocol's APIs (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe.
const STREAMS_GROUP_APIS: [i16; 2] = [88, 89];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_mode_offers_txn_offset_commit_and_produce_by_name_and_never_the_streams_protocol() {
    let (kafka, host) = kafka_and_host().await;
    let kafka_versions = kafka_client(kafka)
        .await
        .call(&api_versions(), 3)
        .await
        .unwrap();
    let through_host = host.client().await.call(&api_versions(), 3).await.unwrap();
    let txn = ApiKey::TxnOffsetCommit as i16;
    let (kafka_min, kafka_max) = range(&kafka_versions, txn).expect("Kafka offers TxnOffsetCommit");
    assert_eq!(
        range(&through_host, txn),
        Some((kafka_min.max(2), kafka_max.min(5))),
        "the host's 2-5 where Kafka's range meets it"
    );
    // Produce and Fetch stop at the last versions that name topics (the ids clients know
    // are the host's): Kafka's producer would send v13 with them.
    let produce = ApiKey::Produce as i16;
    assert_eq!(range(&kafka_versions, produce).map(|r| r.1), Some(13));
    assert_eq!(range(&through_host, produce), Some((3, 12)));
    for key in STREAMS_GROUP_APIS {
        assert!(
            range(&kafka_versions, key).is_some(),
            "Kafka 4.4 offers {key}"
        );
        assert_eq!(range(&through_host, key), None, "{key} passed through");
    }
    // Sent anyway, a StreamsGroupHeartbeat closes the connection (it is not passed up).
    let mut client = host.client().await;
    let mut frame = Vec::new();
    frame.extend_from_slice(&88i16.to_be_bytes());
    frame.extend_from_slice(&0i16.to_be_bytes());
    frame.extend_from_slice(&7i32.to_be_bytes());
    frame.extend_from_slice(&[0xff, 0xff, 0]); // no client id, no tagged fields
    client.send_frame(&frame).await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap());
}

#[tokio::test]
async fn standalone_neither_offers_nor_serves_txn_offset_commit() {
    let host = TestHost::start().await;
    let mut client = host.client().await;
    let versions = client.call(&api_versions(), 3).await.unwrap();
    assert_eq!(range(&versions, ApiKey::TxnOffsetCommit as i16), None);
    // No transaction coordinator here: the request closes the connection, as an API Kafka
    // does not enable.
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(str("tx").into())
        .with_group_id(GroupId(str("g")));
    client.send(&request, 4).await.unwrap();
    assert!(client.is_closed_by_host().await.unwrap());
}
