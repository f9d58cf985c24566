//! # assignor-inner
//!
//! What the composite built-ins share (`filtered`, `weighted`, and the strategies that hand
//! part of a group to another one): the **inner strategy** a module delegates to, named by an
//! operator parameter and called natively inside the module ([`Inner`]), running it on a part
//! of the group ([`assign_subgroup`]), and the **member patterns** of their parameters
//! ([`patterns`]).
//!
//! The inner strategies are the cores the built-in modules wrap, linked as plain Rust
//! libraries: `assignor-range-core`, `assignor-roundrobin-core` and `assignor-uniform-core`
//! for `range`, `roundrobin` and `uniform`, `assignor-sticky-core` for `sticky` and
//! `cooperative-sticky` (no crate of `assignors/` is linked, so no module's wasm exports or
//! allocator end up in the composite module). A composite module therefore answers exactly what
//! the named built-in would answer for the same members; an upload that replaces a built-in
//! under its name does not change what a composite calls.

use std::collections::BTreeMap;

use assignor_sdk::{AssignError, AssignRequest, Assignment};

pub mod patterns;

/// A strategy a composite module can delegate to, by its protocol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inner {
    /// Kafka's `RangeAssignor` (`range`).
    Range,
    /// Kafka's `RoundRobinAssignor` (`roundrobin`).
    RoundRobin,
    /// Kafka's `StickyAssignor` (`sticky`, eager).
    Sticky,
    /// Kafka's `CooperativeStickyAssignor` (`cooperative-sticky`, KIP-429).
    CooperativeSticky,
    /// Kafka's `UniformAssignor` (`uniform`).
    Uniform,
}

impl Inner {
    /// Every inner strategy, in the order error messages list them.
    pub const ALL: [Inner; 5] = [
        Inner::Range,
        Inner::RoundRobin,
        Inner::Sticky,
        Inner::CooperativeSticky,
        Inner::Uniform,
    ];

    /// The protocol name (`range`, `cooperative-sticky`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Inner::Range => "range",
            Inner::RoundRobin => "roundrobin",
            Inner::Sticky => "sticky",
            Inner::CooperativeSticky => "cooperative-sticky",
            Inner::Uniform => "uniform",
        }
    }

    /// The strategy named `name`, if it is one of [`Inner::ALL`].
    pub fn from_name(name: &str) -> Option<Inner> {
        Inner::ALL.into_iter().find(|i| i.name() == name)
    }

    /// The strategy in parameter `key` of `params`, `default` when the parameter is not set.
    /// An unknown name is an error listing the names that work, so the operator can fix the
    /// parameter from the message alone.
    pub fn from_params(
        params: &BTreeMap<String, String>,
        key: &str,
        default: Inner,
    ) -> Result<Inner, AssignError> {
        let Some(value) = params.get(key) else {
            return Ok(default);
        };
        Inner::from_name(value.trim()).ok_or_else(|| {
            let names: Vec<&str> = Inner::ALL.iter().map(|i| i.name()).collect();
            AssignError::new(format!(
                "parameter `{key}` is `{value}`, which is not a strategy this module can run \
                 inside; set it to one of {}",
                names.join(", ")
            ))
        })
    }

    /// Whether the strategy follows KIP-429 (a partition changing owner is first revoked).
    pub fn is_cooperative(self) -> bool {
        self == Inner::CooperativeSticky
    }

    /// The strategy's answer for `request`, exactly as its built-in module computes it.
    pub fn assign(self, request: &AssignRequest) -> Result<Assignment, AssignError> {
        match self {
            Inner::Range => assignor_range_core::assign(request),
            Inner::RoundRobin => assignor_roundrobin_core::assign(request),
            Inner::Sticky => {
                assignor_sticky_core::assign(request, assignor_sticky_core::Flavor::Sticky)
            }
            Inner::CooperativeSticky => assignor_sticky_core::assign(
                request,
                assignor_sticky_core::Flavor::CooperativeSticky,
            ),
            Inner::Uniform => assignor_uniform_core::assign(request),
        }
    }
}

/// Refuses a parameter `strategy` does not read (most likely a misspelling), naming the ones
/// it does: *unknown parameter `exlude`: filtered reads `exclude`, `include`, `inner`*.
pub fn check_params(
    params: &BTreeMap<String, String>,
    strategy: &str,
    known: &[&str],
) -> Result<(), AssignError> {
    match params.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(AssignError::new(format!(
            "unknown parameter `{key}`: {strategy} reads {}",
            known
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(()),
    }
}

/// The request restricted to the members for which `keep(position)` holds, everything else
/// (topics, lag, params, generation) unchanged: what the inner strategy sees of the group.
pub fn subgroup(request: &AssignRequest, keep: impl Fn(usize) -> bool) -> AssignRequest {
    AssignRequest {
        abi_version: request.abi_version,
        group_id: request.group_id.clone(),
        generation_id: request.generation_id,
        protocol_type: request.protocol_type.clone(),
        protocol_name: request.protocol_name.clone(),
        now_ms: request.now_ms,
        params: request.params.clone(),
        members: request
            .members
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, m)| m.clone())
            .collect(),
        topics: request.topics.clone(),
        lag: request.lag.clone(),
        ..AssignRequest::default()
    }
}

