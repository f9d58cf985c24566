//! Groups written to a [`RemoteGroups`] (a cluster's group log): a consumer group's change is
//! written in the step that made it, and that step's answers are sent only once the write is
//! acknowledged, so the node that gains the shard finds every epoch a member was told.

use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::coordinator::SavedGroup;

/// Lets writes through while `hold` is off; with it on, says each write began (with the
/// group's epoch) on `entered` and ends it only when `release` says so.
struct Held {
    hold: std::sync::atomic::AtomicBool,
    entered: tokio::sync::mpsc::UnboundedSender<i32>,
    release: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<()>>,
}

impl RemoteGroups for Held {
    fn save(&self, group: Arc<SavedGroup>) -> Borrowed<'_, Result<(), String>> {
        Box::pin(async move {
            if self.hold.load(Ordering::SeqCst) {
                let epoch = match &*group {
                    SavedGroup::Consumer(record) => record.group_epoch,
                    SavedGroup::Classic(record) => record.generation_id,
                };
                let _ = self.entered.send(epoch);
                self.release.lock().await.recv().await;
            }
            Ok(())
        })
    }

    fn delete(&self, _: String) -> Borrowed<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

fn heartbeat(member: &str, epoch: i32) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("kip848")))
        .with_member_id(StrBytes::from_string(member.to_owned()))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(30_000)
}

/// A consumer group's change is written in the step that made it (a cluster of hosts), and an
/// answer of that step leaves only once the write is acknowledged: here a member's leave,
/// whose answer comes in the same step as the write of the group without it.
#[tokio::test]
async fn an_answer_of_a_step_that_writes_its_group_leaves_only_after_the_write() {
    let (entered, mut writes) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = tokio::sync::mpsc::unbounded_channel();
    let held = Arc::new(Held {
        hold: std::sync::atomic::AtomicBool::new(false),
        entered,
        release: tokio::sync::Mutex::new(released),
    });
    let (_topics, topics_rx) = watch::channel(default_topics());
    let (_strategies, strategies_rx) = watch::channel(default_strategies());
    let config = DriverConfig {
        settings: DriverSettings {
            shards: Some(1),
            ..DriverSettings::default()
        },
        coordinator: CoordinatorConfig {
            write_before_answer: true,
            ..CoordinatorConfig::default()
        },
        random_seed: false,
        remote_groups: Some(held.clone()),
        ..DriverConfig::default()
    };
    let driver =
        Driver::start(config, FakeRunner::native(), strategies_rx, topics_rx, None).unwrap();
    let join = heartbeat("", 0)
        .with_topic_partitions(Some(Vec::new()))
        .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str("t"))]));
    let joined: ConsumerGroupHeartbeatResponse = driver.call("kip848", ctx(0), join).await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let member = joined.member_id.clone().expect("a member id").to_string();

    // The member leaves while writes are held.
    held.hold.store(true, Ordering::SeqCst);
    let calling = driver.clone();
    let mut answer = tokio::spawn(async move {
        let left: ConsumerGroupHeartbeatResponse =
            calling.call("kip848", ctx(0), heartbeat(&member, -1)).await;
        left
    });
    let epoch = tokio::time::timeout(Duration::from_secs(30), writes.recv())
        .await
        .expect("the leave's step writes the group")
        .expect("the group is written");
    // Every other task had its turns meanwhile: the answer is still held.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(
        !answer.is_finished(),
        "answered before the write of epoch {epoch} was acknowledged"
    );
    held.hold.store(false, Ordering::SeqCst);
    release.send(()).unwrap();
    let left = tokio::time::timeout(Duration::from_secs(30), &mut answer)
        .await
        .expect("answered once the write was acknowledged")
        .unwrap();
    assert_eq!((left.error_code, left.member_epoch), (0, -1), "{left:?}");
    assert!(
        epoch > joined.member_epoch,
        "the group without the member, at epoch {epoch}"
    );
}
