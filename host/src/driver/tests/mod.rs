//! Driver tests under tokio's paused clock: requests through shards, keyed timers, the
//! assignor pool (a stuck module delays nobody else), persistence and restore, view
//! broadcasts, admin hooks, notices and shutdown.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assignor_sdk::{AssignRequest, Topic};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{JoinGroupResponse, SyncGroupResponse};
use tokio::sync::watch;

use super::*;
use crate::coordinator::tests::context::{
    Join, Sync, assigned, default_strategies, default_topics, native, runner_result,
};
use crate::coordinator::view::Topics;
use crate::coordinator::{AssignorFailure, AssignorOutput, Notice, OffsetFetchQuery};

/// Runs range and roundrobin natively and checks the answer as the registry does (the
/// runner's contract); blocks runs of `block_group` until released.
struct FakeRunner {
    block_group: Option<String>,
    release: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    calls: AtomicUsize,
}

impl FakeRunner {
    fn native() -> Arc<FakeRunner> {
        Arc::new(FakeRunner {
            block_group: None,
            release: Mutex::new(None),
            calls: AtomicUsize::new(0),
        })
    }
}

impl AssignorRunner for FakeRunner {
    fn run(
        &self,
        strategy: &str,
        _: Option<u32>,
        request: &AssignRequest,
        cooperative: bool,
        _: &dyn LagSource,
    ) -> Result<AssignorOutput, AssignorFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.block_group.as_deref() == Some(request.group_id.as_str())
            && strategy == "roundrobin"
            && let Some(rx) = self.release.lock().unwrap().take()
        {
            let _ = rx.recv(); // a stuck module
        }
        runner_result(strategy, request, cooperative, native(strategy, request))
    }
}

struct Fixture {
    driver: Driver,
    topics: watch::Sender<TopicsView>,
    _strategies: watch::Sender<Arc<StrategiesView>>,
}

fn start(
    runner: Arc<dyn AssignorRunner>,
    store: Option<Store>,
    notices: Arc<dyn NoticeSink>,
) -> Fixture {
    let (topics, topics_rx) = watch::channel(default_topics());
    let (strategies, strategies_rx) = watch::channel(default_strategies());
    let config = DriverConfig {
        settings: DriverSettings {
            shards: Some(3),
            assignor_threads: Some(2),
            ..DriverSettings::default()
        },
        notices,
        random_seed: false,
        ..DriverConfig::default()
    };
    let driver = Driver::start(config, runner, strategies_rx, topics_rx, store).unwrap();
    Fixture {
        driver,
        topics,
        _strategies: strategies,
    }
}

fn ctx(version: i16) -> RequestContext {
    RequestContext {
        api_version: version,
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
    }
}

async fn join(driver: &Driver, j: Join) -> JoinGroupResponse {
    let GroupResponse::JoinGroup(r) = driver
        .request(
            &j.group,
            ctx(j.version),
            GroupRequest::JoinGroup(j.request()),
        )
        .await
    else {
        panic!("not a JoinGroup answer")
    };
    r
}

/// The two-step join of a dynamic member, resolved when the join phase completes.
async fn join_member(driver: &Driver, j: Join) -> JoinGroupResponse {
    let first = join(driver, j.clone()).await;
    assert_eq!(first.error_code, ResponseError::MemberIdRequired.code());
    join(driver, j.member(&first.member_id)).await
}

async fn sync(driver: &Driver, group: &str, r: &JoinGroupResponse) -> SyncGroupResponse {
    let s = Sync::new(group, &r.member_id, r.generation_id)
        .protocol(Some("consumer"), r.protocol_name.as_deref());
    let GroupResponse::SyncGroup(s) = driver
        .request(group, ctx(5), GroupRequest::SyncGroup(s.request()))
        .await
    else {
        panic!("not a SyncGroup answer")
    };
    s
}

async fn heartbeat(driver: &Driver, group: &str, r: &JoinGroupResponse) -> i16 {
    let h = kafka_protocol::messages::HeartbeatRequest::default()
        .with_group_id(kafka_protocol::messages::GroupId(r.member_id.clone()))
        .with_member_id(r.member_id.clone())
        .with_generation_id(r.generation_id);
    let GroupResponse::Heartbeat(h) = driver
        .request(group, ctx(4), GroupRequest::Heartbeat(h))
        .await
    else {
        panic!("not a Heartbeat answer")
    };
    h.error_code
}