/// The request with only the topics at the positions where `keep(position)` holds: the
/// topic table, the lag entries and every member's subscription cut down alike, members and
/// everything else unchanged. What an inner strategy sees of the topics it is given.
pub fn with_topics(request: &AssignRequest, keep: impl Fn(usize) -> bool) -> AssignRequest {
    let kept: Vec<usize> = (0..request.topics.len()).filter(|&t| keep(t)).collect();
    let names: std::collections::BTreeSet<&str> = kept
        .iter()
        .map(|&t| request.topics[t].name.as_str())
        .collect();
    let mut part = subgroup(request, |_| true);
    part.topics = kept.iter().map(|&t| request.topics[t].clone()).collect();
    part.lag = kept
        .iter()
        .filter_map(|&t| request.lag.get(t).cloned())
        .collect();
    if part.lag.len() != part.topics.len() {
        part.lag.clear();
    }
    for member in &mut part.members {
        member.topics = member
            .topics
            .iter()
            .filter(|t| names.contains(t.as_str()))
            .cloned()
            .collect();
    }
    part
}

/// Who had each partition, `(topic position, partition)` to member position: the host's
/// previous assignment first, then what members say they own; the first claim wins. Topics
/// outside the request are left out.
pub fn previous_owners(request: &AssignRequest) -> BTreeMap<(usize, i32), usize> {
    let mut owners = BTreeMap::new();
    let previous = request
        .members
        .iter()
        .enumerate()
        .flat_map(|(m, member)| member.previously_assigned().map(move |tp| (m, tp)));
    let owned = (request.members.iter().enumerate())
        .flat_map(|(m, member)| member.owned().map(move |tp| (m, tp)));
    for (m, (topic, p)) in previous.chain(owned) {
        if let Some(t) = request.topic_index(topic) {
            owners.entry((t, p)).or_insert(m);
        }
    }
    owners
}

/// Runs `inner` on `part` (a [`subgroup`] of `request`) and copies its answer, partitions and
/// user data, into an assignment of the whole `request`: the members outside `part` get
/// nothing, and so does a partition for which `keep(member_id, topic, partition)` is false
/// (a composite module withholding a hand-over for the next round).
pub fn assign_subgroup(
    inner: Inner,
    request: &AssignRequest,
    part: &AssignRequest,
    keep: impl Fn(&str, &str, i32) -> bool,
) -> Result<Assignment, AssignError> {
    let response = inner.assign(part)?.into_response();
    if let Some(error) = response.error {
        return Err(AssignError::new(format!("{}: {error}", inner.name())));
    }
    let mut assignment = Assignment::new(request);
    if let Some(ms) = response.rebalance_after_ms {
        assignment.rebalance_after_ms(ms);
    }
    for member in response.assignments {
        for tp in member.partitions {
            let kept = tp
                .partitions
                .into_iter()
                .filter(|&p| keep(&member.member_id, &tp.topic, p));
            assignment.assign_all(&member.member_id, &tp.topic, kept);
        }
        if let Some(user_data) = member.user_data {
            assignment.set_user_data(&member.member_id, user_data);
        }
    }
    Ok(assignment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use assignor_sdk::{Member, Topic};

    fn request(ids: &[&str], partitions: i32) -> AssignRequest {
        AssignRequest {
            members: ids
                .iter()
                .map(|id| Member {
                    member_id: id.to_string(),
                    topics: vec!["t".to_string()].into(),
                    owned_generation: -1,
                    ..Member::default()
                })
                .collect(),
            topics: vec![Topic {
                name: "t".into(),
                partition_count: partitions,
                partition_racks: vec![],
            }],
            ..AssignRequest::default()
        }
    }

    #[test]
    fn every_inner_is_found_by_its_name_and_an_unknown_one_lists_the_valid_names() {
        for inner in Inner::ALL {
            assert_eq!(Inner::from_name(inner.name()), Some(inner));
        }
        let mut params = BTreeMap::new();
        assert_eq!(
            Inner::from_params(&params, "inner", Inner::Range).unwrap(),
            Inner::Range
        );
        params.insert("inner".to_string(), "roundrobin".to_string());
        assert_eq!(
            Inner::from_params(&params, "inner", Inner::Range).unwrap(),
            Inner::RoundRobin
        );
        params.insert("inner".to_string(), "rnage".to_string());
        let error = Inner::from_params(&params, "inner", Inner::Range).unwrap_err();
        assert_eq!(
            error.message(),
            "parameter `inner` is `rnage`, which is not a strategy this module can run inside; \
             set it to one of range, roundrobin, sticky, cooperative-sticky, uniform"
        );
    }

    #[test]
    fn each_inner_answers_what_its_builtin_answers() {
        let group = request(&["a", "b", "c"], 7);
        for inner in Inner::ALL {
            let ours = inner.assign(&group).unwrap().into_response();
            let theirs = match inner {
                Inner::Range => assignor_range_core::assign(&group),
                Inner::RoundRobin => assignor_roundrobin_core::assign(&group),
                Inner::Uniform => assignor_uniform_core::assign(&group),
                Inner::Sticky => {
                    assignor_sticky_core::assign(&group, assignor_sticky_core::Flavor::Sticky)
                }
                Inner::CooperativeSticky => assignor_sticky_core::assign(
                    &group,
                    assignor_sticky_core::Flavor::CooperativeSticky,
                ),
            }
            .unwrap()
            .into_response();
            assert_eq!(ours, theirs, "{}", inner.name());
        }
    }

    #[test]
    fn a_subgroup_is_assigned_alone_and_the_rest_answered_empty() {
        let group = request(&["a", "b", "c"], 4);
        let part = subgroup(&group, |i| i != 1);
        let got = assign_subgroup(Inner::Range, &group, &part, |_, _, _| true).unwrap();
        assert_eq!(got.of("a"), [("t", 0), ("t", 1)]);
        assert!(got.of("b").is_empty());
        assert_eq!(got.of("c"), [("t", 2), ("t", 3)]);
        assert_eq!(got.member_ids().collect::<Vec<_>>(), ["a", "b", "c"]);
        let withheld = assign_subgroup(Inner::Range, &group, &part, |m, _, p| m != "c" || p != 3);
        assert_eq!(withheld.unwrap().of("c"), [("t", 2)]);
    }
}
