//! Parameter `weights`: comma-separated `PATTERN:WEIGHT` pairs, the first pattern a member
//! matches giving its weight; and the members' weights that come out of it.

use assignor_inner::patterns::Pattern;
use assignor_sdk::{AssignError, AssignRequest, Member};

/// Parameter keys this strategy reads: `weights`, and the host's own weight parameters
/// (`weight.instance.<id>`, `weight.client.<id>`, `weight.default`, ABI v2 input `weights`),
/// which give the weight of a member no pattern matches.
pub fn check_keys(request: &AssignRequest) -> Result<(), AssignError> {
    match request
        .params
        .keys()
        .find(|k| *k != "weights" && !k.starts_with("weight."))
    {
        Some(key) => Err(AssignError::new(format!(
            "unknown parameter `{key}`: weighted reads `weights` (PATTERN:WEIGHT pairs) and the \
             host's `weight.instance.<id>`, `weight.client.<id>`, `weight.default`"
        ))),
        None => Ok(()),
    }
}

/// The parsed `weights` parameter, in the order written.
#[derive(Debug, Default)]
pub struct Weights {
    rules: Vec<(Pattern, u32)>,
}

impl Weights {
    /// Parses `value`, such as `big-*:3, canary:0`. Each item must be a pattern, a colon and a
    /// whole number from 0 to 4294967295 (the last colon separates them, so a pattern may hold
    /// one); a mistake is an error saying which item and what to write.
    pub fn parse(value: &str) -> Result<Weights, AssignError> {
        let mut rules = Vec::new();
        for item in value.split(',').map(str::trim) {
            let Some((pattern, weight)) = item.rsplit_once(':') else {
                return Err(AssignError::new(format!(
                    "parameter `weights`: `{item}` has no weight; write PATTERN:WEIGHT pairs \
                     separated by commas, such as `big-*:3,small-*:1`"
                )));
            };
            let weight = weight.trim().parse::<u32>().map_err(|_| {
                AssignError::new(format!(
                    "parameter `weights`: the weight of `{item}` is not a whole number from 0 \
                     to 4294967295"
                ))
            })?;
            rules.push((Pattern::parse("weights", pattern.trim())?, weight));
        }
        Ok(Weights { rules })
    }

    /// The weights of `request`'s parameter `weights` (none when it is not set).
    pub fn from_params(request: &AssignRequest) -> Result<Weights, AssignError> {
        check_keys(request)?;
        request
            .params
            .get("weights")
            .map_or(Ok(Weights::default()), |v| Weights::parse(v))
    }

    /// The weight of `member`: the first rule whose pattern it matches, else what the host sent
    /// (ABI input `weights`), else 1.
    pub fn of(&self, member: &Member) -> u32 {
        self.rules
            .iter()
            .find(|(pattern, _)| pattern.matches_member(member))
            .map_or_else(|| member.weight(), |(_, weight)| *weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(client_id: &str, weight: Option<u32>) -> Member {
        Member {
            client_id: client_id.into(),
            weight,
            ..Member::default()
        }
    }

    #[test]
    fn the_first_matching_pattern_gives_the_weight_else_the_hosts_else_one() {
        let weights = Weights::parse("big-1:5, big-*:3,small:0").unwrap();
        assert_eq!(weights.of(&member("big-1", None)), 5);
        assert_eq!(weights.of(&member("big-2", None)), 3);
        assert_eq!(weights.of(&member("small", None)), 0);
        assert_eq!(weights.of(&member("other", None)), 1);
        assert_eq!(weights.of(&member("other", Some(7))), 7);
        assert_eq!(Weights::default().of(&member("big-1", None)), 1);
    }

    #[test]
    fn a_pattern_may_hold_a_colon() {
        let weights = Weights::parse("fe80::1:2").unwrap();
        assert_eq!(weights.of(&member("fe80::1", None)), 2);
    }

    #[test]
    fn mistakes_are_errors_naming_the_item() {
        let message = |v: &str| Weights::parse(v).unwrap_err().to_string();
        assert_eq!(
            message("big-*"),
            "parameter `weights`: `big-*` has no weight; write PATTERN:WEIGHT pairs separated \
             by commas, such as `big-*:3,small-*:1`"
        );
        assert_eq!(
            message("a:1,b:-2"),
            "parameter `weights`: the weight of `b:-2` is not a whole number from 0 to 4294967295"
        );
        assert!(message(":3").starts_with("parameter `weights` has an empty pattern"));
        assert!(message("[ab]:3").contains("uses `[`"));
    }
}
