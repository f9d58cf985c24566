//! Topic name rules, Kafka's verbatim (`org.apache.kafka.common.internals.Topic`): 1-249
//! characters from `[a-zA-Z0-9._-]`, not `.` or `..`, and no two topics whose names differ
//! only in `.` versus `_` (metric names cannot tell them apart).

/// Kafka's `Topic.MAX_NAME_LENGTH`.
pub const MAX_NAME_LENGTH: usize = 249;

/// Checks a topic name; the error is Kafka's message for the same name.
pub fn validate(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".to_owned());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".to_owned());
    }
    if name.len() > MAX_NAME_LENGTH {
        return Err(format!(
            "Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, \
             topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// The name with `.` replaced by `_`: two topics with the same form collide.
pub fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_names_pass() {
        for name in ["orders", "a.b_c-D9", &"x".repeat(249)] {
            assert_eq!(validate(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn illegal_names_get_kafkas_message() {
        assert!(validate("").unwrap_err().contains("can't be empty"));
        assert!(validate(".").unwrap_err().contains("\".\" or \"..\""));
        assert!(validate("..").unwrap_err().contains("\".\" or \"..\""));
        assert!(validate(&"x".repeat(250)).unwrap_err().contains("249"));
        assert!(validate("a b").unwrap_err().contains("ASCII alphanumerics"));
        assert!(validate("é").unwrap_err().contains("ASCII alphanumerics"));
    }

    #[test]
    fn dot_and_underscore_collide() {
        assert_eq!(
            unify_collision_chars("a.b_c"),
            unify_collision_chars("a_b.c")
        );
        assert_ne!(unify_collision_chars("a.b"), unify_collision_chars("a-b"));
    }
}
