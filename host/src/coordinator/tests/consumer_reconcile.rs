//! Consumer protocol (KIP-848): reconciliation (Kafka's `CurrentAssignmentBuilder`), leave,
//! session and rebalance timeouts, over the sans-io core with a fake clock and simulated
//! librdkafka clients. The central property: no partition is ever consumed by two clients,
//! whatever order they heartbeat in, and once they are quiet their assignments are disjoint
//! and complete.

use kafka_protocol::ResponseError;

use super::consumer_context::*;
use crate::coordinator::consumer::ConsumerGroupState;
use crate::coordinator::tests::builders::G;
use crate::coordinator::{CoordinatorConfig, TimerKey};

#[test]
fn item27_a_moving_partition_reaches_its_new_owner_only_after_the_old_one_released_it() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    assert_eq!(a.owned, all_partitions(&["t"]));

    let mut b = Client::new("b", &["t"]);
    b.poll(&mut ctx);
    assert_eq!(b.epoch, 2, "b is at the new target's epoch");
    assert!(b.owned.is_empty(), "but a still owns everything");

    a.poll(&mut ctx);
    assert_eq!(a.epoch, 1, "a stays at its epoch until it has revoked");
    assert_eq!(a.owned.values().map(|p| p.len()).sum::<usize>(), 3);
    b.poll(&mut ctx);
    assert!(
        b.owned.is_empty(),
        "a has not acknowledged the revocation yet"
    );

    a.poll(&mut ctx); // acknowledges: owns only its three
    assert_eq!(a.epoch, 2);
    b.poll(&mut ctx);
    assert_eq!(b.owned.values().map(|p| p.len()).sum::<usize>(), 3);
    assert_disjoint(&[a.clone(), b.clone()]);
    assert_eq!(union(&[a, b]), all_partitions(&["t"]));
}

#[test]
fn item28_a_heartbeat_without_owned_partitions_never_completes_a_revocation() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    let mut b = Client::new("b", &["t"]);
    b.poll(&mut ctx);
    a.poll(&mut ctx); // told to revoke three
    for _ in 0..3 {
        // Heartbeats with a null owned list (no acknowledgement).
        let answer = ctx.cgh_now(&Hb::beat("a", 1));
        assert_eq!(answer.member_epoch, 1);
        b.poll(&mut ctx);
        assert!(b.owned.is_empty());
    }
}

#[test]
fn item33_no_partition_ever_has_two_owners_through_joins_and_leaves() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let topics = ["t", "u"];
    let mut clients: Vec<Client> = (0..4)
        .map(|i| Client::new(&format!("m{i}"), &topics))
        .collect();
    settle(&mut ctx, &mut clients, 20);
    assert_eq!(union(&clients), all_partitions(&topics));

    // Two more join.
    clients.push(Client::new("m4", &topics));
    clients.push(Client::new("m5", &topics));
    settle(&mut ctx, &mut clients, 20);
    assert_eq!(union(&clients), all_partitions(&topics));
    assert!(
        clients.iter().all(|c| !c.owned.is_empty()),
        "9 partitions over 6"
    );

    // One leaves (epoch -1).
    let gone = clients.remove(2);
    let answer = ctx.cgh_now(&Hb::beat(&gone.member_id, -1));
    assert_eq!((answer.error_code, answer.member_epoch), (0, -1));
    settle(&mut ctx, &mut clients, 20);
    assert_eq!(union(&clients), all_partitions(&topics));
    assert_eq!(
        ctx.coordinator.consumer_group(G).map(|(s, _)| s),
        Some(ConsumerGroupState::Stable)
    );
}

#[test]
fn item33_partitions_that_stay_are_never_revoked_on_scale_out() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut clients: Vec<Client> = (0..2)
        .map(|i| Client::new(&format!("m{i}"), &["t"]))
        .collect();
    settle(&mut ctx, &mut clients, 20);
    let before: Vec<_> = clients.iter().map(|c| c.owned.clone()).collect();
    clients.push(Client::new("m2", &["t"]));
    settle(&mut ctx, &mut clients, 20);
    for (c, had) in clients.iter().zip(&before) {
        for (t, ps) in &c.owned {
            assert!(
                ps.is_subset(&had[t]),
                "{} gained {t} partitions it did not have",
                c.member_id
            );
        }
        assert_eq!(
            c.owned.values().map(|p| p.len()).sum::<usize>(),
            2,
            "uniform: 6 over 3"
        );
    }
}

