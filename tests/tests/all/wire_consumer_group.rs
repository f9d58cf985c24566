//! The consumer protocol (KIP-848) over real sockets: ConsumerGroupHeartbeat v0 and v1 as
//! librdkafka sends them, assignments by topic id that Metadata v12 resolves, a partition
//! handed over only after its owner acknowledged the release, errors as error-only answers,
//! leave, and ConsumerGroupDescribe.

use std::collections::BTreeSet;

use assignor_host_tests::{KafkaClient, TestHost, str, topic_name};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    GroupId, MetadataRequest,
};
use uuid::Uuid;

const GROUP: &str = "orders-readers";

async fn host() -> TestHost {
    TestHost::with_topics(&[("orders", 4)]).await
}

fn join(member_id: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(str(GROUP)))
        .with_member_id(str(member_id))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(300_000)
        .with_subscribed_topic_names(Some(vec![topic_name("orders")]))
        .with_subscribed_topic_regex(Some(str("")))
        .with_topic_partitions(Some(Vec::new()))
}

/// A heartbeat at `epoch` with nothing changed (every optional field null).
fn beat(member_id: &str, epoch: i32) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(str(GROUP)))
        .with_member_id(str(member_id))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
}

/// A heartbeat that reports the partitions the member owns (its acknowledgement).
fn ack(
    member_id: &str,
    epoch: i32,
    topic: Uuid,
    owned: &BTreeSet<i32>,
) -> ConsumerGroupHeartbeatRequest {
    beat(member_id, epoch).with_topic_partitions(Some(vec![
        TopicPartitions::default()
            .with_topic_id(topic)
            .with_partitions(owned.iter().copied().collect()),
    ]))
}

/// The partitions an answer assigns, each with its topic id (`None`: no Assignment).
fn assigned(response: &ConsumerGroupHeartbeatResponse) -> Option<Vec<(Uuid, BTreeSet<i32>)>> {
    response.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .map(|tp| (tp.topic_id, tp.partitions.iter().copied().collect()))
            .collect()
    })
}

fn partitions(response: &ConsumerGroupHeartbeatResponse) -> BTreeSet<i32> {
    assigned(response)
        .expect("an Assignment")
        .into_iter()
        .flat_map(|(_, ps)| ps)
        .collect()
}

async fn call(
    client: &mut KafkaClient,
    request: &ConsumerGroupHeartbeatRequest,
    version: i16,
) -> ConsumerGroupHeartbeatResponse {
    client.call(request, version).await.expect("an answer")
}

#[tokio::test]
async fn a_join_is_answered_with_the_whole_assignment_by_a_topic_id_metadata_v12_resolves() {
    let host = host().await;
    let mut client = host.client().await;
    let answer = call(&mut client, &join("member-a"), 1).await;
    assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
    assert_eq!(answer.member_id.as_deref(), Some("member-a"));
    assert_eq!(answer.member_epoch, 1);
    assert!(answer.heartbeat_interval_ms > 0);
    let topics = assigned(&answer).expect("an Assignment on join");
    assert_eq!(topics.len(), 1);
    let (id, ps) = &topics[0];
    assert!(!id.is_nil());
    assert_eq!(*ps, BTreeSet::from([0, 1, 2, 3]));

    // librdkafka resolves the id with Metadata v12 by topic id.
    let by_id = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default()
            .with_topic_id(*id)
            .with_name(None),
    ]));
    let metadata = client.call(&by_id, 12).await.unwrap();
    assert_eq!(metadata.topics.len(), 1);
    assert_eq!(metadata.topics[0].error_code, 0);
    assert_eq!(
        metadata.topics[0]
            .name
            .as_ref()
            .map(|n| n.to_string())
            .as_deref(),
        Some("orders")
    );
    host.stop().await;
}

