//! Issue 15's cut-off: a node whose upstream connections pass through a forwarder that stops
//! (the upstream and the other node live on) stops serving within its lease, before the
//! upstream could move its shards (a session timeout after its last heartbeat) and before the
//! other node serves any; the timeline of both nodes' served shards is printed.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::forwarder::Forwarder;
use super::{node, node_at, settings, wait_until};
use crate::cluster::Ownership;
use crate::server::Server;
use crate::upstream::client::tests::support::{Kafka, unique};

fn serving(server: &Server) -> usize {
    server.cluster().unwrap().status().serving.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_the_upstream_stops_before_another_node_starts() {
    let (kafka, name) = (Kafka::shared().await, unique("cutoff"));
    let forwarder = Forwarder::start(kafka.addr()).await;
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node_at(forwarder.addr.to_string(), &name, &dir_a).await;
    wait_until("a serves every shard", || serving(&a) == 50).await;

    // Cut a off, then start b at once. Kafka expires a's session 6 s after its last heartbeat
    // and the node group rebalances without it (noida-db never expired one, so against it the
    // test removed a's member itself at that moment). b then waits one lease before serving
    // what it gained.
    let cut = Instant::now();
    forwarder.cut();
    // Sampled from the cut on, while b starts (its start compiles the built-ins).
    let a_view = a.cluster().unwrap().clone();
    let b_view: Arc<OnceLock<Arc<Ownership>>> = Arc::default();
    let sampled = b_view.clone();
    let sampler = tokio::spawn(async move {
        let mut timeline = vec![(Duration::ZERO, 50, 0)];
        let deadline = cut + Duration::from_secs(60);
        loop {
            let at = cut.elapsed();
            let b = sampled.get().map_or(0, |b| b.status().serving.len());
            let now = (a_view.status().serving.len(), b);
            if timeline.last().is_none_or(|&(_, x, y)| (x, y) != now) {
                timeline.push((at, now.0, now.1));
            }
            // a held every shard when it was cut off: anything b serves, a held.
            assert!(
                now.0 == 0 || now.1 == 0,
                "both nodes serve at {at:?}: {timeline:?}"
            );
            if now.1 == 50 {
                return timeline;
            }
            assert!(Instant::now() < deadline, "b never took over: {timeline:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let b = node(&kafka, &name, &dir_b).await;
    b_view.set(b.cluster().unwrap().clone()).ok().unwrap();
    let timeline = sampler.await.unwrap();
    let first = |f: &dyn Fn(usize, usize) -> bool| {
        timeline
            .iter()
            .find(|&&(_, a, b)| f(a, b))
            .map(|&(at, _, _)| at)
    };
    let a_stopped = first(&|a, _| a == 0).unwrap();
    let b_started = first(&|_, b| b > 0).unwrap();
    eprintln!("after the cut (a serving, b serving): {timeline:?}");
    assert!(a_stopped < b_started, "{timeline:?}");
    // The lease runs from the sending of the last renewal accepted, before the cut: a stops
    // within it (plus the watchdog's tick and this loop's), well before the upstream could
    // have moved a shard (a session timeout after the last heartbeat it received).
    let lease = settings().lease();
    assert!(
        a_stopped <= lease + Duration::from_millis(300),
        "a stopped {a_stopped:?} after the cut, lease {lease:?}"
    );
    assert!(a_stopped < settings().session_timeout - settings().fence_margin / 2);
    b.shutdown().await.unwrap();
    a.shutdown().await.unwrap();
}
