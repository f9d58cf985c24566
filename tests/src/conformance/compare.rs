//! Comparing a host's transcript with Kafka's, field by field, and the documented differences
//! (docs/conformance.md): where the host differs on purpose, a scenario names the
//! [`Difference`], which accepts exactly the documented host value against Kafka's, and the
//! comparison fails if a named difference never showed (the host would then agree with Kafka,
//! and the scenario and the documentation must say so).

use std::collections::BTreeSet;
use std::fmt::Write;

use super::observe::{HOST_LEADER, Observation};
use super::target::Target;

/// A difference between the host and Kafka that the host makes on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Difference {
    /// The host is the leader of every classic group it assigns (docs/coordinator.md "How
    /// the host behaves", DESIGN "Coordinator semantics"): JoinGroup answers name the
    /// synthetic leader `assignor-host`, no member is given the member list, and a static
    /// leader's rejoin is never told to skip an assignment it never computes. Kafka names the
    /// first member leader and gives it the member list.
    HostLeads,
    /// The host assigns at the end of the join phase, not at the leader's SyncGroup: a group
    /// is Stable as soon as the assignment is installed, so DescribeGroups between JoinGroup
    /// and SyncGroup says `Stable` with each member's assignment where Kafka says
    /// `CompletingRebalance` with none until the leader's SyncGroup.
    StableBeforeSync,
    /// The member Kafka made leader rejoining a Stable group with unchanged protocols is,
    /// to the host, a follower that lost its answer: it gets the current generation back
    /// where Kafka starts a rebalance (a Kafka leader's JoinGroup always does: it is how a
    /// client leader asks for one after a metadata change, which the host watches itself).
    LeaderRejoinKeepsGeneration,
    /// A new consumer group starts at epoch 0 on the host, as in Kafka up to 4.2 (the first
    /// member's join moves it to 1); Kafka 4.3+ starts it at 1 with an empty target
    /// (KAFKA-20268, for assignments computed off the request path), so its first computed
    /// assignment is epoch 2. Every group, assignment and member epoch after a join with a
    /// subscription is Kafka's minus one; the sentinels (0 joining, -1 left, -2 away) match.
    GroupEpochStartsAtZero,
    /// An OffsetCommit from a consumer-protocol member must carry its current member epoch on
    /// the host (STALE_MEMBER_EPOCH otherwise), as in Kafka up to 4.2; Kafka 4.3+ (KIP-1251,
    /// assignment epochs) also takes the previous epochs for partitions the member has held
    /// since then. Not yet in the host: it keeps no per-partition assignment epoch.
    CommitAtCurrentEpochOnly,
    /// A consumer group stays one when its last consumer-protocol member leaves and classic
    /// members remain (docs/coordinator.md "Not yet"): ListGroups names its type `consumer`
    /// and DescribeGroups, which describes classic groups only, says `Dead`. Kafka turns it
    /// back into a classic group (the downgrade of `group.consumer.migration.policy`).
    NoDowngrade,
    /// A consumer group naming an assignor without a module is assigned by the fallback
    /// (docs/coordinator.md "The consumer protocol"): the host answers with an
    /// assignment where Kafka answers UNSUPPORTED_ASSIGNOR (112).
    FallbackAssignor,
}

impl Difference {
    /// Whether `(kafka, host)` of `field` of an `api` answer is this difference exactly.
    fn explains(self, api: &str, field: &str, kafka: &str, host: &str) -> bool {
        let member_name = |v: &str| !v.is_empty() && !v.starts_with('<') && v != HOST_LEADER;
        match self {
            Difference::HostLeads => match (api, field) {
                ("JoinGroup", "leader") => host == HOST_LEADER && member_name(kafka),
                ("JoinGroup", "members") => host == "[]" && kafka != "[]",
                ("JoinGroup", "skip_assignment") => host == "false" && kafka == "true",
                _ => false,
            },
            Difference::StableBeforeSync => match (api, field.rsplit(' ').next()) {
                ("DescribeGroups", Some("state")) => {
                    kafka == "CompletingRebalance" && host == "Stable"
                }
                ("DescribeGroups", Some("protocol_data")) => kafka == "\"\"" && host != kafka,
                // Kafka shows no metadata or assignment outside Stable; the host shows both.
                ("DescribeGroups", Some("members")) => {
                    let bare = |v: &str| {
                        v.split("; ")
                            .map(|m| m.split(" metadata ").next().unwrap_or(m).to_owned())
                            .collect::<Vec<_>>()
                    };
                    bare(kafka) == bare(host)
                        && kafka.matches("metadata <0 bytes> assignment -").count()
                            == bare(kafka).len()
                        && !host.contains("<0 bytes>")
                }
                // Kafka refuses commits while CompletingRebalance.
                ("OffsetCommit", _) => kafka == "27" && host == "0",
                _ => false,
            },
            Difference::LeaderRejoinKeepsGeneration => {
                api == "JoinGroup"
                    && field == "generation"
                    && kafka.parse::<i32>().ok() == host.parse::<i32>().ok().map(|g| g + 1)
            }
            Difference::GroupEpochStartsAtZero => {
                // A classic member's generation in a consumer group is its member epoch.
                if api == "JoinGroup" && field == "generation" {
                    return one_less(kafka, host);
                }
                let epoch_field = field.ends_with("epoch") || field.ends_with("members");
                (api == "ConsumerGroupHeartbeat" || api == "ConsumerGroupDescribe" || api == "note")
                    && epoch_field
                    && one_less(kafka, host)
            }
            Difference::CommitAtCurrentEpochOnly => {
                let all = |v: &str, code: &str| {
                    let inner = v.trim_start_matches('[').trim_end_matches(']');
                    !inner.is_empty() && inner.split(", ").all(|c| c == code)
                };
                api == "note" && field == "errors" && all(kafka, "0") && all(host, "113")
            }
            Difference::NoDowngrade => match (api, field.rsplit(' ').next()) {
                ("ListGroups", Some("groups")) => {
                    // The group's type, not its protocol type (which is `consumer` in both).
                    let group_type = |t: &str| format!("\" type \"{t}\"");
                    kafka.contains(&group_type("classic"))
                        && host.replace(&group_type("consumer"), &group_type("classic")) == kafka
                }
                ("DescribeGroups", Some("state")) => host == "Dead" && kafka != "Dead",
                ("DescribeGroups", Some("protocol_type" | "protocol_data")) => host == "\"\"",
                ("DescribeGroups", Some("members")) => host == "[]",
                _ => false,
            },
            Difference::FallbackAssignor => {
                api == "ConsumerGroupHeartbeat"
                    && match field {
                        "error" => kafka == "112" && host == "0",
                        // Kafka's error answer carries no member, epoch or assignment.
                        "member_id" => kafka == "null" && member_name(host),
                        "member_epoch" => kafka == "0" && host.parse::<i32>().is_ok_and(|e| e > 0),
                        "heartbeat_interval_ms" => kafka == "0" && host == "5000",
                        "assignment" => kafka == "null" && host != "null",
                        _ => false,
                    }
            }
        }
    }
}

