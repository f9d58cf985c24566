//! Conformance with Kafka (docs/conformance.md): the consumer protocol (KIP-848,
//! ConsumerGroupHeartbeat v1). Joining at epoch 0, a second member and the revocation that
//! must come before it gets anything, every partition assigned once across members by topic
//! id (each target's own ids, named by its own Metadata), epochs from the future or the past
//! (FENCED_MEMBER_EPOCH), unknown members and groups, leaving at -1, a static member's
//! leave at -2 and its return, first heartbeats Kafka refuses (INVALID_REQUEST), and an
//! assignor without a module.

use assignor_host_tests::conformance::{Difference, Spec, check};
use assignor_host_tests::str;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, GroupId};

#[tokio::test]
async fn two_members_epochs_and_the_revocation_before_the_handover() {
    // One topic, split evenly: which partitions go together is the assignor's choice (and
    // Kafka's uniform follows the order of random member ids), how many each gets is not.
    let spec = Spec::new("consumer")
        .topic("t", 6)
        .differs(Difference::GroupEpochStartsAtZero);
    check(spec, |s| {
        Box::pin(async move {
            let join = s.cgh_join_request("a", &["t"]);
            s.cgh("a", "a joins at epoch 0", &join).await?;
            s.cgh_until("a", "a owns everything", |s, _| s.owned_count("a") == 6)
                .await?;
            let describe = ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![s.group("g"), s.group("missing")])
                .with_include_authorized_operations(true);
            s.call("admin", "describe one member", &describe, 1).await?;

            let join = s.cgh_join_request("b", &["t"]);
            s.cgh("b", "b joins at epoch 0", &join).await?;
            // a is told to give partitions up and stays at its epoch until it has.
            let beat = s.cgh_request("a");
            s.cgh("a", "a learns what to revoke", &beat).await?;
            let beat = s.cgh_request("a");
            s.cgh("a", "a acknowledges the revocation", &beat).await?;
            s.cgh_until("b", "b gets what a released", |s, _| {
                s.owned_count("b") == 3
            })
            .await?;
            s.note_ownership("a and b", &["a", "b"]);
            let describe =
                ConsumerGroupDescribeRequest::default().with_group_ids(vec![s.group("g")]);
            s.call("admin", "describe two members", &describe, 1)
                .await?;

            // Epochs that are not the member's.
            let epoch = s.epoch("a");
            let ahead = s.cgh_request("a").with_member_epoch(epoch + 10);
            s.cgh("a", "a heartbeats from the future", &ahead).await?;
            // The previous epoch is tolerated only while what it reports is a subset of
            // what it holds (a lost answer): a reports all six.
            let everything = vec![
                TopicPartitions::default()
                    .with_topic_id(s.topic_id("t"))
                    .with_partitions((0..6).collect()),
            ];
            let behind = s
                .cgh_request("a")
                .with_member_epoch(epoch - 1)
                .with_topic_partitions(Some(everything));
            s.cgh("a", "a heartbeats from the past owning everything", &behind)
                .await?;
            // ... and while it reports no more than it holds, as after a lost answer.
            let lost_answer = s.cgh_request("a").with_member_epoch(epoch - 1);
            s.cgh(
                "a",
                "a heartbeats from the past owning what it holds",
                &lost_answer,
            )
            .await?;
            // Epoch 0 with its own id: a rejoin (KAFKA-19233), not a fence.
            let rejoin = s
                .cgh_join_request("a", &["t"])
                .with_member_id(str(&s.id("a")));
            s.cgh("a", "a rejoins at epoch 0 with its id", &rejoin)
                .await?;
            s.cgh_until("a", "a holds its share again", |s, _| {
                s.owned_count("a") == 3
            })
            .await?;
            let epoch = s.epoch("a");
            let stranger = s.cgh_request("a").with_member_id(str("made-up-member"));
            s.cgh("x", "an unknown member heartbeats", &stranger)
                .await?;
            let lost = s.cgh_request("a").with_group_id(s.group("missing"));
            s.cgh("x", "a heartbeat to a missing group", &lost).await?;

            // a leaves; b takes over everything; a's id is gone.
            let leave = s.cgh_request("a").with_member_epoch(-1);
            s.cgh("a", "a leaves at -1", &leave).await?;
            let beat = s.cgh_request("a").with_member_epoch(epoch);
            s.cgh("a", "a heartbeats after leaving", &beat).await?;
            s.cgh_until("b", "b owns everything", |s, _| s.owned_count("b") == 6)
                .await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn a_static_member_leaves_at_minus_two_and_comes_back() {
    let spec = Spec::new("consumer-static")
        .topic("t", 4)
        .differs(Difference::GroupEpochStartsAtZero);
    check(spec, |s| {
        Box::pin(async move {
            let instance = Some(str("instance-1"));
            let join = s
                .cgh_join_request("a", &["t"])
                .with_instance_id(instance.clone());
            s.cgh("a", "a joins static", &join).await?;
            s.cgh_until("a", "a owns everything", |s, _| s.owned_count("a") == 4)
                .await?;
            let a_epoch = s.epoch("a");
            let join = s.cgh_join_request("b", &["t"]);
            s.cgh("b", "b joins", &join).await?;
            // a is told to give two up (at its epoch), then acknowledges (at the new one).
            s.cgh_until("a", "a gave half up", |s, r| {
                s.owned_count("a") == 2 && r.member_epoch > a_epoch
            })
            .await?;
            s.cgh_until("b", "b got its half", |s, _| s.owned_count("b") == 2)
                .await?;

            // The instance is live: a second member with it is refused.
            let twin = s
                .cgh_join_request("a2", &["t"])
                .with_instance_id(instance.clone());
            s.cgh("a2", "a2 joins while a is live", &twin).await?;
            let leave = s
                .cgh_request("a")
                .with_member_epoch(-2)
                .with_instance_id(instance.clone());
            s.cgh("a", "a leaves at -2", &leave).await?;
            let describe =
                ConsumerGroupDescribeRequest::default().with_group_ids(vec![s.group("g")]);
            s.call("admin", "describe with a away", &describe, 1)
                .await?;
            // It comes back under a new member id and finds its partitions.
            let back = s
                .cgh_join_request("a2", &["t"])
                .with_instance_id(instance.clone());
            s.cgh("a2", "a2 rejoins as instance-1", &back).await?;
            s.cgh_until("a2", "a2 owns a's half", |s, _| s.owned_count("a2") == 2)
                .await?;
            s.note_ownership("a2 and b", &["a2", "b"]);
            let beat = s
                .cgh_request("a")
                .with_member_epoch(a_epoch)
                .with_instance_id(instance.clone());
            s.cgh("a", "a's old id heartbeats as instance-1", &beat)
                .await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn first_heartbeats_kafka_refuses() {
    let spec = Spec::new("consumer-invalid").topic("t", 4);
    check(spec, |s| {
        Box::pin(async move {
            let join = || s.cgh_join_request("x", &["t"]);
            let cases = [
                ("no member id", join().with_member_id(str(""))),
                ("no rebalance timeout", join().with_rebalance_timeout_ms(-1)),
                ("null owned partitions", join().with_topic_partitions(None)),
                ("owned partitions at epoch 0", {
                    let owned = TopicPartitions::default()
                        .with_topic_id(s.topic_id("t"))
                        .with_partitions(vec![0]);
                    join().with_topic_partitions(Some(vec![owned]))
                }),
                ("no subscription", join().with_subscribed_topic_names(None)),
                ("epoch -3", join().with_member_epoch(-3)),
                (
                    "leave at -2 without an instance",
                    join().with_member_epoch(-2),
                ),
                (
                    "an empty instance id",
                    join().with_instance_id(Some(str(""))),
                ),
                ("an empty rack id", join().with_rack_id(Some(str("")))),
                ("no group id", join().with_group_id(GroupId(str("")))),
            ];
            for (what, request) in cases {
                s.cgh("x", what, &request).await?;
            }
            // An empty subscription is a member with nothing to consume, not an error.
            let join = s.cgh_join_request("e", &[]);
            s.cgh("e", "an empty subscription", &join).await?;
            Ok(())
        })
    })
    .await;
}

#[tokio::test]
async fn an_assignor_without_a_module() {
    let spec = Spec::new("consumer-assignor")
        .topic("t", 4)
        .differs(Difference::FallbackAssignor);
    check(spec, |s| {
        Box::pin(async move {
            let join = s
                .cgh_join_request("a", &["t"])
                .with_server_assignor(Some(str("no-such-assignor")));
            s.cgh("a", "a names an assignor nobody has", &join).await?;
            Ok(())
        })
    })
    .await;
}