#[tokio::test]
async fn a_second_member_gets_partitions_only_after_the_first_acknowledged_their_release() {
    let host = host().await;
    let mut a = host.client().await;
    let mut b = host.client().await;
    let joined = call(&mut a, &join("member-a"), 1).await;
    let topic = assigned(&joined).unwrap()[0].0;
    let all = partitions(&joined);
    call(&mut a, &ack("member-a", 1, topic, &all), 1).await;

    let b_joined = call(&mut b, &join("member-b"), 1).await;
    assert_eq!(b_joined.error_code, 0);
    assert_eq!(b_joined.member_epoch, 2);
    assert!(
        partitions(&b_joined).is_empty(),
        "member-a still owns every partition"
    );

    // member-a is told to give two up; it stays at epoch 1 until it has.
    let revoke = call(&mut a, &beat("member-a", 1), 1).await;
    assert_eq!(revoke.member_epoch, 1);
    let kept = partitions(&revoke);
    assert_eq!(kept.len(), 2);
    let still_nothing = call(&mut b, &beat("member-b", 2), 1).await;
    assert!(
        still_nothing.assignment.is_none(),
        "nothing changed for member-b yet"
    );

    let acked = call(&mut a, &ack("member-a", 1, topic, &kept), 1).await;
    assert_eq!(acked.member_epoch, 2);
    let given = call(&mut b, &beat("member-b", 2), 1).await;
    let b_has = partitions(&given);
    assert_eq!(b_has.len(), 2);
    assert!(b_has.is_disjoint(&kept));
    assert_eq!(b_has.union(&kept).copied().collect::<BTreeSet<_>>(), all);
    host.stop().await;
}

#[tokio::test]
async fn v0_gets_a_generated_member_id_and_v1_without_one_is_invalid_request() {
    let host = host().await;
    let mut client = host.client().await;
    let v0 = join("").with_subscribed_topic_regex(None);
    let answer = call(&mut client, &v0, 0).await;
    assert_eq!(answer.error_code, 0);
    assert!(answer.member_id.as_ref().is_some_and(|id| !id.is_empty()));
    let refused = call(&mut client, &join(""), 1).await;
    assert_eq!(refused.error_code, 42, "INVALID_REQUEST");
    assert!(refused.error_message.is_some());
    assert!(
        refused.member_id.is_none() && refused.assignment.is_none(),
        "error fields only"
    );
    host.stop().await;
}

#[tokio::test]
async fn fencing_and_leave_answer_as_kafka_does() {
    let host = host().await;
    let mut client = host.client().await;
    call(&mut client, &join("member-a"), 1).await;
    let ahead = call(&mut client, &beat("member-a", 7), 1).await;
    assert_eq!(ahead.error_code, 110, "FENCED_MEMBER_EPOCH");
    let stranger = call(&mut client, &beat("nobody", 1), 1).await;
    assert_eq!(stranger.error_code, 25, "UNKNOWN_MEMBER_ID");
    let left = call(&mut client, &beat("member-a", -1), 1).await;
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    let gone = call(&mut client, &beat("member-a", 1), 1).await;
    assert_eq!(gone.error_code, 25, "UNKNOWN_MEMBER_ID after leaving");
    host.stop().await;
}

#[tokio::test]
async fn an_assignor_name_without_a_module_is_served_by_the_fallback_without_an_error() {
    let host = host().await;
    let mut client = host.client().await;
    let request = join("member-a").with_server_assignor(Some(str("not-uploaded-yet")));
    let answer = call(&mut client, &request, 1).await;
    assert_eq!(
        answer.error_code, 0,
        "never UNSUPPORTED_ASSIGNOR by default"
    );
    assert_eq!(partitions(&answer), BTreeSet::from([0, 1, 2, 3]));
    host.stop().await;
}

#[tokio::test]
async fn consumer_group_describe_shows_epochs_assignor_and_assignments() {
    let host = host().await;
    let mut client = host.client().await;
    call(&mut client, &join("member-a"), 1).await;
    let request = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(str(GROUP)), GroupId(str("nope"))]);
    for version in 0..=1 {
        let described = client.call(&request, version).await.unwrap();
        let group = &described.groups[0];
        assert_eq!(group.error_code, 0);
        assert_eq!(group.group_epoch, 1);
        assert_eq!(group.assignment_epoch, 1);
        assert_eq!(group.assignor_name.as_str(), "uniform");
        assert_eq!(group.members.len(), 1);
        let member = &group.members[0];
        assert_eq!(member.member_epoch, 1);
        assert_eq!(
            member.assignment.topic_partitions[0].topic_name.as_str(),
            "orders"
        );
        assert_eq!(
            member.target_assignment.topic_partitions[0].partitions,
            vec![0, 1, 2, 3]
        );
        assert_eq!(described.groups[1].error_code, 69, "GROUP_ID_NOT_FOUND");
    }
    host.stop().await;
}