#[test]
fn item31_a_dropped_topic_is_revoked_without_waiting_for_a_new_target() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t", "u"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    let change = Hb {
        names: Some(vec!["t".into()]),
        ..Hb::beat("a", a.epoch)
    };
    let answer = ctx.cgh_now(&change);
    assert_eq!(assignment_of(&answer), Some(all_partitions(&["t"])));
}

#[test]
fn item34_a_member_whose_session_expires_is_removed_and_its_partitions_move() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut clients = vec![Client::new("a", &["t"]), Client::new("b", &["t"])];
    settle(&mut ctx, &mut clients, 20);
    let epoch = ctx.coordinator.consumer_group(G).unwrap().1;
    // b keeps heartbeating; a goes silent past the 45 s session timeout.
    let mut b = clients.pop().unwrap();
    for _ in 0..10 {
        ctx.advance(5_000);
        b.poll(&mut ctx);
        b.poll(&mut ctx);
    }
    assert!(ctx.coordinator.consumer_group(G).unwrap().1 > epoch);
    assert_eq!(b.owned, all_partitions(&["t"]));
    let answer = ctx.cgh_now(&Hb::beat("a", clients[0].epoch));
    assert_eq!(answer.error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn item35_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut a = Client::new("a", &["t"]);
    a.poll(&mut ctx);
    a.poll(&mut ctx);
    let mut b = Client::new("b", &["t"]);
    b.poll(&mut ctx);
    a.poll(&mut ctx); // must revoke three
    let key = TimerKey::Revocation {
        group: G.into(),
        member: "a".into(),
    };
    assert!(ctx.armed(&key));
    // a keeps heartbeating without acknowledging; b too. The rebalance timeout is 300 s.
    for _ in 0..62 {
        ctx.advance(5_000);
        ctx.cgh_now(&Hb::beat("a", 1));
        b.poll(&mut ctx);
    }
    let answer = ctx.cgh_now(&Hb::beat("a", 1));
    assert_eq!(answer.error_code, ResponseError::UnknownMemberId.code());
    b.poll(&mut ctx);
    assert_eq!(b.owned, all_partitions(&["t"]), "a's partitions went to b");
}

#[test]
fn item36_a_leave_frees_the_partitions_and_moves_the_group_epoch() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let mut clients = vec![Client::new("a", &["t"]), Client::new("b", &["t"])];
    settle(&mut ctx, &mut clients, 20);
    let epoch = ctx.coordinator.consumer_group(G).unwrap().1;
    let answer = ctx.cgh_now(&Hb::beat("a", clients[0].epoch));
    assert_eq!(answer.error_code, 0);
    let left = ctx.cgh_now(&Hb::beat("a", -1));
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, epoch + 1);
    let mut b = clients.pop().unwrap();
    b.poll(&mut ctx);
    b.poll(&mut ctx);
    assert_eq!(b.owned, all_partitions(&["t"]));
}

#[test]
fn item37_a_static_leave_keeps_the_partitions_and_the_group_epoch() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let first = ctx.cgh_now(&Hb::join("a", &["t"]).instance("i"));
    let epoch = ctx.coordinator.consumer_group(G).unwrap().1;
    let left = ctx.cgh_now(&Hb::beat("a", -2).instance("i"));
    assert_eq!((left.error_code, left.member_epoch), (0, -2));
    assert_eq!(ctx.coordinator.consumer_group(G).unwrap().1, epoch);
    let owners = ctx.assert_single_owners(G);
    let held: Vec<_> = owners.values().filter(|m| *m == "a").collect();
    assert_eq!(held.len(), assignment_of(&first).unwrap()["t"].len());
}

