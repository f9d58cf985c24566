//! Random groups for the strategy crates' property tests (proptest strategies), and the checks
//! every sticky answer must pass.
//!
//! A [`GroupSpec`] is flavour-neutral: members with subscriptions, racks, and what each owned
//! in the previous generation. [`GroupSpec::request`] turns it into the request the host sends
//! for a flavour: user data for `sticky`, `owned_partitions` + `owned_generation` for
//! `cooperative-sticky`.

use std::collections::{BTreeMap, BTreeSet};

use assignor_sdk::{ABI_VERSION, AssignRequest, Assignment, Member, Topic};
use proptest::prelude::*;

use super::{Tp, grouped};
use crate::Flavor;
use crate::user_data::write_sticky;

#[derive(Debug, Clone)]
pub struct MemberSpec {
    pub id: String,
    pub topics: Vec<String>,
    pub owned: Vec<Tp>,
    pub generation: i32,
    pub rack: Option<String>,
}

#[derive(Debug, Clone)]
pub struct GroupSpec {
    /// (name, partition count, replica racks per partition or empty).
    pub topics: Vec<(String, i32, Vec<Vec<String>>)>,
    /// Sorted by id.
    pub members: Vec<MemberSpec>,
    /// The generation being formed.
    pub generation_id: i32,
}

const TOPICS: [&str; 6] = ["orders", "payments", "t0", "t1", "T2", "events-3"];
const RACKS: [&str; 3] = ["r0", "r1", "r2"];

/// Groups of 1-9 members on 1-5 topics of 1-10 partitions: equal subscriptions half the time,
/// racks a third of the time, previous owners drawn from a plausible earlier assignment with
/// some stale generations and some partitions claimed twice.
pub fn groups() -> impl Strategy<Value = GroupSpec> {
    let topics = proptest::sample::subsequence(TOPICS.to_vec(), 1..=5).prop_flat_map(|names| {
        let n = names.len();
        (Just(names), proptest::collection::vec(1i32..=10, n))
    });
    (
        topics,
        1usize..=9,
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|((names, counts), members, equal, racks, seed)| {
            build(&names, &counts, members, equal, racks, seed)
        })
}

/// Groups where every member subscribes to the same topics and owns what a previous round
/// gave it (no conflicts, one generation): Kafka's constrained builder.
pub fn homogeneous_groups() -> impl Strategy<Value = GroupSpec> {
    groups().prop_map(|mut g| {
        let all: Vec<String> = g.topics.iter().map(|t| t.0.clone()).collect();
        let generation = g.generation_id - 1;
        let mut seen = BTreeSet::new();
        for m in &mut g.members {
            m.topics = all.clone();
            m.owned.retain(|tp| seen.insert(tp.clone()));
            m.generation = if m.owned.is_empty() { -1 } else { generation };
        }
        g
    })
}

/// A small deterministic generator (splitmix64) so one `u64` drives the details.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn build(
    names: &[&str],
    counts: &[i32],
    members: usize,
    equal: bool,
    racks: bool,
    seed: u64,
) -> GroupSpec {
    let mut mix = Mix(seed);
    let topics: Vec<(String, i32, Vec<Vec<String>>)> = names
        .iter()
        .zip(counts)
        .map(|(name, &n)| {
            let per_partition = if racks {
                (0..n)
                    .map(|_| {
                        let mut r: Vec<String> = RACKS
                            .iter()
                            .filter(|_| mix.chance(50))
                            .map(|r| r.to_string())
                            .collect();
                        if r.is_empty() {
                            r.push(RACKS[mix.below(3)].to_string());
                        }
                        r
                    })
                    .collect()
            } else {
                Vec::new()
            };
            (name.to_string(), n, per_partition)
        })
        .collect();
    let common: Vec<String> = names
        .iter()
        .filter(|_| mix.chance(70))
        .map(|s| s.to_string())
        .collect();
    let common = if common.is_empty() {
        vec![names[0].to_string()]
    } else {
        common
    };
    let mut ids = BTreeSet::new();
    while ids.len() < members {
        ids.insert(match mix.below(3) {
            0 => format!("consumer-{}-{:08x}", ids.len(), mix.next() as u32),
            1 => format!("c{}", mix.below(100)),
            _ => format!("rdkafka-{:04x}", mix.next() as u16),
        });
    }
    let generation_id = 5 + mix.below(20) as i32;
    let mut specs: Vec<MemberSpec> = ids
        .into_iter()
        .map(|id| {
            let topics = if equal {
                common.clone()
            } else {
                let t: Vec<String> = names
                    .iter()
                    .filter(|_| mix.chance(60))
                    .map(|s| s.to_string())
                    .collect();
                if t.is_empty() && mix.chance(70) {
                    vec![names[mix.below(names.len())].to_string()]
                } else {
                    t
                }
            };
            let rack = (racks && mix.chance(85)).then(|| RACKS[mix.below(3)].to_string());
            MemberSpec {
                id,
                topics,
                owned: Vec::new(),
                generation: -1,
                rack,
            }
        })
        .collect();
    // A previous assignment: each partition to a member of the earlier group (mostly one that
    // subscribes to it), some left to nobody.
    let earlier: Vec<usize> = (0..specs.len()).filter(|_| mix.chance(80)).collect();
    for (name, n, _) in &topics {
        for p in 0..*n {
            let holders: Vec<usize> = earlier
                .iter()
                .copied()
                .filter(|&m| specs[m].topics.contains(name) || mix.chance(10))
                .collect();
            if !holders.is_empty() && mix.chance(90) {
                let m = holders[mix.below(holders.len())];
                specs[m].owned.push((name.clone(), p));
            }
        }
    }
    let previous = generation_id - 1;
    for m in &mut specs {
        m.generation = match mix.below(10) {
            _ if m.owned.is_empty() => {
                if mix.chance(50) {
                    -1
                } else {
                    previous
                }
            }
            0 => -1,
            1 => previous - 1 - mix.below(3) as i32,
            _ => previous,
        };
        // Now and then a partition someone else also claims.
        if mix.chance(15) {
            let (name, n, _) = &topics[mix.below(topics.len())];
            let tp = (name.clone(), mix.below(*n as usize) as i32);
            if !m.owned.contains(&tp) {
                m.owned.push(tp);
            }
        }
    }
    GroupSpec {
        topics,
        members: specs,
        generation_id,
    }
}

