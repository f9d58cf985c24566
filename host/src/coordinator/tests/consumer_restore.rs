//! Consumer groups across a restart (`consumer/snapshot.rs`): written at most once a second
//! after a change and never for a steady heartbeat, written at shutdown, and read back so the
//! members go on at their epochs with what they own, fenced by nobody.

use std::sync::Arc;

use super::builders::G;
use super::consumer_context::*;
use super::context::TestContext;
use crate::coordinator::consumer::ConsumerGroupState;
use crate::coordinator::{CoordinatorConfig, Effect, Event, RestoredGroup, SavedGroup};

fn writes(ctx: &TestContext) -> Vec<Arc<SavedGroup>> {
    ctx.persisted
        .iter()
        .filter_map(|e| match e {
            Effect::PersistGroup(s) if s.group_id() == G => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// Two members, Stable, each owning its share of `t`.
fn stable_pair(ctx: &mut TestContext) -> Vec<Client> {
    let mut clients = vec![Client::new("a", &["t"]), Client::new("b", &["t"])];
    for _ in 0..4 {
        for c in clients.iter_mut() {
            assert_eq!(c.poll(ctx), 0);
        }
    }
    assert_eq!(
        ctx.coordinator.consumer_group(G).map(|g| g.0),
        Some(ConsumerGroupState::Stable)
    );
    clients
}

#[test]
fn restore_members_go_on_at_their_epochs_with_what_they_own() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut clients = stable_pair(&mut ctx);
    ctx.advance(1_000);
    let written = writes(&ctx)
        .last()
        .cloned()
        .expect("written within a second");
    let consumer = written.consumer().expect("a consumer group's state");
    assert_eq!(consumer.members.len(), 2);

    // A new host reads it back.
    let mut restarted = consumer_context(CoordinatorConfig::default());
    restarted.event(Event::Restore(Box::new(RestoredGroup {
        group_id: G.into(),
        snapshot: Some((*written).clone()),
        offsets: Vec::new(),
        config: None,
    })));
    let epoch = restarted.coordinator.consumer_group(G).expect("restored").1;
    assert_eq!(epoch, consumer.group_epoch);
    let before: Vec<Owned> = clients.iter().map(|c| c.owned.clone()).collect();
    for c in clients.iter_mut() {
        let member_epoch = c.epoch;
        assert_eq!(c.poll(&mut restarted), 0, "not fenced");
        assert_eq!(c.epoch, member_epoch);
    }
    let after: Vec<Owned> = clients.iter().map(|c| c.owned.clone()).collect();
    assert_eq!(before, after, "nobody gave anything up");
    assert_eq!(restarted.rebalances_started(), 0);
    // Sessions were re-armed: a member that never comes back expires as before.
    restarted.advance(45_000);
    assert!(restarted.coordinator.consumer_group(G).is_some());
}

#[test]
fn restore_a_steady_group_writes_nothing_and_a_burst_of_joins_writes_once_a_second() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut clients = stable_pair(&mut ctx);
    ctx.advance(1_000);
    let settled = writes(&ctx).len();
    for _ in 0..50 {
        for c in clients.iter_mut() {
            c.poll(&mut ctx);
        }
    }
    ctx.advance(5_000);
    assert_eq!(
        writes(&ctx).len(),
        settled,
        "steady heartbeats write nothing"
    );

    // Ten members join within the same second: one write covers them all.
    let mut joiners: Vec<Client> = (0..10)
        .map(|i| Client::new(&format!("j{i}"), &["t"]))
        .collect();
    for j in joiners.iter_mut() {
        j.poll(&mut ctx);
    }
    ctx.advance(1_000);
    let burst = &writes(&ctx)[settled..];
    assert_eq!(burst.len(), 1, "one write for the burst");
    assert_eq!(burst[0].consumer().unwrap().members.len(), 12);
}

#[test]
fn restore_a_group_changed_just_before_shutdown_is_written_by_it() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut clients = stable_pair(&mut ctx);
    ctx.advance(1_000);
    let before = writes(&ctx).len();
    clients.push(Client::new("c", &["t"]));
    clients[2].poll(&mut ctx);
    let effects = ctx.coordinator.shutdown();
    let written: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistGroup(s) => s.consumer().cloned(),
            _ => None,
        })
        .collect();
    assert_eq!(
        written.len(),
        1,
        "the unwritten change goes out at shutdown"
    );
    assert_eq!(written[0].members.len(), 3);
    assert_eq!(writes(&ctx).len(), before, "no timer had fired yet");
}
