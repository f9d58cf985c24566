//! # filtered
//!
//! Black and white lists of members, the lists of central rebalancers: operator parameters say
//! which members may consume, the others stay in the group with nothing assigned, and an inner
//! strategy assigns the partitions over the members that may.
//!
//! Parameters (`group set G --strategy filtered --param include=canary-* --param inner=sticky`):
//!
//! | parameter | default | meaning |
//! |---|---|---|
//! | `include` | everyone | comma-separated patterns; only members matching one get partitions |
//! | `exclude` | nobody | comma-separated patterns; members matching one get none (wins over `include`) |
//! | `inner` | `range` | the strategy assigning the admitted members: `range`, `roundrobin`, `sticky`, `cooperative-sticky` or `uniform` |
//!
//! A pattern is a glob (`*` any characters, `?` one) matched against the member's client id,
//! client host (`/10.0.0.7` or `10.0.0.7`) and `group.instance.id`; any of the three matching
//! is a match ([`assignor_inner::patterns`]). Typical uses: a developer's laptop that must not
//! consume production partitions (`exclude=laptop-*`), or only a canary that may
//! (`include=canary`).
//!
//! What a group gets: the admitted members receive exactly what `inner` would give them if
//! they were the whole group (the inner built-in is linked into this module and called on the
//! admitted members alone); the others an empty assignment. When nobody is admitted nothing
//! is assigned. A bad parameter (an empty pattern, `[`-classes, an unknown `inner`, a key this
//! strategy does not read) makes the call fail with a message saying what to write instead.
//!
//! With `inner=cooperative-sticky`, a partition an excluded member still owns is not handed to
//! anyone in the same round (KIP-429: the excluded member revokes it first, rejoins, and the
//! next round gives it out), so nothing is consumed by two members at once.

use std::collections::BTreeSet;

use assignor_inner::patterns::PatternList;
use assignor_inner::{Inner, assign_subgroup, subgroup};
use assignor_sdk::{AssignError, AssignRequest, Assignment, Member, assignor};

#[cfg(test)]
mod tests;

/// The parameters this strategy reads; any other is refused (most likely a misspelling).
const PARAMS: [&str; 3] = ["exclude", "include", "inner"];

/// The `filtered` strategy: members admitted by `include` / `exclude`, assigned by `inner`.
#[assignor(
    name = "filtered",
    version = "0.1.0",
    description = "black and white lists: only members whose client id, host or instance id match `include` (and not `exclude`) get partitions, assigned by the `inner` strategy (default range)",
    protocol = "eager",
    inputs = "client, racks, user_data"
)]
pub fn assign(request: &AssignRequest) -> Result<Assignment, AssignError> {
    let filter = Filter::from_params(request)?;
    let inner = Inner::from_params(&request.params, "inner", Inner::Range)?;
    let admitted: Vec<bool> = request.members.iter().map(|m| filter.admits(m)).collect();
    let part = subgroup(request, |i| admitted[i]);
    // KIP-429: what an excluded member still owns is revoked this round, given out the next.
    let withheld: BTreeSet<(&str, i32)> = if inner.is_cooperative() {
        request
            .members
            .iter()
            .zip(&admitted)
            .filter(|(_, admitted)| !**admitted)
            .flat_map(|(m, _)| m.owned())
            .collect()
    } else {
        BTreeSet::new()
    };
    assign_subgroup(inner, request, &part, |_, topic, p| {
        !withheld.contains(&(topic, p))
    })
}

/// Parameters `include` and `exclude`, parsed.
#[derive(Debug)]
pub struct Filter {
    include: Option<PatternList>,
    exclude: Option<PatternList>,
}

impl Filter {
    /// Reads the parameters of `request`; any mistake is an error naming the parameter.
    pub fn from_params(request: &AssignRequest) -> Result<Filter, AssignError> {
        assignor_inner::check_params(&request.params, "filtered", &PARAMS)?;
        let list = |key: &str| {
            request
                .params
                .get(key)
                .map(|value| PatternList::parse(key, value))
                .transpose()
        };
        Ok(Filter {
            include: list("include")?,
            exclude: list("exclude")?,
        })
    }

    /// Whether `member` may be given partitions: it matches `include` (if set) and not
    /// `exclude`.
    pub fn admits(&self, member: &Member) -> bool {
        self.include
            .as_ref()
            .is_none_or(|l| l.matches_member(member))
            && !self
                .exclude
                .as_ref()
                .is_some_and(|l| l.matches_member(member))
    }
}

/// The module decodes, assigns and encodes, keeping nearly all it allocates until the call
/// ends: the SDK's bump allocator fits, as in the other built-ins.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