/// Two members of `group` joined and synced.
async fn stable(
    driver: &Driver,
    group: &str,
    names: &[&str],
) -> (JoinGroupResponse, JoinGroupResponse) {
    let (a, b) = tokio::join!(
        join_member(driver, Join::new(group).names(names)),
        join_member(driver, Join::new(group).names(names))
    );
    let (sa, sb) = tokio::join!(sync(driver, group, &a), sync(driver, group, &b));
    assert_eq!((sa.error_code, sb.error_code), (0, 0));
    (a, b)
}

#[tokio::test(start_paused = true)]
async fn driver_runs_a_group_from_join_to_stable_through_its_shard() {
    let f = start(FakeRunner::native(), None, Arc::new(TracingNotices));
    let started = tokio::time::Instant::now();
    let (a, b) = tokio::join!(
        join_member(&f.driver, Join::new("g")),
        join_member(&f.driver, Join::new("g"))
    );
    assert!(
        started.elapsed() >= Duration::from_millis(3_000),
        "the initial delay ran on the timer"
    );
    assert_eq!((a.generation_id, b.generation_id), (1, 1));
    assert_eq!(a.leader.as_str(), crate::coordinator::HOST_LEADER);
    let (sa, sb) = tokio::join!(sync(&f.driver, "g", &a), sync(&f.driver, "g", &b));
    let total = assigned(&sa.assignment)["t"].len() + assigned(&sb.assignment)["t"].len();
    assert_eq!(total, 6);
    assert_eq!(heartbeat(&f.driver, "g", &a).await, 0);
    f.driver.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn driver_session_expiry_fires_on_the_timer_and_survivors_see_a_rebalance() {
    let f = start(FakeRunner::native(), None, Arc::new(TracingNotices));
    let (a, b) = stable(&f.driver, "g", &["range"]).await;
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(3_000)).await;
        let code = heartbeat(&f.driver, "g", &b).await;
        if code != 0 {
            assert_eq!(code, ResponseError::RebalanceInProgress.code());
            let detail = f.driver.describe("g").await.unwrap();
            assert!(
                detail
                    .members
                    .iter()
                    .all(|m| m.member_id != a.member_id.as_str())
            );
            return;
        }
    }
    panic!("the silent member never expired");
}

/// Moves the paused clock by hand (a blocked assignor thread stops tokio's auto-advance) in
/// 250 ms steps, letting tasks and the blocking pool progress between steps by yielding (no
/// sleeping), until `task` finishes or `limit` of virtual time has passed. Returns the virtual
/// time it took.
async fn run_until_finished<T>(
    task: &tokio::task::JoinHandle<T>,
    limit: Duration,
) -> Option<Duration> {
    let begun = tokio::time::Instant::now();
    while begun.elapsed() <= limit {
        for _ in 0..5_000 {
            if task.is_finished() {
                return Some(begun.elapsed());
            }
            tokio::task::yield_now().await;
            std::thread::yield_now();
        }
        tokio::time::advance(Duration::from_millis(250)).await;
    }
    None
}