impl GroupSpec {
    /// The request the host sends for `flavor`: previous ownership as that flavour's clients
    /// report it.
    pub fn request(&self, flavor: Flavor) -> AssignRequest {
        let members = self
            .members
            .iter()
            .map(|m| {
                let mut member = Member {
                    member_id: m.id.clone(),
                    topics: m.topics.clone().into(),
                    owned_generation: -1,
                    rack_id: m.rack.clone(),
                    ..Member::default()
                };
                match flavor {
                    Flavor::Sticky => {
                        // Kafka's StickyAssignor sends user data once it has had an assignment.
                        if !m.owned.is_empty() || m.generation >= 0 {
                            member.user_data =
                                Some(write_sticky(&grouped(&m.owned), Some(m.generation)));
                        }
                    }
                    Flavor::CooperativeSticky => {
                        member.owned_partitions = grouped(&m.owned);
                        member.owned_generation = m.generation;
                    }
                }
                member
            })
            .collect();
        let mut topics: Vec<Topic> = self
            .topics
            .iter()
            .map(|(name, n, racks)| Topic {
                name: name.clone(),
                partition_count: *n,
                partition_racks: racks.clone(),
            })
            .collect();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        AssignRequest {
            abi_version: ABI_VERSION,
            group_id: "prop".into(),
            generation_id: self.generation_id,
            protocol_type: "consumer".into(),
            protocol_name: match flavor {
                Flavor::Sticky => "sticky".into(),
                Flavor::CooperativeSticky => "cooperative-sticky".into(),
            },
            members,
            topics,
            ..AssignRequest::default()
        }
    }

    /// The next round: every member owns what `assignment` gave it, at the generation just
    /// formed; the next generation is formed.
    pub fn next_round(&self, assignment: &BTreeMap<String, Vec<Tp>>) -> GroupSpec {
        let mut next = self.clone();
        for m in &mut next.members {
            m.owned = assignment.get(&m.id).cloned().unwrap_or_default();
            m.generation = self.generation_id;
        }
        next.generation_id += 1;
        next
    }

    /// The group with no racks anywhere. Rack-aware assignment moves owned partitions to
    /// improve locality, so stickiness (nothing moves if nothing changed) holds without racks.
    pub fn without_racks(mut self) -> GroupSpec {
        for t in &mut self.topics {
            t.2.clear();
        }
        for m in &mut self.members {
            m.rack = None;
        }
        self
    }

    /// Every partition of a topic some member subscribes to.
    pub fn subscribed_partitions(&self) -> BTreeSet<Tp> {
        self.topics
            .iter()
            .filter(|(name, _, _)| self.members.iter().any(|m| m.topics.contains(name)))
            .flat_map(|(name, n, _)| (0..*n).map(move |p| (name.clone(), p)))
            .collect()
    }
}

/// The assignment as member -> sorted partitions.
pub fn by_member(assignment: &Assignment) -> BTreeMap<String, Vec<Tp>> {
    assignment
        .member_ids()
        .map(|id| {
            let list = assignment
                .of(id)
                .into_iter()
                .map(|(t, p)| (t.to_string(), p))
                .collect();
            (id.to_string(), list)
        })
        .collect()
}

