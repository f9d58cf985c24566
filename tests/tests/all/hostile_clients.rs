//! Clients that try to hurt the host, over real sockets (issue 14's defects, each reproduced
//! first): whatever they send, the host answers, keeps its data, and serves everyone else.

use assignor_host_tests::{TestHost, str};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{GroupId, SyncGroupRequest};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::admin_support::{Admin, Member};

/// A ConsumerProtocolAssignment v0 claiming 2^31-1 topic entries in six bytes. Decoded
/// naively, the next describe allocated for all of them and aborted the process.
const LYING_ASSIGNMENT: [u8; 6] = [0x00, 0x00, 0x7f, 0xff, 0xff, 0xff];

/// The relayed group `hostile`: one member whose protocol no module serves, so it is the
/// client leader, and whose SyncGroup hands itself [`LYING_ASSIGNMENT`].
async fn relayed_group_with_a_lying_assignment(host: &TestHost) -> Member {
    let mut member = Member::new(host, "hostile", "not-a-module").await;
    let joining = member.send_join().await;
    member.joined(joining).await;
    let request = SyncGroupRequest::default()
        .with_group_id(GroupId(str("hostile")))
        .with_generation_id(member.generation)
        .with_member_id(str(&member.id))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(str(&member.id))
                .with_assignment(bytes::Bytes::from_static(&LYING_ASSIGNMENT)),
        ]);
    let answer = member.client.call(&request, 3).await.unwrap();
    assert_eq!(answer.error_code, 0);
    assert_eq!(
        answer.assignment.as_ref(),
        LYING_ASSIGNMENT,
        "relayed byte for byte, as Kafka relays a leader's assignment"
    );
    member
}

/// The group's describe: the member is listed with no readable assignment.
async fn described_without_partitions(admin: &Admin) {
    let (status, body) = admin.get("/v1/groups/hostile").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["mode"], "relay", "{body}");
    let members = body["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{body}");
    assert_eq!(members[0]["assignment"], json!({}), "{body}");
}

#[tokio::test]
async fn a_leaders_assignment_claiming_two_billion_topics_is_described_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let host = TestHost::with_topics_in(&path, &[("orders", 4)]).await;
    let mut member = relayed_group_with_a_lying_assignment(&host).await;
    let admin = Admin::new(&host);
    described_without_partitions(&admin).await;
    // Simulating on the group reads the same bytes (as the previous assignment).
    let (status, body) = admin
        .json(
            Method::POST,
            "/v1/simulate",
            json!({"group": "hostile", "module": "range"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(member.heartbeat().await, 0, "the group is still served");
    host.stop().await;

    // The bytes were stored with the group; the restarted host reads them again.
    let host = TestHost::with_topics_in(&path, &[("orders", 4)]).await;
    described_without_partitions(&Admin::new(&host)).await;
    host.stop().await;
}