/// The admin API lists and describes consumer groups beside classic ones: the group type, the
/// consumer states, epochs, the assignor, and each member's reconciliation.
#[tokio::test]
async fn the_admin_api_lists_and_describes_a_consumer_group_mid_reconciliation() {
    use crate::admin_support::Admin;
    let host = host().await;
    let admin = Admin::new(&host);
    let mut a = host.client().await;
    let mut b = host.client().await;
    let joined = call(&mut a, &join("member-a"), 1).await;
    let topic = assigned(&joined).unwrap()[0].0;
    call(&mut a, &ack("member-a", 1, topic, &partitions(&joined)), 1).await;
    call(&mut b, &join("member-b"), 1).await;
    // member-a learns it must give two partitions up, and has not yet.
    let revoke = call(&mut a, &beat("member-a", 1), 1).await;
    let kept = partitions(&revoke);

    let (_, listed) = admin.get("/v1/groups").await;
    let line = listed["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group_id"] == GROUP)
        .cloned()
        .expect("listed");
    assert_eq!(line["group_type"], "consumer", "{line}");
    assert_eq!(line["state"], "Reconciling", "{line}");
    assert_eq!(line["members"], 2, "{line}");
    assert_eq!(line["strategy"], "uniform", "{line}");

    let (status, detail) = admin.get(&format!("/v1/groups/{GROUP}")).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{detail}");
    assert_eq!(detail["group_type"], "consumer");
    assert_eq!(detail["generation"], 2);
    assert_eq!(detail["consumer"]["group_epoch"], 2);
    assert_eq!(detail["consumer"]["assignment_epoch"], 2);
    assert_eq!(detail["consumer"]["requested_assignor"], "uniform");
    let member_a = |list: &serde_json::Value| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|m| m["member_id"] == "member-a")
            .cloned()
            .unwrap()
    };
    let a_members = member_a(&detail["members"]);
    assert_eq!(
        a_members["assignment"]["orders"],
        serde_json::json!([0, 1, 2, 3]),
        "still owns all until it acknowledges"
    );
    let a_reconciling = member_a(&detail["consumer"]["members"]);
    assert_eq!(a_reconciling["member_epoch"], 1);
    assert_eq!(a_reconciling["state"], "unrevoked_partitions");
    assert_eq!(
        a_reconciling["target"]["orders"],
        serde_json::json!(kept.iter().collect::<Vec<_>>())
    );
    assert_eq!(
        a_reconciling["pending_revocation"]["orders"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert!(detail["offsets"].is_array(), "{detail}");
    host.stop().await;
}

/// A consumer group survives a restart of the host (a clean stop writes it): its member goes
/// on at its epoch with its partitions, not fenced into a rejoin.
#[tokio::test]
async fn a_restart_keeps_a_consumer_group_and_its_member_goes_on_at_its_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |dir: std::path::PathBuf| {
        TestHost::with_config(move |c| {
            c.data_dir = dir;
            c.catalog.topics = vec![assignor_host::catalog::TopicSeed {
                name: "orders".into(),
                partitions: 4,
                partition_racks: Vec::new(),
            }];
        })
    };
    let host = in_dir(dir.path().to_path_buf()).await;
    let mut client = host.client().await;
    let joined = call(&mut client, &join("member-a"), 1).await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    let epoch = joined.member_epoch;
    let (topic, owned) = assigned(&joined).expect("an Assignment").remove(0);
    let acked = call(&mut client, &ack("member-a", epoch, topic, &owned), 1).await;
    assert_eq!(acked.error_code, 0);
    drop(client);
    host.stop().await;

    let host = in_dir(dir.path().to_path_buf()).await;
    let mut client = host.client().await;
    let after = call(&mut client, &ack("member-a", epoch, topic, &owned), 1).await;
    assert_eq!(after.error_code, 0, "not fenced: {:?}", after.error_message);
    assert_eq!(after.member_epoch, epoch);
    assert!(
        assigned(&after).is_none_or(|a| a == vec![(topic, owned.clone())]),
        "same partitions: {after:?}"
    );
    host.stop().await;
}