/// Every member answered; partitions exist, go only to subscribers, at most once. Returns the
/// partitions given.
pub fn check_valid(
    spec: &GroupSpec,
    got: &BTreeMap<String, Vec<Tp>>,
) -> Result<BTreeSet<Tp>, String> {
    let ids: BTreeSet<&String> = spec.members.iter().map(|m| &m.id).collect();
    if got.keys().collect::<BTreeSet<_>>() != ids {
        return Err(format!(
            "members answered: {:?}",
            got.keys().collect::<Vec<_>>()
        ));
    }
    let mut seen = BTreeSet::new();
    for m in &spec.members {
        for (topic, p) in &got[&m.id] {
            if !m.topics.contains(topic) {
                return Err(format!("{} got {topic}-{p} without subscribing", m.id));
            }
            let count = spec
                .topics
                .iter()
                .find(|t| &t.0 == topic)
                .map_or(0, |t| t.1);
            if *p < 0 || *p >= count {
                return Err(format!("{} got {topic}-{p}, which does not exist", m.id));
            }
            if !seen.insert((topic.clone(), *p)) {
                return Err(format!("{topic}-{p} given twice"));
            }
        }
    }
    Ok(seen)
}

/// Kafka's balance guarantee (`verifyValidityAndBalance`): when two members' counts differ by
/// more than one, the one with fewer subscribes to none of the topics of the other's
/// partitions (none of them could move over).
pub fn check_balanced(spec: &GroupSpec, got: &BTreeMap<String, Vec<Tp>>) -> Result<(), String> {
    for a in &spec.members {
        for b in &spec.members {
            let (more, fewer) = (&got[&a.id], &got[&b.id]);
            if more.len() <= fewer.len() + 1 {
                continue;
            }
            if let Some((topic, p)) = more.iter().find(|(t, _)| b.topics.contains(t)) {
                return Err(format!(
                    "{} has {} partitions and {} has {}, yet {topic}-{p} could move",
                    a.id,
                    more.len(),
                    b.id,
                    fewer.len()
                ));
            }
        }
    }
    Ok(())
}

/// The host's cooperative rule: no partition goes to a member while another member claims it
/// at the highest `owned_generation` among its claimants.
pub fn check_cooperative(spec: &GroupSpec, got: &BTreeMap<String, Vec<Tp>>) -> Result<(), String> {
    let mut claims: BTreeMap<&Tp, Vec<(i32, &str)>> = BTreeMap::new();
    for m in &spec.members {
        for tp in &m.owned {
            claims.entry(tp).or_default().push((m.generation, &m.id));
        }
    }
    for (member, partitions) in got {
        for tp in partitions {
            let Some(list) = claims.get(tp) else { continue };
            let top = list.iter().map(|c| c.0).max().unwrap_or(-1);
            if let Some((_, owner)) = list.iter().find(|(g, o)| *g == top && o != member) {
                return Err(format!(
                    "{}-{} goes to {member} while {owner} still owns it",
                    tp.0, tp.1
                ));
            }
        }
    }
    Ok(())
}

impl GroupSpec {
    /// This group in the scenario format of [`super::oracle`] (the format `oracle/generate.py`
    /// writes), to replay a failing case against Kafka's own assignor (`oracle/README.md`).
    pub fn to_oracle_scenario(&self, name: &str, flavor: Flavor) -> String {
        let mut out = format!(
            "scenario {name}\nflavor {}\nprefer 0\n",
            match flavor {
                Flavor::Sticky => "sticky",
                Flavor::CooperativeSticky => "cooperative",
            }
        );
        let join = |items: Vec<String>, sep: &str| {
            if items.is_empty() {
                "-".to_string()
            } else {
                items.join(sep)
            }
        };
        for (topic, n, racks) in &self.topics {
            if !self.members.iter().any(|m| m.topics.contains(topic)) {
                continue;
            }
            out.push_str(&format!("topic {topic} {n}"));
            if !racks.is_empty() {
                let per: Vec<String> = racks.iter().map(|r| join(r.clone(), ",")).collect();
                out.push_str(&format!(" {}", per.join("/")));
            }
            out.push('\n');
        }
        for m in &self.members {
            let owned = m.owned.iter().map(|(t, p)| format!("{t}:{p}")).collect();
            out.push_str(&format!(
                "member {} {} {} {} {}\n",
                m.id,
                join(m.topics.clone(), ","),
                join(owned, ","),
                m.generation,
                m.rack.as_deref().unwrap_or("-")
            ));
        }
        out.push_str("end\n");
        out
    }
}
