//! Member patterns: the glob patterns operators write in parameters (`include=app-*,canary`,
//! `weights=big-*:3`) and how a member matches one.
//!
//! A pattern is matched against three things a member has: its client id, its client host
//! (as the host sends it, `/10.0.0.7`, and without the leading `/`, so `10.0.0.*` works) and
//! its `group.instance.id` when it is static. A member matches if any of them matches. The
//! whole string must match; `*` stands for any run of characters (also none) and `?` for
//! exactly one. Nothing else is special, and the characters other glob dialects use for
//! classes or escapes (`[ ] { } \`) are refused rather than taken literally, so a pattern
//! never silently means something other than what its author expected.

use assignor_sdk::{AssignError, Member};

/// Characters refused in a pattern: classes, alternatives and escapes of other glob dialects.
const REFUSED: [char; 5] = ['[', ']', '{', '}', '\\'];

/// One checked glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    chars: Vec<char>,
}

impl Pattern {
    /// Checks `text` (already trimmed): not empty, none of the refused characters. `param` is
    /// the parameter it came from, for the message.
    pub fn parse(param: &str, text: &str) -> Result<Pattern, AssignError> {
        if text.is_empty() {
            return Err(AssignError::new(format!(
                "parameter `{param}` has an empty pattern (two commas in a row, or one at an \
                 end); write patterns separated by single commas, such as `app-*,canary-?`"
            )));
        }
        if let Some(c) = text.chars().find(|c| REFUSED.contains(c)) {
            return Err(AssignError::new(format!(
                "parameter `{param}`: pattern `{text}` uses `{c}`, which is not supported; the \
                 only wildcards are `*` (any characters) and `?` (one character), so list the \
                 names separated by commas instead"
            )));
        }
        Ok(Pattern {
            chars: text.chars().collect(),
        })
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        glob(&self.chars, &text.chars().collect::<Vec<_>>())
    }

    /// Whether the member's client id, client host or group instance id matches.
    pub fn matches_member(&self, member: &Member) -> bool {
        identities(member).any(|id| self.matches(id))
    }
}

/// The strings of a member that patterns are matched against.
pub fn identities(member: &Member) -> impl Iterator<Item = &str> {
    let host = member.client_host.as_str();
    let bare = host.strip_prefix('/');
    [Some(member.client_id.as_str()), Some(host), bare]
        .into_iter()
        .chain([member.group_instance_id.as_deref()])
        .flatten()
}

/// A comma-separated list of patterns (parameter `include` or `exclude`): a member matches the
/// list if it matches any of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternList {
    patterns: Vec<Pattern>,
}

impl PatternList {
    /// Parses parameter `param`'s value; items are trimmed, and an empty value is refused (it
    /// would match nobody, which is never what an operator writing the parameter means).
    pub fn parse(param: &str, value: &str) -> Result<PatternList, AssignError> {
        let patterns = value
            .split(',')
            .map(|item| Pattern::parse(param, item.trim()))
            .collect::<Result<_, _>>()?;
        Ok(PatternList { patterns })
    }

    /// Whether the member matches any pattern of the list.
    pub fn matches_member(&self, member: &Member) -> bool {
        self.patterns.iter().any(|p| p.matches_member(member))
    }
}

/// `pattern` matches all of `text`: the classic linear-backtracking glob (one saved `*`).
fn glob(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last `*` seen and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // Let the `*` swallow one more character and retry after it.
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    p = sp + 1;
                    t = st + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Pattern {
        Pattern::parse("include", text).unwrap()
    }

    fn member(client_id: &str, host: &str, instance: Option<&str>) -> Member {
        Member {
            member_id: "m".into(),
            client_id: client_id.into(),
            client_host: host.into(),
            group_instance_id: instance.map(Into::into),
            ..Member::default()
        }
    }

    #[test]
    fn star_matches_any_run_and_question_mark_one_character() {
        assert!(pattern("app-*").matches("app-"));
        assert!(pattern("app-*").matches("app-orders-1"));
        assert!(!pattern("app-*").matches("xapp-1"));
        assert!(pattern("*-canary").matches("orders-canary"));
        assert!(pattern("a*b*c").matches("aXXbYYbc"));
        assert!(!pattern("a*b*c").matches("aXXbYYb"));
        assert!(pattern("c?").matches("c1"));
        assert!(!pattern("c?").matches("c"));
        assert!(!pattern("c?").matches("c12"));
        assert!(pattern("*").matches(""));
        assert!(pattern("exact").matches("exact"));
        assert!(!pattern("exact").matches("exactly"));
        assert!(pattern("zoë-?").matches("zoë-é"));
    }

    #[test]
    fn a_member_matches_by_client_id_host_with_or_without_slash_or_instance_id() {
        let m = member("orders-app", "/10.0.0.7", Some("orders-3"));
        assert!(pattern("orders-app").matches_member(&m));
        assert!(pattern("/10.0.0.*").matches_member(&m));
        assert!(pattern("10.0.0.7").matches_member(&m));
        assert!(pattern("orders-?").matches_member(&m));
        assert!(!pattern("laptop*").matches_member(&m));
        // A dynamic member has no instance id to match.
        assert!(!pattern("orders-?").matches_member(&member("x", "/h", None)));
    }

    #[test]
    fn lists_match_any_item_and_trim_spaces() {
        let list = PatternList::parse("include", "canary-*, 10.1.*").unwrap();
        assert!(list.matches_member(&member("canary-1", "/10.0.0.1", None)));
        assert!(list.matches_member(&member("app", "/10.1.2.3", None)));
        assert!(!list.matches_member(&member("app", "/10.0.0.1", None)));
    }

    #[test]
    fn empty_items_and_foreign_glob_syntax_are_refused_with_a_message() {
        let error = PatternList::parse("exclude", "a,,b").unwrap_err();
        assert!(
            error
                .message()
                .starts_with("parameter `exclude` has an empty pattern"),
            "{error}"
        );
        assert!(PatternList::parse("include", "").is_err());
        assert!(PatternList::parse("include", "a,").is_err());
        let error = PatternList::parse("include", "app-[12]").unwrap_err();
        assert_eq!(
            error.message(),
            "parameter `include`: pattern `app-[12]` uses `[`, which is not supported; the only \
             wildcards are `*` (any characters) and `?` (one character), so list the names \
             separated by commas instead"
        );
        for bad in ["{a,b}", "a\\*", "x]"] {
            assert!(PatternList::parse("include", bad).is_err(), "{bad}");
        }
    }
}
