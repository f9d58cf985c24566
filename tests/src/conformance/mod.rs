//! Kafka as the reference for the group APIs: a scenario (requests from named members, in
//! order) written once and run against Apache Kafka 4.4's own group coordinator, a host
//! standalone, and a host in proxy mode in front of that same Kafka; the hosts' answers are
//! compared with Kafka's field by field.
//!
//! - [`target`]: starting the three targets, with the settings that must match;
//! - [`session`]: one run: a connection per member, ids bound to names, the transcript;
//! - [`observe`] and [`answers`]: what is recorded of each answer, and what is normalized
//!   away (and why);
//! - [`classic`], [`leader`] and [`consumer`]: the requests and client behaviour of both
//!   protocols;
//! - [`compare`]: the field-by-field comparison and the documented [`Difference`]s.
//!
//! ```ignore
//! conformance::check(Spec::new("two-step-join").topic("t", 4), |s| Box::pin(async move {
//!     s.join_group("a", "a joins", 9).await?;
//!     Ok(())
//! })).await;
//! ```
//!
//! The list of scenarios and differences is docs/conformance.md.

pub mod answers;
pub mod classic;
pub mod compare;
pub mod consumer;
pub mod leader;
pub mod observe;
pub mod session;
pub mod target;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use compare::Difference;
pub use session::Session;
pub use target::Target;

use crate::TestHost;

/// A scenario: what to set up, and the documented differences it shows.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: &'static str,
    /// `(name, partitions)`, created on Kafka and in the standalone host's catalog.
    pub topics: Vec<(&'static str, i32)>,
    pub differences: Vec<Difference>,
}

impl Spec {
    pub fn new(name: &'static str) -> Spec {
        Spec {
            name,
            topics: Vec::new(),
            differences: Vec::new(),
        }
    }

    pub fn topic(mut self, name: &'static str, partitions: i32) -> Spec {
        self.topics.push((name, partitions));
        self
    }

    /// The host differs from Kafka here on purpose; the comparison checks it does, exactly.
    pub fn differs(mut self, difference: Difference) -> Spec {
        self.differences.push(difference);
        self
    }
}

/// The scenario's steps, run once per target.
pub type Steps<'a> = Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;

/// Runs `scenario` against Kafka, the host standalone and the host in proxy mode (at once:
/// each run has its own groups), then compares each host's transcript with Kafka's; panics
/// with every mismatch and both transcripts.
#[allow(
    clippy::print_stdout,
    reason = "Kafka's transcript, for `--nocapture`; the test harness captures it"
)]
pub async fn check<F>(spec: Spec, scenario: F)
where
    F: for<'a> Fn(&'a mut Session) -> Steps<'a>,
{
    static RUNS: AtomicUsize = AtomicUsize::new(1);
    let run = format!("conf{}-{}", RUNS.fetch_add(1, Ordering::Relaxed), spec.name);
    let kafka = kafka_harness::shared_async().await;
    let kafka_addr = kafka.nodes()[0].plaintext;
    let topics: Vec<(String, i32)> = spec
        .topics
        .iter()
        .map(|(t, n)| (format!("{run}-{t}"), *n))
        .collect();
    target::create_topics(kafka_addr, &topics)
        .await
        .unwrap_or_else(|e| panic!("creating {topics:?} on Kafka: {e:#}"));
    target::await_coordinators(kafka_addr)
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n--- Kafka's log ends ---\n{}", kafka.log_tail(1, 60)));
    let (standalone, proxy) = tokio::join!(
        target::standalone(&topics),
        target::proxy(kafka.bootstrap(), &topics)
    );
    let one = |target: Target, addr| {
        let (run, spec, scenario) = (&run, &spec, &scenario);
        async move {
            let mut session = Session::new(target, addr, run, &spec.topics).await?;
            if target == Target::Kafka {
                target::assign_at_once(addr, &session.group_id("g")).await?;
            }
            let outcome = scenario(&mut session).await;
            let transcript = session.into_transcript();
            outcome
                .map(|()| transcript.clone())
                .map_err(|e| e.context(format!("after:\n{}", compare::listing(&transcript))))
        }
    };
    let (k, s, p) = tokio::join!(
        one(Target::Kafka, kafka_addr),
        one(Target::Standalone, standalone.addr()),
        one(Target::Proxy, proxy.addr()),
    );
    stop(standalone, proxy).await;
    let kafka_transcript = k.unwrap_or_else(|e| {
        panic!(
            "{run} on Kafka: {e:#}\n--- Kafka's log ends ---\n{}",
            kafka.log_tail(1, 60)
        )
    });
    // Shown with `--nocapture`: what was compared.
    println!("{run} on Kafka:\n{}", compare::listing(&kafka_transcript));
    let mut failures = Vec::new();
    for (target, transcript) in [(Target::Standalone, s), (Target::Proxy, p)] {
        match transcript {
            Ok(t) => {
                if let Err(report) =
                    compare::compare(target, &kafka_transcript, &t, &spec.differences)
                {
                    failures.push(report);
                }
            }
            Err(e) => failures.push(format!(
                "{run} on {target}: {e:#}\n--- Kafka ---\n{}",
                compare::listing(&kafka_transcript)
            )),
        }
    }
    assert!(failures.is_empty(), "{run}:\n{}", failures.join("\n"));
}

async fn stop(standalone: TestHost, proxy: TestHost) {
    tokio::join!(standalone.stop(), proxy.stop());
}
