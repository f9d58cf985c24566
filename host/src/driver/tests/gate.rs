//! The gate and the release of a cluster of host nodes, at the driver: a group the gate does
//! not serve is answered NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS) in the shard, and a
//! released group's parked requests are answered NOT_COORDINATOR before it is forgotten.

use std::collections::HashSet;

use kafka_protocol::messages::HeartbeatRequest;
use kafka_protocol::protocol::StrBytes;

use super::*;

/// Serves the groups in its set, says "loading" for `loading`, and "elsewhere" for the rest.
struct Serving(Mutex<HashSet<String>>);

impl Gate for Serving {
    fn admit(&self, group_id: &str) -> Admission {
        if self.0.lock().unwrap().contains(group_id) {
            Admission::Serve
        } else if group_id == "loading" {
            Admission::Loading
        } else {
            Admission::Elsewhere
        }
    }
}

fn gated(serving: &[&str]) -> (Fixture, Arc<Serving>) {
    let gate = Arc::new(Serving(Mutex::new(
        serving.iter().map(|g| (*g).to_owned()).collect(),
    )));
    let (topics, topics_rx) = watch::channel(default_topics());
    let (strategies, strategies_rx) = watch::channel(default_strategies());
    let config = DriverConfig {
        settings: DriverSettings {
            shards: Some(3),
            ..DriverSettings::default()
        },
        random_seed: false,
        gate: Some(gate.clone()),
        ..DriverConfig::default()
    };
    let driver =
        Driver::start(config, FakeRunner::native(), strategies_rx, topics_rx, None).unwrap();
    let fixture = Fixture {
        driver,
        topics,
        _strategies: strategies,
    };
    (fixture, gate)
}

#[tokio::test(start_paused = true)]
async fn driver_answers_not_coordinator_or_load_in_progress_for_a_group_the_gate_does_not_serve() {
    let (f, gate) = gated(&["mine"]);
    let theirs = join(&f.driver, Join::new("theirs")).await;
    assert_eq!(theirs.error_code, ResponseError::NotCoordinator.code());
    let loading = join(&f.driver, Join::new("loading")).await;
    assert_eq!(
        loading.error_code,
        ResponseError::CoordinatorLoadInProgress.code()
    );
    // A member's heartbeat is told to look the coordinator up, never "loading".
    let beat = HeartbeatRequest::default()
        .with_member_id(StrBytes::from_static_str("m"))
        .with_generation_id(1);
    let GroupResponse::Heartbeat(beat) = f
        .driver
        .request("loading", ctx(4), GroupRequest::Heartbeat(beat))
        .await
    else {
        panic!("not a Heartbeat answer")
    };
    assert_eq!(beat.error_code, ResponseError::NotCoordinator.code());
    let mine = join(&f.driver, Join::new("mine")).await;
    assert_eq!(mine.error_code, ResponseError::MemberIdRequired.code());
    // The gate is asked at each request: once it serves the group, the group is served.
    gate.0.lock().unwrap().insert("theirs".into());
    let theirs = join(&f.driver, Join::new("theirs")).await;
    assert_eq!(theirs.error_code, ResponseError::MemberIdRequired.code());
    let names: Vec<String> = f
        .driver
        .groups()
        .await
        .into_iter()
        .map(|g| g.group_id)
        .collect();
    assert!(!names.is_empty() && names.iter().all(|g| g == "mine" || g == "theirs"));
}

#[tokio::test(start_paused = true)]
async fn driver_release_answers_parked_joins_not_coordinator_and_forgets_only_those_groups() {
    let (f, gate) = gated(&["g", "h"]);
    // Both joins park in the initial rebalance delay.
    let driver = f.driver.clone();
    let parked = tokio::spawn(async move { join_member(&driver, Join::new("g")).await });
    let driver = f.driver.clone();
    let other = tokio::spawn(async move { join_member(&driver, Join::new("h")).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!parked.is_finished());

    // As a cluster node does when it loses g's shard: the gate first, then the release.
    gate.0.lock().unwrap().remove("g");
    let released = f.driver.release(Arc::new(|group: &str| group == "g")).await;
    assert_eq!(released, 1);
    let answer = parked.await.unwrap();
    assert_eq!(answer.error_code, ResponseError::NotCoordinator.code());
    let names: Vec<String> = f
        .driver
        .groups()
        .await
        .into_iter()
        .map(|g| g.group_id)
        .collect();
    assert_eq!(names, vec!["h".to_owned()], "g is forgotten, h untouched");
    assert!(f.driver.describe("g").await.is_none());

    // h completes its join as if nothing happened; g's timers are gone with it.
    let h = other.await.unwrap();
    assert_eq!(h.error_code, 0);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        f.driver.describe("g").await.is_none(),
        "no timer brought g back"
    );
}