#[test]
fn item38_a_leave_of_an_unknown_member_or_group_is_refused() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let answer = ctx.cgh_now(&Hb::beat("a", -1));
    assert_eq!(answer.error_code, ResponseError::GroupIdNotFound.code());
    ctx.cgh_now(&Hb::join("a", &["t"]));
    let answer = ctx.cgh_now(&Hb::beat("stranger", -1));
    assert_eq!(answer.error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn item42_a_commit_at_another_member_epoch_is_stale_member_epoch() {
    let mut ctx = consumer_context(CoordinatorConfig::default());
    let epoch = ctx.cgh_now(&Hb::join("a", &["t"])).member_epoch;
    let codes = |r: kafka_protocol::messages::OffsetCommitResponse| -> Vec<i16> {
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    };
    let offsets = [("t", 0, 5, None)];
    let stale = ctx.commit_with(G, 9, "a", None, epoch + 1, &offsets);
    assert_eq!(codes(stale), vec![ResponseError::StaleMemberEpoch.code()]);
    let ok = ctx.commit_with(G, 9, "a", None, epoch, &offsets);
    assert_eq!(codes(ok), vec![0]);
    let stranger = ctx.commit_with(G, 9, "b", None, epoch, &offsets);
    assert_eq!(codes(stranger), vec![ResponseError::UnknownMemberId.code()]);
    let old = ctx.commit_with(G, 8, "a", None, epoch, &offsets);
    assert_eq!(codes(old), vec![ResponseError::UnsupportedVersion.code()]);
}

/// A deterministic pseudo-random sequence (xorshift), so a failing seed replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn item33_random_joins_leaves_and_subscription_changes_never_give_a_partition_two_owners() {
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut ctx = consumer_context(CoordinatorConfig::default());
        let mut clients: Vec<Client> = Vec::new();
        let mut next_id = 0;
        for _ in 0..300 {
            match rng.below(10) {
                // A new consumer, of one topic or both.
                0 if clients.len() < 8 => {
                    let topics: &[&str] = if rng.below(2) == 0 {
                        &["t"]
                    } else {
                        &["t", "u"]
                    };
                    clients.push(Client::new(&format!("m{next_id}"), topics));
                    next_id += 1;
                }
                // One leaves (epoch -1).
                1 if !clients.is_empty() => {
                    let gone = clients.remove(rng.below(clients.len()));
                    if gone.epoch > 0 {
                        ctx.cgh_now(&Hb::beat(&gone.member_id, -1));
                    }
                }
                // Time passes; every client heartbeats (its session stays alive).
                2 => {
                    ctx.advance(10_000);
                    for c in clients.iter_mut() {
                        c.poll(&mut ctx);
                    }
                }
                // One changes its subscription.
                3 if !clients.is_empty() => {
                    let i = rng.below(clients.len());
                    let c = &mut clients[i];
                    if c.epoch > 0 {
                        let names = if c.topics.len() == 1 {
                            vec!["t", "u"]
                        } else {
                            vec!["u"]
                        };
                        c.topics = names.iter().map(|t| t.to_string()).collect();
                        let hb = Hb {
                            names: Some(c.topics.clone()),
                            ..c.next()
                        };
                        let reply = ctx.cgh(&hb);
                        let answer = ctx.cgh_response(reply).clone();
                        c.apply(&answer);
                    }
                }
                // Someone heartbeats.
                _ if !clients.is_empty() => {
                    let i = rng.below(clients.len());
                    clients[i].poll(&mut ctx);
                }
                _ => {}
            }
            ctx.assert_single_owners(G);
            assert_disjoint(&clients);
        }
        // Quiet: everyone polls until nothing changes; then every subscribed partition is
        // consumed exactly once.
        settle(&mut ctx, &mut clients, 40);
        let mut subscribed: Vec<&str> = clients
            .iter()
            .flat_map(|c| c.topics.iter().map(String::as_str))
            .collect();
        subscribed.sort();
        subscribed.dedup();
        assert_eq!(union(&clients), all_partitions(&subscribed), "seed {seed}");
    }
}