#[tokio::test(start_paused = true)]
async fn driver_a_stuck_module_does_not_delay_other_groups() {
    let (release, rx) = std::sync::mpsc::channel();
    let runner = Arc::new(FakeRunner {
        block_group: Some("stuck".into()),
        release: Mutex::new(Some(rx)),
        calls: AtomicUsize::new(0),
    });
    let f = start(runner.clone(), None, Arc::new(TracingNotices));
    let driver = f.driver.clone();
    let stuck = tokio::spawn(async move {
        let r = join_member(&driver, Join::new("stuck").names(&["roundrobin"])).await;
        let s = sync(&driver, "stuck", &r).await;
        (r, s, tokio::time::Instant::now())
    });
    // Let the stuck group reach its assignor call (then a blocked thread holds a permit).
    let mut reached = false;
    for _ in 0..40 {
        for _ in 0..5_000 {
            if runner.calls.load(Ordering::SeqCst) > 0 {
                reached = true;
                break;
            }
            tokio::task::yield_now().await;
            std::thread::yield_now();
        }
        if reached {
            break;
        }
        tokio::time::advance(Duration::from_millis(250)).await;
    }
    assert!(reached, "the stuck group's module was called");
    let driver = f.driver.clone();
    let other = tokio::spawn(async move {
        let r = join_member(&driver, Join::new("other").names(&["roundrobin"])).await;
        sync(&driver, "other", &r).await
    });
    let begun = tokio::time::Instant::now();
    let took = run_until_finished(&other, Duration::from_millis(9_000)).await;
    let took = took.expect("the other group completed while the module was stuck");
    assert!(
        took < Duration::from_millis(6_000),
        "only its own join phase: {took:?}"
    );
    assert!(
        !stuck.is_finished(),
        "the stuck group is still waiting for its module"
    );
    assert_eq!(other.await.unwrap().error_code, 0);
    // The stuck group is answered by the fallback at its deadline (half of 20 s).
    let answered = run_until_finished(&stuck, Duration::from_millis(15_000)).await;
    assert!(answered.is_some(), "the fallback answered the stuck group");
    let _ = begun;
    let (_, s, _) = stuck.await.unwrap();
    assert_eq!(s.error_code, 0);
    assert_eq!(assigned(&s.assignment)["t"].len(), 6);
    release.send(()).unwrap();
    f.driver.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn driver_restores_stable_groups_and_offsets_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let f = start(
        FakeRunner::native(),
        Some(store.clone()),
        Arc::new(TracingNotices),
    );
    let (a, _) = stable(&f.driver, "g", &["range"]).await;
    let commit = kafka_protocol::messages::OffsetCommitRequest::default()
        .with_generation_id_or_member_epoch(a.generation_id)
        .with_member_id(a.member_id.clone())
        .with_topics(vec![kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(kafka_protocol::messages::TopicName("t".into()))
            .with_partitions(vec![kafka_protocol::messages::offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(42)])]);
    let GroupResponse::OffsetCommit(c) = f
        .driver
        .request("g", ctx(8), GroupRequest::OffsetCommit(commit))
        .await
    else {
        panic!()
    };
    assert_eq!(c.topics[0].partitions[0].error_code, 0);
    f.driver
        .set_group_config(
            "g",
            GroupConfig {
                params: BTreeMap::from([("k".into(), "v".into())]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    f.driver.shutdown().await;

    let f = start(FakeRunner::native(), Some(store), Arc::new(TracingNotices));
    let detail = f.driver.describe("g").await.unwrap();
    assert_eq!(detail.state, "Stable");
    assert_eq!(detail.generation, a.generation_id);
    assert_eq!(detail.config.params["k"], "v");
    assert_eq!(
        heartbeat(&f.driver, "g", &a).await,
        0,
        "resumed without a rebalance"
    );
    let query = OffsetFetchQuery {
        topics: Some(vec![("t".into(), vec![0])]),
        require_stable: false,
        member_id: None,
        member_epoch: -1,
    };
    let GroupResponse::OffsetFetch(o) = f
        .driver
        .request("g", ctx(8), GroupRequest::OffsetFetch(query))
        .await
    else {
        panic!()
    };
    assert_eq!(o.topics[0].1[0].committed_offset, 42);
    f.driver.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn driver_shutdown_answers_parked_and_later_requests_with_coordinator_not_available() {
    let f = start(FakeRunner::native(), None, Arc::new(TracingNotices));
    let driver = f.driver.clone();
    let parked = tokio::spawn(async move { join_member(&driver, Join::new("g")).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    f.driver.shutdown().await;
    let r = parked.await.unwrap();
    assert_eq!(r.error_code, ResponseError::CoordinatorNotAvailable.code());
    let later = join(&f.driver, Join::new("g")).await;
    assert_eq!(
        later.error_code,
        ResponseError::CoordinatorNotAvailable.code()
    );
}

#[tokio::test(start_paused = true)]
async fn driver_lists_and_summarises_groups_across_shards() {
    let f = start(FakeRunner::native(), None, Arc::new(TracingNotices));
    let names: Vec<String> = (0..12).map(|i| format!("group-{i}")).collect();
    let shards: std::collections::BTreeSet<usize> = names.iter().map(|n| shard_of(n, 3)).collect();
    assert_eq!(shards.len(), 3, "the groups span every shard");
    for name in &names {
        let r = join(&f.driver, Join::new(name)).await; // creates an Empty group
        assert_eq!(r.error_code, ResponseError::MemberIdRequired.code());
    }
    let listed = f.driver.list_groups(&["EMPTY".into()], &[]).await;
    assert_eq!(listed.len(), 12);
    assert!(
        f.driver
            .list_groups(&["stable".into()], &[])
            .await
            .is_empty()
    );
    assert_eq!(f.driver.groups().await.len(), 12);
    f.driver.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn driver_broadcasts_topic_changes_and_the_group_rebalances() {
    let f = start(FakeRunner::native(), None, Arc::new(TracingNotices));
    let (a, _) = stable(&f.driver, "g", &["range"]).await;
    let mut topics = default_topics().by_name().clone();
    topics.insert(
        "t".into(),
        Topic {
            name: "t".into(),
            partition_count: 12,
            partition_racks: vec![],
        },
    );
    f.topics
        .send(Arc::new(Topics::with_derived_ids(topics)))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        heartbeat(&f.driver, "g", &a).await,
        ResponseError::RebalanceInProgress.code()
    );
    f.driver.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn driver_admin_hooks_configure_trigger_and_simulate() {
    let f = start(FakeRunner::native(), None, Arc::new(TracingNotices));
    let (a, _) = stable(&f.driver, "g", &["range"]).await;
    let err = f
        .driver
        .set_group_config(
            "g",
            GroupConfig {
                strategy: Some("nope".into()),
                ..Default::default()
            },
        )
        .await;
    assert_eq!(err, Err(AdminError::UnknownStrategy("nope".into())));
    f.driver
        .set_group_config(
            "g",
            GroupConfig {
                strategy: Some("roundrobin".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let request = f.driver.assign_request("g", "roundrobin").await.unwrap();
    assert_eq!(request.members.len(), 2);
    assert_eq!(request.generation_id, a.generation_id + 1);
    assert!(f.driver.assign_request("missing", "range").await.is_none());
    assert_eq!(
        f.driver
            .trigger_rebalance("missing", Some("x".into()))
            .await,
        Err(AdminError::GroupNotFound("missing".into()))
    );
    f.driver
        .trigger_rebalance("g", Some("operator".into()))
        .await
        .unwrap();
    assert_eq!(
        heartbeat(&f.driver, "g", &a).await,
        ResponseError::RebalanceInProgress.code()
    );
    let detail = f.driver.describe("g").await.unwrap();
    assert_eq!(detail.config.strategy.as_deref(), Some("roundrobin"));
    assert!(f.driver.describe("missing").await.is_none());
    f.driver.shutdown().await;
}

#[derive(Default)]
struct Counting(Mutex<Vec<Notice>>);

impl NoticeSink for Counting {
    fn notice(&self, notice: &Notice) {
        self.0.lock().unwrap().push(notice.clone());
    }
}

#[tokio::test(start_paused = true)]
async fn driver_hands_every_notice_to_the_sink() {
    let sink = Arc::new(Counting::default());
    let f = start(FakeRunner::native(), None, sink.clone());
    stable(&f.driver, "g", &["range"]).await;
    let notices = sink.0.lock().unwrap().clone();
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::RebalanceStarted { .. }))
    );
    assert!(
        notices
            .iter()
            .any(|n| matches!(n, Notice::AssignorFinished { module, .. } if module == "range"))
    );
    assert!(notices.iter().any(|n| matches!(
        n,
        Notice::GenerationCompleted {
            generation: 1,
            members: 2,
            ..
        }
    )));
    f.driver.shutdown().await;
}

#[test]
fn driver_refuses_zero_shards_and_needs_a_runtime() {
    let (_t, topics) = watch::channel(default_topics());
    let (_s, strategies) = watch::channel(default_strategies());
    let config = DriverConfig {
        settings: DriverSettings {
            shards: Some(0),
            ..DriverSettings::default()
        },
        ..DriverConfig::default()
    };
    assert!(matches!(
        Driver::start(
            config,
            FakeRunner::native(),
            strategies.clone(),
            topics.clone(),
            None
        ),
        Err(DriverError::Config(_))
    ));
    assert!(matches!(
        Driver::start(
            DriverConfig::default(),
            FakeRunner::native(),
            strategies,
            topics,
            None
        ),
        Err(DriverError::NoRuntime)
    ));
}

mod gate;
mod remote_offsets;