/// Whether `host` is `kafka` with every positive number after "epoch " (or the whole value,
/// if it is a number) one less.
fn one_less(kafka: &str, host: &str) -> bool {
    let lower = |v: &str| -> String {
        if let Ok(n) = v.parse::<i32>() {
            return if n > 0 {
                (n - 1).to_string()
            } else {
                v.to_owned()
            };
        }
        let mut out = String::new();
        let mut rest = v;
        while let Some(at) = rest.find("epoch ") {
            let (head, tail) = rest.split_at(at + "epoch ".len());
            out.push_str(head);
            let digits = tail
                .find(|c: char| !c.is_ascii_digit() && c != '-')
                .unwrap_or(tail.len());
            match tail[..digits].parse::<i32>() {
                Ok(n) if n > 0 => out.push_str(&(n - 1).to_string()),
                _ => out.push_str(&tail[..digits]),
            }
            rest = &tail[digits..];
        }
        out.push_str(rest);
        out
    };
    lower(kafka) == host
}

/// Compares `host` (of `target`) with `kafka` step by step; `allowed` are the differences the
/// scenario documents. Returns every mismatch, and every allowed difference that never
/// showed, as one report.
pub fn compare(
    target: Target,
    kafka: &[Observation],
    host: &[Observation],
    allowed: &[Difference],
) -> Result<(), String> {
    let mut problems = String::new();
    let mut seen: BTreeSet<Difference> = BTreeSet::new();
    for i in 0..kafka.len().max(host.len()) {
        let (k, h) = match (kafka.get(i), host.get(i)) {
            (Some(k), Some(h)) if k.step == h.step && k.api == h.api => (k, h),
            (k, h) => {
                let step = |o: Option<&Observation>| {
                    o.map_or("nothing".to_owned(), |o| format!("{} ({})", o.step, o.api))
                };
                writeln!(
                    problems,
                    "step {i}: Kafka has {}, {target} has {}",
                    step(k),
                    step(h)
                )
                .unwrap();
                break;
            }
        };
        let names: Vec<&String> = k
            .fields
            .iter()
            .chain(&h.fields)
            .map(|(n, _)| n)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for name in names {
            let value = |o: &Observation| {
                o.fields
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            };
            let (kv, hv) = (value(k), value(h));
            if kv == hv {
                continue;
            }
            let (kv, hv) = (
                kv.unwrap_or_else(|| "<absent>".into()),
                hv.unwrap_or_else(|| "<absent>".into()),
            );
            match allowed.iter().find(|d| d.explains(k.api, name, &kv, &hv)) {
                Some(d) => {
                    seen.insert(*d);
                }
                None => writeln!(
                    problems,
                    "{} ({}) {name}:\n    kafka:      {kv}\n    {target:<11} {hv}",
                    k.step, k.api
                )
                .unwrap(),
            }
        }
    }
    for d in allowed {
        if !seen.contains(d) {
            writeln!(
                problems,
                "documented difference {d:?} never showed on {target}"
            )
            .unwrap();
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{target} differs from Kafka:\n{problems}\n--- Kafka ---\n{}\n--- {target} ---\n{}",
        listing(kafka),
        listing(host)
    ))
}

/// A transcript, one step per line.
pub fn listing(transcript: &[Observation]) -> String {
    let mut out = String::new();
    for o in transcript {
        let fields: Vec<String> = o.fields.iter().map(|(n, v)| format!("{n}={v}")).collect();
        writeln!(out, "{} ({}): {}", o.step, o.api, fields.join(", ")).unwrap();
    }
    out
}
